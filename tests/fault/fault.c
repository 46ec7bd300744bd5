/*
 * Fault-injection component for tests/fault/fault.py: a writer and a reader of one transfer-mode file,
 * "f.nc" (T: float y x, P: double x), where the reader misbehaves as the scenario says and checks
 * that dtf answers with the right error on the right rank while the other ranks go on.
 *
 * usage: fault writer|reader INI SCENARIO
 *   ok        plain run (control)
 *   mismatch  the reader's idea of the file differs from the writer's: a box beyond T's shape, T read
 *             as text, a variable the writer never defined; each must fail with an error that names
 *             the variable and, where it applies, what the writer defined
 *   badarg    rank 1 of the reader passes a NULL buffer, a negative count and an unknown ncid to a
 *             collective get; it must get the error back, the other ranks' same collective call must
 *             complete with correct values (no hang), and the transfer afterwards must work
 *   kill      writer rank 1 is killed (SIGKILL) between its puts and dtf_transfer, while the readers
 *             wait for its data
 *   noexit    the writer skips dtf_finalize (it calls MPI_Finalize after its transfer and close): dtf
 *             finalizes it inside MPI_Finalize, so the reader's dtf_finalize meets it and succeeds
 *   noclose   reader rank 1 never closes the file: the other reader ranks' ncmpi_close must fail
 *             within DTF_TIMEOUT, naming the collective they waited in, and every rank must finish
 *   twowriters the reader component creates f.nc too (both write session 1 of it): each side's
 *             dtf_transfer must fail at once with DTF_ERR_PEER naming the other component and the
 *             session, instead of both waiting DTF_TIMEOUT for a reader that never comes
 *   wrongrole  g.nc is a writer=/readers= file: the reader's ncmpi_create of it and the writer's
 *             ncmpi_open of it for reading fail at once (DTF_ERR_CONFIG naming the config line and who
 *             may do what), as does the writer's MPI_File_open of it for writing (MPI-IO itself), and
 *             nothing else changes (then as ok)
 *   persist-rename p.nc (persist=1) is written by the writer, then opened again with NC_WRITE by the
 *             reader, which renames its variable, and read by the writer: dtf cannot make the file on
 *             disk show the rename as file mode would, so the reader's close fails (DTF_ERR_UNSUPPORTED
 *             naming the variable and the rename); the file keeps the writer's session (then as ok)
 *   persist-late-reader q.nc (persist=1) is written by the writer, whose close is reached while its
 *             progress thread serves the session (DTF_PROGRESS_THREAD=1, buffer_data=1); the reader
 *             opens it a second later: q.nc must not be on disk before the reader got its data (the
 *             readers are served before a byte is written); fault.py checks the file after the run
 *             (then as ok)
 *   onemore   the reader opens f.nc once more after reading it (as a reader of one file more than its
 *             writer writes), twice: each open must fail on every reader rank as soon as the writer is
 *             in dtf_finalize (not after DTF_TIMEOUT), naming the writer and saying so (dtf prints it
 *             once per rank; with DTF_PRINT_ERRORS=0 not at all); the writer ends with status 0
 *   lost-connect, lost-transfer, lost-finalize
 *             the reader's rank 0 kills itself (SIGKILL, and its mpirun the other reader ranks): before
 *             dtf_init, after opening the file (while the writer transfers), or after closing it
 *             (before dtf_finalize). The writer reports each failed call and goes on to dtf_finalize
 *             and MPI_Finalize as a careful program would; fault.py (launched without dtfrun) checks
 *             that it ends by itself, soon, with a non-zero status and messages naming the reader.
 * Prints "fault <role>: <scenario> ok" when every check passed; exits 1 otherwise.
 */
#include <dtf.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NX = 8, ROWS = 3 }; /* rows of T per writer rank */

static int rank, nprocs, failures;
static const char *role_name;

static void expect(int ok, const char *what) {
    if (ok) return;
    fprintf(stderr, "fault rank %d: FAILED: %s\n", rank, what);
    ++failures;
}

/* The call returned `want`, and dtf_errmsg() contains every one of the NULL-terminated words. */
static void expect_error(int got, int want, const char *call, ...) {
    char what[512];
    snprintf(what, sizeof what, "%s returned %d (%s), want %d (%s); message: %s", call, got, ncmpi_strerror(got), want,
             ncmpi_strerror(want), dtf_errmsg());
    expect(got == want, what);
    va_list ap;
    va_start(ap, call);
    for (const char *w; (w = va_arg(ap, const char *));) {
        snprintf(what, sizeof what, "%s: the message '%s' does not mention '%s'", call, dtf_errmsg(), w);
        expect(strstr(dtf_errmsg(), w) != NULL, what);
    }
    va_end(ap);
    if (rank == 0 || got != want) printf("fault rank %d: %s -> %s: %s\n", rank, call, ncmpi_strerror(got), dtf_errmsg());
}

