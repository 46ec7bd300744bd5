! The SCALE-LETKF pattern of letkf_pattern.c in Fortran, both roles, through PnetCDF's Fortran 77
! API and the original DTF's external subroutines (file and component names ending in char(0)):
! the same files, calls, values and dump as the C program (coupled.py compares them byte for byte).
! One difference: wait_all names its requests, since PnetCDF 1.12.3's nfmpi_wait_all with
! NF_REQ_ALL allocates 4 * NF_REQ_ALL bytes (AddressSanitizer stops there; glibc returns NULL).
! Any other role reads the history files too, as in the C program (obs: row blocks; others: level blocks).
! usage: letkf_pattern_f (model|assim|ROLE) CONFIG DIR CYCLES MEMBERS
program letkf_pattern_f
  use mpi
  use pnetcdf
  implicit none
  external :: dtf_init, dtf_transfer, dtf_finalize
  integer, parameter :: nz = 3, ny = 13, nx = 10, halo = 2, nhist = 89, nanal = 143
  integer, parameter :: nread_hist = 20, nupdate = 11, nread_obs = 10
  integer, parameter :: k_hist = 0, k_anal = 1, k_update = 2
  integer :: provided, ierr, rank, nranks, cycles, members, member, comm, c, m, bad, anybad, dumpunit
  logical :: model, unwritten
  character(len=4096) :: role, config, dir, path, arg

  call MPI_Init_thread(MPI_THREAD_MULTIPLE, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  call get_command_argument(1, role)
  call get_command_argument(2, config)
  call get_command_argument(3, dir)
  call get_command_argument(4, arg)
  read(arg, *) cycles
  call get_command_argument(5, arg)
  read(arg, *) members
  call get_environment_variable('LETKF_UNWRITTEN', arg)
  unwritten = trim(arg) == '1'
  model = trim(role) == 'model'
  if (members < 1 .or. members > 4 .or. cycles < 1 .or. cycles > 4 .or. &
      (model .and. mod(nranks, members) /= 0)) then
    if (rank == 0) print '(A)', trim(role)//': 1-4 members, 1-4 cycles, model ranks a multiple of members'
    call MPI_Finalize(ierr)
    stop 2
  end if
  write(path, '(A,"/",A,".",I0,".dump")') trim(dir), trim(role), rank
  open(newunit=dumpunit, file=trim(path), access='stream', form='unformatted', status='replace')
  call dtf_init(trim(config)//char(0), trim(role)//char(0), ierr)
  call check(ierr, 'dtf_init')
  bad = 0
  member = -1
  comm = MPI_COMM_WORLD
  if (model) then
    member = rank / (nranks / members)
    call MPI_Comm_split(MPI_COMM_WORLD, member, rank, comm, ierr)
  end if
  do c = 1, cycles
    if (model) then
      call path_of('hist', member, c)
      call write_model_file(trim(path), 'h', nhist, k_hist, member, c)
      call path_of('anal', member, c)
      call write_model_file(trim(path), 'a', nanal, k_anal, member, c)
      call read_back(trim(path), member, c, unwritten .and. c == 1)
    else if (trim(role) /= 'assim') then
      do m = 0, members - 1
        call path_of('hist', m, c)
        call other_read(trim(path), m, c)
      end do
    else
      do m = 0, members - 1
        call path_of('hist', m, c)
        call assim_read(trim(path), 'h', nread_hist, 4, k_hist, m, c)
        call path_of('anal', m, c)
        call assim_read(trim(path), 'a', nupdate, 13, k_anal, m, c)
      end do
      do m = 0, members - 1
        call path_of('anal', m, c)
        call assim_update(trim(path), m, c)
      end do
    end if
  end do
  if (model) call MPI_Comm_free(comm, ierr)
  call dtf_finalize(ierr)
  call check(ierr, 'dtf_finalize')
  close(dumpunit)
  call MPI_Allreduce(bad, anybad, 1, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (anybad == 0) then
      print '(A,": ",I0," ranks, ",I0," members, ",I0," cycles, all values verified")', trim(role), nranks, &
            members, cycles
    else
      print '(A,A)', trim(role), ': WRONG DATA'
    end if
  end if
  call MPI_Finalize(ierr)
  if (anybad /= 0) stop 1

contains

  ! Exact in a real (below 2**24) for up to 4 members and 4 cycles; k, j, i from 0.
  real function val(which, mem, cyc, var, k, j, i)
    integer, intent(in) :: which, mem, cyc, var
    integer(kind=MPI_OFFSET_KIND), intent(in) :: k, j, i
    val = real((((cyc * 4 + mem) * 3 + which) * 150 + var) * 1000 + (k * ny + j) * nx + i)
  end function

  subroutine check(err, what)
    integer, intent(in) :: err
    character(len=*), intent(in) :: what
    integer :: ierr2
    if (err /= NF_NOERR) then
      print '(A," rank ",I0,": ",A,": ",A)', trim(role), rank, what, trim(nfmpi_strerror(err))
      call MPI_Abort(MPI_COMM_WORLD, 2, ierr2)
    end if
  end subroutine

  subroutine path_of(name, mem, cyc)
    character(len=*), intent(in) :: name
    integer, intent(in) :: mem, cyc
    write(path, '(A,"/",A,".",I0,".",I0,".nc")') trim(dir), name, mem, cyc
  end subroutine

  ! Split n into nparts blocks; block p (0-based) starts at start (0-based) and has cnt elements.
  subroutine block(n, nparts, p, start, cnt)
    integer, intent(in) :: n, nparts, p
    integer(kind=MPI_OFFSET_KIND), intent(out) :: start, cnt
    integer :: base, extra
    base = n / nparts
    extra = mod(n, nparts)
    start = p * base + min(p, extra)
    cnt = base
    if (p < extra) cnt = cnt + 1
  end subroutine

  subroutine record_sizes(ncid)
    integer, intent(in) :: ncid
    integer(kind=MPI_OFFSET_KIND) :: put, get
    call check(nfmpi_inq_put_size(ncid, put), 'inq_put_size')
    call check(nfmpi_inq_get_size(ncid, get), 'inq_get_size')
    write(dumpunit) put, get
  end subroutine

  subroutine write_model_file(fpath, prefix, nvars, which, mem, cyc)
    character(len=*), intent(in) :: fpath, prefix
    integer, intent(in) :: nvars, which, mem, cyc
    integer :: mrank, msize, ncid, dims(3), timevar, varids(nanal), reqs(nanal), sts(nanal), v, ierr2
    integer(kind=MPI_OFFSET_KIND) :: y0, cy, start(3), cnt(3), k, j, i, idx(1)
    real, allocatable :: bufs(:, :, :, :)
    character(len=16) :: name
    double precision :: time
    call MPI_Comm_rank(comm, mrank, ierr2)
    call MPI_Comm_size(comm, msize, ierr2)
    call block(ny, msize, mrank, y0, cy)
    call check(nfmpi_create(comm, fpath, ior(NF_CLOBBER, NF_64BIT_OFFSET), MPI_INFO_NULL, ncid), 'create')
    call check(nfmpi_def_dim(ncid, 'z', int(nz, MPI_OFFSET_KIND), dims(3)), 'def_dim z')
    call check(nfmpi_def_dim(ncid, 'y', int(ny, MPI_OFFSET_KIND), dims(2)), 'def_dim y')
    call check(nfmpi_def_dim(ncid, 'x', int(nx, MPI_OFFSET_KIND), dims(1)), 'def_dim x')
    call check(nfmpi_def_var(ncid, 'time', NF_DOUBLE, 0, dims, timevar), 'def_var time')
    do v = 0, nvars - 1
      write(name, '(A,I3.3)') prefix, v
      call check(nfmpi_def_var(ncid, trim(name), NF_FLOAT, 3, dims, varids(v + 1)), 'def_var')
      call check(nfmpi_put_att_text(ncid, varids(v + 1), 'units', 1_MPI_OFFSET_KIND, 'K'), 'put_att units')
    end do
    call check(nfmpi_put_att_int(ncid, NF_GLOBAL, 'cycle', NF_INT, 1_MPI_OFFSET_KIND, (/ cyc /)), 'put_att cycle')
    call check(nfmpi_put_att_int(ncid, NF_GLOBAL, 'member', NF_INT, 1_MPI_OFFSET_KIND, (/ mem /)), 'put_att member')
    call check(nfmpi_enddef(ncid), 'enddef')
    allocate(bufs(nx, max(cy, 1_MPI_OFFSET_KIND), nz, nvars))
    call check(nfmpi_buffer_attach(ncid, int(4 * nx * cy * nz * (nvars / 2 + 1), MPI_OFFSET_KIND)), 'buffer_attach')
    start = (/ 1_MPI_OFFSET_KIND, y0 + 1, 1_MPI_OFFSET_KIND /)
    cnt = (/ int(nx, MPI_OFFSET_KIND), cy, int(nz, MPI_OFFSET_KIND) /)
    do v = 0, nvars - 1
      do k = 0, nz - 1
        do j = 0, cy - 1
          do i = 0, nx - 1
            bufs(i + 1, j + 1, k + 1, v + 1) = val(which, mem, cyc, v, k, y0 + j, i)
          end do
        end do
      end do
      if (mod(v, 2) == 0) then
        call check(nfmpi_bput_vara_real(ncid, varids(v + 1), start, cnt, bufs(:, :, :, v + 1), reqs(v + 1)), 'bput')
      else
        call check(nfmpi_iput_vara_real(ncid, varids(v + 1), start, cnt, bufs(:, :, :, v + 1), reqs(v + 1)), 'iput')
      end if
    end do
    time = cyc * 3600d0
    idx(1) = 1
    call check(nfmpi_put_var1_double_all(ncid, timevar, idx, time), 'put_var1_double_all')
    call check(nfmpi_wait_all(ncid, nvars, reqs, sts), 'wait_all')
    call dtf_transfer(fpath//char(0), ncid, ierr2)
    call check(ierr2, 'dtf_transfer')
    call record_sizes(ncid)
    call check(nfmpi_buffer_detach(ncid), 'buffer_detach')
    call check(nfmpi_close(ncid), 'close')
    deallocate(bufs)
  end subroutine

  ! The updated variables back into halo-padded arrays, through an MPI subarray type.
  subroutine read_back(fpath, mem, cyc, unwritten_too)
    character(len=*), intent(in) :: fpath
    integer, intent(in) :: mem, cyc
    logical, intent(in) :: unwritten_too
    integer :: mrank, msize, ncid, varid, reqs(nupdate), sts(nupdate), n, interior, ierr2, rc, py, px
    integer :: sizes(3), subsizes(3), starts(3)
    integer(kind=MPI_OFFSET_KIND) :: y0, cy, start(3), cnt(3), k, j, i
    real, allocatable :: bufs(:, :, :, :), plain(:, :, :)
    real :: want
    logical :: inside
    character(len=16) :: name
    call MPI_Comm_rank(comm, mrank, ierr2)
    call MPI_Comm_size(comm, msize, ierr2)
    call block(ny, msize, mrank, y0, cy)
    py = int(cy) + 2 * halo
    px = nx + 2 * halo
    sizes = (/ px, py, nz /)
    subsizes = (/ nx, int(cy), nz /)
    starts = (/ halo, halo, 0 /)
    call MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_FORTRAN, MPI_REAL, interior, ierr2)
    call MPI_Type_commit(interior, ierr2)
    allocate(bufs(px, py, nz, nupdate))
    bufs = -1.0
    start = (/ 1_MPI_OFFSET_KIND, y0 + 1, 1_MPI_OFFSET_KIND /)
    cnt = (/ int(nx, MPI_OFFSET_KIND), cy, int(nz, MPI_OFFSET_KIND) /)
    call check(nfmpi_open(comm, fpath, NF_NOWRITE, MPI_INFO_NULL, ncid), 'open')
    do n = 0, nupdate - 1
      write(name, '(A,I3.3)') 'a', 13 * n
      call check(nfmpi_inq_varid(ncid, trim(name), varid), 'inq_varid')
      call check(nfmpi_iget_vara(ncid, varid, start, cnt, bufs(:, :, :, n + 1), 1_MPI_OFFSET_KIND, interior, &
                                 reqs(n + 1)), 'iget_vara')
    end do
    call check(nfmpi_wait_all(ncid, nupdate, reqs, sts), 'wait_all')
    do n = 0, nupdate - 1
      do k = 0, nz - 1
        do j = 0, py - 1
          do i = 0, px - 1
            inside = j >= halo .and. j < halo + cy .and. i >= halo .and. i < halo + nx
            want = -1.0
            if (inside) want = val(k_update, mem, cyc, 13 * n, k, y0 + j - halo, i - halo)
            if (bufs(i + 1, j + 1, k + 1, n + 1) /= want) bad = 1
            if (inside) write(dumpunit) bufs(i + 1, j + 1, k + 1, n + 1)
          end do
        end do
      end do
    end do
    if (unwritten_too) then ! a variable nobody wrote back: the model's own values in the file
      allocate(plain(nx, max(cy, 1_MPI_OFFSET_KIND), nz))
      call check(nfmpi_inq_varid(ncid, 'a001', varid), 'inq_varid a001')
      rc = nfmpi_get_vara_real_all(ncid, varid, start, cnt, plain)
      if (rc == -1008) then ! DTF_ERR_UNSUPPORTED
        if (mrank == 0) print '("model member ",I0,": refused")', mem
      else
        call check(rc, 'get_vara_real_all a001')
        do k = 0, nz - 1
          do j = 0, cy - 1
            do i = 0, nx - 1
              if (plain(i + 1, j + 1, k + 1) /= val(k_anal, mem, cyc, 1, k, y0 + j, i)) bad = 1
            end do
          end do
        end do
        if (mrank == 0) print '("model member ",I0,": read the variable not written back")', mem
      end if
      deallocate(plain)
    end if
    call dtf_transfer(fpath//char(0), ncid, ierr2)
    call check(ierr2, 'dtf_transfer')
    call record_sizes(ncid)
    call check(nfmpi_close(ncid), 'close')
    call MPI_Type_free(interior, ierr2)
    deallocate(bufs)
  end subroutine

  ! nread variables (every step-th) of a member's file, column blocks over the component.
  subroutine assim_read(fpath, prefix, nread, step, which, mem, cyc)
    character(len=*), intent(in) :: fpath, prefix
    integer, intent(in) :: nread, step, which, mem, cyc
    integer :: ncid, varid, file_cycle(1), reqs(nread_hist), sts(nread_hist), r
    integer(kind=MPI_OFFSET_KIND) :: x0, cx, start(3), cnt(3), k, j, i
    real, allocatable :: bufs(:, :, :, :)
    character(len=16) :: name
    call block(nx, nranks, rank, x0, cx)
    allocate(bufs(max(cx, 1_MPI_OFFSET_KIND), ny, nz, nread))
    start = (/ x0 + 1, 1_MPI_OFFSET_KIND, 1_MPI_OFFSET_KIND /)
    cnt = (/ cx, int(ny, MPI_OFFSET_KIND), int(nz, MPI_OFFSET_KIND) /)
    call check(nfmpi_open(MPI_COMM_WORLD, fpath, NF_NOWRITE, MPI_INFO_NULL, ncid), 'open')
    call check(nfmpi_get_att_int(ncid, NF_GLOBAL, 'cycle', file_cycle), 'get_att cycle')
    if (file_cycle(1) /= cyc) bad = 1
    do r = 0, nread - 1
      write(name, '(A,I3.3)') prefix, step * r
      call check(nfmpi_inq_varid(ncid, trim(name), varid), 'inq_varid')
      call check(nfmpi_iget_vara_real(ncid, varid, start, cnt, bufs(:, :, :, r + 1), reqs(r + 1)), 'iget')
    end do
    call check(nfmpi_wait_all(ncid, nread, reqs, sts), 'wait_all')
    call dtf_transfer(fpath//char(0), ncid, r)
    call check(r, 'dtf_transfer')
    call record_sizes(ncid)
    call check(nfmpi_close(ncid), 'close')
    do r = 0, nread - 1
      do k = 0, nz - 1
        do j = 0, ny - 1
          do i = 0, cx - 1
            if (bufs(i + 1, j + 1, k + 1, r + 1) /= val(which, mem, cyc, step * r, k, j, x0 + i)) bad = 1
          end do
        end do
      end do
    end do
    if (cx > 0) write(dumpunit) bufs
    deallocate(bufs)
  end subroutine

  ! Another reader of a member's history file: every 3rd variable from the second, blocking
  ! get_vara_real_all, no dtf_transfer; obs in row blocks, any other role in level blocks.
  subroutine other_read(fpath, mem, cyc)
    character(len=*), intent(in) :: fpath
    integer, intent(in) :: mem, cyc
    integer :: ncid, varid, r
    integer(kind=MPI_OFFSET_KIND) :: start(3), cnt(3), k, j, i
    real, allocatable :: buf(:, :, :)
    character(len=16) :: name
    start = 0
    cnt = (/ int(nx, MPI_OFFSET_KIND), int(ny, MPI_OFFSET_KIND), int(nz, MPI_OFFSET_KIND) /)
    if (trim(role) == 'obs') then
      call block(ny, nranks, rank, start(2), cnt(2))
    else
      call block(nz, nranks, rank, start(3), cnt(3))
    end if
    allocate(buf(cnt(1), cnt(2), cnt(3)))
    call check(nfmpi_open(MPI_COMM_WORLD, fpath, NF_NOWRITE, MPI_INFO_NULL, ncid), 'open')
    do r = 0, nread_obs - 1
      write(name, '(A,I3.3)') 'h', 3 * r + 1
      call check(nfmpi_inq_varid(ncid, trim(name), varid), 'inq_varid')
      call check(nfmpi_get_vara_real_all(ncid, varid, start + 1, cnt, buf), 'get_vara_real_all')
      do k = 0, cnt(3) - 1
        do j = 0, cnt(2) - 1
          do i = 0, nx - 1
            if (buf(i + 1, j + 1, k + 1) /= val(k_hist, mem, cyc, 3 * r + 1, start(3) + k, start(2) + j, i)) bad = 1
          end do
        end do
      end do
      if (size(buf) > 0) write(dumpunit) buf
    end do
    call record_sizes(ncid)
    call check(nfmpi_close(ncid), 'close')
    deallocate(buf)
  end subroutine

  ! Open a member's analysis file again (NC_WRITE) and write the updated variables back.
  subroutine assim_update(fpath, mem, cyc)
    character(len=*), intent(in) :: fpath
    integer, intent(in) :: mem, cyc
    integer :: ncid, varid, reqs(nupdate), sts(nupdate), u, ierr2
    integer(kind=MPI_OFFSET_KIND) :: x0, cx, start(3), cnt(3), k, j, i
    real, allocatable :: bufs(:, :, :, :)
    character(len=16) :: name
    call block(nx, nranks, rank, x0, cx)
    allocate(bufs(max(cx, 1_MPI_OFFSET_KIND), ny, nz, nupdate))
    start = (/ x0 + 1, 1_MPI_OFFSET_KIND, 1_MPI_OFFSET_KIND /)
    cnt = (/ cx, int(ny, MPI_OFFSET_KIND), int(nz, MPI_OFFSET_KIND) /)
    call check(nfmpi_open(MPI_COMM_WORLD, fpath, NF_WRITE, MPI_INFO_NULL, ncid), 'open NF_WRITE')
    do u = 0, nupdate - 1
      do k = 0, nz - 1
        do j = 0, ny - 1
          do i = 0, cx - 1
            bufs(i + 1, j + 1, k + 1, u + 1) = val(k_update, mem, cyc, 13 * u, k, j, x0 + i)
          end do
        end do
      end do
      write(name, '(A,I3.3)') 'a', 13 * u
      call check(nfmpi_inq_varid(ncid, trim(name), varid), 'inq_varid')
      call check(nfmpi_iput_vara_real(ncid, varid, start, cnt, bufs(:, :, :, u + 1), reqs(u + 1)), 'iput')
    end do
    call check(nfmpi_wait_all(ncid, nupdate, reqs, sts), 'wait_all')
    call dtf_transfer(fpath//char(0), ncid, ierr2)
    call check(ierr2, 'dtf_transfer')
    call record_sizes(ncid)
    call check(nfmpi_close(ncid), 'close')
    deallocate(bufs)
  end subroutine

end program letkf_pattern_f
