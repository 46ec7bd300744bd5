/*
 * An ensemble that survives a member, and members that survive their reader (ensemble.py runs it).
 * Members m0 .. m<M-1>, each its own MPI job (component), write hist.<m>.nc; the assimilation
 * ("assim") reads every member's file and writes analysis.nc with plain PnetCDF (not in the config):
 * the mean of the members it got, and which ones those were.
 *   member m   creates hist.<m>.nc (T(y, x), rows in blocks over its ranks, values of member m),
 *              puts, dtf_transfer, closes. If KILL is m, its rank 0 dies (SIGKILL) after the puts,
 *              before dtf_transfer: its mpirun ends its other ranks. If KILL is -2 (the assimilation
 *              dies), its dtf_transfer and close (or, with a progress thread, where they return before
 *              the loss, dtf_finalize) may fail, with DTF_ERR_PEER naming 'assim' only; the close
 *              closes the file all the same (and, with persist=1, the file is written).
 *   assim      per member: open, get_vara_all of the whole T (columns over its ranks), dtf_transfer,
 *              close. A call that fails must fail with DTF_ERR_PEER naming the member's component;
 *              then the member is left out (the ranks agree with an MPI_Allreduce, the pattern of
 *              USER-GUIDE "Ensembles that survive a member"), and the next member is read. Every
 *              value read from a member is checked against the formula. If KILL is -2, its rank 0
 *              dies (SIGKILL) once it has opened hist.0.nc. If KILL is -3 - k, nobody dies, and the
 *              assimilation never opens member k's file (it is absent for that session). With
 *              ENSEMBLE_LATE=k in the environment it reads member k's file last, LATE_SECONDS after
 *              the others (in both runs, so that the mean is summed in the same order); with
 *              ENSEMBLE_LATE_AT=get too, it opens that file in time and waits before the get.
 *              With ENSEMBLE_START_LATE=S it sleeps S seconds before dtf_init (and with
 *              ENSEMBLE_WRITE_LATE=S each member before it creates its file). With
 *              ENSEMBLE_READY=PATH the assimilation's rank 0 creates PATH once its dtf_init returned,
 *              and each member waits for it before it creates its file: a member's fallback= bound
 *              then does not run while the reader still connects to the other components (seconds
 *              under the sanitizers, which would make an on-time reader late).
 * With ENSEMBLE_NODTF=1 the programs never call dtf (plain PnetCDF; ensemble.py runs the members
 * one after the other, then the assimilation, without the killed member: the oracle).
 * Prints "ensemble <role>: ok" at rank 0; exits 1 on a failed check.
 *
 * usage: ensemble member M CONFIG KILL | ensemble assim CONFIG MEMBERS KILL     (KILL: -1 for none)
 */
#include <dtf.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NY = 12, NX = 10, MAX_MEMBERS = 8 };
#define LATE_SECONDS 2.5

static int rank, nprocs, use_dtf, failures;

static float value(int member, int y, int x) { return (float)(10000 * (member + 1) + 100 * y + x); }

static void fail_check(const char *what) {
    fprintf(stderr, "ensemble rank %d: FAILED: %s\n", rank, what);
    ++failures;
}

#define NC(call)                                                                                           \
    do {                                                                                                   \
        int rc_ = (call);                                                                                  \
        if (rc_ != NC_NOERR) {                                                                             \
            fprintf(stderr, "ensemble rank %d: %s: %s (%s)\n", rank, #call, ncmpi_strerror(rc_),             \
                    use_dtf ? dtf_errmsg() : "");                                                          \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                                  \
        }                                                                                                  \
    } while (0)

static void block(int n, int parts, int part, MPI_Offset *start, MPI_Offset *count) {
    *start = (MPI_Offset)n * part / parts;
    *count = (MPI_Offset)n * (part + 1) / parts - *start;
}

enum { KILL_ASSIM = -2 };

/* A member's call failed: only DTF_ERR_PEER naming the lost assimilation is expected. */
static void reader_lost(int rc, const char *call) {
    if (rc == NC_NOERR) return;
    char what[1024];
    snprintf(what, sizeof what, "%s: %s (%s)", call, ncmpi_strerror(rc), use_dtf ? dtf_errmsg() : "");
    if (rc != DTF_ERR_PEER || !strstr(dtf_errmsg(), "component 'assim' was lost")) fail_check(what);
    if (rank == 0) printf("ensemble member: reader lost: %s\n", what);
}

/* ENSEMBLE_READY: the member's ranks wait until the file exists (at most READY_SECONDS: the test
 * then fails on its own checks). */
