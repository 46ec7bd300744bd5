/*
 * Coupled test component: the I/O pattern of SCALE-LETKF, as the original DTF's ensemble benchmark
 * reproduces it, per cycle c and ensemble member m. Run as "model" (MEMBERS x P ranks: one
 * communicator of P ranks per member) and as "assim" (N ranks), launched as two jobs by dtfrun.
 *   model  creates hist.<m>.<c>.nc (89 variables) and anal.<m>.<c>.nc (143 variables): header,
 *          ncmpi_buffer_attach, bput_vara_float (even variables), iput_vara_float (odd ones),
 *          put_var1_double_all (the time), wait_all(NC_REQ_ALL), dtf_transfer, inq_put_size,
 *          buffer_detach, close (row blocks of the member's ranks, uneven);
 *   assim  reads 20 variables of each member's hist and 11 of its anal (iget_vara_float, wait_all,
 *          dtf_transfer; column blocks, uneven), then opens each anal again with NC_WRITE and writes
 *          those 11 variables back (iput_vara_float, wait_all, dtf_transfer, close);
 *   model  reads the 11 variables back with a flexible ncmpi_iget_vara whose memory type is an MPI
 *          subarray of a halo-padded array (the halo must stay untouched).
 * Any other role (e.g. "obs", SCALE-LETKF's observation operator, or "monitor") is one more reader of
 * every member's hist file (a writer=/readers= rule): 10 variables (every 3rd from the second) with
 * blocking get_vara_float_all, no dtf_transfer (the close completes it); "obs" in row blocks over its
 * ranks, any other in blocks of levels (a rank may get none).
 * Every value read is checked against the formula, and written in order to DIR/<role>.<rank>.dump
 * with what ncmpi_inq_put_size / _get_size answer before every close, so that coupled.py compares
 * the file-mode and transfer-mode runs byte for byte. With LETKF_UNWRITTEN=1, in the first cycle the
 * model also reads a variable the assimilation did not write back: file mode gives the model's own
 * values of the first session; transfer mode must refuse (DTF_ERR_UNSUPPORTED, "refused" printed by
 * the member's first rank), never return other values. With LETKF_LATE_CLOSE=MS the assimilation
 * waits MS milliseconds between its dtf_transfer on each analysis file it reads and the close (the
 * model writes a persist=1 file meanwhile: its Persisted comes before the reader's close).
 * Exit status: 0 ok, 1 wrong data, 2 error.
 *
 * usage: letkf_pattern (model|assim|ROLE) CONFIG DIR CYCLES MEMBERS
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coupled.h"

enum { NZ = 3, NY = 13, NX = 10, HALO = 2, NHIST = 89, NANAL = 143, NREAD_HIST = 20, NUPDATE = 11, NREAD_OBS = 10 };
enum { HIST = 0, ANAL = 1, UPDATE = 2 }; /* what a value is: the model's hist, its anal, the analysis */

static int rank;
static const char *role;
static int late_close_ms; /* LETKF_LATE_CLOSE */
static FILE *dump;
static int bad;

/* Exact in a float (below 2^24) for up to 4 members and 4 cycles. */
static float value(int kind, int member, int cycle, int var, MPI_Offset k, MPI_Offset j, MPI_Offset i) {
    return (float)((((cycle * 4 + member) * 3 + kind) * 150 + var) * 1000 + (k * NY + j) * NX + i);
}

static void path_of(char *out, size_t n, const char *dir, const char *name, int member, int cycle) {
    snprintf(out, n, "%s/%s.%d.%d.nc", dir, name, member, cycle);
}

/* What the program saw, for the comparison of the two modes. */
static void record_sizes(int ncid) {
    MPI_Offset sizes[2];
    CHECK(ncmpi_inq_put_size(ncid, &sizes[0]));
    CHECK(ncmpi_inq_get_size(ncid, &sizes[1]));
    fwrite(sizes, sizeof sizes, 1, dump);
}

/* The variables the assimilation reads of the history file (every 4th) and updates in the analysis
 * file (every 13th). */
static int hist_read(int n) { return 4 * n; }
static int anal_updated(int n) { return 13 * n; }
/* The history variables the other readers read. */
static int hist_obs(int n) { return 3 * n + 1; }

