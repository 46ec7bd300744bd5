/*
 * Coupled test component: run as "model" (M ranks) and as "assim" (N ranks), launched as two
 * separate MPI jobs by dtfrun; the config decides file or transfer mode per file. Per cycle c:
 *   model  creates state.nc and writes S(c)            (row blocks over its ranks)
 *   assim  opens state.nc, checks S(c)                 (column blocks over its ranks)
 *   assim  creates state.nc again and writes R(c)      (role reversal on the same path)
 *   model  writes and reads back private.nc, which no [FILE] pattern matches: plain PnetCDF while
 *          dtf is active (a file dtf wrongly took over would wait for a peer and time out);
 *   model  opens state.nc, checks R(c);
 *   model  writes hist.<c>.nc (matches "hist.%.nc"), assim reads and checks it.
 * Odd cycles use put/get_vara, even cycles the same regions through put/get_varn (or as
 * FILEMODE_WRITE_VARN / FILEMODE_READ_VARN say, see use_varn()). With FILEMODE_RECORDS the shared
 * files also hold a record variable (see records()).
 * This order also suits transfer mode, where a writer's dtf_transfer waits for its reader.
 * The model sleeps before each create, so an open that did not wait for the hand-off would fail or
 * read the previous cycle's values. With FILEMODE_SIZES=1 every rank prints, before each close, what
 * ncmpi_inq_put_size, _inq_get_size, _inq_file_info and _get_file_info say (coupled.py sizes compares the
 * two modes).
 * Exit status: 0 ok, 1 wrong data, 2 dtf or PnetCDF error.
 *
 * usage: filemode (model|assim) CONFIG DIR CYCLES [NY NX]
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "coupled.h"

static int rank, nranks;
static const char *role;

static double value(int which, int cycle, MPI_Offset j, MPI_Offset i) {
    return which * 1e7 + cycle * 1e5 + (double)j * 100 + (double)i;
}

/* Whether cycle `cycle` (from 1) accesses the field through varn: even cycles, unless the environment
 * variable `name` gives one character per cycle ('1': varn, '0': vara), so that a test can change the
 * pattern of one side in the middle of a run (replay). */
static int use_varn(const char *name, int cycle) {
    const char *flags = getenv(name);
    if (!flags || (size_t)cycle > strlen(flags)) return cycle % 2 == 0;
    return flags[cycle - 1] == '1';
}

/* FILEMODE_RECORDS gives one digit per cycle: the records of a variable series(t, x) (t unlimited) in
 * the files dtf handles, written in column blocks; FILEMODE_READ_RECORDS (default the same) the records
 * their readers get, before anything else and without asking how many there are, so that with
 * replay_io=1 the gets are checked against the replayed plan's record count. 0: no such variable. */
static int records(const char *name, int which, int cycle) {
    const char *digits = getenv(name);
    if (!digits) digits = getenv("FILEMODE_RECORDS");
    if (which == 4 || !digits || (size_t)cycle > strlen(digits)) return 0; /* not in private.nc */
    return digits[cycle - 1] - '0';
}

static void write_series(int ncid, int var, int which, int cycle, MPI_Offset nrec, MPI_Offset nx) {
    MPI_Offset start[2] = {0, 0}, count[2] = {nrec, 0};
    block(nx, nranks, rank, &start[1], &count[1]);
    double *buf = malloc(sizeof(double) * (size_t)(count[0] * count[1] + 1));
    for (MPI_Offset t = 0; t < nrec; t++)
        for (MPI_Offset i = 0; i < count[1]; i++) buf[t * count[1] + i] = value(which + 10, cycle, t, start[1] + i);
    CHECK(ncmpi_put_vara_double_all(ncid, var, start, count, buf));
    free(buf);
}

