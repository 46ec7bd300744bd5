! Fortran writer of the transfer-mode property test: writes the FIXED scenario of scenario.c
! (gen_fixed, `xfer_prop describe fixed K M N` prints it) with the nf90mpi_* API, for the C reader
! of xfer_prop. Same command line and per-case sequence as the C writer:
!   xfer_writer_f writer CONFIG DIR fixed FIRST NCASES M N      (CONFIG "-": no dtf, plain PnetCDF)
! Per case K (file DIR/case.<K>.nc, value salt K mod 101), in C order (Fortran reverses dimensions):
!   dims time(unlimited, 2 records) y=5 x=6 nchar=4; set_fill(NF90_FILL); global title, version;
!   temp(time,y,x) double, units: row blocks per rank and record, collective put_var_all;
!   flags(y,x) short, _FillValue=111, scale: rank p iputs columns p, p+M, ... of rows 0..3 from a
!     default-integer buffer (conversion), row 4 is never written; wait_all;
!   name(y,nchar) char: rank 0 bputs all of it; total int64 scalar: rank M-1, independent mode.
! Element idx (C row-major) of variable v holds mod(v*29 + idx*7 + salt, 101) ('A' + that mod 26
! for name). Phases are separated by barriers, like the C writer's. XFER_REPEAT=R: every case R times
! on one file named case.<K in letters>.nc, as the C writer does (replay property test).
program xfer_writer_f
  use mpi
  use pnetcdf
  use dtf
  implicit none
  integer :: provided, ierr, rank, nranks, first, ncases, m, n, k, nfail, allfail, info, repeat, r, st
  logical :: use_dtf
  character(len=4096) :: config, dir, arg, path
  double precision :: t0

  ! MPI_THREAD_MULTIPLE lets dtf's progress thread move data in the background.
  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (command_argument_count() /= 8) then
    if (rank == 0) print '(A)', 'usage: xfer_writer_f writer CONFIG DIR fixed FIRST NCASES M N'
    call MPI_Finalize(ierr)
    stop 2
  end if
  call get_command_argument(2, config)
  call get_command_argument(3, dir)
  call get_command_argument(4, arg)
  if (trim(arg) /= 'fixed') then
    if (rank == 0) print '(A)', 'xfer_writer_f: only the fixed scenario (SEED fixed) is implemented'
    call MPI_Finalize(ierr)
    stop 2
  end if
  call get_command_argument(5, arg)
  read(arg, *) first
  call get_command_argument(6, arg)
  read(arg, *) ncases
  call get_command_argument(7, arg)
  read(arg, *) m
  call get_command_argument(8, arg)
  read(arg, *) n
  if (m /= nranks) then
    if (rank == 0) print '(A,I0,A,I0)', 'xfer_writer_f: started with ', nranks, ' ranks but told M=', m
    call MPI_Finalize(ierr)
    stop 2
  end if

  use_dtf = trim(config) /= '-'
  if (use_dtf) then
    call dtf_init(config, 'writer', ierr)
    if (ierr /= 0) then
      print '(A,I0,A,A)', 'xfer_writer_f: dtf_init failed: ', ierr, ' ', trim(dtf_errmsg())
      call MPI_Finalize(ierr)
      stop 2
    end if
  end if
  call MPI_Info_create(info, ierr)
  call MPI_Info_set(info, 'romio_ds_write', 'disable', ierr)   ! see xfer_prop.c
  repeat = 1
  call get_environment_variable('XFER_REPEAT', arg, status=st)
  if (st == 0) read(arg, *) repeat
  nfail = 0
  t0 = MPI_Wtime()
  do k = first, first + ncases - 1
    if (repeat > 1) then
      path = trim(dir) // '/case.' // letters(k) // '.nc'
    else
      write(path, '(A,"/case.",I4.4,".nc")') trim(dir), k
    end if
    do r = 1, max(repeat, 1)
      call write_case(trim(path), k)
    end do
  end do
  call MPI_Info_free(info, ierr)
  if (use_dtf) then
    call dtf_finalize(ierr)
    if (ierr /= 0) nfail = nfail + 1
  end if
  call MPI_Allreduce(nfail, allfail, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (allfail == 0) then
      print '(A,I0,A,I0,A,F5.2,A)', 'xfer_writer_f writer: ', nranks, ' ranks, ', ncases, ' cases, ', &
            MPI_Wtime() - t0, ' s, self-check ok (0 failed checks)'
    else
      print '(A,I0,A,I0,A,I0,A)', 'xfer_writer_f writer: ', nranks, ' ranks, ', ncases, &
            ' cases, SELF-CHECK FAILED (', allfail, ' failed checks)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (allfail /= 0) stop 1

contains

  ! K in base 26, least significant first, 'a' = 0 (the C writer's case_path).
  function letters(kase) result(s)
    integer, intent(in) :: kase
    character(len=:), allocatable :: s
    integer :: kk
    s = ''
    kk = kase
    do
      s = s // achar(iachar('a') + mod(kk, 26))
      if (kk < 26) exit
      kk = kk / 26
    end do
  end function

  integer function val(v, idx, salt)
    integer, intent(in) :: v, salt
    integer(kind=8), intent(in) :: idx
    val = int(mod(int(v, 8) * 29 + idx * 7 + int(salt, 8), 101_8))
  end function

  subroutine check(err, what, kase)
    integer, intent(in) :: err, kase
    character(len=*), intent(in) :: what
    if (err /= NF90_NOERR) then
      nfail = nfail + 1
      print '(A,I0,A,I0,A,A,A,I0,A,A)', 'CHECK-FAIL case=', kase, ' writer rank=', rank, ': ', what, &
            ' returned ', err, ': ', trim(nf90mpi_strerror(err))
    end if
  end subroutine

  subroutine write_case(path, kase)
    character(len=*), intent(in) :: path
    integer, intent(in) :: kase
    integer :: ncid, err, old, dtime, dy, dx, dn, vtemp, vflags, vname, vtotal, salt
    integer :: rec, i, j, y0, ny, base, extra, cnt, nreq, req(1), st(1)
    integer(kind=MPI_OFFSET_KIND) :: idx
    double precision, allocatable :: tbuf(:, :)
    integer, allocatable :: fbuf(:, :)
    character(len=20) :: names
    integer(kind=8) :: total

    salt = mod(kase, 101)
    err = nf90mpi_create(MPI_COMM_WORLD, path, ior(NF90_CLOBBER, NF90_64BIT_DATA), info, ncid)
    call check(err, 'create', kase)
    if (err /= NF90_NOERR) return
    call check(nf90mpi_set_fill(ncid, NF90_FILL, old), 'set_fill', kase)
    call check(nf90mpi_def_dim(ncid, 'time', NF90MPI_UNLIMITED, dtime), 'def_dim time', kase)
    call check(nf90mpi_def_dim(ncid, 'y', 5_MPI_OFFSET_KIND, dy), 'def_dim y', kase)
    call check(nf90mpi_def_dim(ncid, 'x', 6_MPI_OFFSET_KIND, dx), 'def_dim x', kase)
    call check(nf90mpi_def_dim(ncid, 'nchar', 4_MPI_OFFSET_KIND, dn), 'def_dim nchar', kase)
    call check(nf90mpi_put_att(ncid, NF90_GLOBAL, 'title', 'fixed'), 'put_att title', kase)
    call check(nf90mpi_put_att(ncid, NF90_GLOBAL, 'version', 3), 'put_att version', kase)
    call check(nf90mpi_def_var(ncid, 'temp', NF90_DOUBLE, (/dx, dy, dtime/), vtemp), 'def_var temp', kase)
    call check(nf90mpi_put_att(ncid, vtemp, 'units', 'K'), 'put_att units', kase)
    call check(nf90mpi_def_var(ncid, 'flags', NF90_SHORT, (/dx, dy/), vflags), 'def_var flags', kase)
    call check(nf90mpi_put_att(ncid, vflags, '_FillValue', int(111, kind=2)), 'put_att _FillValue', kase)
    call check(nf90mpi_put_att(ncid, vflags, 'scale', (/1.0, 2.0/)), 'put_att scale', kase)
    call check(nf90mpi_def_var(ncid, 'name', NF90_CHAR, (/dn, dy/), vname), 'def_var name', kase)
    call check(nf90mpi_def_var(ncid, 'total', NF90_INT64, vtotal), 'def_var total', kase)
    call check(nf90mpi_enddef(ncid), 'enddef', kase)

    ! collective: temp, row blocks of every record
    call MPI_Barrier(MPI_COMM_WORLD, err)
    base = 5 / m
    extra = mod(5, m)
    y0 = rank * base + min(rank, extra)
    ny = base
    if (rank < extra) ny = ny + 1
    allocate(tbuf(6, max(ny, 1)))
    do rec = 0, 1
      do j = 1, ny
        do i = 1, 6
          idx = int(rec, 8) * 30 + int(y0 + j - 1, 8) * 6 + (i - 1)
          tbuf(i, j) = dble(val(0, idx, salt))
        end do
      end do
      call check(nf90mpi_put_var_all(ncid, vtemp, tbuf, start=(/1_MPI_OFFSET_KIND, int(y0 + 1, MPI_OFFSET_KIND), &
                 int(rec + 1, MPI_OFFSET_KIND)/), count=(/6_MPI_OFFSET_KIND, int(ny, MPI_OFFSET_KIND), &
                 1_MPI_OFFSET_KIND/)), 'put_var_all temp', kase)
    end do
    deallocate(tbuf)

    ! nonblocking: flags, columns rank, rank+M, ... of rows 0..3
    call MPI_Barrier(MPI_COMM_WORLD, err)
    nreq = 0
    if (rank < 6) then
      cnt = (6 - rank + m - 1) / m
      allocate(fbuf(cnt, 4))
      do j = 1, 4
        do i = 1, cnt
          idx = int(j - 1, 8) * 6 + rank + int(i - 1, 8) * m
          fbuf(i, j) = val(1, idx, salt)
        end do
      end do
      call check(nf90mpi_iput_var(ncid, vflags, fbuf, req(1), start=(/int(rank + 1, MPI_OFFSET_KIND), 1_MPI_OFFSET_KIND/), &
                 count=(/int(cnt, MPI_OFFSET_KIND), 4_MPI_OFFSET_KIND/), &
                 stride=(/int(m, MPI_OFFSET_KIND), 1_MPI_OFFSET_KIND/)), 'iput_var flags', kase)
      nreq = 1
    end if
    call check(nf90mpi_wait_all(ncid, nreq, req, st), 'wait_all flags', kase)
    if (nreq == 1) call check(st(1), 'iput flags status', kase)
    if (allocated(fbuf)) deallocate(fbuf)

    ! buffered: name, all of it by rank 0
    call MPI_Barrier(MPI_COMM_WORLD, err)
    nreq = 0
    if (rank == 0) then
      do i = 1, 20
        names(i:i) = achar(iachar('A') + mod(val(2, int(i - 1, 8), salt), 26))
      end do
      call check(nf90mpi_buffer_attach(ncid, 256_MPI_OFFSET_KIND), 'buffer_attach', kase)
      call check(nf90mpi_bput_var(ncid, vname, names, req(1), start=(/1_MPI_OFFSET_KIND, 1_MPI_OFFSET_KIND/), &
                 count=(/4_MPI_OFFSET_KIND, 5_MPI_OFFSET_KIND/)), 'bput_var name', kase)
      nreq = 1
    end if
    call check(nf90mpi_wait_all(ncid, nreq, req, st), 'wait_all name', kase)
    if (rank == 0) then
      call check(st(1), 'bput name status', kase)
      call check(nf90mpi_buffer_detach(ncid), 'buffer_detach', kase)
    end if

    ! independent: total, by the last rank
    call MPI_Barrier(MPI_COMM_WORLD, err)
    call check(nf90mpi_begin_indep_data(ncid), 'begin_indep_data', kase)
    if (rank == m - 1) then
      total = int(val(3, 0_8, salt), 8)
      call check(nf90mpi_put_var(ncid, vtotal, total), 'put_var total', kase)
    end if
    call check(nf90mpi_end_indep_data(ncid), 'end_indep_data', kase)
    call MPI_Barrier(MPI_COMM_WORLD, err)

    if (use_dtf) then
      call dtf_transfer(path, ncid, err)
      call check(err, 'dtf_transfer', kase)
    end if
    call check(nf90mpi_close(ncid), 'close', kase)
  end subroutine

end program