/* model: write one member's file with the model's puts; `nvars` float variables (z, y, x). */
static void write_model_file(MPI_Comm comm, const char *path, const char *prefix, int nvars, int kind, int member,
                             int cycle) {
    int mrank, msize, ncid, dims[3], timevar, varids[NANAL], reqs[NANAL];
    MPI_Comm_rank(comm, &mrank);
    MPI_Comm_size(comm, &msize);
    MPI_Offset start[3] = {0, 0, 0}, count[3] = {NZ, 0, NX};
    block(NY, msize, mrank, &start[1], &count[1]);
    CHECK(ncmpi_create(comm, path, NC_CLOBBER | NC_64BIT_OFFSET, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "z", NZ, &dims[0]));
    CHECK(ncmpi_def_dim(ncid, "y", NY, &dims[1]));
    CHECK(ncmpi_def_dim(ncid, "x", NX, &dims[2]));
    CHECK(ncmpi_def_var(ncid, "time", NC_DOUBLE, 0, NULL, &timevar));
    for (int v = 0; v < nvars; v++) {
        char name[16];
        snprintf(name, sizeof name, "%s%03d", prefix, v);
        CHECK(ncmpi_def_var(ncid, name, NC_FLOAT, 3, dims, &varids[v]));
        CHECK(ncmpi_put_att_text(ncid, varids[v], "units", 1, "K"));
    }
    CHECK(ncmpi_put_att_int(ncid, NC_GLOBAL, "cycle", NC_INT, 1, &cycle));
    CHECK(ncmpi_put_att_int(ncid, NC_GLOBAL, "member", NC_INT, 1, &member));
    CHECK(ncmpi_enddef(ncid));
    const size_t n = (size_t)(NZ * count[1] * NX);
    float *bufs = malloc(sizeof(float) * (n * (size_t)nvars + 1));
    CHECK(ncmpi_buffer_attach(ncid, (MPI_Offset)(sizeof(float) * n * (size_t)(nvars / 2 + 1))));
    for (int v = 0; v < nvars; v++) {
        float *buf = bufs + (size_t)v * n;
        for (MPI_Offset k = 0; k < NZ; k++)
            for (MPI_Offset j = 0; j < count[1]; j++)
                for (MPI_Offset i = 0; i < NX; i++)
                    buf[(k * count[1] + j) * NX + i] = value(kind, member, cycle, v, k, start[1] + j, i);
        if (v % 2 == 0)
            CHECK(ncmpi_bput_vara_float(ncid, varids[v], start, count, buf, &reqs[v]));
        else
            CHECK(ncmpi_iput_vara_float(ncid, varids[v], start, count, buf, &reqs[v]));
    }
    const double time = cycle * 3600.0;
    CHECK(ncmpi_put_var1_double_all(ncid, timevar, NULL, &time));
    CHECK(ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL));
    CHECK(dtf_transfer(path, ncid));
    record_sizes(ncid);
    CHECK(ncmpi_buffer_detach(ncid));
    CHECK(ncmpi_close(ncid));
    free(bufs);
}

