! The I/O of S3D-IO (PnetCDF's combustion-code benchmark) as the original DTF's example runs it: two
! instances, one writing checkpoints and one reading them, coupled by dtf with the original's Fortran
! externals and its config (filename="pressure_wave_test", a part of the file name). Written here
! after S3D-IO's I/O pattern, not its code: a 3D block decomposition of a global grid; per checkpoint
! a new file pressure_wave_test.<time>.field.nc (NF_64BIT_OFFSET, MPI-IO hints given at create) with
! yspecies(x,y,z,11), temp, pressure (x,y,z) and u(x,y,z,3) in double, written and read with
! collective nfmpi_put/get_vara_double_all; each side prints the hints nfmpi_get_file_info reports,
! as S3D-IO does, and the reader checks every value. S3D_DUMP=PREFIX: each reader rank writes what it
! read to PREFIX.<rank>, for the byte-for-byte comparison with file mode.
! usage: s3dio_f writer|reader CONFIG DIR CHECKPOINTS NPX NPY NPZ NX_G NY_G NZ_G
program s3dio_f
  use mpi
  use pnetcdf
  implicit none
  external :: dtf_init, dtf_transfer, dtf_finalize
  integer, parameter :: nsc = 11
  integer :: ierr, rank, nranks, nchkpt, np(3), ng(3), ip(3), nl(3), i, k, bad, anybad, dump
  character(len=4096) :: role, config, dir, arg, fname, prefix
  character(len=16) :: time_ext
  double precision, allocatable :: yspecies(:,:,:,:), temp(:,:,:), pressure(:,:,:), u(:,:,:,:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, role)
  call get_command_argument(2, config)
  call get_command_argument(3, dir)
  call get_command_argument(4, arg)
  read(arg, *) nchkpt
  do i = 1, 3
    call get_command_argument(4 + i, arg)
    read(arg, *) np(i)
    call get_command_argument(7 + i, arg)
    read(arg, *) ng(i)
  end do
  if (np(1) * np(2) * np(3) /= nranks) then
    if (rank == 0) print '(A)', 's3dio: NPX*NPY*NPZ must be the number of ranks'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  ! (the rank's block: x fastest, as S3D-IO's process grid)
  ip(1) = mod(rank, np(1))
  ip(2) = mod(rank / np(1), np(2))
  ip(3) = rank / (np(1) * np(2))
  nl = ng / np
  allocate(yspecies(nl(1), nl(2), nl(3), nsc), temp(nl(1), nl(2), nl(3)), pressure(nl(1), nl(2), nl(3)), &
           u(nl(1), nl(2), nl(3), 3))
  dump = 0
  call get_environment_variable('S3D_DUMP', prefix, status=k)
  if (k == 0 .and. trim(role) == 'reader') then
    write(arg, '(A,".",I0)') trim(prefix), rank
    open(newunit=dump, file=trim(arg), access='stream', form='unformatted', status='replace')
  end if

  call dtf_init(trim(config)//char(0), trim(role)//char(0), ierr)
  if (ierr /= 0) then
    print '(A,A,A,I0)', 's3dio ', trim(role), ': dtf_init failed with ', ierr
    call MPI_Finalize(ierr)
    stop 2
  end if
  bad = 0
  do i = 1, nchkpt
    write(time_ext, '(1pe9.3)') 1.0d-6 * i
    fname = trim(dir)//'/pressure_wave_test.'//trim(adjustl(time_ext))//'.field.nc'
    if (trim(role) == 'writer') then
      call fill(i, .true.)
      call write_checkpoint(trim(fname))
    else
      call read_checkpoint(trim(fname))
      call fill(i, .false.)
      if (dump /= 0) write(dump) yspecies, temp, pressure, u
    end if
  end do
  if (dump /= 0) close(dump)
  call dtf_finalize(ierr)
  if (ierr /= 0) bad = bad + 1
  call MPI_Allreduce(bad, anybad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad == 0) then
      print '(A,A,A,I0,A,I0,A)', 's3dio ', trim(role), ': ', nchkpt, ' checkpoints, ', nranks, &
            ' ranks, every value right'
    else
      print '(A,A,A,I0,A)', 's3dio ', trim(role), ': ', anybad, ' wrong values or failed calls'
    end if
  end if
  call MPI_Finalize(ierr)
  if (anybad /= 0) stop 1

contains

  ! The value of element (x, y, z) of field `f` (its component s) in checkpoint c, global indices.
  double precision function value(c, f, s, x, y, z)
    integer, intent(in) :: c, f, s, x, y, z
    value = c * 1.0d4 + f * 1.0d3 + s * 1.0d2 + (x + ng(1) * (y + ng(2) * z)) * 1.0d-3
  end function

  ! Writer: fill the arrays; reader: count the elements that differ from what the writer wrote.
  subroutine fill(c, writing)
    integer, intent(in) :: c
    logical, intent(in) :: writing
    integer :: x, y, z, s, g(3)
    do z = 1, nl(3)
      do y = 1, nl(2)
        do x = 1, nl(1)
          g = ip * nl + [x, y, z] - 1
          do s = 1, nsc
            call check(yspecies(x, y, z, s), value(c, 1, s, g(1), g(2), g(3)), writing)
          end do
          call check(temp(x, y, z), value(c, 2, 0, g(1), g(2), g(3)), writing)
          call check(pressure(x, y, z), value(c, 3, 0, g(1), g(2), g(3)), writing)
          do s = 1, 3
            call check(u(x, y, z, s), value(c, 4, s, g(1), g(2), g(3)), writing)
          end do
        end do
      end do
    end do
  end subroutine

  subroutine check(a, v, writing)
    double precision, intent(inout) :: a
    double precision, intent(in) :: v
    logical, intent(in) :: writing
    if (writing) then
      a = v
    else if (a /= v) then
      bad = bad + 1
    end if
  end subroutine

  subroutine nc(err, what)
    integer, intent(in) :: err
    character(len=*), intent(in) :: what
    if (err /= NF_NOERR) then
      print '(A,I0,A,A,A,A)', 's3dio rank ', rank, ': ', what, ': ', trim(nfmpi_strerror(err))
      bad = bad + 1
    end if
  end subroutine

  ! S3D-IO prints the MPI-IO hints the file was opened with.
  subroutine print_hints(ncid)
    integer, intent(in) :: ncid
    integer :: info, nkeys, j, err
    character(len=MPI_MAX_INFO_KEY) :: key
    call nc(nfmpi_get_file_info(ncid, info), 'nfmpi_get_file_info')
    if (bad /= 0) return
    call MPI_Info_get_nkeys(info, nkeys, err)
    if (rank == 0) then
      do j = 0, nkeys - 1
        call MPI_Info_get_nthkey(info, j, key, err)
        if (trim(key) == 'romio_ds_write' .or. trim(key) == 'nc_header_align_size') &
          print '(A,A,A)', 's3dio ', trim(role), ': hint '//trim(key)
      end do
      print '(A,A,A,I0,A)', 's3dio ', trim(role), ': ', nkeys, ' MPI-IO hints'
    end if
    call MPI_Info_free(info, err)
  end subroutine

  subroutine write_checkpoint(path)
    character(len=*), intent(in) :: path
    integer :: ncid, info, err, dims(4), three, nspd, varids(4)
    integer(kind=MPI_OFFSET_KIND) :: start(4), count(4), put_size
    call MPI_Info_create(info, err)
    call MPI_Info_set(info, 'romio_ds_write', 'disable', err)
    call MPI_Info_set(info, 'romio_no_indep_rw', 'true', err)
    call nc(nfmpi_create(MPI_COMM_WORLD, path, ior(NF_CLOBBER, NF_64BIT_OFFSET), info, ncid), 'nfmpi_create')
    call MPI_Info_free(info, err)
    call nc(nfmpi_def_dim(ncid, 'x', int(ng(1), MPI_OFFSET_KIND), dims(1)), 'def_dim x')
    call nc(nfmpi_def_dim(ncid, 'y', int(ng(2), MPI_OFFSET_KIND), dims(2)), 'def_dim y')
    call nc(nfmpi_def_dim(ncid, 'z', int(ng(3), MPI_OFFSET_KIND), dims(3)), 'def_dim z')
    call nc(nfmpi_def_dim(ncid, 'nsc', int(nsc, MPI_OFFSET_KIND), nspd), 'def_dim nsc')
    call nc(nfmpi_def_dim(ncid, 'three', 3_MPI_OFFSET_KIND, three), 'def_dim three')
    dims(4) = nspd
    call nc(nfmpi_def_var(ncid, 'yspecies', NF_DOUBLE, 4, dims, varids(1)), 'def_var yspecies')
    call nc(nfmpi_def_var(ncid, 'temp', NF_DOUBLE, 3, dims, varids(2)), 'def_var temp')
    call nc(nfmpi_def_var(ncid, 'pressure', NF_DOUBLE, 3, dims, varids(3)), 'def_var pressure')
    dims(4) = three
    call nc(nfmpi_def_var(ncid, 'u', NF_DOUBLE, 4, dims, varids(4)), 'def_var u')
    call nc(nfmpi_enddef(ncid), 'nfmpi_enddef')
    call print_hints(ncid)
    start(1:3) = ip * nl + 1
    count(1:3) = nl
    start(4) = 1
    count(4) = nsc
    call nc(nfmpi_put_vara_double_all(ncid, varids(1), start, count, yspecies), 'put yspecies')
    call nc(nfmpi_put_vara_double_all(ncid, varids(2), start(1:3), count(1:3), temp), 'put temp')
    call nc(nfmpi_put_vara_double_all(ncid, varids(3), start(1:3), count(1:3), pressure), 'put pressure')
    count(4) = 3
    call nc(nfmpi_put_vara_double_all(ncid, varids(4), start, count, u), 'put u')
    ! (S3D-IO reports its bandwidth from it; rank 0's also counts the header it wrote)
    call nc(nfmpi_inq_put_size(ncid, put_size), 'nfmpi_inq_put_size')
    if (put_size < 8 * product(int(nl, MPI_OFFSET_KIND)) * (nsc + 5)) then
      print '(A,I0,A,I0)', 's3dio rank ', rank, ': nfmpi_inq_put_size says ', put_size
      bad = bad + 1
    end if
    call dtf_transfer(path//char(0), ncid, err)
    call nc(err, 'dtf_transfer')
    call nc(nfmpi_close(ncid), 'nfmpi_close')
  end subroutine

  subroutine read_checkpoint(path)
    character(len=*), intent(in) :: path
    integer :: ncid, err, varid
    integer(kind=MPI_OFFSET_KIND) :: start(4), count(4)
    call nc(nfmpi_open(MPI_COMM_WORLD, path, NF_NOWRITE, MPI_INFO_NULL, ncid), 'nfmpi_open')
    call print_hints(ncid)
    start(1:3) = ip * nl + 1
    count(1:3) = nl
    start(4) = 1
    count(4) = nsc
    call nc(nfmpi_inq_varid(ncid, 'yspecies', varid), 'inq_varid yspecies')
    call nc(nfmpi_get_vara_double_all(ncid, varid, start, count, yspecies), 'get yspecies')
    call nc(nfmpi_inq_varid(ncid, 'temp', varid), 'inq_varid temp')
    call nc(nfmpi_get_vara_double_all(ncid, varid, start(1:3), count(1:3), temp), 'get temp')
    call nc(nfmpi_inq_varid(ncid, 'pressure', varid), 'inq_varid pressure')
    call nc(nfmpi_get_vara_double_all(ncid, varid, start(1:3), count(1:3), pressure), 'get pressure')
    count(4) = 3
    call nc(nfmpi_inq_varid(ncid, 'u', varid), 'inq_varid u')
    call nc(nfmpi_get_vara_double_all(ncid, varid, start, count, u), 'get u')
    call dtf_transfer(path//char(0), ncid, err)
    call nc(err, 'dtf_transfer')
    call nc(nfmpi_close(ncid), 'nfmpi_close')
  end subroutine

end program
