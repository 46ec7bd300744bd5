! A reader as S3D-IO reads its restart file: every rank asks Fortran's inquire whether the file
! exists and reads it only if it does (else it would start over without it); then PnetCDF reads
! column blocks of t(y, x) of the file ncpair.c writes (DIR/front.nc) and checks every value.
! Prints "inquire reader: all values verified", or "inquire reader: no restart file" (exit status 3).
!
! usage: inquire_f DIR
program inquire_f
  use mpi
  use pnetcdf
  implicit none
  integer :: rank, size, ierr, ncid, varid, i, j, bad, all
  integer(kind=MPI_OFFSET_KIND) :: ny, nx, start(2), count(2), base, extra
  character(len=4096) :: dir, path
  logical :: exists, everywhere
  double precision, allocatable :: t(:, :)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  call get_command_argument(1, dir)
  path = trim(dir) // '/front.nc'
  inquire(file=trim(path), exist=exists)
  call MPI_Allreduce(exists, everywhere, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
  if (.not. everywhere) then
    if (rank == 0) print '(a)', 'inquire reader: no restart file'
    call MPI_Finalize(ierr)
    stop 3
  end if
  call check(nf90mpi_open(MPI_COMM_WORLD, trim(path), NF90_NOWRITE, MPI_INFO_NULL, ncid), 'nf90mpi_open')
  call check(nf90mpi_inq_varid(ncid, 't', varid), 'nf90mpi_inq_varid')
  call check(nf90mpi_inquire_dimension(ncid, 2, len=ny), 'nf90mpi_inquire_dimension y')
  call check(nf90mpi_inquire_dimension(ncid, 3, len=nx), 'nf90mpi_inquire_dimension x')
  ! Fortran's order: t(x, y); rank r reads a block of x (columns), all of y.
  base = nx / size
  extra = mod(nx, int(size, MPI_OFFSET_KIND))
  start(1) = rank * base + min(int(rank, MPI_OFFSET_KIND), extra) + 1
  count(1) = base
  if (rank < extra) count(1) = base + 1
  start(2) = 1
  count(2) = ny
  allocate(t(max(count(1), 1_MPI_OFFSET_KIND), ny))
  call check(nf90mpi_get_var_all(ncid, varid, t, start=start, count=count), 'nf90mpi_get_var_all')
  call check(nf90mpi_close(ncid), 'nf90mpi_close')
  bad = 0
  do j = 1, int(ny)
    do i = 1, int(count(1))
      if (t(i, j) /= 1000d0 * (j - 1) + (start(1) + i - 2) + 0.25d0) bad = bad + 1
    end do
  end do
  call MPI_Allreduce(bad, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (all == 0) then
      print '(a)', 'inquire reader: all values verified'
    else
      print '(a, i0, a)', 'inquire reader: ', all, ' wrong values'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all /= 0) stop 1

contains
  subroutine check(err, what)
    integer, intent(in) :: err
    character(len=*), intent(in) :: what
    if (err /= NF90_NOERR) then
      print '(a, a, a, a)', 'inquire_f: ', what, ' failed: ', trim(nf90mpi_strerror(err))
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
    end if
  end subroutine check
end program inquire_f
