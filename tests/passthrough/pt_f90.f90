! Passthrough test program (Fortran 90 module, nf90mpi_*): run against plain PnetCDF and with dtf
! interposed; file and output must match. Usage: pt_f90 <file.nc>. Rank 0 prints error codes of
! deliberate bad calls and a checksum; exit status 1 if a good call fails.
program ptf90
    use mpi
    use pnetcdf
    implicit none
    integer, parameter :: ny = 4, nxl = 4
    integer, parameter :: i8 = MPI_OFFSET_KIND
    integer :: err, rank, nprocs, ncid, k, dt, dy, dx, vd, vi, vr, vrec, req(3), st(3), ival
    integer(i8) :: nx, x0, ntime
    double precision :: dbuf(nxl, ny), total, chk
    double precision, allocatable :: all(:, :)
    integer :: ibuf(nxl, ny)
    integer, allocatable :: iall(:, :)
    real :: rbuf(nxl)
    character(len=256) :: path
    character(len=64) :: title
    double precision :: huge1(1) = [1d20]

    call MPI_Init(err)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, err)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, err)
    call get_command_argument(1, path)
    nx = nxl * nprocs
    x0 = rank * nxl + 1
    dbuf = reshape([(rank * 100 + k + 0.25d0, k = 1, nxl * ny)], [nxl, ny])
    ibuf = reshape([(rank * 1000 + k, k = 1, nxl * ny)], [nxl, ny])
    rbuf = [(rank + k * 0.5, k = 1, nxl)]

    ! ---- define ----
    call ok(nf90mpi_create(MPI_COMM_WORLD, trim(path), ior(NF90_CLOBBER, NF90_64BIT_DATA), &
                           MPI_INFO_NULL, ncid))
    call ok(nf90mpi_def_dim(ncid, 'time', NF90MPI_UNLIMITED, dt))
    call ok(nf90mpi_def_dim(ncid, 'y', int(ny, i8), dy))
    call ok(nf90mpi_def_dim(ncid, 'x', nx, dx))
    call ok(nf90mpi_def_var(ncid, 'd2', NF90_DOUBLE, [dx, dy], vd))
    call ok(nf90mpi_def_var(ncid, 'i2', NF90_INT, [dx, dy], vi))
    call ok(nf90mpi_def_var(ncid, 'r1', NF90_FLOAT, [dx], vr))
    call ok(nf90mpi_def_var(ncid, 'rec', NF90_DOUBLE, [dx, dt], vrec))
    call ok(nf90mpi_put_att(ncid, NF90_GLOBAL, 'title', 'passthrough f90'))
    call ok(nf90mpi_put_att(ncid, NF90_GLOBAL, 'version', 90))
    call ok(nf90mpi_put_att(ncid, vd, 'scale', [0.5d0, 2d0]))
    call ok(nf90mpi_enddef(ncid))

    ! ---- blocking collective ----
    call ok(nf90mpi_put_var_all(ncid, vd, dbuf, start=[x0, 1_i8], count=[int(nxl, i8), int(ny, i8)]))
    call ok(nf90mpi_put_var_all(ncid, vi, ibuf, start=[rank + 1_i8, 1_i8], &
                                count=[int(nxl, i8), int(ny, i8)], stride=[int(nprocs, i8), 1_i8]))
    call ok(nf90mpi_put_var_all(ncid, vrec, dbuf(:, 1), start=[x0, 1_i8], count=[int(nxl, i8), 1_i8]))
    ! ---- blocking independent ----
    call ok(nf90mpi_begin_indep_data(ncid))
    do k = 1, nxl
        call ok(nf90mpi_put_var(ncid, vr, rbuf(k), start=[x0 + k - 1]))
    end do
    call ok(nf90mpi_end_indep_data(ncid))
    ! ---- nonblocking iput + wait_all, then bput (records 2 and 3) ----
    call ok(nf90mpi_iput_var(ncid, vrec, dbuf(:, 2), req(1), start=[x0, 2_i8], count=[int(nxl, i8), 1_i8]))
    call ok(nf90mpi_wait_all(ncid, 1, req, st))
    call ok(st(1))
    call ok(nf90mpi_buffer_attach(ncid, 4096_i8))
    call ok(nf90mpi_bput_var(ncid, vrec, dbuf(:, 3), req(1), start=[x0, 3_i8], count=[int(nxl, i8), 1_i8]))
    call ok(nf90mpi_wait_all(ncid, 1, req, st))
    call ok(nf90mpi_buffer_detach(ncid))

    ! ---- deliberate errors ----
    call bad('inq_varid(bad ncid)', nf90mpi_inq_varid(-1, 'd2', ival))
    call bad('put_var_all(oob)', nf90mpi_put_var_all(ncid, vd, dbuf, start=[x0, ny + 5_i8], &
                                                  count=[int(nxl, i8), int(ny, i8)]))
    call bad('put_var_all(bad varid)', nf90mpi_put_var_all(ncid, 77, ibuf))
    call bad('put_var_all(ERANGE)', nf90mpi_put_var_all(ncid, vi, huge1, start=[x0, 1_i8], &
                                                     count=[1_i8, 1_i8]))
    call ok(nf90mpi_close(ncid))

    ! ---- read back ----
    call ok(nf90mpi_open(MPI_COMM_WORLD, trim(path), NF90_NOWRITE, MPI_INFO_NULL, ncid))
    call ok(nf90mpi_inquire_dimension(ncid, dt, len=ntime))
    title = ''
    call ok(nf90mpi_get_att(ncid, NF90_GLOBAL, 'title', title))
    if (rank == 0) print '(a,i3,1x,a)', 'inq: ntime, title', ntime, trim(title)
    allocate(all(nx, max(ny, int(ntime))), iall(nx, ny))
    chk = 0
    call ok(nf90mpi_get_var_all(ncid, vd, all(:, 1:ny)))
    chk = chk + weigh(all(:, 1:ny))
    call ok(nf90mpi_get_var_all(ncid, vi, iall))
    chk = chk + weigh(dble(iall)) * 2
    call ok(nf90mpi_get_var_all(ncid, vrec, all(:, 1:ntime), start=[1_i8, 1_i8], count=[nx, ntime]))
    chk = chk + weigh(all(:, 1:ntime)) * 3
    call ok(nf90mpi_begin_indep_data(ncid))
    call ok(nf90mpi_get_var(ncid, vr, rbuf, start=[x0], count=[int(nxl, i8)]))
    call ok(nf90mpi_end_indep_data(ncid))
    chk = chk + sum(rbuf * [(k, k = 1, nxl)])
    call bad('get_var_all(bad varid)', nf90mpi_get_var_all(ncid, 77, iall))
    call ok(nf90mpi_close(ncid))
    call MPI_Allreduce(chk, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, err)
    if (rank == 0) print '(a,f20.6)', 'checksum', total
    call MPI_Finalize(err)

contains

    subroutine ok(e)
        integer, intent(in) :: e
        integer :: ierr
        if (e /= NF90_NOERR) then
            print *, 'rank', rank, ' error ', e, trim(nf90mpi_strerror(e))
            call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
        end if
    end subroutine

    subroutine bad(label, e)
        character(len=*), intent(in) :: label
        integer, intent(in) :: e
        if (rank == 0) print '(a28,i5)', label, e
    end subroutine

    double precision function weigh(a)
        double precision, intent(in) :: a(:, :)
        integer :: i, j
        weigh = 0
        do j = 1, size(a, 2)
            do i = 1, size(a, 1)
                weigh = weigh + a(i, j) * (1 + mod(i + j, 7) * 0.125d0)
            end do
        end do
    end function
end program
