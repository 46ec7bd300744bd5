! model.f90 - the "model" component of the dtf demo workflow, in Fortran (same as ../C/model.c).
!
! The ranks form MEMBERS ensemble members (sub-communicators). Each cycle c = 1..CYCLES every member
! reads its analysis anal.m<m>.nc of cycle c-1 (from cycle 2 on) and checks it, advances its state by
! 1 K, and writes hist.m<m>.<c>.nc: T(x, y, z, time) and PS(x, y, time) in Fortran order, which is
! the same file as the C model writes. At the end it reads its last analysis.
!
! Build: part of the dtf build; by hand:
!     mpif90 model.f90 -I<dtf>/include -I<pnetcdf.mod dir> -L<dtf>/lib -Wl,--no-as-needed \
!            -ldtf_fortran -ldtf -lpnetcdf -o model_f
! Run:   dtfrun -c dtf.ini -n 4 ./model_f CYCLES NZ NY NX MEMBERS : -n 2 ./assim CYCLES NZ NY NX MEMBERS
! Prints one line per cycle on rank 0 and a final verdict.
program model
  use mpi
  use pnetcdf
  use dtf
  implicit none
  integer :: provided, ierr, rank, nranks, cycles, c, dims(2), members, member, world_rank, world_size, member_comm
  integer(kind=MPI_OFFSET_KIND) :: nz = 16, ny = 128, nx = 128
  integer(kind=MPI_OFFSET_KIND) :: y0, cy, x0, cx, z, y, x
  real, allocatable :: t(:, :, :)
  integer(kind=8) :: bad, total_bad
  character(len=32) :: arg

  ! MPI_THREAD_MULTIPLE lets dtf's progress thread move data in the background.
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, world_rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, world_size, ierr)
  cycles = 3
  members = 2
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg); read(arg, *) cycles
  end if
  if (command_argument_count() >= 4) then
    call get_command_argument(2, arg); read(arg, *) nz
    call get_command_argument(3, arg); read(arg, *) ny
    call get_command_argument(4, arg); read(arg, *) nx
  end if
  if (command_argument_count() >= 5) then
    call get_command_argument(5, arg); read(arg, *) members
  end if
  if (members < 1 .or. mod(world_size, members) /= 0) then
    print '(A)', 'model: the ranks cannot form equal members'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  member = world_rank / (world_size / members)
  call MPI_Comm_split(MPI_COMM_WORLD, member, world_rank, member_comm, ierr)
  call MPI_Comm_rank(member_comm, rank, ierr)
  call MPI_Comm_size(member_comm, nranks, ierr)

  call dtf_init('dtf.ini', 'model', ierr)
  if (ierr /= 0) then
    print '(A,A)', 'model: dtf_init failed: ', dtf_errmsg()
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  ! The same 2-D decomposition of (y, x) as model.c.
  dims = 0
  call MPI_Dims_create(nranks, 2, dims, ierr)
  call block(ny, dims(1), rank / dims(2), y0, cy)
  call block(nx, dims(2), mod(rank, dims(2)), x0, cx)
  allocate(t(max(cx, 1_MPI_OFFSET_KIND), max(cy, 1_MPI_OFFSET_KIND), nz))
  do z = 0, nz - 1
    do y = 0, cy - 1
      do x = 0, cx - 1
        t(x + 1, y + 1, z + 1) = t0(member, z, y0 + y, x0 + x)
      end do
    end do
  end do

  bad = 0
  do c = 1, cycles
    if (c > 1) call read_analysis(c - 1)
    t = t + 1.0                                   ! the "physics"
    call write_history(c)
    if (world_rank == 0) print '(A,I0,A,I0,A)', 'cycle ', c, ': ', members, ' members wrote their history'
  end do
  call read_analysis(cycles)   ! the last analysis: the initial state of the next run
  call dtf_finalize(ierr)
  call MPI_Allreduce(bad, total_bad, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (world_rank == 0) then
    if (total_bad == 0) then
      print '(A,I0,A,I0,A,I0,A)', 'model (Fortran): ', members, ' members x ', nranks, ' ranks, ', cycles, &
            ' cycles: all analysis values verified'
    else
      print '(A)', 'model (Fortran): WRONG analysis values'
    end if
  end if
  call MPI_Comm_free(member_comm, ierr)
  call MPI_Finalize(ierr)
  if (total_bad /= 0) stop 1

contains

  real function t0(m, z, y, x)
    integer, intent(in) :: m
    integer(kind=MPI_OFFSET_KIND), intent(in) :: z, y, x
    t0 = 200.0 + 16.0 * real(m) + 8.0 * real(z) + 0.5 * real(mod(y, 64_MPI_OFFSET_KIND)) + 0.25 * real(mod(x, 64_MPI_OFFSET_KIND))
  end function

  real function hist_value(cyc, z, y, x)
    integer, intent(in) :: cyc
    integer(kind=MPI_OFFSET_KIND), intent(in) :: z, y, x
    hist_value = t0(member, z, y, x) + 1.5 * real(cyc) - 0.5
  end function

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

  subroutine check(err)
    integer, intent(in) :: err
    integer :: ierr2
    if (err /= NF90_NOERR) then
      print '(A,A,A,A)', 'model: ', trim(nf90mpi_strerror(err)), ' ', dtf_errmsg()
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr2)
    end if
  end subroutine

  subroutine write_history(cyc)
    integer, intent(in) :: cyc
    integer :: ncid, dtime, dz, dy, dx, var_t, var_ps, ierr2
    character(len=32) :: path
    write(path, '("hist.m",I0,".",I4.4,".nc")') member, cyc
    call check(nf90mpi_create(member_comm, trim(path), ior(NF90_CLOBBER, NF90_64BIT_DATA), MPI_INFO_NULL, ncid))
    call check(nf90mpi_def_dim(ncid, 'time', int(NF90_UNLIMITED, MPI_OFFSET_KIND), dtime))
    call check(nf90mpi_def_dim(ncid, 'z', nz, dz))
    call check(nf90mpi_def_dim(ncid, 'y', ny, dy))
    call check(nf90mpi_def_dim(ncid, 'x', nx, dx))
    call check(nf90mpi_def_var(ncid, 'T', NF90_FLOAT, (/dx, dy, dz, dtime/), var_t))
    call check(nf90mpi_put_att(ncid, var_t, 'units', 'K'))
    call check(nf90mpi_def_var(ncid, 'PS', NF90_FLOAT, (/dx, dy, dtime/), var_ps))
    call check(nf90mpi_put_att(ncid, NF90_GLOBAL, 'cycle', cyc))
    call check(nf90mpi_put_att(ncid, NF90_GLOBAL, 'member', member))
    call check(nf90mpi_enddef(ncid))
    call check(nf90mpi_put_var_all(ncid, var_t, t(1:cx, 1:cy, :), start=(/x0 + 1, y0 + 1, 1_MPI_OFFSET_KIND, &
               1_MPI_OFFSET_KIND/), count=(/cx, cy, nz, 1_MPI_OFFSET_KIND/)))
    call check(nf90mpi_put_var_all(ncid, var_ps, t(1:cx, 1:cy, 1), start=(/x0 + 1, y0 + 1, 1_MPI_OFFSET_KIND/), &
               count=(/cx, cy, 1_MPI_OFFSET_KIND/)))
    call dtf_transfer(trim(path), ncid, ierr2)
    call check(ierr2)
    call check(nf90mpi_close(ncid))
  end subroutine

  subroutine read_analysis(cyc)
    integer, intent(in) :: cyc
    integer :: ncid, var, ierr2
    character(len=32) :: path
    write(path, '("anal.m",I0,".nc")') member
    call check(nf90mpi_open(member_comm, trim(path), NF90_NOWRITE, MPI_INFO_NULL, ncid))
    call check(nf90mpi_inq_varid(ncid, 'T', var))
    call check(nf90mpi_get_var_all(ncid, var, t(1:cx, 1:cy, :), start=(/x0 + 1, y0 + 1, 1_MPI_OFFSET_KIND/), &
               count=(/cx, cy, nz/)))
    call dtf_transfer(trim(path), ncid, ierr2)
    call check(ierr2)
    call check(nf90mpi_close(ncid))
    do z = 0, nz - 1
      do y = 0, cy - 1
        do x = 0, cx - 1
          if (t(x + 1, y + 1, z + 1) /= hist_value(cyc, z, y0 + y, x0 + x) + 0.5) bad = bad + 1
        end do
      end do
    end do
  end subroutine

end program model
