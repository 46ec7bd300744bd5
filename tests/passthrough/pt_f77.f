C     Passthrough test program (Fortran 77 binding, nfmpi_*): run against
C     plain PnetCDF and with dtf interposed; file and output must match.
C     Usage: pt_f77 <file.nc>.  Rank 0 prints error codes of deliberate
C     bad calls and a checksum; exit status 1 if a good call fails.
      program ptf77
      implicit none
      include 'mpif.h'
      include 'pnetcdf.inc'
      integer ny, nxl
      parameter (ny = 4, nxl = 4)
      integer err, rank, nprocs, ncid, k, j, old
      integer dt, dy, dx, dims(2), vd, vi, vr, vs, vrec, vreci
      integer req(3), st(3), ival, version
      integer*8 nx, x0, start(2), count(2), stride(2), one(1)
      integer*8 ntime, len8
      double precision dbuf(nxl, ny), all(64), scale(2), chk, total
      integer ibuf(nxl, ny), iall(64)
      real rbuf(64)
      integer*2 sbuf(nxl)
      character*256 path
      common /ctx/ rank

      call MPI_Init(err)
      call MPI_Comm_rank(MPI_COMM_WORLD, rank, err)
      call MPI_Comm_size(MPI_COMM_WORLD, nprocs, err)
      call getarg(1, path)
      nx = nxl * nprocs
      x0 = rank * nxl + 1
      do j = 1, ny
        do k = 1, nxl
          dbuf(k, j) = rank * 100 + (j - 1) * nxl + k + 0.25d0
          ibuf(k, j) = rank * 1000 + (j - 1) * nxl + k
        end do
      end do
      do k = 1, nxl
        rbuf(k) = rank + k * 0.5
        sbuf(k) = int(rank * 10 + k, 2)
      end do

C     ---- define ----
      call ok(nfmpi_create(MPI_COMM_WORLD, trim(path),
     +        ior(NF_CLOBBER, NF_64BIT_DATA), MPI_INFO_NULL, ncid))
      call ok(nfmpi_set_fill(ncid, NF_FILL, old))
      call ok(nfmpi_def_dim(ncid, 'time', NFMPI_UNLIMITED, dt))
      len8 = ny
      call ok(nfmpi_def_dim(ncid, 'y', len8, dy))
      call ok(nfmpi_def_dim(ncid, 'x', nx, dx))
      dims(1) = dx
      dims(2) = dy
      call ok(nfmpi_def_var(ncid, 'd2', NF_DOUBLE, 2, dims, vd))
      call ok(nfmpi_def_var(ncid, 'i2', NF_INT, 2, dims, vi))
      call ok(nfmpi_def_var(ncid, 'r1', NF_FLOAT, 1, dims, vr))
      call ok(nfmpi_def_var(ncid, 's1', NF_SHORT, 1, dims, vs))
      dims(2) = dt
      call ok(nfmpi_def_var(ncid, 'rec', NF_DOUBLE, 2, dims, vrec))
      call ok(nfmpi_def_var(ncid, 'reci', NF_INT, 2, dims, vreci))
      len8 = 16
      call ok(nfmpi_put_att_text(ncid, NF_GLOBAL, 'title', len8,
     +        'passthrough f77 '))
      version = 77
      len8 = 1
      call ok(nfmpi_put_att_int(ncid, NF_GLOBAL, 'version', NF_INT,
     +        len8, version))
      scale(1) = 0.5d0
      scale(2) = 2d0
      len8 = 2
      call ok(nfmpi_put_att_double(ncid, vd, 'scale', NF_DOUBLE,
     +        len8, scale))
      call ok(nfmpi_enddef(ncid))

C     ---- blocking collective: vara, vars, var1, flexible, record ----
      start(1) = x0
      start(2) = 1
      count(1) = nxl
      count(2) = ny
      call ok(nfmpi_put_vara_double_all(ncid, vd, start, count, dbuf))
      start(1) = rank + 1
      stride(1) = nprocs
      stride(2) = 1
      call ok(nfmpi_put_vars_int_all(ncid, vi, start, count, stride,
     +        ibuf))
      do k = 1, nxl
        one(1) = x0 + k - 1
        call ok(nfmpi_put_var1_real_all(ncid, vr, one, rbuf(k)))
      end do
      start(1) = x0
      start(2) = 1
      count(2) = 1
      len8 = nxl
      call ok(nfmpi_put_vara_all(ncid, vrec, start, count, dbuf,
     +        len8, MPI_DOUBLE_PRECISION))