/* model: read back the updated variables of the analysis file into halo-padded arrays. */
static void read_back(MPI_Comm comm, const char *path, int member, int cycle, int unwritten) {
    int mrank, msize, ncid, varid, reqs[NUPDATE];
    MPI_Comm_rank(comm, &mrank);
    MPI_Comm_size(comm, &msize);
    MPI_Offset start[3] = {0, 0, 0}, count[3] = {NZ, 0, NX};
    block(NY, msize, mrank, &start[1], &count[1]);
    const int py = (int)count[1] + 2 * HALO, px = NX + 2 * HALO;
    const size_t padded = (size_t)(NZ * py * px);
    int sizes[3] = {NZ, py, px}, subsizes[3] = {NZ, (int)count[1], NX}, starts[3] = {0, HALO, HALO};
    MPI_Datatype interior;
    MPI_Type_create_subarray(3, sizes, subsizes, starts, MPI_ORDER_C, MPI_FLOAT, &interior);
    MPI_Type_commit(&interior);
    float *bufs = malloc(sizeof(float) * padded * NUPDATE);
    for (size_t e = 0; e < padded * NUPDATE; e++) bufs[e] = -1.0f;
    CHECK(ncmpi_open(comm, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    for (int n = 0; n < NUPDATE; n++) {
        char name[16];
        snprintf(name, sizeof name, "a%03d", anal_updated(n));
        CHECK(ncmpi_inq_varid(ncid, name, &varid));
        CHECK(ncmpi_iget_vara(ncid, varid, start, count, bufs + (size_t)n * padded, 1, interior, &reqs[n]));
    }
    CHECK(ncmpi_wait_all(ncid, NUPDATE, reqs, NULL));
    for (int n = 0; n < NUPDATE; n++) {
        const float *buf = bufs + (size_t)n * padded;
        for (int k = 0; k < NZ; k++)
            for (int j = 0; j < py; j++)
                for (int i = 0; i < px; i++) {
                    const int inside = j >= HALO && j < HALO + count[1] && i >= HALO && i < HALO + NX;
                    const float want =
                        inside ? value(UPDATE, member, cycle, anal_updated(n), k, start[1] + j - HALO, i - HALO) : -1.0f;
                    if (buf[((size_t)k * py + j) * px + i] != want) bad = 1;
                    if (inside) fwrite(&buf[((size_t)k * py + j) * px + i], sizeof(float), 1, dump);
                }
    }
    if (unwritten) { /* a variable nobody wrote back: the model's own values in the file */
        const size_t n = (size_t)(NZ * count[1] * NX);
        float *buf = malloc(sizeof(float) * (n + 1));
        CHECK(ncmpi_inq_varid(ncid, "a001", &varid));
        const int rc = ncmpi_get_vara_float_all(ncid, varid, start, count, buf);
        if (rc == DTF_ERR_UNSUPPORTED) {
            if (mrank == 0) printf("model member %d: refused: %s\n", member, dtf_errmsg());
        } else {
            CHECK(rc);
            for (MPI_Offset k = 0; k < NZ; k++)
                for (MPI_Offset j = 0; j < count[1]; j++)
                    for (MPI_Offset i = 0; i < NX; i++)
                        if (buf[(k * count[1] + j) * NX + i] != value(ANAL, member, cycle, 1, k, start[1] + j, i)) bad = 1;
            if (mrank == 0) printf("model member %d: read the variable not written back\n", member);
        }
        free(buf);
    }
    CHECK(dtf_transfer(path, ncid));
    record_sizes(ncid);
    CHECK(ncmpi_close(ncid));
    MPI_Type_free(&interior);
    free(bufs);
}

/* assim: read `n` variables of a member's file (column blocks over the component) and check them. */
static void assim_read(const char *path, const char *prefix, int nread, int (*which)(int), int kind, int member,
                       int cycle) {
    int nranks, ncid, varid, file_cycle, reqs[NUPDATE + NREAD_HIST];
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Offset start[3] = {0, 0, 0}, count[3] = {NZ, NY, 0};
    block(NX, nranks, rank, &start[2], &count[2]);
    const size_t n = (size_t)(NZ * NY * count[2]);
    float *bufs = malloc(sizeof(float) * (n * (size_t)nread + 1));
    CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_get_att_int(ncid, NC_GLOBAL, "cycle", &file_cycle));
    if (file_cycle != cycle) bad = 1;
    for (int r = 0; r < nread; r++) {
        char name[16];
        snprintf(name, sizeof name, "%s%03d", prefix, which(r));
        CHECK(ncmpi_inq_varid(ncid, name, &varid));
        CHECK(ncmpi_iget_vara_float(ncid, varid, start, count, bufs + (size_t)r * n, &reqs[r]));
    }
    CHECK(ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL));
    CHECK(dtf_transfer(path, ncid));
    if (ncmpi_redef(ncid) != NC_EPERM) bad = 1; /* still opened read-only once its final header came */
    record_sizes(ncid);
    if (kind == ANAL && late_close_ms > 0) usleep((useconds_t)late_close_ms * 1000);
    CHECK(ncmpi_close(ncid));
    for (int r = 0; r < nread; r++)
        for (MPI_Offset k = 0; k < NZ; k++)
            for (MPI_Offset j = 0; j < NY; j++)
                for (MPI_Offset i = 0; i < count[2]; i++)
                    if (bufs[(size_t)r * n + (size_t)((k * NY + j) * count[2] + i)] !=
                        value(kind, member, cycle, which(r), k, j, start[2] + i))
                        bad = 1;
    fwrite(bufs, sizeof(float), n * (size_t)nread, dump);
    free(bufs);
}

/* Another reader of a member's history file (see the top). */
static void other_read(const char *path, int member, int cycle) {
    int nranks, ncid, varid;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Offset start[3] = {0, 0, 0}, count[3] = {NZ, NY, NX};
    if (strcmp(role, "obs") == 0)
        block(NY, nranks, rank, &start[1], &count[1]);
    else
        block(NZ, nranks, rank, &start[0], &count[0]);
    const size_t n = (size_t)(count[0] * count[1] * count[2]);
    float *buf = malloc(sizeof(float) * (n + 1));
    CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    for (int r = 0; r < NREAD_OBS; r++) {
        char name[16];
        snprintf(name, sizeof name, "h%03d", hist_obs(r));
        CHECK(ncmpi_inq_varid(ncid, name, &varid));
        CHECK(ncmpi_get_vara_float_all(ncid, varid, start, count, buf));
        for (MPI_Offset k = 0; k < count[0]; k++)
            for (MPI_Offset j = 0; j < count[1]; j++)
                for (MPI_Offset i = 0; i < count[2]; i++)
                    if (buf[(k * count[1] + j) * count[2] + i] !=
                        value(HIST, member, cycle, hist_obs(r), start[0] + k, start[1] + j, i))
                        bad = 1;
        fwrite(buf, sizeof(float), n, dump);
    }
    record_sizes(ncid);
    CHECK(ncmpi_close(ncid));
    free(buf);
}

