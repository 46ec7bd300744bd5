! Fortran "model" component of the coupled test (see filemode.c, whose "assim" it is coupled with).
! Built twice: with USE_DTF_MODULE (`use dtf`) and without (the DTF-compatible external subroutines,
! with one string passed char(0)-terminated). It writes exactly what filemode.c's model writes, in the
! same order (without the private file).
! usage: filemode_f model CONFIG DIR CYCLES
program filemode_f
  use mpi
  use pnetcdf
#ifdef USE_DTF_MODULE
  use dtf
#endif
  implicit none
#ifndef USE_DTF_MODULE
  external :: dtf_init, dtf_transfer, dtf_finalize
#endif
  integer(kind=MPI_OFFSET_KIND), parameter :: ny = 12, nx = 10
  integer :: provided, ierr, rank, nranks, cycles, c, bad, anybad
  character(len=4096) :: config, dir, statef, histf, arg

  ! MPI_THREAD_MULTIPLE lets dtf's progress thread move data in the background.
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(2, config)
  call get_command_argument(3, dir)
  call get_command_argument(4, arg)
  read(arg, *) cycles

#ifdef USE_DTF_MODULE
  call dtf_init(config, 'model', ierr)
#else
  call dtf_init(trim(config)//char(0), 'model', ierr)
#endif
  if (ierr /= 0) then
    print '(A,I0)', 'model (Fortran): dtf_init failed with ', ierr
    call MPI_Finalize(ierr)
    stop 2
  end if
  statef = trim(dir)//'/state.nc'
  bad = 0
  do c = 1, cycles
    write(histf, '(A,"/hist.",I4.4,".nc")') trim(dir), c
    call write_file(trim(statef), 1, c)
    call read_file(trim(statef), 2, c, bad)
    call write_file(trim(histf), 3, c)
  end do
  call dtf_finalize(ierr)
  if (ierr /= 0) bad = 2
  call MPI_Allreduce(bad, anybad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad == 0) then
      print '(A,I0,A,I0,A)', 'model (Fortran): ', nranks, ' ranks, ', cycles, ' cycles, all values verified'
    else
      print '(A)', 'model (Fortran): WRONG DATA'
    end if
  end if
  call MPI_Finalize(ierr)
  if (anybad /= 0) stop 1

contains

  double precision function val(which, cyc, j, i)
    integer, intent(in) :: which, cyc
    integer(kind=MPI_OFFSET_KIND), intent(in) :: j, i
    val = which * 1d7 + cyc * 1d5 + dble(j) * 100 + dble(i)
  end function

  subroutine check(err, what)
    integer, intent(in) :: err
    character(len=*), intent(in) :: what
    integer :: ierr2
    if (err /= NF90_NOERR) then
      print '(A,A,A,A)', 'model (Fortran): ', what, ': ', trim(nf90mpi_strerror(err))
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr2)
    end if
  end subroutine

  ! Split n into nparts blocks; block p (0-based) starts at start (0-based) and has cnt elements.
  subroutine block(n, nparts, p, start, cnt)
    integer(kind=MPI_OFFSET_KIND), intent(in) :: n
    integer, intent(in) :: nparts, p
    integer(kind=MPI_OFFSET_KIND), intent(out) :: start, cnt
    integer(kind=MPI_OFFSET_KIND) :: base, extra
    base = n / nparts
    extra = mod(n, int(nparts, MPI_OFFSET_KIND))
    start = p * base + min(int(p, MPI_OFFSET_KIND), extra)
    cnt = base
    if (p < extra) cnt = cnt + 1
  end subroutine

  subroutine write_file(path, which, cyc)
    character(len=*), intent(in) :: path
    integer, intent(in) :: which, cyc
    integer :: ncid, dimy, dimx, var, ierr2
    integer(kind=MPI_OFFSET_KIND) :: y0, cy, jj, ii
    double precision, allocatable :: buf(:, :)
    double precision :: t0
    t0 = MPI_Wtime()
    do while (MPI_Wtime() - t0 < 0.2d0)   ! a reader that does not wait for the hand-off runs ahead
    end do
    call check(nf90mpi_create(MPI_COMM_WORLD, path, NF90_CLOBBER, MPI_INFO_NULL, ncid), 'create')
    call check(nf90mpi_def_dim(ncid, 'y', ny, dimy), 'def_dim y')
    call check(nf90mpi_def_dim(ncid, 'x', nx, dimx), 'def_dim x')
    call check(nf90mpi_def_var(ncid, 'field', NF90_DOUBLE, (/dimx, dimy/), var), 'def_var')
    call check(nf90mpi_put_att(ncid, NF90_GLOBAL, 'cycle', cyc), 'put_att')
    call check(nf90mpi_enddef(ncid), 'enddef')
    call block(ny, nranks, rank, y0, cy)
    allocate(buf(nx, max(cy, 1_MPI_OFFSET_KIND)))
    do jj = 1, cy
      do ii = 1, nx
        buf(ii, jj) = val(which, cyc, y0 + jj - 1, ii - 1)
      end do
    end do
    call check(nf90mpi_put_var_all(ncid, var, buf, start=(/1_MPI_OFFSET_KIND, y0 + 1/), &
                                   count=(/nx, cy/)), 'put_var_all')
    call dtf_transfer(path, ncid, ierr2)
    call check(ierr2, 'dtf_transfer')
    call check(nf90mpi_close(ncid), 'close')
    deallocate(buf)
  end subroutine

  subroutine read_file(path, which, cyc, bad)
    character(len=*), intent(in) :: path
    integer, intent(in) :: which, cyc
    integer, intent(inout) :: bad
    integer :: ncid, var, file_cycle, ierr2
    integer(kind=MPI_OFFSET_KIND) :: x0, cx, jj, ii
    double precision, allocatable :: buf(:, :)
    call check(nf90mpi_open(MPI_COMM_WORLD, path, NF90_NOWRITE, MPI_INFO_NULL, ncid), 'open')
    call check(nf90mpi_get_att(ncid, NF90_GLOBAL, 'cycle', file_cycle), 'get_att')
    call check(nf90mpi_inq_varid(ncid, 'field', var), 'inq_varid')
    call block(nx, nranks, rank, x0, cx)
    allocate(buf(max(cx, 1_MPI_OFFSET_KIND), ny))
    call check(nf90mpi_get_var_all(ncid, var, buf, start=(/x0 + 1, 1_MPI_OFFSET_KIND/), &
                                   count=(/cx, ny/)), 'get_var_all')
    call dtf_transfer(path, ncid, ierr2)
    call check(ierr2, 'dtf_transfer')
    call check(nf90mpi_close(ncid), 'close')
    if (file_cycle /= cyc) bad = 1
    do jj = 1, ny
      do ii = 1, cx
        if (buf(ii, jj) /= val(which, cyc, jj - 1, x0 + ii - 1)) bad = 1
      end do
    end do
    deallocate(buf)
  end subroutine

end program filemode_f