/* The records in reversed column blocks (another decomposition than the writer's). */
static int read_series(int ncid, const char *path, int which, int cycle, MPI_Offset nrec, MPI_Offset nx) {
    int var, bad = 0;
    CHECK(ncmpi_inq_varid(ncid, "series", &var));
    MPI_Offset start[2] = {0, 0}, count[2] = {nrec, 0};
    block(nx, nranks, nranks - 1 - rank, &start[1], &count[1]);
    double *buf = malloc(sizeof(double) * (size_t)(count[0] * count[1] + 1));
    CHECK(ncmpi_get_vara_double_all(ncid, var, start, count, buf));
    for (MPI_Offset t = 0; t < nrec && !bad; t++)
        for (MPI_Offset i = 0; i < count[1] && !bad; i++) {
            double want = value(which + 10, cycle, t, start[1] + i), got = buf[t * count[1] + i];
            if (memcmp(&want, &got, sizeof want) != 0) {
                fprintf(stderr, "%s rank %d: %s cycle %d series[%lld,%lld] = %.17g, expected %.17g\n", role, rank,
                        path, cycle, (long long)t, (long long)(start[1] + i), got, want);
                bad = 1;
            }
        }
    free(buf);
    return bad;
}

/* FILEMODE_SIZES=1: one line of what PnetCDF's accounting calls say about the open file. */
static void print_sizes(int ncid, const char *path, const char *how, int cycle) {
    if (!getenv("FILEMODE_SIZES")) return;
    MPI_Offset put = -1, get = -1;
    MPI_Info infos[2]; /* ncmpi_inq_file_info, and its old name ncmpi_get_file_info (S3D-IO's) */
    CHECK(ncmpi_inq_put_size(ncid, &put));
    CHECK(ncmpi_inq_get_size(ncid, &get));
    CHECK(ncmpi_inq_file_info(ncid, &infos[0]));
    CHECK(ncmpi_get_file_info(ncid, &infos[1]));
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char line[4096];
    int n = snprintf(line, sizeof line, "sizes %s rank %d %s %s cycle %d: put %lld get %lld", role, rank, how,
                     base, cycle, (long long)put, (long long)get);
    for (int which = 0; which < 2; which++) {
        n += snprintf(line + n, sizeof line - (size_t)n, which ? " get_file_info" : " info");
        int keys = 0;
        MPI_Info_get_nkeys(infos[which], &keys);
        for (int i = 0; i < keys && n < (int)sizeof line - 300; i++) {
            char key[MPI_MAX_INFO_KEY + 1], value[256];
            int found = 0;
            MPI_Info_get_nthkey(infos[which], i, key);
            MPI_Info_get(infos[which], key, (int)sizeof value - 1, value, &found);
            n += snprintf(line + n, sizeof line - (size_t)n, " %s=%s", key, found ? value : "?");
        }
        MPI_Info_free(&infos[which]);
    }
    printf("%s\n", line);
}