#define NC(call)                                                                                      \
    do {                                                                                              \
        int rc_ = (call);                                                                             \
        if (rc_ != NC_NOERR) {                                                                        \
            fprintf(stderr, "fault rank %d: %s: %s (%s)\n", rank, #call, ncmpi_strerror(rc_), dtf_errmsg()); \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                             \
        }                                                                                             \
    } while (0)

static float value(int y, int x) { return (float)(100 * y + x); }

/* twowriters: a call that fails must say that the other component writes the session too. */
static int told;
static void told_both_write(int rc, const char *call) {
    if (rc == NC_NOERR) return;
    told = 1;
    expect_error(rc, DTF_ERR_PEER, call, strcmp(role_name, "writer") ? "component 'writer'" : "component 'reader'",
                 "writes session 1 of '", "f.nc' too, as this component does", NULL);
}

/* persist-*: the file `path` with one variable T(x), values value(0, x), all written by rank 0. */
static void write_row(const char *path) {
    int ncid, dx, v;
    float x[NX];
    for (int i = 0; i < NX; ++i) x[i] = value(0, i);
    MPI_Offset start = 0, count = rank == 0 ? NX : 0;
    NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "x", NX, &dx));
    NC(ncmpi_def_var(ncid, "T", NC_FLOAT, 1, &dx, &v));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_put_vara_float_all(ncid, v, &start, &count, x));
    NC(ncmpi_close(ncid));
}

