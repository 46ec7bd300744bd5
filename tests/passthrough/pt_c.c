/*
 * Passthrough test program (C): exercises a broad slice of the PnetCDF API on 2+ ranks. Run once
 * against plain PnetCDF and once with dtf interposed (no config, no dtf_* call); the file and the
 * output (rank 0 only: error codes of deliberate bad calls and checksums) must be identical.
 *
 *   pt_c <file.nc>
 *
 * Exit status 1 if any call expected to succeed fails.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NY 4
#define NXL 4 /* columns per rank */

static int rank, nprocs;

/* Calls that must succeed. */
#define OK(call)                                                                                   \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != NC_NOERR) {                                                                      \
            fprintf(stderr, "rank %d line %d: %s -> %d %s\n", rank, __LINE__, #call, e_,           \
                    ncmpi_strerror(e_));                                                           \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)
/* Deliberately bad calls: rank 0 prints the code (same on every rank by construction). */
#define BAD(label, call)                                                                           \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (rank == 0) printf("%-28s %4d %s\n", label, e_, ncmpi_strerrno(e_));                    \
    } while (0)

/* Order-independent checksum of everything a rank read, summed over ranks. */
static double sum;
static void add(double v, int i) { sum += v * (1.0 + (i % 7) * 0.125); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 2) {
        if (rank == 0) fprintf(stderr, "usage: pt_c file.nc\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *path = argv[1];
    const MPI_Offset NX = (MPI_Offset)NXL * nprocs, x0 = (MPI_Offset)rank * NXL;
    int ncid, old, dt, dy, dx, d2, d2b, i2, s2, n2, f1, c1, b1, u1, ui1, ll1, rec, reci;

    /* ---- define ---- */
    OK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    OK(ncmpi_set_fill(ncid, NC_FILL, &old));
    OK(ncmpi_def_dim(ncid, "time", NC_UNLIMITED, &dt));
    OK(ncmpi_def_dim(ncid, "y", NY, &dy));
    OK(ncmpi_def_dim(ncid, "x", NX, &dx));
    int yx[2] = {dy, dx}, tx[2] = {dt, dx};
    OK(ncmpi_def_var(ncid, "d2", NC_DOUBLE, 2, yx, &d2));
    OK(ncmpi_def_var(ncid, "d2b", NC_DOUBLE, 2, yx, &d2b));
    OK(ncmpi_def_var(ncid, "i2", NC_INT, 2, yx, &i2));
    OK(ncmpi_def_var(ncid, "s2", NC_SHORT, 2, yx, &s2));
    OK(ncmpi_def_var(ncid, "n2", NC_INT, 2, yx, &n2));
    OK(ncmpi_def_var(ncid, "f1", NC_FLOAT, 1, &dx, &f1));
    OK(ncmpi_def_var(ncid, "c1", NC_CHAR, 1, &dx, &c1));
    OK(ncmpi_def_var(ncid, "b1", NC_BYTE, 1, &dx, &b1));
    OK(ncmpi_def_var(ncid, "u1", NC_USHORT, 1, &dx, &u1));
    OK(ncmpi_def_var(ncid, "ui1", NC_UINT, 1, &dx, &ui1));
    OK(ncmpi_def_var(ncid, "ll1", NC_INT64, 1, &dx, &ll1));
    OK(ncmpi_def_var(ncid, "rec", NC_DOUBLE, 2, tx, &rec));
    OK(ncmpi_def_var(ncid, "reci", NC_INT, 2, tx, &reci));
    int fill = -99;
    OK(ncmpi_def_var_fill(ncid, n2, 0, &fill));
    double scale[2] = {0.5, 2.0};
    int version = 3;
    float range[2] = {-1.0f, 1.0f};
    OK(ncmpi_put_att_text(ncid, NC_GLOBAL, "title", 16, "passthrough test"));
    OK(ncmpi_put_att_int(ncid, NC_GLOBAL, "version", NC_INT, 1, &version));
    OK(ncmpi_put_att_double(ncid, NC_GLOBAL, "scale", NC_DOUBLE, 2, scale));
    OK(ncmpi_put_att_text(ncid, d2, "units", 1, "m"));
    OK(ncmpi_put_att_float(ncid, f1, "valid_range", NC_FLOAT, 2, range));
    OK(ncmpi_enddef(ncid));

    /* ---- write: blocking collective, every kind ---- */
    double dbuf[NY * NXL];
    int ibuf[NY * NXL];
    short sbuf[NY * NXL];
    for (int k = 0; k < NY * NXL; k++) {
        dbuf[k] = rank * 100 + k + 0.25;
        ibuf[k] = rank * 1000 + k;
        sbuf[k] = (short)(rank * 10 + k);
    }
    MPI_Offset start[2] = {0, x0}, count[2] = {NY, NXL}, stride[2] = {1, nprocs};
    OK(ncmpi_put_vara_double_all(ncid, d2, start, count, dbuf));           /* vara, typed */
    MPI_Offset sstart[2] = {0, rank};                                        /* interleaved columns */
    OK(ncmpi_put_vars_int_all(ncid, i2, sstart, count, stride, ibuf));       /* vars */
    MPI_Offset imap[2] = {1, NY};                                            /* buffer is transposed */
    OK(ncmpi_put_varm_short_all(ncid, s2, start, count, NULL, imap, sbuf));  /* varm */
    for (int k = 0; k < NXL; k++) {                                          /* var1 */
        MPI_Offset idx = x0 + k;
        float v = (float)(rank + k * 0.5);
        OK(ncmpi_put_var1_float_all(ncid, f1, &idx, &v));
    }
    /* flexible API with a noncontiguous buffer: every other double of a 2x larger array */
    double wide[2 * NY * NXL];
    for (int k = 0; k < 2 * NY * NXL; k++) wide[k] = (k % 2) ? -1.0 : rank + k * 0.01;
    MPI_Datatype every_other;
    MPI_Type_vector(NY * NXL, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    OK(ncmpi_put_vara_all(ncid, d2b, start, count, wide, 1, every_other));
    MPI_Type_free(&every_other);
    /* varn: two 1-row blocks per rank (rows rank and rank+2) */
    MPI_Offset s0[2] = {rank, x0}, s1[2] = {rank + 2, x0}, c0[2] = {1, NXL};
    MPI_Offset *starts[2] = {s0, s1}, *counts[2] = {c0, c0};
    OK(ncmpi_put_varn_int_all(ncid, n2, 2, starts, counts, ibuf));
    /* record variable, record 0, collective */
    MPI_Offset rstart[2] = {0, x0}, rcount[2] = {1, NXL};
    OK(ncmpi_put_vara_double_all(ncid, rec, rstart, rcount, dbuf));

    /* ---- write: blocking independent ---- */
    OK(ncmpi_begin_indep_data(ncid));
    if (rank == 0) {
        char text[64];
        for (int k = 0; k < NX; k++) text[k] = (char)('a' + k % 26);
        OK(ncmpi_put_var_text(ncid, c1, text)); /* var: whole variable */
    }
    signed char sc[NXL] = {-1, 2, -3, 4};
    OK(ncmpi_put_vara_schar(ncid, b1, &x0, &count[1], sc));
    for (int k = 0; k < NXL; k++) {
        MPI_Offset idx = x0 + k;
        long long v = (long long)(rank + 1) << (33 + k);
        OK(ncmpi_put_var1_longlong(ncid, ll1, &idx, &v));
    }
    OK(ncmpi_end_indep_data(ncid));

    /* ---- write: nonblocking iput + wait_all (records 1 and 2 grow the unlimited dimension) ---- */
    int req[4], st[4];
    unsigned int ubuf[NXL];
    for (int k = 0; k < NXL; k++) ubuf[k] = 4000000000u - (unsigned)(rank * 10 + k);
    OK(ncmpi_iput_vara_uint(ncid, ui1, &x0, &count[1], ubuf, &req[0]));
    rstart[0] = 1;
    OK(ncmpi_iput_vara_double(ncid, rec, rstart, rcount, dbuf + NXL, &req[1]));
    rstart[0] = 2;
    OK(ncmpi_iput_vara_double(ncid, rec, rstart, rcount, dbuf + 2 * NXL, &req[2]));
    OK(ncmpi_iput_vara(ncid, reci, rstart, rcount, ibuf, NXL, MPI_INT, &req[3])); /* flexible */
    OK(ncmpi_wait_all(ncid, 4, req, st));
    for (int k = 0; k < 4; k++) OK(st[k]);

    /* ---- write: buffered bput ---- */
    OK(ncmpi_buffer_attach(ncid, 4096));
    unsigned short us[NXL] = {1, 65535, 3, 40000};
    OK(ncmpi_bput_vara_ushort(ncid, u1, &x0, &count[1], us, &req[0]));
    for (int r = 0; r < 2; r++) {
        rstart[0] = r;
        OK(ncmpi_bput_vara_int(ncid, reci, rstart, rcount, ibuf + (r + 1) * NXL, &req[1 + r]));
    }
    OK(ncmpi_wait_all(ncid, 3, req, st));
    for (int k = 0; k < 3; k++) OK(st[k]);
    OK(ncmpi_buffer_detach(ncid));

    /* ---- deliberate errors while writing ---- */
    int v;
    BAD("inq_varid(bad ncid)", ncmpi_inq_varid(NC_MAX_NFILES + 7, "d2", &v));
    MPI_Offset oob[2] = {NY + 5, 0};
    BAD("put_vara_double_all(oob)", ncmpi_put_vara_double_all(ncid, d2, oob, count, dbuf));
    BAD("put_vara_int_all(bad varid)", ncmpi_put_vara_int_all(ncid, 77, start, count, ibuf));
    double huge = 1e20;
    MPI_Offset at[2] = {NY - 1, x0};
    BAD("put_var1_double_all(ERANGE)", ncmpi_put_var1_double_all(ncid, i2, at, &huge));
    OK(ncmpi_close(ncid));

    /* ---- read back ---- */
    OK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    int ndims, nvars, ngatts, unlim;
    MPI_Offset ntime, attlen;
    OK(ncmpi_inq(ncid, &ndims, &nvars, &ngatts, &unlim));
    OK(ncmpi_inq_dimlen(ncid, unlim, &ntime));
    OK(ncmpi_inq_varid(ncid, "rec", &rec));
    char title[64] = {0};
    OK(ncmpi_inq_attlen(ncid, NC_GLOBAL, "title", &attlen));
    OK(ncmpi_get_att_text(ncid, NC_GLOBAL, "title", title));
    OK(ncmpi_get_att_double(ncid, NC_GLOBAL, "scale", scale));
    if (rank == 0)
        printf("inq: ndims=%d nvars=%d ngatts=%d unlim=%d ntime=%lld title=%s(%lld) scale=%g,%g\n", ndims,
               nvars, ngatts, unlim, (long long)ntime, title, (long long)attlen, scale[0], scale[1]);

    int n = NY * (int)NX, k;
    double *all = malloc(sizeof(double) * n * 3);
    int *iall = malloc(sizeof(int) * n);
    OK(ncmpi_get_var_double_all(ncid, d2, all));
    for (k = 0; k < n; k++) add(all[k], k);
    OK(ncmpi_get_var_all(ncid, d2b, all, n, MPI_DOUBLE)); /* flexible */
    for (k = 0; k < n; k++) add(all[k], k + 1);
    OK(ncmpi_get_vars_int_all(ncid, i2, sstart, count, stride, ibuf));
    for (k = 0; k < NY * NXL; k++) add(ibuf[k], k + 2);
    OK(ncmpi_get_varm_short_all(ncid, s2, start, count, NULL, imap, sbuf));
    for (k = 0; k < NY * NXL; k++) add(sbuf[k], k + 3);
    OK(ncmpi_get_var_int_all(ncid, n2, iall));
    for (k = 0; k < n; k++) add(iall[k], k + 4);
    MPI_Offset rc[2] = {ntime, NX}, r0[2] = {0, 0};
    OK(ncmpi_get_vara_double_all(ncid, rec, r0, rc, all));
    for (k = 0; k < ntime * NX; k++) add(all[k], k + 5);
    /* nonblocking reads */
    float fv[64];
    long long llv[64];
    OK(ncmpi_iget_var_float(ncid, f1, fv, &req[0]));
    OK(ncmpi_iget_var_longlong(ncid, ll1, llv, &req[1]));
    OK(ncmpi_iget_vara_uint(ncid, ui1, &x0, &count[1], ubuf, &req[2]));
    OK(ncmpi_iget_vara(ncid, u1, &x0, &count[1], us, NXL, MPI_UNSIGNED_SHORT, &req[3]));
    OK(ncmpi_wait_all(ncid, 4, req, st));
    for (k = 0; k < NX; k++) add(fv[k], k + 6), add((double)llv[k], k + 7);
    for (k = 0; k < NXL; k++) add(ubuf[k], k + 8), add(us[k], k + 9);
    /* independent reads */
    OK(ncmpi_begin_indep_data(ncid));
    char text[64];
    OK(ncmpi_get_var_text(ncid, c1, text));
    for (k = 0; k < NX; k++) add(text[k], k + 10);
    OK(ncmpi_get_vara_schar(ncid, b1, &x0, &count[1], sc));
    for (k = 0; k < NXL; k++) add(sc[k], k + 11);
    MPI_Offset one[2] = {NY - 1, x0};
    int iv;
    OK(ncmpi_get_var1_int(ncid, i2, one, &iv)); /* the ERANGE'd element */
    add(iv, 12);
    OK(ncmpi_end_indep_data(ncid));

    /* ---- deliberate errors while reading ---- */
    BAD("get_var_int_all(bad varid)", ncmpi_get_var_int_all(ncid, 77, iall));
    MPI_Offset oob1[2] = {0, NX + 3};
    BAD("get_var1_double_all(oob)", ncmpi_get_var1_double_all(ncid, d2, oob1, all));
    short sv;
    MPI_Offset big[1] = {x0 + 1};
    BAD("get_var1_short_all(ERANGE)", ncmpi_get_var1_short_all(ncid, ll1, big, &sv));
    BAD("close(bad ncid)", ncmpi_close(-1));
    OK(ncmpi_close(ncid));
    free(all);
    free(iall);

    double total;
    MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %.6f\n", total);
    MPI_Finalize();
    return 0;
}