static void write_file(const char *path, int which, int cycle, MPI_Offset ny, MPI_Offset nx) {
    int ncid, dims[3], var, series = -1;
    MPI_Offset start[2], count[2];
    const int nrec = records("FILEMODE_RECORDS", which, cycle);
    usleep(200000); /* a reader that does not wait for the hand-off runs ahead and fails */
    CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "y", ny, &dims[0]));
    CHECK(ncmpi_def_dim(ncid, "x", nx, &dims[1]));
    CHECK(ncmpi_def_var(ncid, "field", NC_DOUBLE, 2, dims, &var));
    if (nrec > 0) {
        CHECK(ncmpi_def_dim(ncid, "t", NC_UNLIMITED, &dims[2]));
        int sdims[2] = {dims[2], dims[1]};
        CHECK(ncmpi_def_var(ncid, "series", NC_DOUBLE, 2, sdims, &series));
    }
    CHECK(ncmpi_put_att_int(ncid, NC_GLOBAL, "cycle", NC_INT, 1, &cycle));
    CHECK(ncmpi_enddef(ncid));
    if (nrec > 0) {
        usleep(300000); /* the readers' gets of the series come before this side's dtf_transfer */
        write_series(ncid, series, which, cycle, nrec, nx);
    }
    block(ny, nranks, rank, &start[0], &count[0]); /* rows */
    start[1] = 0;
    count[1] = nx;
    double *buf = malloc(sizeof(double) * (size_t)(count[0] * count[1] + 1));
    for (MPI_Offset j = 0; j < count[0]; j++)
        for (MPI_Offset i = 0; i < nx; i++) buf[j * nx + i] = value(which, cycle, start[0] + j, i);
    /* FILEMODE_LATE_PUT=1: rank 0 writes its last row after dtf_transfer, independently, so that one
     * writer rank has a write the last transfer did not carry and the others have none. */
    const int late_put = getenv("FILEMODE_LATE_PUT") != NULL, late = late_put && rank == 0 && count[0] > 0;
    if (late) count[0]--;
    if (!use_varn("FILEMODE_WRITE_VARN", cycle)) {
        CHECK(ncmpi_put_vara_double_all(ncid, var, start, count, buf));
    } else { /* even cycles: the same rows as one varn call, one (start, count) pair per row */
        int num = (int)count[0];
        MPI_Offset **starts = malloc(sizeof(MPI_Offset *) * (size_t)(2 * num + 1)), **counts = starts + num;
        MPI_Offset *rows = malloc(sizeof(MPI_Offset) * (size_t)(4 * num + 1));
        for (int r = 0; r < num; r++) {
            rows[4 * r] = start[0] + r, rows[4 * r + 1] = 0, rows[4 * r + 2] = 1, rows[4 * r + 3] = nx;
            starts[r] = &rows[4 * r];
            counts[r] = &rows[4 * r + 2];
        }
        CHECK(ncmpi_put_varn_double_all(ncid, var, num, starts, counts, buf));
        free(rows);
        free(starts);
    }
    CHECK(dtf_transfer(path, ncid));
    if (late_put) {
        CHECK(ncmpi_begin_indep_data(ncid));
        if (late) {
            MPI_Offset row[2] = {start[0] + count[0], 0}, one[2] = {1, nx};
            CHECK(ncmpi_put_vara_double(ncid, var, row, one, buf + count[0] * nx));
        }
        CHECK(ncmpi_end_indep_data(ncid));
    }
    print_sizes(ncid, path, "wrote", cycle);
    CHECK(ncmpi_close(ncid));
    free(buf);
}

static int read_file(const char *path, int which, int cycle, MPI_Offset ny, MPI_Offset nx) {
    int ncid, var, file_cycle, bad = 0;
    MPI_Offset start[2], count[2];
    CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    const int nrec = records("FILEMODE_READ_RECORDS", which, cycle);
    if (nrec > 0) bad |= read_series(ncid, path, which, cycle, nrec, nx);
    CHECK(ncmpi_get_att_int(ncid, NC_GLOBAL, "cycle", &file_cycle));
    CHECK(ncmpi_inq_varid(ncid, "field", &var));
    /* A variable the writer never defined: NC_ENOTVAR, as on a real file; in transfer mode (no file
     * on disk) dtf_errmsg() also names it and the writer. */
    int missing, rc = ncmpi_inq_varid(ncid, "never_defined", &missing);
    if (rc != NC_ENOTVAR || (access(path, F_OK) != 0 && !strstr(dtf_errmsg(), "never_defined"))) {
        fprintf(stderr, "%s rank %d: inq_varid of an undefined variable gave %d, message '%s'\n", role, rank, rc,
                dtf_errmsg());
        bad = 1;
    }
    start[0] = 0;
    count[0] = ny;
    block(nx, nranks, rank, &start[1], &count[1]); /* columns: another decomposition */
    double *buf = malloc(sizeof(double) * (size_t)(count[0] * count[1] + 1));
    if (!use_varn("FILEMODE_READ_VARN", cycle)) {
        CHECK(ncmpi_get_vara_double_all(ncid, var, start, count, buf));
    } else { /* even cycles: the columns as a varn of single-column boxes */
        int num = (int)count[1];
        MPI_Offset **starts = malloc(sizeof(MPI_Offset *) * (size_t)(2 * num + 1)), **counts = starts + num;
        MPI_Offset *cols = malloc(sizeof(MPI_Offset) * (size_t)(4 * num + 1));
        for (int c = 0; c < num; c++) {
            cols[4 * c] = 0, cols[4 * c + 1] = start[1] + c, cols[4 * c + 2] = ny, cols[4 * c + 3] = 1;
            starts[c] = &cols[4 * c];
            counts[c] = &cols[4 * c + 2];
        }
        double *colbuf = malloc(sizeof(double) * (size_t)(count[0] * count[1] + 1));
        CHECK(ncmpi_get_varn_double_all(ncid, var, num, starts, counts, colbuf));
        free(cols);
        free(starts);
        for (MPI_Offset c = 0; c < count[1]; c++) /* column-major in colbuf -> row-major in buf */
            for (MPI_Offset j = 0; j < ny; j++) buf[j * count[1] + c] = colbuf[c * ny + j];
        free(colbuf);
    }
    CHECK(dtf_transfer(path, ncid));
    print_sizes(ncid, path, "read", cycle);
    CHECK(ncmpi_close(ncid));
    if (file_cycle != cycle) {
        fprintf(stderr, "%s rank %d: %s has cycle %d, expected %d\n", role, rank, path, file_cycle, cycle);
        bad = 1;
    }
    for (MPI_Offset j = 0; j < count[0] && !bad; j++)
        for (MPI_Offset i = 0; i < count[1]; i++) {
            double want = value(which, cycle, j, start[1] + i), got = buf[j * count[1] + i];
            if (memcmp(&want, &got, sizeof want) != 0) {
                fprintf(stderr, "%s rank %d: %s cycle %d [%lld,%lld] = %.17g, expected %.17g\n", role, rank,
                        path, cycle, (long long)j, (long long)(start[1] + i), got, want);
                bad = 1;
                break;
            }
        }
    free(buf);
    return bad;
}