#define READY_SECONDS 60.0
static void wait_ready(void) {
    const char *ready = getenv("ENSEMBLE_READY");
    if (!ready || !use_dtf) return;
    if (rank == 0)
        for (const double until = MPI_Wtime() + READY_SECONDS; access(ready, F_OK) != 0 && MPI_Wtime() < until;)
            usleep(10000);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void member(int m, int kill) {
    char path[64];
    snprintf(path, sizeof path, "hist.%d.nc", m);
    int ncid, dims[2], v;
    wait_ready();
    if (getenv("ENSEMBLE_WRITE_LATE")) usleep((useconds_t)(atof(getenv("ENSEMBLE_WRITE_LATE")) * 1e6));
    NC(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "y", NY, &dims[0]));
    NC(ncmpi_def_dim(ncid, "x", NX, &dims[1]));
    NC(ncmpi_def_var(ncid, "T", NC_FLOAT, 2, dims, &v));
    NC(ncmpi_enddef(ncid));
    MPI_Offset start[2] = {0, 0}, count[2] = {0, NX};
    block(NY, nprocs, rank, &start[0], &count[0]);
    float buf[NY * NX];
    for (MPI_Offset y = 0; y < count[0]; ++y)
        for (int x = 0; x < NX; ++x) buf[y * NX + x] = value(m, (int)(start[0] + y), x);
    NC(ncmpi_put_vara_float_all(ncid, v, start, count, buf));
    if (m == kill && rank == 0) raise(SIGKILL);
    if (kill != KILL_ASSIM) {
        if (use_dtf) NC(dtf_transfer(path, ncid));
        NC(ncmpi_close(ncid));
        return;
    }
    /* the reader dies: a call may fail, naming it; the close closes all the same */
    int rc = use_dtf ? dtf_transfer(path, ncid) : NC_NOERR;
    reader_lost(rc, "dtf_transfer");
    reader_lost(ncmpi_close(ncid), "ncmpi_close");
}

/* Reads member m's T (this rank's columns) into `got`; 1 if it did, 0 if the member is lost (every
 * failed call must say so, naming the member). */
static void sleep_late(void) {
    const double until = MPI_Wtime() + LATE_SECONDS;
    while (MPI_Wtime() < until) usleep(10000);
}

static int read_member(int m, MPI_Offset *start, MPI_Offset *count, float *got, int kill_self, int late_get) {
    char path[64], who[32];
    snprintf(path, sizeof path, "hist.%d.nc", m);
    snprintf(who, sizeof who, "component 'm%d'", m);
    /* the first call that fails, and its message (the close after it fails too, and says so again) */
    char what[1024] = "";
    const char *call = "ncmpi_open";
    int ncid = -1, v = 0, rc = ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid);
    const int opened = rc == NC_NOERR;
    if (opened && m == 0 && kill_self && rank == 0) raise(SIGKILL);
    if (opened && late_get) sleep_late();
#define STEP(name, expr)                                                                                        \
    if (rc == NC_NOERR) {                                                                                       \
        call = name;                                                                                            \
        rc = (expr);                                                                                            \
    }
    STEP("ncmpi_inq_varid", ncmpi_inq_varid(ncid, "T", &v));
    STEP("ncmpi_get_vara_float_all", ncmpi_get_vara_float_all(ncid, v, start, count, got));
    if (use_dtf) STEP("dtf_transfer", dtf_transfer(path, ncid));
#undef STEP
    if (rc != NC_NOERR)
        snprintf(what, sizeof what, "%s of %s: %s (%s)", call, path, ncmpi_strerror(rc), use_dtf ? dtf_errmsg() : "");
    if (opened) {
        int rc_close = ncmpi_close(ncid);
        if (rc == NC_NOERR && rc_close != NC_NOERR) {
            rc = rc_close;
            snprintf(what, sizeof what, "ncmpi_close of %s: %s (%s)", path, ncmpi_strerror(rc), use_dtf ? dtf_errmsg() : "");
        }
    }
    if (rc == NC_NOERR) return 1;
    if (!use_dtf) { /* the oracle run: the killed member never wrote its file */
        if (rc != NC_ENOENT) fail_check(what);
    } else if (rc != DTF_ERR_PEER || !strstr(what, who) || !strstr(what, "was lost")) {
        fail_check(what);
    }
    if (rank == 0) printf("ensemble assim: member %d left out: %s\n", m, what);
    return 0;
}

