! The writer of tests/coupled/unaware.c in Fortran, equally unaware of dtf (the zero-change mode):
! `use mpi` and MPI_Init, or with USE_F08 `use mpi_f08` and MPI_Init_thread, which Open MPI's
! bindings pass to PMPI without the C MPI_Init (dtf wraps the Fortran entry points themselves).
! Creates DIR/unaware.nc, t(y, x) doubles in row blocks over the ranks, as unaware.c does.
!
! usage: unaware_f writer DIR
program unaware_f
#ifdef USE_F08
  use mpi_f08
#else
  use mpi
#endif
  use pnetcdf, only: nf90mpi_create, nf90mpi_def_dim, nf90mpi_def_var, nf90mpi_enddef, nf90mpi_put_var_all, &
                     nf90mpi_close, nf90mpi_strerror, NF90_CLOBBER, NF90_DOUBLE, NF90_NOERR
  implicit none
  integer, parameter :: ny = 7, nx = 9
  integer :: ierr, rank, nprocs, ncid, dimy, dimx, var, j, i
  integer(kind=MPI_OFFSET_KIND) :: y0, rows, base, extra
  character(len=4096) :: dir
  double precision, allocatable :: buf(:, :)
#ifdef USE_F08
  integer :: provided
  call MPI_Init_thread(MPI_THREAD_SINGLE, provided, ierr)
#else
  call MPI_Init(ierr)
#endif
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  call get_command_argument(2, dir)
  base = ny / nprocs
  extra = mod(ny, nprocs)
  y0 = rank * base + min(int(rank, MPI_OFFSET_KIND), extra)
  rows = base
  if (rank < extra) rows = rows + 1
#ifdef USE_F08
  call check(nf90mpi_create(MPI_COMM_WORLD%MPI_VAL, trim(dir)//'/unaware.nc', NF90_CLOBBER, MPI_INFO_NULL%MPI_VAL, ncid), &
             'create')
#else
  call check(nf90mpi_create(MPI_COMM_WORLD, trim(dir)//'/unaware.nc', NF90_CLOBBER, MPI_INFO_NULL, ncid), 'create')
#endif
  call check(nf90mpi_def_dim(ncid, 'y', int(ny, MPI_OFFSET_KIND), dimy), 'def_dim y')
  call check(nf90mpi_def_dim(ncid, 'x', int(nx, MPI_OFFSET_KIND), dimx), 'def_dim x')
  call check(nf90mpi_def_var(ncid, 't', NF90_DOUBLE, (/dimx, dimy/), var), 'def_var')
  call check(nf90mpi_enddef(ncid), 'enddef')
  allocate(buf(nx, max(rows, 1_MPI_OFFSET_KIND)))
  do j = 1, int(rows)
    do i = 1, nx
      buf(i, j) = 1000.0d0 * dble(y0 + j - 1) + dble(i - 1) + 0.25d0
    end do
  end do
  call check(nf90mpi_put_var_all(ncid, var, buf, start=(/1_MPI_OFFSET_KIND, y0 + 1/), &
                                 count=(/int(nx, MPI_OFFSET_KIND), rows/)), 'put_var_all')
  call check(nf90mpi_close(ncid), 'close')
  call MPI_Finalize(ierr)
contains
  subroutine check(err, what)
    integer, intent(in) :: err
    character(len=*), intent(in) :: what
    if (err /= NF90_NOERR) then
      print '(A,A,A,A)', 'unaware_f: ', what, ': ', trim(nf90mpi_strerror(err))
      stop 2
    end if
  end subroutine check
end program unaware_f