int main(int argc, char **argv) {
    int provided; /* MPI_THREAD_MULTIPLE: dtf runs its progress thread (unless DTF_PROGRESS_THREAD=0) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 5) {
        fprintf(stderr, "usage: filemode (model|assim) CONFIG DIR CYCLES [NY NX]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    role = argv[1];
    const char *config = argv[2], *dir = argv[3];
    int cycles = atoi(argv[4]);
    MPI_Offset ny = argc > 6 ? atoll(argv[5]) : 12, nx = argc > 6 ? atoll(argv[6]) : 10;
    int is_model = strcmp(role, "model") == 0, bad = 0, err;

    double t0 = MPI_Wtime();
    if ((err = dtf_init(config, role)) != DTF_SUCCESS) {
        fprintf(stderr, "%s rank %d: dtf_init failed after %.1f s (%.2f s of CPU): %s: %s\n", role, rank,
                MPI_Wtime() - t0, (double)clock() / CLOCKS_PER_SEC, dtf_strerror(err), dtf_errmsg());
        MPI_Finalize();
        return 2;
    }
    char state[4096], hist[4096], private_file[4096];
    snprintf(state, sizeof state, "%s/state.nc", dir);
    snprintf(private_file, sizeof private_file, "%s/private.nc", dir);
    for (int c = 1; c <= cycles; c++) {
        snprintf(hist, sizeof hist, "%s/hist.%04d.nc", dir, c);
        if (is_model) {
            write_file(state, 1, c, ny, nx);
            write_file(private_file, 4, c, ny, nx);
            bad |= read_file(private_file, 4, c, ny, nx);
            bad |= read_file(state, 2, c, ny, nx);
            write_file(hist, 3, c, ny, nx);
        } else {
            bad |= read_file(state, 1, c, ny, nx);
            write_file(state, 2, c, ny, nx);
            bad |= read_file(hist, 3, c, ny, nx);
        }
    }
    if ((err = dtf_finalize()) != DTF_SUCCESS) {
        fprintf(stderr, "%s rank %d: dtf_finalize failed: %s\n", role, rank, dtf_errmsg());
        bad = 2;
    }
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d ranks, %d cycles, %s\n", role, nranks, cycles, any_bad ? "WRONG DATA" : "all values verified");
    MPI_Finalize();
    return any_bad;
}