/* assim: open a member's analysis file again and write the updated variables back. */
static void assim_update(const char *path, int member, int cycle) {
    int nranks, ncid, varid, reqs[NUPDATE];
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Offset start[3] = {0, 0, 0}, count[3] = {NZ, NY, 0};
    block(NX, nranks, rank, &start[2], &count[2]);
    const size_t n = (size_t)(NZ * NY * count[2]);
    float *bufs = malloc(sizeof(float) * (n * NUPDATE + 1));
    CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_WRITE, MPI_INFO_NULL, &ncid));
    for (int u = 0; u < NUPDATE; u++) {
        float *buf = bufs + (size_t)u * n;
        for (MPI_Offset k = 0; k < NZ; k++)
            for (MPI_Offset j = 0; j < NY; j++)
                for (MPI_Offset i = 0; i < count[2]; i++)
                    buf[(k * NY + j) * count[2] + i] = value(UPDATE, member, cycle, anal_updated(u), k, j, start[2] + i);
        char name[16];
        snprintf(name, sizeof name, "a%03d", anal_updated(u));
        CHECK(ncmpi_inq_varid(ncid, name, &varid));
        CHECK(ncmpi_iput_vara_float(ncid, varid, start, count, buf, &reqs[u]));
    }
    CHECK(ncmpi_wait_all(ncid, NUPDATE, reqs, NULL));
    CHECK(dtf_transfer(path, ncid));
    record_sizes(ncid);
    CHECK(ncmpi_close(ncid));
    free(bufs);
}

int main(int argc, char **argv) {
    int provided, nranks;
    if (argc < 6) {
        fprintf(stderr, "usage: %s (model|assim|ROLE) CONFIG DIR CYCLES MEMBERS\n", argv[0]);
        return 2;
    }
    role = argv[1];
    const char *dir = argv[3];
    const int cycles = atoi(argv[4]), members = atoi(argv[5]);
    const int unwritten = getenv("LETKF_UNWRITTEN") && atoi(getenv("LETKF_UNWRITTEN"));
    late_close_ms = getenv("LETKF_LATE_CLOSE") ? atoi(getenv("LETKF_LATE_CLOSE")) : 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const int model = strcmp(role, "model") == 0;
    if (members < 1 || members > 4 || cycles < 1 || cycles > 4 || (model && nranks % members != 0)) {
        if (rank == 0) fprintf(stderr, "%s: 1-4 members, 1-4 cycles, model ranks a multiple of members\n", role);
        MPI_Finalize();
        return 2;
    }
    char name[4096], path[4096];
    snprintf(name, sizeof name, "%s/%s.%d.dump", dir, role, rank);
    dump = fopen(name, "wb");
    if (!dump) {
        perror(name);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    CHECK(dtf_init(argv[2], role));
    const int member = model ? rank / (nranks / members) : -1;
    MPI_Comm comm = MPI_COMM_WORLD;
    if (model) MPI_Comm_split(MPI_COMM_WORLD, member, rank, &comm);
    for (int c = 1; c <= cycles; c++) {
        if (model) {
            path_of(path, sizeof path, dir, "hist", member, c);
            write_model_file(comm, path, "h", NHIST, HIST, member, c);
            path_of(path, sizeof path, dir, "anal", member, c);
            write_model_file(comm, path, "a", NANAL, ANAL, member, c);
            read_back(comm, path, member, c, unwritten && c == 1);
        } else if (strcmp(role, "assim") != 0) {
            for (int m = 0; m < members; m++) {
                path_of(path, sizeof path, dir, "hist", m, c);
                other_read(path, m, c);
            }
        } else {
            for (int m = 0; m < members; m++) {
                path_of(path, sizeof path, dir, "hist", m, c);
                assim_read(path, "h", NREAD_HIST, hist_read, HIST, m, c);
                path_of(path, sizeof path, dir, "anal", m, c);
                assim_read(path, "a", NUPDATE, anal_updated, ANAL, m, c);
            }
            for (int m = 0; m < members; m++) {
                path_of(path, sizeof path, dir, "anal", m, c);
                assim_update(path, m, c);
            }
        }
    }
    if (model) MPI_Comm_free(&comm);
    CHECK(dtf_finalize());
    fclose(dump);
    int anybad = 0;
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        if (anybad)
            printf("%s: WRONG DATA\n", role);
        else
            printf("%s: %d ranks, %d members, %d cycles, all values verified\n", role, nranks, members, cycles);
    }
    MPI_Finalize();
    return anybad ? 1 : 0;
}