/* persist-rename (see the top). */
static void persist_rename(int writes) {
    int ncid, v;
    float x[NX];
    for (int i = 0; i < NX; ++i) x[i] = value(0, i);
    MPI_Offset start = 0, count = rank == 0 ? NX : 0;
    if (writes) {
        write_row("p.nc");
        NC(ncmpi_open(MPI_COMM_WORLD, "p.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid)); /* the written-back session */
        NC(ncmpi_close(ncid));
        return;
    }
    NC(ncmpi_open(MPI_COMM_WORLD, "p.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid));
    NC(ncmpi_inq_varid(ncid, "T", &v));
    NC(ncmpi_get_vara_float_all(ncid, v, &start, &count, x));
    NC(ncmpi_close(ncid));
    NC(ncmpi_open(MPI_COMM_WORLD, "p.nc", NC_WRITE, MPI_INFO_NULL, &ncid));
    NC(ncmpi_redef(ncid));
    NC(ncmpi_rename_var(ncid, v, "U"));
    NC(ncmpi_enddef(ncid));
    NC(ncmpi_put_vara_float_all(ncid, v, &start, &count, x));
    expect_error(ncmpi_close(ncid), DTF_ERR_UNSUPPORTED, "ncmpi_close(p.nc, a variable renamed)", "writing '",
                 "p.nc' (persist=1", "variable 0 is 'T' in the file and 'U' in this session (renamed)", NULL);
}

/* persist-late-reader (see the top). */
static void persist_late_reader(int writes) {
    if (writes) {
        write_row("q.nc");
        return;
    }
    int ncid, v;
    float x[NX];
    MPI_Offset start = 0, count = rank == 0 ? NX : 0;
    sleep(1); /* the writer is in its close by now */
    NC(ncmpi_open(MPI_COMM_WORLD, "q.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid));
    if (rank == 0) expect(access("q.nc", F_OK) != 0, "q.nc was written before its reader got its data");
    NC(ncmpi_inq_varid(ncid, "T", &v));
    NC(ncmpi_get_vara_float_all(ncid, v, &start, &count, x));
    for (int i = 0; i < (int)count; ++i) expect(x[i] == value(0, i), "q.nc: a value of T differs from the writer's");
    NC(ncmpi_close(ncid));
}

/* lost-*: the writer reports a failed call and goes on. */
static int lost_errors;
static void report(int rc, const char *call) {
    if (rc == NC_NOERR) return;
    ++lost_errors;
    printf("fault rank %d: %s -> %s: %s\n", rank, call, ncmpi_strerror(rc), dtf_errmsg());
}

static void writer(const char *scenario) {
    int ncid, dy, dx, vt, vp, dims[2];
    NC(ncmpi_create(MPI_COMM_WORLD, "f.nc", NC_CLOBBER, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "y", (MPI_Offset)ROWS * nprocs, &dy));
    NC(ncmpi_def_dim(ncid, "x", NX, &dx));
    dims[0] = dy, dims[1] = dx;
    NC(ncmpi_def_var(ncid, "T", NC_FLOAT, 2, dims, &vt));
    NC(ncmpi_def_var(ncid, "P", NC_DOUBLE, 1, &dx, &vp));
    NC(ncmpi_enddef(ncid));
    float t[ROWS * NX];
    for (int i = 0; i < ROWS * NX; ++i) t[i] = value(rank * ROWS + i / NX, i % NX);
    MPI_Offset start[2] = {(MPI_Offset)rank * ROWS, 0}, count[2] = {ROWS, NX};
    NC(ncmpi_put_vara_float_all(ncid, vt, start, count, t));
    double p[NX];
    for (int i = 0; i < NX; ++i) p[i] = i;
    MPI_Offset p0 = 0, pn = rank == 0 ? NX : 0;
    NC(ncmpi_put_vara_double_all(ncid, vp, &p0, &pn, p));
    if (!strcmp(scenario, "kill") && rank == 1) raise(SIGKILL);
    if (!strcmp(scenario, "twowriters")) {
        /* Without a progress thread dtf_transfer waits for a reader and fails at once; with one it
         * returns at once, and the close or dtf_finalize (which serve the file to the end) fail. */
        told_both_write(dtf_transfer("f.nc", ncid), "dtf_transfer");
        told_both_write(ncmpi_close(ncid), "ncmpi_close");
        return;
    }
    if (!strncmp(scenario, "lost-", 5)) { /* the reader dies somewhere: report and go on */
        report(dtf_transfer("f.nc", ncid), "dtf_transfer");
        report(ncmpi_close(ncid), "ncmpi_close");
        return;
    }
    NC(dtf_transfer("f.nc", ncid));
    NC(ncmpi_close(ncid));
}

/* Every reader rank reads T whole and checks it; `bad` ranks first try the bad calls of `scenario`. */
static void reader(const char *scenario) {
    int ncid, vt, vp;
    NC(ncmpi_open(MPI_COMM_WORLD, "f.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid));
    if (!strcmp(scenario, "lost-transfer") && rank == 0) raise(SIGKILL);
    NC(ncmpi_inq_varid(ncid, "T", &vt));
    NC(ncmpi_inq_varid(ncid, "P", &vp));
    MPI_Offset ny;
    int dy;
    NC(ncmpi_inq_dimid(ncid, "y", &dy));
    NC(ncmpi_inq_dimlen(ncid, dy, &ny));
    float *t = calloc((size_t)ny * NX, sizeof(float));
    MPI_Offset start[2] = {0, 0}, count[2] = {ny, NX};

    if (!strcmp(scenario, "mismatch")) {
        MPI_Offset big[2] = {ny + 1, NX}; /* one row more than the writer defined */
        expect_error(ncmpi_get_vara_float_all(ncid, vt, start, big, t), NC_EEDGE, "get_vara_float_all(T, beyond its shape)",
                     "'T'", "float", "writer", NULL);
        char text[8];
        MPI_Offset one[2] = {1, 1};
        expect_error(ncmpi_get_vara_text_all(ncid, vt, start, one, text), NC_ECHAR, "get_vara_text_all(T as text)",
                     "'T'", "float", NULL);
        int vq;
        expect_error(ncmpi_inq_varid(ncid, "Q", &vq), NC_ENOTVAR, "inq_varid(Q, never defined)", "'Q'", "writer", NULL);
    } else if (!strcmp(scenario, "badarg") && rank == 1) {
        expect_error(ncmpi_get_vara_float_all(ncid, vt, start, count, NULL), NC_EINVAL, "get_vara_float_all(NULL buffer)",
                     NULL);
        MPI_Offset negative[2] = {-1, NX};
        expect_error(ncmpi_get_vara_float_all(ncid, vt, start, negative, t), NC_ENEGATIVECNT,
                     "get_vara_float_all(negative count)", NULL);
        expect_error(ncmpi_get_vara_float_all(ncid + 7, vt, start, count, t), NC_EBADID, "get_vara_float_all(unknown ncid)",
                     NULL);
    }
    /* The regular read, on every rank (the bad rank too, after its errors). */
    NC(ncmpi_get_vara_float_all(ncid, vt, start, count, t));
    for (MPI_Offset i = 0; i < ny * NX; ++i)
        if (t[i] != value((int)(i / NX), (int)(i % NX))) {
            expect(0, "T has the writer's values");
            break;
        }
    NC(dtf_transfer("f.nc", ncid));
    if (strcmp(scenario, "noclose"))
        NC(ncmpi_close(ncid));
    else if (rank != 1)
        expect_error(ncmpi_close(ncid), DTF_ERR_TIMEOUT, "ncmpi_close (reader rank 1 never closes)", "closing '",
                     "f.nc' (session 1): a barrier over 3 ranks waited for the others", NULL);
    free(t);
}

int main(int argc, char **argv) {
    int provided; /* MPI_THREAD_MULTIPLE: dtf runs its progress thread (unless DTF_PROGRESS_THREAD=0) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 4) {
        if (rank == 0)
            fprintf(stderr, "usage: fault writer|reader INI "
                            "ok|mismatch|badarg|kill|noexit|noclose|twowriters|wrongrole|persist-rename|persist-late-reader|onemore|"
                            "lost-connect|lost-transfer|lost-finalize\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *role = argv[1], *scenario = argv[3];
    role_name = role;
    const int writes = !strcmp(role, "writer");
    if (!strcmp(scenario, "lost-connect") && !writes && rank == 0) raise(SIGKILL);
    if (!strncmp(scenario, "lost-", 5) && writes) {
        int rc = dtf_init(argv[2], role);
        report(rc, "dtf_init");
        if (rc == NC_NOERR) {
            writer(scenario);
            report(dtf_finalize(), "dtf_finalize");
        }
        MPI_Finalize();
        if (rank == 0) printf("fault writer: %s: %d error(s), finalized\n", scenario, lost_errors);
        return lost_errors ? 1 : 0;
    }
    NC(dtf_init(argv[2], role));
    if (!strcmp(scenario, "wrongrole")) {
        int ncid;
        if (writes) { // (transfer mode: a writer reads its file back only within its turn, writer_closes=)
            expect_error(ncmpi_open(MPI_COMM_WORLD, "g.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid), DTF_ERR_UNSUPPORTED,
                         "ncmpi_open(g.nc) by its writer", "ncmpi_open of", "g.nc' for reading: this component writes it",
                         "set writer_closes= to the number of times it closes the file, or mode=\"file\"", NULL);
            /* Writing it with MPI-IO itself (not through PnetCDF or netCDF-C): refused. */
            MPI_File fh;
            const int rc = MPI_File_open(MPI_COMM_WORLD, "g.nc", MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
            expect(rc != MPI_SUCCESS && strstr(dtf_errmsg(), "g.nc' for writing, outside PnetCDF and netCDF-C"),
                   "MPI_File_open(g.nc) for writing must be refused, saying so");
        } else
            expect_error(ncmpi_create(MPI_COMM_WORLD, "g.nc", NC_CLOBBER, MPI_INFO_NULL, &ncid), DTF_ERR_CONFIG,
                         "ncmpi_create(g.nc) by its reader", "dtf.ini:", "component 'reader' may only open it for reading",
                         NULL);
    }
    if (!strcmp(scenario, "persist-rename")) persist_rename(writes);
    if (!strcmp(scenario, "persist-late-reader")) persist_late_reader(writes);
    if (!strcmp(role, "writer") || !strcmp(scenario, "twowriters"))
        writer(scenario);
    else
        reader(scenario);
    if (!strcmp(scenario, "onemore") && !writes) {
        int ncid;
        for (int again = 0; again < 2; again++) /* (dtf prints the error once, not per call and rank) */
            expect_error(ncmpi_open(MPI_COMM_WORLD, "f.nc", NC_NOWRITE, MPI_INFO_NULL, &ncid), DTF_ERR_PEER,
                         again ? "ncmpi_open(f.nc) once more, again" : "ncmpi_open(f.nc) once more",
                         "component 'writer' called dtf_finalize", "will define, open or send nothing more", NULL);
    }
    if (!strcmp(scenario, "twowriters")) {
        told_both_write(dtf_finalize(), "dtf_finalize");
        expect(told, "a call must say that both components write f.nc");
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !all) printf("fault %s: %s ok\n", role, scenario);
    if (!strcmp(scenario, "noexit") && !strcmp(role, "writer")) {
        MPI_Finalize(); /* without dtf_finalize: dtf finalizes here, meeting the reader's dtf_finalize */
        return 0;
    }
    /* noclose: the readers come to dtf_finalize DTF_TIMEOUT late (their close timed out); a writer
     * waiting as long for them would give up at the same moment. */
    if (!strcmp(scenario, "noclose") && !strcmp(role, "writer")) sleep(3);
    if (!strcmp(scenario, "lost-finalize") && rank == 0) raise(SIGKILL);
    if (strcmp(scenario, "twowriters")) NC(dtf_finalize());
    MPI_Finalize();
    return all ? 1 : 0;
}