static void assim(int members, int kill) {
    MPI_Offset start[2] = {0, 0}, count[2] = {NY, 0};
    block(NX, nprocs, rank, &start[1], &count[1]);
    const size_t n = (size_t)(NY * count[1]);
    float *got = malloc((n ? n : 1) * sizeof *got), *sum = calloc(n ? n : 1, sizeof *sum);
    int used[MAX_MEMBERS], nused = 0, order[MAX_MEMBERS], norder = 0;
    const char *late_env = getenv("ENSEMBLE_LATE");
    const int late = late_env ? atoi(late_env) : -1;
    const char *late_at = getenv("ENSEMBLE_LATE_AT");
    const int late_get = late_at && !strcmp(late_at, "get") && use_dtf;
    for (int m = 0; m < members; ++m)
        if (m != late) order[norder++] = m;
    if (late >= 0 && late < members) order[norder++] = late;
    for (int i = 0; i < norder; ++i) {
        const int m = order[i];
        if (m == late && use_dtf && !late_get) sleep_late(); /* its writer gives up waiting (fallback=) */
        if (kill <= -3 && m == -3 - kill) { /* absent for this member's session */
            if (rank == 0) printf("ensemble assim: member %d left out: never opened\n", m);
            continue;
        }
        int ok = read_member(m, start, count, got, kill == KILL_ASSIM, m == late && late_get), all = 0;
        MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD); /* every rank got it, or none uses it */
        if (!all) continue;
        used[nused++] = m;
        for (MPI_Offset y = 0; y < NY; ++y)
            for (MPI_Offset x = 0; x < count[1]; ++x) {
                const float want = value(m, (int)y, (int)(start[1] + x)), have = got[y * count[1] + x];
                if (memcmp(&want, &have, sizeof want)) {
                    char what[128];
                    snprintf(what, sizeof what, "member %d T(%d, %d) = %g, want %g", m, (int)y,
                             (int)(start[1] + x), have, want);
                    fail_check(what);
                    break;
                }
                sum[y * count[1] + x] += have;
            }
    }
    /* analysis.nc: plain PnetCDF (not in the config), the mean and the members used */
    int ncid, dims[3], vmean, vused;
    NC(ncmpi_create(MPI_COMM_WORLD, "analysis.nc", NC_CLOBBER, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "y", NY, &dims[0]));
    NC(ncmpi_def_dim(ncid, "x", NX, &dims[1]));
    NC(ncmpi_def_dim(ncid, "member", nused ? nused : 1, &dims[2]));
    NC(ncmpi_def_var(ncid, "T_mean", NC_FLOAT, 2, dims, &vmean));
    NC(ncmpi_def_var(ncid, "members", NC_INT, 1, &dims[2], &vused));
    NC(ncmpi_enddef(ncid));
    for (size_t i = 0; i < n; ++i) sum[i] = nused ? sum[i] / (float)nused : 0.0f;
    NC(ncmpi_put_vara_float_all(ncid, vmean, start, count, sum));
    MPI_Offset s0 = 0, c0 = rank == 0 ? (nused ? nused : 1) : 0;
    if (!nused) used[0] = -1;
    NC(ncmpi_put_vara_int_all(ncid, vused, &s0, &c0, used));
    NC(ncmpi_close(ncid));
    if (rank == 0) {
        printf("ensemble assim: members used:");
        for (int i = 0; i < nused; ++i) printf(" %d", used[i]);
        printf("\n");
    }
    free(got);
    free(sum);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (argc != 5 || (strcmp(argv[1], "member") && strcmp(argv[1], "assim"))) {
        if (rank == 0) fprintf(stderr, "usage: ensemble member M CONFIG KILL | ensemble assim CONFIG MEMBERS KILL\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int is_member = !strcmp(argv[1], "member");
    const int m = is_member ? atoi(argv[2]) : -1, members = is_member ? 0 : atoi(argv[3]), kill = atoi(argv[4]);
    const char *config = is_member ? argv[3] : argv[2];
    if (members > MAX_MEMBERS) MPI_Abort(MPI_COMM_WORLD, 2);
    use_dtf = !getenv("ENSEMBLE_NODTF") || strcmp(getenv("ENSEMBLE_NODTF"), "1");
    char name[16];
    snprintf(name, sizeof name, is_member ? "m%d" : "assim", m);
    /* ENSEMBLE_START_LATE=S: the assimilation starts S seconds late (its members went on without it) */
    if (!is_member && getenv("ENSEMBLE_START_LATE")) usleep((useconds_t)(atof(getenv("ENSEMBLE_START_LATE")) * 1e6));
    if (use_dtf) NC(dtf_init(config, name));
    if (!is_member && use_dtf && rank == 0 && getenv("ENSEMBLE_READY")) {
        FILE *f = fopen(getenv("ENSEMBLE_READY"), "w");
        if (!f || fclose(f) != 0) fail_check("cannot create ENSEMBLE_READY's file");
    }
    if (is_member) member(m, kill);
    else assim(members, kill);
    int rc = use_dtf ? dtf_finalize() : NC_NOERR;
    if (is_member && kill == KILL_ASSIM) { /* with a progress thread, the first call after the loss */
        reader_lost(rc, "dtf_finalize");
    } else if (rc != NC_NOERR) {
        char what[1024];
        snprintf(what, sizeof what, "dtf_finalize: %s (%s)", ncmpi_strerror(rc), dtf_errmsg());
        fail_check(what);
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && !all) printf("ensemble %s: ok\n", name);
    MPI_Finalize();
    return all ? 1 : 0;
}