C     ---- blocking independent ----
      call ok(nfmpi_begin_indep_data(ncid))
      call ok(nfmpi_put_vara_int2(ncid, vs, x0, count, sbuf))
      call ok(nfmpi_end_indep_data(ncid))

C     ---- nonblocking iput, then bput, records 2 and 3 ----
      start(2) = 2
      call ok(nfmpi_iput_vara_double(ncid, vrec, start, count,
     +        dbuf(1, 2), req(1)))
      call ok(nfmpi_iput_vara_int(ncid, vreci, start, count,
     +        ibuf(1, 2), req(2)))
      call ok(nfmpi_wait_all(ncid, 2, req, st))
      call ok(st(1))
      call ok(st(2))
      len8 = 4096
      call ok(nfmpi_buffer_attach(ncid, len8))
      start(2) = 3
      call ok(nfmpi_bput_vara_double(ncid, vrec, start, count,
     +        dbuf(1, 3), req(1)))
      call ok(nfmpi_bput_vara_int(ncid, vreci, start, count,
     +        ibuf(1, 3), req(2)))
      start(2) = 1
      call ok(nfmpi_bput_vara_int(ncid, vreci, start, count,
     +        ibuf(1, 1), req(3)))
      call ok(nfmpi_wait_all(ncid, 3, req, st))
      call ok(nfmpi_buffer_detach(ncid))

C     ---- deliberate errors ----
      call bad('inq_varid(bad ncid)', nfmpi_inq_varid(-1, 'd2',
     +         ival))
      start(2) = ny + 5
      count(2) = ny
      call bad('put_vara_double_all(oob)',
     +         nfmpi_put_vara_double_all(ncid, vd, start, count, dbuf))
      start(2) = 1
      call bad('put_vara_int_all(bad varid)',
     +         nfmpi_put_vara_int_all(ncid, 77, start, count, ibuf))
      start(1) = x0
      start(2) = 1
      call bad('put_var1_double_all(ERANGE)',
     +         nfmpi_put_var1_double_all(ncid, vi, start, 1d20))
      call ok(nfmpi_close(ncid))

C     ---- read back ----
      call ok(nfmpi_open(MPI_COMM_WORLD, trim(path), NF_NOWRITE,
     +        MPI_INFO_NULL, ncid))
      call ok(nfmpi_inq_dimlen(ncid, dt, ntime))
      call ok(nfmpi_get_att_double(ncid, vd, 'scale', scale))
      if (rank .eq. 0) print '(a,i3,2f6.2)', 'inq: ntime, scale',
     +    ntime, scale
      chk = 0
      call ok(nfmpi_get_var_double_all(ncid, vd, all))
      do k = 1, ny * nx
        chk = chk + all(k) * (1 + mod(k, 7) * 0.125d0)
      end do
      call ok(nfmpi_get_var_int_all(ncid, vi, iall))
      do k = 1, ny * nx
        chk = chk + iall(k) * (1 + mod(k, 5) * 0.25d0)
      end do
      start(1) = 1
      start(2) = 1
      count(1) = nx
      count(2) = ntime
      call ok(nfmpi_get_vara_double_all(ncid, vrec, start, count, all))
      do k = 1, ntime * nx
        chk = chk + all(k) * (1 + mod(k, 3) * 0.5d0)
      end do
      call ok(nfmpi_begin_indep_data(ncid))
      call ok(nfmpi_get_var_real(ncid, vr, rbuf))
      call ok(nfmpi_get_vara_int(ncid, vreci, start, count, iall))
      call ok(nfmpi_end_indep_data(ncid))
      do k = 1, nxl
        chk = chk + rbuf(k) * k
      end do
      do k = 1, ntime * nx
        chk = chk + iall(k) * 3
      end do
      call bad('get_var_int_all(bad varid)',
     +         nfmpi_get_var_int_all(ncid, 77, iall))
      call ok(nfmpi_close(ncid))
      call MPI_Allreduce(chk, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM,
     +                   MPI_COMM_WORLD, err)
      if (rank .eq. 0) print '(a,f20.6)', 'checksum', total
      call MPI_Finalize(err)
      end

C     A call that must succeed.
      subroutine ok(err)
      implicit none
      include 'mpif.h'
      include 'pnetcdf.inc'
      integer err, rank, ierr
      common /ctx/ rank
      if (err .ne. NF_NOERR) then
        print *, 'rank', rank, ' error ', err, nfmpi_strerror(err)
        call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
      end if
      end

C     A deliberately bad call: rank 0 prints its code.
      subroutine bad(label, err)
      implicit none
      character*(*) label
      integer err, rank
      common /ctx/ rank
      if (rank .eq. 0) print '(a28,i5)', label, err
      end
