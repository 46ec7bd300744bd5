/*
 * letkf_io: the I/O pattern of the SCALE-LETKF ensemble workflow, for benchmarking dtf against the
 * file system and against raw MPI in one run (see docs/PERFORMANCE.md and bench/letkf.py).
 *
 * Two programs from this one source, launched as separate MPI jobs by dtfrun:
 *   --role model   `members` ensemble members, each a sub-communicator of px x py ranks on a 2-D grid.
 *                  Per cycle each member writes a history file (89 variables, one record) and an
 *                  analysis file (143 variables, global arrays with a 2-cell halo written by the ranks
 *                  on the domain edge): the puts complete, then the rest of the forecast (--compute),
 *                  then both files are closed; then it reads the 11 analysis variables the
 *                  assimilation wrote back.
 *   --role assim   as many ranks as all members together, on its own 2-D grid over the same domain.
 *                  Per cycle it reads 20 history and 11 analysis variables (interior only) of every
 *                  member (every file opened and its gets posted before any is completed), computes
 *                  (--compute), then writes those 11 variables back for every member.
 * Most written data is never read; that asymmetry is what dtf's matching exploits.
 *
 * --calls original: the same data with the calls of the original DTF's own benchmark (its SCALE-LETKF
 * I/O imitation) where they differ: the files take new names every cycle (DIR/<kind>.c<cycle>.m<member>
 * ...); the model attaches a buffer and writes the last fields of each file by bput (18 of the
 * history's 83, 82 of the analysis' 138) after a first wait_all, the history's time by
 * put_var1_double_all, and detaches after dtf_transfer; the assimilation writes its 11 variables back
 * into the analysis file, opened with NC_WRITE (bench/letkf.ini: num_sessions=2), instead of a file
 * of its own; and the model reads them there into the interior of halo-padded arrays, by iget with
 * an MPI subarray type. Not with mode transfer-persist.
 *
 * --api netcdf4: the same data through netCDF-C on netCDF-4 files (NC_NETCDF4 | NC_CLASSIC_MODEL, opened
 * and created in parallel): blocking collective puts (netCDF-C has no nonblocking calls) and blocking
 * independent gets, the assimilation reading and closing each file in turn (in the order the model closes
 * them), nc_sync and nc_close; not with --calls original nor transfer-persist (dtf writes no netCDF-4 file
 * of its own). --api netcdf4-serial: the same, but as SCALE-RM writes its output, one file per process:
 * each model rank creates its history and analysis files alone (nc_create, DIR/<kind>.m<member>.p<rank>
 * ...: its block only, local dimensions, its own axes), and each assimilation rank opens every model
 * rank's file alone (nc_open) and reads the part that meets its block (into its arrays through a buffer
 * when that is not its whole block; nothing when they do not meet); the write-back stays one parallel
 * file per member. Every rank of the assimilation opens each file, so dtf's default serial_readers=
 * (every rank of the reading component) is its count. --api pnetcdf-blocking: PnetCDF in that shape (blocking collective puts and gets, each
 * file read and closed in turn): the peer of netcdf4 that tells what netCDF-C and dtf's netCDF-4 layer
 * add from what blocking calls cost.
 *
 * Modes, run in the order given within one launch, `reps` times, `cycles` cycles each (with
 * --rotate 1, rep r starts with the (r mod n)-th of the n modes, so that with n reps each mode takes
 * each place once: a mode is not favoured by what ran before it):
 *   transfer   PnetCDF calls on files dtf handles in mode="transfer" (*.t.nc in bench/letkf.ini)
 *   transfer-replay  the same with replay_io=1 (*.r.nc): from the second cycle on, the writers copy
 *              at put only what the readers read and no request or plan message travels
 *   transfer-persist  the same as transfer with persist=1 (*.p.nc): the readers get the data over MPI
 *              and the writers also write the files, at close
 *   file       the same calls on files in mode="file" (*.f.nc): data through the file system (page cache)
 *   file-sync  as file, but each writer syncs the file and evicts its pages from the page cache before
 *              closing, so readers read from disk: the stand-in for a parallel file system
 *   mpi-raw    the blocks the readers need, packed and sent with MPI_Isend to receives the reader
 *              posted at the start of the cycle (on dtf_intercomm): no files, no matching
 *
 * Values are a function of (member, file, variable, global index, cycle); readers check every value
 * they get (--verify 1, the default). Timing excludes generating and checking values.
 *
 * Output (--csv FILE, written by rank 0 of the role): one row per (mode, rep, cycle, agg, phase):
 *   label,members,px,py,imax,jmax,kmax,model_ranks,assim_ranks,mode,rep,cycle,component,agg,phase,bytes,seconds
 * agg is max or mean over the role's ranks (seconds); bytes is the sum over the ranks. Phases: total,
 * open, io, transfer, close as the application sees them (every mode), and dtf.<phase> from dtf's own
 * timers (dtf_timers_read; transfer mode). `msg.control` and `msg.data`: the messages this rank sent
 * and received in the cycle (dtf_counters_read; mpi-raw: its own messages, all data), their count in
 * the seconds column (max or mean over the ranks: the busiest rank's, or the mean) and their bytes
 * summed over the ranks in the bytes column; `msg.collective` likewise the collectives dtf made over
 * a file's ranks (transfer modes), `msg.collective.wire` the point-to-point messages those collectives
 * sent and received, and `copies.writing` / `copies.reading` the bytes of values dtf copied besides
 * MPI on the rank (bytes column, summed) per byte of data it sent / received (seconds column: 0 on a
 * rank that sent / received none). And `mark` (agg max, seconds: wall-clock time since the
 * epoch): when the model's compute ended, or when the assimilation held all of the model's output of
 * the cycle; on one node the difference is the hand-off time the compute did not hide.
 */
#define _GNU_SOURCE
#include <dtf.h>
#include <fcntl.h>
#include <mpi.h>
#include <pnetcdf.h>
#ifdef LETKF_NETCDF4 /* (netcdf.h defines these limits too, with other values; letkf_io uses none) */
#undef NC_MIN_INT64
#undef NC_MAX_DIMS
#undef NC_MAX_ATTRS
#undef NC_MAX_VARS
#undef NC_MAX_VAR_DIMS
#undef NC_QUANTIZE_BITGROOM_ATT_NAME
#include <netcdf.h>
#include <netcdf_par.h>
#endif
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* ---- the I/O model -------------------------------------------------------------------------- */

enum { HIST_3D = 40, HIST_2D = 43, HIST_AXES = 4, HIST_COORDS = 2 }; /* 89 variables */
enum { ANAL_3D = 100, ANAL_2D = 38, ANAL_AXES = 3, ANAL_COORDS = 2 }; /* 143 variables */
enum { HALO = 2 };
/* What the assimilation reads: every 3rd 3-D and every 7th 2-D history field (13 + 7 = 20); every
 * 12th 3-D and every 15th 2-D analysis field (8 + 3 = 11), which it also writes back. */
enum { HIST_READ_3D = 13, HIST_READ_2D = 7, ANAL_READ_3D = 8, ANAL_READ_2D = 3 };
#define HIST_READS (HIST_READ_3D + HIST_READ_2D)
#define ANAL_READS (ANAL_READ_3D + ANAL_READ_2D)
enum File { HIST, ANAL, BACK };

/* One read variable: its field index in the file (3-D fields first) and its number of levels. */
typedef struct {
    int field; /* 0 .. n3d-1: 3-D field; n3d ..: 2-D field */
    int is3d, nz;
} ReadVar;

static ReadVar read_var(enum File f, int i, int kmax) {
    ReadVar r;
    if (f == HIST) {
        r.field = i < HIST_READ_3D ? 3 * i : HIST_3D + 7 * (i - HIST_READ_3D);
        r.is3d = i < HIST_READ_3D;
    } else { /* ANAL and BACK share the 11 analysis variables */
        r.field = i < ANAL_READ_3D ? 12 * i : ANAL_3D + 15 * (i - ANAL_READ_3D);
        r.is3d = i < ANAL_READ_3D;
    }
    r.nz = r.is3d ? kmax : 1;
    return r;
}
static int nreads(enum File f) { return f == HIST ? HIST_READS : ANAL_READS; }

/* A horizontal block of a global array: columns x0 .. x0+nx-1, rows y0 .. y0+ny-1. */
typedef struct {
    int x0, nx, y0, ny;
} Blk;

static Blk intersect(Blk a, Blk b) {
    Blk r;
    int x1 = a.x0 + a.nx < b.x0 + b.nx ? a.x0 + a.nx : b.x0 + b.nx;
    int y1 = a.y0 + a.ny < b.y0 + b.ny ? a.y0 + a.ny : b.y0 + b.ny;
    r.x0 = a.x0 > b.x0 ? a.x0 : b.x0;
    r.y0 = a.y0 > b.y0 ? a.y0 : b.y0;
    r.nx = x1 > r.x0 ? x1 - r.x0 : 0;
    r.ny = y1 > r.y0 ? y1 - r.y0 : 0;
    return r;
}
static size_t blk_size(Blk b) { return (size_t)b.nx * (size_t)b.ny; }

/* Part `i` of `n` of the range 0 .. len-1, as even as possible. */
static void split(int len, int n, int i, int *start, int *count) {
    *start = (int)((long long)len * i / n);
    *count = (int)((long long)len * (i + 1) / n) - *start;
}

/* Copy the elements of `part` (inside both blocks) of nz levels from an array laid out as `sb` to
 * one laid out as `db` (row-major [z][y][x]). */
static void copy_part(const float *src, Blk sb, float *dst, Blk db, Blk part, int nz) {
    for (int z = 0; z < nz; ++z)
        for (int y = part.y0; y < part.y0 + part.ny; ++y)
            memcpy(dst + ((size_t)z * db.ny + (size_t)(y - db.y0)) * db.nx + (size_t)(part.x0 - db.x0),
                   src + ((size_t)z * sb.ny + (size_t)(y - sb.y0)) * sb.nx + (size_t)(part.x0 - sb.x0),
                   (size_t)part.nx * sizeof(float));
}

/* The value of element (z, y, x) of field `field` of `file` of `member` at `cycle`, exact in a float.
 * (x, y) index the file's global array (with halo for ANAL). */
static float value(int member, enum File file, int field, int cycle, int z, int y, int x) {
    uint32_t h = (uint32_t)(member * 1000003 + (int)file * 7919 + field * 104729 + cycle * 15485863);
    h ^= (uint32_t)z * 2654435761u ^ (uint32_t)y * 40503u ^ (uint32_t)x * 69069u;
    h ^= h >> 13;
    return (float)(h & 0xffffff);
}

static void fill(float *a, Blk b, int nz, int member, enum File file, int field, int cycle) {
    for (int z = 0; z < nz; ++z)
        for (int y = 0; y < b.ny; ++y)
            for (int x = 0; x < b.nx; ++x)
                *a++ = value(member, file, field, cycle, z, b.y0 + y, b.x0 + x);
}

/* ---- options, errors, timing ---------------------------------------------------------------- */

typedef struct {
    const char *role, *label, *dir, *csv, *config;
    int members, px, py, imax, jmax, kmax, gx, gy; /* gx, gy > 0: fixed global grid (strong scaling) */
    int cycles, reps, verify;
    int rotate; /* rep r runs the modes from the (r mod n)-th on (--rotate) */
    int compute_ms; /* per cycle and role (--compute) */
    int original;   /* --calls original: the original DTF's benchmark's calls (the header comment) */
    int api;        /* --api: PnetCDF's nonblocking calls, PnetCDF's blocking ones, netCDF-C's (the header comment) */
    char modes[128];
} Opts;

static int g_rank;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "letkf_io rank %d: ", g_rank);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define NC(call)                                                                                      \
    do {                                                                                              \
        int rc_ = (call);                                                                             \
        if (rc_ != NC_NOERR) die("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #call, ncmpi_strerror(rc_), \
                                 dtf_errmsg());                                                       \
    } while (0)
#define MPI(call)                                                                                     \
    do {                                                                                              \
        if ((call) != MPI_SUCCESS) die("%s:%d: %s failed", __FILE__, __LINE__, #call);                \
    } while (0)

/* P_MSG, P_MSG + 1: messages (s[]: their count; b[]: their bytes), control and data, sent and received;
 * P_MSG + 2: dtf's collectives (s[]: their count); P_MSG + 3: their messages, as P_MSG; P_MSG + 4, 5:
 * values copied writing / reading (b[]: bytes; s[]: per byte of data sent / received). */
enum Phase { P_TOTAL, P_OPEN, P_IO, P_TRANSFER, P_CLOSE, P_APP, P_DTF = P_APP, P_MSG = P_APP + DTF_NUM_PHASES,
             P_ALL = P_MSG + 6 };
static const char *const app_phase[P_APP] = {"total", "open", "io", "transfer", "close"};
static const char *const msg_phase[6] = {"msg.control",  "msg.data",       "msg.collective", "msg.collective.wire",
                                         "copies.writing", "copies.reading"};

/* Seconds and bytes of one cycle on this rank, by phase. */
typedef struct {
    double s[P_ALL], b[P_ALL];
    double mark; /* wall-clock time (CLOCK_REALTIME, comparable between the two jobs on one node) when
                  * the model's compute ended, or when the assimilation held all the model's output */
} Sample;

static Sample *g_cur; /* the cycle being measured */
static double g_t0;   /* start of the current phase */
static void start(void) { g_t0 = MPI_Wtime(); }

/* The program's own work between its output and its next input: `ms` milliseconds of floating-point
 * work on the CPU, in no I/O phase (start() restarts the phase clock after it); it counts in the
 * cycle's total. With dtf's progress thread the data can move meanwhile. */
static volatile double g_sink;
static void compute(int ms) {
    if (ms <= 0) return;
    const double end = MPI_Wtime() + 1e-3 * ms;
    double x = 1.0;
    while (MPI_Wtime() < end)
        for (int i = 0; i < 4096; ++i) x = x * 1.0000001 + 1e-9;
    g_sink = x;
    start();
}
static double wall_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static void mark(void) { g_cur->mark = wall_clock(); }

static void stop(enum Phase p) {
    double t = MPI_Wtime();
    g_cur->s[p] += t - g_t0;
    g_t0 = t;
}

/* Both roles start a cycle together. MPI_Barrier spins inside Open MPI, as applications' collectives
 * do. With --compute the runs are about data moving in the background, and on a node with more ranks
 * than cores (this machine: 4 ranks on 2 cores) ranks spinning in MPI_Barrier can starve, for
 * seconds, the progress thread that still has to serve the last cycle's readers (docs/RELIABILITY.md);
 * there the barrier sleeps between tests instead, as the compute phase leaves the core. */
static void start_together(MPI_Comm comm, int quiet) {
    if (!quiet) {
        MPI(MPI_Barrier(comm));
        return;
    }
    MPI_Request req;
    int done = 0;
    MPI(MPI_Ibarrier(comm, &req));
    for (;;) {
        MPI(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        if (done) break;
        struct timespec pause = {0, 50000};
        nanosleep(&pause, NULL);
    }
}

/* ---- the decompositions --------------------------------------------------------------------- */

typedef struct {
    Opts o;
    int NX, NY;       /* interior grid of one member */
    int M, P, A;      /* members, ranks per member, assimilation ranks */
    int qx, qy;       /* assimilation grid: qx x qy = A */
    MPI_Comm comm;    /* model: the member's communicator; assim: MPI_COMM_WORLD */
    int member, rank; /* model: member and rank in it */
    Blk mine;         /* this rank's interior block */
    MPI_Comm inter;   /* mpi-raw: to the other role */
} Ctx;

static Blk model_blk(const Ctx *c, int r) {
    Blk b;
    split(c->NX, c->o.px, r % c->o.px, &b.x0, &b.nx);
    split(c->NY, c->o.py, r / c->o.px, &b.y0, &b.ny);
    return b;
}
static Blk assim_blk(const Ctx *c, int r) {
    Blk b;
    split(c->NX, c->qx, r % c->qx, &b.x0, &b.nx);
    split(c->NY, c->qy, r / c->qx, &b.y0, &b.ny);
    return b;
}
/* The block of the analysis file's (halo) array a model rank writes: its interior block shifted by
 * the halo, extended over the halo on the domain's edges. */
static Blk halo_blk(const Ctx *c, int r) {
    Blk b = model_blk(c, r);
    int ix = r % c->o.px, iy = r / c->o.px;
    b.x0 += HALO;
    b.y0 += HALO;
    if (ix == 0) b.x0 -= HALO, b.nx += HALO;
    if (ix == c->o.px - 1) b.nx += HALO;
    if (iy == 0) b.y0 -= HALO, b.ny += HALO;
    if (iy == c->o.py - 1) b.ny += HALO;
    return b;
}
static Blk shifted(Blk b) { /* an interior block in the halo array's indices */
    b.x0 += HALO;
    b.y0 += HALO;
    return b;
}

/* ---- netCDF files --------------------------------------------------------------------------- */

/* ---- the file calls: PnetCDF's, or netCDF-C's on netCDF-4 files (--api netcdf4) ---------------- */

enum Api { API_PNETCDF, API_PNETCDF_BLOCKING, API_NETCDF4, API_NETCDF4_SERIAL };
static const char *const api_name[] = {"pnetcdf", "pnetcdf-blocking", "netcdf4", "netcdf4-serial"};
static int g_nc4;      /* --api netcdf4 or netcdf4-serial */
static int g_serial;   /* --api netcdf4-serial: the model's files one per rank, created and opened alone */
static int g_blocking; /* --api netcdf4 or pnetcdf-blocking: blocking puts and gets, files read in turn */

#ifdef LETKF_NETCDF4
#define NC4(call) NC(call)
#else
#define NC4(call) die("%s: this letkf_io was built without netCDF-C", #call)
#endif

static void f_create(MPI_Comm comm, const char *path, int *ncid) {
    if (g_nc4) NC4(nc_create_par(path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, comm, MPI_INFO_NULL, ncid));
    else NC(ncmpi_create(comm, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, ncid));
}

/* A file of one process (--api netcdf4-serial). */
static void f_create_serial(const char *path, int *ncid) {
    NC4(nc_create(path, NC_CLOBBER | NC_NETCDF4 | NC_CLASSIC_MODEL, ncid));
}

static void f_open(MPI_Comm comm, const char *path, int omode, int *ncid) {
    if (comm == MPI_COMM_SELF) NC4(nc_open(path, omode, ncid)); /* (a file of one process) */
    else if (g_nc4) NC4(nc_open_par(path, omode, comm, MPI_INFO_NULL, ncid));
    else NC(ncmpi_open(comm, path, omode, MPI_INFO_NULL, ncid));
}

static void f_def_dim(int ncid, const char *name, MPI_Offset len, int *id) {
    if (g_nc4) NC4(nc_def_dim(ncid, name, (size_t)len, id));
    else NC(ncmpi_def_dim(ncid, name, len, id));
}

static void f_def_var(int ncid, const char *name, nc_type type, int nd, const int *dims, int *id) {
    if (g_nc4) NC4(nc_def_var(ncid, name, type, nd, dims, id));
    else NC(ncmpi_def_var(ncid, name, type, nd, dims, id));
}

static void f_put_title(int ncid) {
    if (g_nc4) NC4(nc_put_att_text(ncid, NC_GLOBAL, "title", 22, "letkf_io benchmark run"));
    else NC(ncmpi_put_att_text(ncid, NC_GLOBAL, "title", 22, "letkf_io benchmark run"));
}

/* netCDF-4: then every variable in collective access (a record variable grows only so), unless the
 * file is a process's own (netcdf4-serial: no parallel access). */
static void f_enddef(int ncid, int serial) {
    if (!g_nc4) {
        NC(ncmpi_enddef(ncid));
        return;
    }
    int nvars = 0;
    NC4(nc_enddef(ncid));
    if (serial) return;
    NC4(nc_inq_nvars(ncid, &nvars));
    for (int v = 0; v < nvars; ++v) NC4(nc_var_par_access(ncid, v, NC_COLLECTIVE));
}

static void f_inq_varid(int ncid, const char *name, int *id) {
    if (g_nc4) NC4(nc_inq_varid(ncid, name, id));
    else NC(ncmpi_inq_varid(ncid, name, id));
}

/* A put or get of a block: PnetCDF's nonblocking call (completed by f_wait_all), netCDF-C's blocking
 * one (collective puts, independent gets). */
static void f_iput(int ncid, int varid, int nd, const MPI_Offset *st, const MPI_Offset *ct, const void *buf,
                   nc_type memtype) {
    if (!g_nc4 && g_blocking) {
        if (memtype == NC_DOUBLE) NC(ncmpi_put_vara_double_all(ncid, varid, st, ct, buf));
        else NC(ncmpi_put_vara_float_all(ncid, varid, st, ct, buf));
        return;
    }
    if (!g_nc4) {
        if (memtype == NC_DOUBLE) NC(ncmpi_iput_vara_double(ncid, varid, st, ct, buf, NULL));
        else NC(ncmpi_iput_vara_float(ncid, varid, st, ct, buf, NULL));
        return;
    }
#ifdef LETKF_NETCDF4
    size_t s[4], c[4];
    for (int k = 0; k < nd; ++k) s[k] = (size_t)st[k], c[k] = (size_t)ct[k];
    if (memtype == NC_DOUBLE) NC(nc_put_vara_double(ncid, varid, s, c, buf));
    else NC(nc_put_vara_float(ncid, varid, s, c, buf));
#else
    (void)nd;
    NC4(nc_put_vara);
#endif
}

static void f_iget_float(int ncid, int varid, int nd, const MPI_Offset *st, const MPI_Offset *ct, float *buf) {
    if (!g_nc4) {
        if (g_blocking) NC(ncmpi_get_vara_float_all(ncid, varid, st, ct, buf));
        else NC(ncmpi_iget_vara_float(ncid, varid, st, ct, buf, NULL));
        return;
    }
#ifdef LETKF_NETCDF4
    size_t s[4], c[4];
    for (int k = 0; k < nd; ++k) s[k] = (size_t)st[k], c[k] = (size_t)ct[k];
    NC(nc_get_vara_float(ncid, varid, s, c, buf));
#else
    (void)nd;
    NC4(nc_get_vara_float);
#endif
}

static void f_wait_all(int ncid) {
    if (!g_blocking) NC(ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL));
}

static void f_sync(int ncid) {
    if (g_nc4) NC4(nc_sync(ncid));
    else NC(ncmpi_sync(ncid));
}

static void f_close(int ncid) {
    if (g_nc4) NC4(nc_close(ncid));
    else NC(ncmpi_close(ncid));
}

/* The modes whose files dtf handles in mode="transfer". */
static int is_transfer(const char *mode) {
    return !strcmp(mode, "transfer") || !strcmp(mode, "transfer-replay") || !strcmp(mode, "transfer-persist");
}

/* DIR/<kind>.m<member>.<mode letter>.nc; with --calls original, new names every cycle:
 * DIR/<kind>.c<cycle>.m<member>.<mode letter>.nc (the write-back goes into the analysis file then);
 * with --api netcdf4-serial, model rank `rank`'s own history and analysis files:
 * DIR/<kind>.m<member>.p<rank>.<mode letter>.nc. */
static void file_name(char *out, size_t n, const Ctx *c, enum File f, int member, int rank, const char *mode,
                      int cycle) {
    static const char *const kind[] = {"hist", "anal", "back"};
    char when[24] = "", part[24] = "";
    if (c->o.original) snprintf(when, sizeof when, "c%d.", cycle);
    if (g_serial && f != BACK) snprintf(part, sizeof part, "p%d.", rank);
    snprintf(out, n, "%s/%s.%sm%d.%s%s.nc", c->o.dir, kind[f], when, member, part,
             !strcmp(mode, "transfer")          ? "t"
             : !strcmp(mode, "transfer-replay") ? "r"
             : !strcmp(mode, "transfer-persist") ? "p"
                                                 : "f");
}

/* A field's name (HIST or ANAL numbering), made once: a model's names are constants, and formatting
 * them in every cycle would time the benchmark's snprintf (slow in processes that load libquadmath,
 * as PnetCDF's Fortran runtime does) as if it were the file's cost. */
static const char *field_name(enum File f, int field) {
    static char names[2][ANAL_3D + ANAL_2D][16];
    const int h = f == HIST, n3d = h ? HIST_3D : ANAL_3D;
    char *name = names[h][field];
    if (!name[0])
        snprintf(name, sizeof names[0][0], "%s%s_%02d", h ? "h" : "a", field < n3d ? "3d" : "2d",
                 field < n3d ? field : field - n3d);
    return name;
}

/* Define a file of ny x nx columns; varids of fields in fid[], of axes/coordinates in aid[]. */
static void define(int ncid, const Ctx *c, enum File f, int ny, int nx, int *fid, int *aid) {
    const int rec = f == HIST;
    int dt = -1, dz, dy, dx, d[4];
    if (rec) f_def_dim(ncid, "time", NC_UNLIMITED, &dt);
    f_def_dim(ncid, "z", c->o.kmax, &dz);
    f_def_dim(ncid, "y", ny, &dy);
    f_def_dim(ncid, "x", nx, &dx);
    int na = 0;
    if (f != BACK) {
        if (rec) f_def_var(ncid, "time", NC_DOUBLE, 1, &dt, &aid[na++]);
        f_def_var(ncid, "z", NC_DOUBLE, 1, &dz, &aid[na++]);
        f_def_var(ncid, "y", NC_DOUBLE, 1, &dy, &aid[na++]);
        f_def_var(ncid, "x", NC_DOUBLE, 1, &dx, &aid[na++]);
        d[0] = dy, d[1] = dx;
        f_def_var(ncid, "lon", NC_DOUBLE, 2, d, &aid[na++]);
        f_def_var(ncid, "lat", NC_DOUBLE, 2, d, &aid[na++]);
    }
    const int n3d = f == HIST ? HIST_3D : ANAL_3D, n2d = f == HIST ? HIST_2D : ANAL_2D;
    for (int v = 0; v < n3d + n2d; ++v) {
        if (f == BACK) { /* only the variables the assimilation writes back */
            int i;
            for (i = 0; i < ANAL_READS && read_var(ANAL, i, 1).field != v; ++i) {}
            if (i == ANAL_READS) continue;
        }
        int nd = 0;
        if (rec) d[nd++] = dt;
        if (v < n3d) d[nd++] = dz;
        d[nd++] = dy;
        d[nd++] = dx;
        f_def_var(ncid, field_name(f, v), NC_FLOAT, nd, d, &fid[v]);
    }
    f_put_title(ncid);
    f_enddef(ncid, g_serial && f != BACK);
}

/* Start/count of a block of nz levels in a (record) variable. */
static int box(MPI_Offset *st, MPI_Offset *ct, int rec, int nz, int is3d, Blk b) {
    int n = 0;
    if (rec) st[n] = 0, ct[n++] = 1;
    if (is3d) st[n] = 0, ct[n++] = nz;
    st[n] = b.y0, ct[n++] = b.ny;
    st[n] = b.x0, ct[n++] = b.nx;
    return n;
}

/* Evict a written file from the page cache after making it durable (file-sync mode). */
static void sync_and_evict(int ncid, MPI_Comm comm, const char *path) {
    int rank;
    f_sync(ncid);
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        int fd = open(path, O_RDONLY);
        if (fd < 0 || fdatasync(fd) != 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0)
            die("cannot sync and evict '%s'", path);
        close(fd);
    }
    MPI(MPI_Barrier(comm));
}

/* The end of a session, after its puts or gets have completed: the transfer (transfer mode) or the
 * sync and eviction (file-sync, writer), then close; `attached`: the bput buffer is detached first
 * (as the original's model does: dtf_transfer, ncmpi_buffer_detach, close). */
static void close_session(int ncid, const char *path, MPI_Comm comm, const char *mode, int writer, int attached) {
    if (is_transfer(mode)) {
        NC(dtf_transfer(path, ncid));
        stop(P_TRANSFER);
    } else if (writer && strcmp(mode, "file-sync") == 0) {
        sync_and_evict(ncid, comm, path);
        stop(P_TRANSFER);
    }
    if (attached) NC(ncmpi_buffer_detach(ncid));
    f_close(ncid);
    stop(P_CLOSE);
}

/* Complete the puts or gets of a session, then close it. */
static void finish(int ncid, const char *path, MPI_Comm comm, const char *mode, int writer) {
    f_wait_all(ncid);
    stop(P_IO);
    close_session(ncid, path, comm, mode, writer, 0);
}

/* ---- the model ------------------------------------------------------------------------------ */

typedef struct {
    float *hist[HIST_3D + HIST_2D], *anal[ANAL_3D + ANAL_2D], *back[ANAL_READS];
    double *axis[4], *coord[2]; /* time, z, y, x; lon, lat (of the larger, analysis block) */
    /* --calls original: the written-back variables read into halo-padded arrays (padded[i]), through
     * MPI subarray types of their interior (interior[is3d]) */
    float *padded[ANAL_READS];
    MPI_Datatype interior[2];
} ModelData;

/* With --calls original, the last fields of a file are written by bput, as many as the original's model
 * writes so (history 18 of 83, analysis 82 of 138). */
static int bput_fields(const Ctx *c, enum File f) { return !c->o.original ? 0 : f == HIST ? 18 : 82; }

/* Create file f and write it: the puts are complete (wait_all) when this returns, the file still open
 * (close_session ends it). With --calls original: iputs, wait_all, the time by put_var1_double_all,
 * the last fields by bput (into a buffer attached for them), wait_all. */
static int model_put(Ctx *c, ModelData *d, enum File f, const char *path, int cycle) {
    const int n3d = f == HIST ? HIST_3D : ANAL_3D, nf = n3d + (f == HIST ? HIST_2D : ANAL_2D), rec = f == HIST;
    const int halo = f == ANAL ? HALO : 0;
    const Blk mine = f == HIST ? c->mine : halo_blk(c, c->rank);
    /* The block in the file's indices: its own file's (netcdf4-serial) starts at 0, 0 */
    const Blk b = g_serial ? (Blk){0, mine.nx, 0, mine.ny} : mine;
    float **data = f == HIST ? d->hist : d->anal;
    int fid[ANAL_3D + ANAL_2D], aid[6], ncid;
    MPI_Offset st[4], ct[4];
    const int first_bput = nf - bput_fields(c, f);
    start();
    if (g_serial) {
        f_create_serial(path, &ncid);
        define(ncid, c, f, b.ny, b.nx, fid, aid);
    } else {
        f_create(c->comm, path, &ncid);
        define(ncid, c, f, c->NY + 2 * halo, c->NX + 2 * halo, fid, aid);
    }
    if (first_bput < nf) {
        MPI_Offset attach = 0;
        for (int v = first_bput; v < nf; ++v)
            attach += (MPI_Offset)(blk_size(b) * sizeof(float)) * (v < n3d ? c->o.kmax : 1);
        NC(ncmpi_buffer_attach(ncid, attach));
    }
    stop(P_OPEN);
    /* Axes and coordinates: each along its dimension by the ranks on the first row/column (every rank
     * in its own file). */
    const int ix = g_serial ? 0 : c->rank % c->o.px, iy = g_serial ? 0 : c->rank / c->o.px, a = rec,
              first = g_serial || c->rank == 0;
    MPI_Offset zero = 0, one = first, nz = first ? c->o.kmax : 0;
    double when = cycle;
    if (rec && !c->o.original) f_iput(ncid, aid[0], 1, &zero, &one, &when, NC_DOUBLE);
    f_iput(ncid, aid[a], 1, &zero, &nz, d->axis[1], NC_DOUBLE);
    st[0] = b.y0, ct[0] = ix == 0 ? b.ny : 0;
    f_iput(ncid, aid[a + 1], 1, st, ct, d->axis[2], NC_DOUBLE);
    st[0] = b.x0, ct[0] = iy == 0 ? b.nx : 0;
    f_iput(ncid, aid[a + 2], 1, st, ct, d->axis[3], NC_DOUBLE);
    st[0] = b.y0, ct[0] = b.ny, st[1] = b.x0, ct[1] = b.nx;
    f_iput(ncid, aid[a + 3], 2, st, ct, d->coord[0], NC_DOUBLE);
    f_iput(ncid, aid[a + 4], 2, st, ct, d->coord[1], NC_DOUBLE);
    for (int v = 0; v < first_bput; ++v) {
        const int nd = box(st, ct, rec, c->o.kmax, v < n3d, b);
        f_iput(ncid, fid[v], nd, st, ct, data[v], NC_FLOAT);
    }
    if (c->o.original) {
        NC(ncmpi_wait_all(ncid, NC_REQ_ALL, NULL, NULL));
        if (rec) NC(ncmpi_put_var1_double_all(ncid, aid[0], &zero, &when)); /* (every rank: the same value) */
        for (int v = first_bput; v < nf; ++v) {
            box(st, ct, rec, c->o.kmax, v < n3d, b);
            NC(ncmpi_bput_vara_float(ncid, fid[v], st, ct, data[v], NULL));
        }
    }
    g_cur->b[P_IO] += (double)blk_size(b) * sizeof(float) * (n3d * c->o.kmax + nf - n3d);
    f_wait_all(ncid);
    stop(P_IO);
    return ncid;
}

/* Open a file (NC_NOWRITE, or NC_WRITE for a write-back) and find the variables of `f` this role
 * reads. */
static int open_vars(const char *path, MPI_Comm comm, int omode, enum File f, int *varid) {
    int ncid;
    f_open(comm, path, omode, &ncid);
    for (int i = 0; i < nreads(f); ++i)
        f_inq_varid(ncid, field_name(f == HIST ? HIST : ANAL, read_var(f, i, 1).field), &varid[i]);
    return ncid;
}

/* Open `path` and post the gets of the variables of `f` this role reads, block `b` of the file's
 * array, into dst[i]; returns the ncid (finish() completes them). */
static int post_reads(Ctx *c, const char *path, MPI_Comm comm, enum File f, Blk b, float **dst) {
    int varid[HIST_READS], ncid;
    MPI_Offset st[4], ct[4];
    start();
    ncid = open_vars(path, comm, NC_NOWRITE, f, varid);
    stop(P_OPEN);
    for (int i = 0; i < nreads(f); ++i) {
        ReadVar r = read_var(f, i, c->o.kmax);
        const int nd = box(st, ct, f == HIST, r.nz, r.is3d, b);
        f_iget_float(ncid, varid[i], nd, st, ct, dst[i]);
        g_cur->b[P_IO] += (double)blk_size(b) * r.nz * sizeof(float);
    }
    stop(P_IO);
    return ncid;
}

/* Read the variables of `f` this role reads (post_reads), and complete them. */
static void read_file(Ctx *c, const char *path, MPI_Comm comm, enum File f, Blk b, float **dst, const char *mode) {
    finish(post_reads(c, path, comm, f, b, dst), path, comm, mode, 0);
}

static float *alloc_floats(size_t n);

/* --api netcdf4-serial: read the variables of `f` this role reads from each model rank's own file of
 * member m, each opened alone, the part of it that meets this rank's block, into dst[i] (laid out as
 * this rank's block): in place if it is the whole block, else through a buffer (none if they do not
 * meet: the file is opened and closed all the same, since every rank of the assimilation opens it). */
static void read_rank_files(Ctx *c, enum File f, int m, float **dst, const char *mode, int cycle) {
    static float *scratch[HIST_READS > ANAL_READS ? HIST_READS : ANAL_READS];
    char path[4096];
    for (int i = 0; i < nreads(f); ++i)
        if (!scratch[i]) scratch[i] = alloc_floats(blk_size(c->mine) * (size_t)c->o.kmax);
    for (int r = 0; r < c->P; ++r) {
        const Blk file = f == HIST ? model_blk(c, r) : halo_blk(c, r); /* the file's block of the global array */
        const Blk part = intersect(c->mine, model_blk(c, r)), at = f == HIST ? part : shifted(part);
        const Blk local = blk_size(part) ? (Blk){at.x0 - file.x0, at.nx, at.y0 - file.y0, at.ny} : (Blk){0, 0, 0, 0};
        const int whole = part.nx == c->mine.nx && part.ny == c->mine.ny;
        file_name(path, sizeof path, c, f, m, r, mode, cycle);
        read_file(c, path, MPI_COMM_SELF, f, local, whole ? dst : scratch, mode);
        for (int i = 0; !whole && i < nreads(f); ++i)
            copy_part(scratch[i], part, dst[i], c->mine, part, read_var(f, i, c->o.kmax).nz);
        stop(P_IO);
    }
}

/* Write the variables the assimilation writes back (block `b`, from src[i]). */
static void write_back(Ctx *c, const char *path, float **src, const char *mode) {
    int fid[ANAL_3D + ANAL_2D], ncid;
    MPI_Offset st[4], ct[4];
    start();
    f_create(c->comm, path, &ncid);
    define(ncid, c, BACK, c->NY, c->NX, fid, NULL);
    stop(P_OPEN);
    for (int i = 0; i < ANAL_READS; ++i) {
        ReadVar r = read_var(BACK, i, c->o.kmax);
        const int nd = box(st, ct, 0, r.nz, r.is3d, c->mine);
        f_iput(ncid, fid[r.field], nd, st, ct, src[i], NC_FLOAT);
        g_cur->b[P_IO] += (double)blk_size(c->mine) * r.nz * sizeof(float);
    }
    finish(ncid, path, c->comm, mode, 1);
}

/* --calls original: the written-back analysis in the analysis file, this rank's block of its interior.
 * The assimilation writes it from arrays[i] (interior NULL), into the file opened with NC_WRITE; the
 * model reads it into the interior of the halo-padded arrays[i], by iget with an MPI subarray type
 * (interior[is3d]). */
static void written_back(Ctx *c, const char *path, float **arrays, const MPI_Datatype *interior, const char *mode) {
    const int write = interior == NULL;
    int varid[ANAL_READS], ncid;
    MPI_Offset st[4], ct[4];
    start();
    ncid = open_vars(path, c->comm, write ? NC_WRITE : NC_NOWRITE, BACK, varid);
    stop(P_OPEN);
    for (int i = 0; i < ANAL_READS; ++i) {
        const ReadVar r = read_var(BACK, i, c->o.kmax);
        box(st, ct, 0, r.nz, r.is3d, shifted(c->mine));
        if (write)
            NC(ncmpi_iput_vara_float(ncid, varid[i], st, ct, arrays[i], NULL));
        else
            NC(ncmpi_iget_vara(ncid, varid[i], st, ct, arrays[i], 1, interior[r.is3d], NULL));
        g_cur->b[P_IO] += (double)blk_size(c->mine) * r.nz * sizeof(float);
    }
    finish(ncid, path, c->comm, mode, write);
}

/* ---- mpi-raw: the same blocks over pre-posted point-to-point messages ------------------------- */

/* One message of a cycle: the part of the peer's block this rank sends or receives, for all
 * variables of a file (in read order), packed in buf. */
typedef struct {
    int peer, tag, member;
    Blk part;
    float *buf;
    size_t n;
} Link;

typedef struct {
    Link *links;
    int n;
    MPI_Request *reqs;
} Links;

static size_t link_volume(enum File f, Blk part, int kmax) {
    size_t n = 0;
    for (int i = 0; i < nreads(f); ++i) n += blk_size(part) * (size_t)read_var(f, i, kmax).nz;
    return n;
}

static void add_link(Links *l, int peer, enum File f, int member, Blk part, int kmax) {
    if (blk_size(part) == 0) return;
    Link *k = &l->links[l->n++];
    k->peer = peer, k->tag = (int)f, k->member = member, k->part = part;
    k->n = link_volume(f, part, kmax);
    k->buf = malloc(k->n * sizeof(float) + 1);
    if (!k->buf) die("out of memory");
}

/* Copy the variables of link k between its buffer and arrays[i] (block `layout`); `part_in` is the
 * link's part in the arrays' index space. */
static void pack(const Link *k, enum File f, float **arrays, Blk layout, Blk part_in, int kmax, int unpack) {
    float *p = k->buf;
    for (int i = 0; i < nreads(f); ++i) {
        const int nz = read_var(f, i, kmax).nz;
        if (unpack)
            copy_part(p, part_in, arrays[i], layout, part_in, nz);
        else
            copy_part(arrays[i], layout, p, part_in, part_in, nz);
        p += blk_size(part_in) * (size_t)nz;
    }
}

static void post(Links *l, int from, int to, int recv, MPI_Comm inter) {
    for (int i = from; i < to; ++i) {
        Link *k = &l->links[i];
        if (recv)
            MPI(MPI_Irecv(k->buf, (int)k->n, MPI_FLOAT, k->peer, k->tag, inter, &l->reqs[i]));
        else
            MPI(MPI_Isend(k->buf, (int)k->n, MPI_FLOAT, k->peer, k->tag, inter, &l->reqs[i]));
    }
}

static void free_links(Links *l) {
    for (int i = 0; i < l->n; ++i) free(l->links[i].buf);
    free(l->links);
    free(l->reqs);
}

/* The model's links: hist and anal to every assimilation rank whose block meets this rank's, and
 * back from them (same parts). */
static Links model_links(const Ctx *c) {
    Links l = {calloc((size_t)c->A * 3, sizeof(Link)), 0, calloc((size_t)c->A * 3, sizeof(MPI_Request))};
    for (enum File f = HIST; f <= BACK; ++f)
        for (int a = 0; a < c->A; ++a) add_link(&l, a, f, c->member, intersect(c->mine, assim_blk(c, a)), c->o.kmax);
    return l;
}

/* The assimilation's links: hist and anal from, and back to, every model rank whose block meets ours. */
static Links assim_links(const Ctx *c) {
    Links l = {calloc((size_t)c->M * c->P * 3, sizeof(Link)), 0, calloc((size_t)c->M * c->P * 3, sizeof(MPI_Request))};
    for (enum File f = HIST; f <= BACK; ++f)
        for (int m = 0; m < c->M; ++m)
            for (int r = 0; r < c->P; ++r)
                add_link(&l, m * c->P + r, f, m, intersect(c->mine, model_blk(c, r)), c->o.kmax);
    return l;
}

static int first_of(const Links *l, enum File f) {
    int i = 0;
    while (i < l->n && l->links[i].tag < (int)f) ++i;
    return i;
}

static void read_arrays(float **out, float **fields, enum File f) {
    for (int i = 0; i < nreads(f); ++i) out[i] = fields[read_var(f, i, 1).field];
}

/* Post the receives of a cycle (before it starts, so they are pre-posted when the data comes). */
static void raw_prepost(Ctx *c, Links *l, int model) {
    const int b = first_of(l, BACK);
    if (model)
        post(l, b, l->n, 1, c->inter);
    else
        post(l, 0, b, 1, c->inter);
}

static void model_raw_cycle(Ctx *c, Links *l, ModelData *d) {
    const int h = first_of(l, HIST), a = first_of(l, ANAL), b = first_of(l, BACK);
    float *src[HIST_READS];
    start();
    read_arrays(src, d->hist, HIST);
    for (int i = h; i < a; ++i) pack(&l->links[i], HIST, src, c->mine, l->links[i].part, c->o.kmax, 0);
    post(l, h, a, 0, c->inter);
    read_arrays(src, d->anal, ANAL);
    for (int i = a; i < b; ++i)
        pack(&l->links[i], ANAL, src, halo_blk(c, c->rank), shifted(l->links[i].part), c->o.kmax, 0);
    post(l, a, b, 0, c->inter);
    stop(P_IO);
    compute(c->o.compute_ms);
    mark();
    MPI(MPI_Waitall(l->n, l->reqs, MPI_STATUSES_IGNORE));
    stop(P_TRANSFER);
    for (int i = b; i < l->n; ++i) pack(&l->links[i], BACK, d->back, c->mine, l->links[i].part, c->o.kmax, 1);
    for (int i = 0; i < l->n; ++i) g_cur->b[P_IO] += (double)l->links[i].n * sizeof(float);
    stop(P_IO);
}

typedef struct {
    float **hist, **anal, **back; /* [member * reads + i] */
} AssimData;

static void assim_raw_cycle(Ctx *c, Links *l, AssimData *d) {
    const int b = first_of(l, BACK);
    start();
    MPI(MPI_Waitall(b, l->reqs, MPI_STATUSES_IGNORE));
    mark();
    stop(P_TRANSFER);
    for (int i = 0; i < l->n; ++i) {
        const Link *k = &l->links[i];
        const enum File f = (enum File)k->tag;
        float **arrays = (f == HIST ? d->hist : f == ANAL ? d->anal : d->back) + (size_t)k->member * nreads(f);
        pack(k, f, arrays, c->mine, k->part, c->o.kmax, f != BACK);
        g_cur->b[P_IO] += (double)k->n * sizeof(float);
    }
    stop(P_IO);
    compute(c->o.compute_ms);
    post(l, b, l->n, 0, c->inter);
    stop(P_IO);
    MPI(MPI_Waitall(l->n - b, l->reqs + b, MPI_STATUSES_IGNORE));
    stop(P_TRANSFER);
}

/* ---- data: allocation, generation, verification --------------------------------------------- */

static float *alloc_floats(size_t n) {
    float *p = malloc((n ? n : 1) * sizeof(float));
    if (!p) die("out of memory (%zu floats)", n);
    memset(p, 0, (n ? n : 1) * sizeof(float)); /* pre-faulted: the memory figures count only the I/O */
    return p;
}

static void model_alloc(const Ctx *c, ModelData *d) {
    const Blk h = halo_blk(c, c->rank);
    const int k = c->o.kmax;
    for (int v = 0; v < HIST_3D + HIST_2D; ++v) d->hist[v] = alloc_floats(blk_size(c->mine) * (v < HIST_3D ? k : 1));
    for (int v = 0; v < ANAL_3D + ANAL_2D; ++v) d->anal[v] = alloc_floats(blk_size(h) * (v < ANAL_3D ? k : 1));
    for (int i = 0; i < ANAL_READS; ++i) d->back[i] = alloc_floats(blk_size(c->mine) * read_var(BACK, i, k).nz);
    d->axis[0] = calloc(1, sizeof(double));
    d->axis[1] = calloc((size_t)k, sizeof(double));
    d->axis[2] = calloc((size_t)h.ny, sizeof(double));
    d->axis[3] = calloc((size_t)h.nx, sizeof(double));
    d->coord[0] = calloc(blk_size(h), sizeof(double));
    d->coord[1] = calloc(blk_size(h), sizeof(double));
    if (!c->o.original) return;
    const Blk in = c->mine;
    for (int is3d = 0; is3d < 2; ++is3d) {
        const int sizes[3] = {is3d ? k : 1, in.ny + 2 * HALO, in.nx + 2 * HALO}, sub[3] = {sizes[0], in.ny, in.nx},
                  at[3] = {0, HALO, HALO};
        MPI(MPI_Type_create_subarray(3, sizes, sub, at, MPI_ORDER_C, MPI_FLOAT, &d->interior[is3d]));
        MPI(MPI_Type_commit(&d->interior[is3d]));
    }
    for (int i = 0; i < ANAL_READS; ++i)
        d->padded[i] = alloc_floats((size_t)(in.nx + 2 * HALO) * (size_t)(in.ny + 2 * HALO) * read_var(BACK, i, k).nz);
}

/* --calls original: the interiors of the padded arrays into back[] (for check()). */
static void unpad(const Ctx *c, ModelData *d) {
    const Blk in = c->mine, padded = {in.x0 - HALO, in.nx + 2 * HALO, in.y0 - HALO, in.ny + 2 * HALO};
    for (int i = 0; i < ANAL_READS; ++i)
        copy_part(d->padded[i], padded, d->back[i], in, in, read_var(BACK, i, c->o.kmax).nz);
}

static void model_fill(const Ctx *c, ModelData *d, int cycle) {
    const Blk h = halo_blk(c, c->rank);
    for (int v = 0; v < HIST_3D + HIST_2D; ++v)
        fill(d->hist[v], c->mine, v < HIST_3D ? c->o.kmax : 1, c->member, HIST, v, cycle);
    for (int v = 0; v < ANAL_3D + ANAL_2D; ++v) fill(d->anal[v], h, v < ANAL_3D ? c->o.kmax : 1, c->member, ANAL, v, cycle);
}

/* Count the values of arrays[i] (the read variables of f, block b of the file's array) that differ
 * from what the writer wrote; print the first. */
static long check(const float *const *arrays, enum File f, Blk b, int member, int cycle, int kmax, const char *mode) {
    long bad = 0;
    for (int i = 0; i < nreads(f); ++i) {
        const ReadVar r = read_var(f, i, kmax);
        const float *a = arrays[i];
        for (int z = 0; z < r.nz; ++z)
            for (int y = b.y0; y < b.y0 + b.ny; ++y)
                for (int x = b.x0; x < b.x0 + b.nx; ++x, ++a) {
                    const float want = value(member, f, r.field, cycle, z, y, x);
                    if (*a != want && bad++ == 0)
                        fprintf(stderr, "letkf_io rank %d: %s: %s of member %d, cycle %d, field %d, (z %d, y %d, x %d): "
                                "got %.1f, want %.1f\n", g_rank, mode, f == HIST ? "hist" : f == ANAL ? "anal" : "back",
                                member, cycle, r.field, z, y, x, (double)*a, (double)want);
                }
    }
    return bad;
}

static AssimData assim_alloc(const Ctx *c) {
    AssimData d;
    d.hist = calloc((size_t)c->M * HIST_READS, sizeof(float *));
    d.anal = calloc((size_t)c->M * ANAL_READS, sizeof(float *));
    d.back = calloc((size_t)c->M * ANAL_READS, sizeof(float *));
    for (int m = 0; m < c->M; ++m) {
        for (int i = 0; i < HIST_READS; ++i)
            d.hist[m * HIST_READS + i] = alloc_floats(blk_size(c->mine) * read_var(HIST, i, c->o.kmax).nz);
        for (int i = 0; i < ANAL_READS; ++i) {
            d.anal[m * ANAL_READS + i] = alloc_floats(blk_size(c->mine) * read_var(ANAL, i, c->o.kmax).nz);
            d.back[m * ANAL_READS + i] = alloc_floats(blk_size(c->mine) * read_var(BACK, i, c->o.kmax).nz);
        }
    }
    return d;
}

/* ---- one cycle of each role ----------------------------------------------------------------- */

/* (Not inlined: bench/callcost.py counts the instructions of each cycle by these functions.) */
__attribute__((noinline)) static void model_cycle(Ctx *c, ModelData *d, Links *raw, const char *mode, int cycle) {
    if (raw) {
        model_raw_cycle(c, raw, d);
        return;
    }
    char hist[4096], anal[4096], back[4096];
    file_name(hist, sizeof hist, c, HIST, c->member, c->rank, mode, cycle);
    file_name(anal, sizeof anal, c, ANAL, c->member, c->rank, mode, cycle);
    file_name(back, sizeof back, c, BACK, c->member, c->rank, mode, cycle);
    const int h = model_put(c, d, HIST, hist, cycle), a = model_put(c, d, ANAL, anal, cycle);
    /* The rest of the forecast: the output is written, the files not yet closed. */
    compute(c->o.compute_ms);
    mark();
    const MPI_Comm own = g_serial ? MPI_COMM_SELF : c->comm; /* (whose files: a sync's barrier) */
    close_session(h, hist, own, mode, 1, bput_fields(c, HIST) > 0);
    close_session(a, anal, own, mode, 1, bput_fields(c, ANAL) > 0);
    if (c->o.original)
        written_back(c, anal, d->padded, d->interior, mode);
    else
        read_file(c, back, c->comm, BACK, c->mine, d->back, mode);
}

__attribute__((noinline)) static void assim_cycle(Ctx *c, AssimData *d, Links *raw, const char *mode, int cycle) {
    if (raw) {
        assim_raw_cycle(c, raw, d);
        return;
    }
    /* Every file of every member is opened and its gets posted before any is completed, so that
     * all can arrive at once; blocking gets (--api netcdf4, pnetcdf-blocking): each file is read and
     * closed in turn, in the order the model closes them. */
    char path[4096];
    int ncid[2 * c->M];
    for (enum File f = HIST; g_blocking && f <= ANAL; ++f)
        for (int m = 0; m < c->M; ++m) {
            float **dst = f == HIST ? d->hist + (size_t)m * HIST_READS : d->anal + (size_t)m * ANAL_READS;
            if (g_serial) {
                read_rank_files(c, f, m, dst, mode, cycle);
                continue;
            }
            file_name(path, sizeof path, c, f, m, 0, mode, cycle);
            read_file(c, path, MPI_COMM_WORLD, f, f == HIST ? c->mine : shifted(c->mine), dst, mode);
        }
    for (int m = 0; !g_blocking && m < c->M; ++m) {
        file_name(path, sizeof path, c, HIST, m, 0, mode, cycle);
        ncid[2 * m] = post_reads(c, path, MPI_COMM_WORLD, HIST, c->mine, d->hist + (size_t)m * HIST_READS);
        file_name(path, sizeof path, c, ANAL, m, 0, mode, cycle);
        ncid[2 * m + 1] = post_reads(c, path, MPI_COMM_WORLD, ANAL, shifted(c->mine), d->anal + (size_t)m * ANAL_READS);
    }
    for (enum File f = HIST; !g_blocking && f <= ANAL; ++f) /* in the order the model closes them */
        for (int m = 0; m < c->M; ++m) {
            file_name(path, sizeof path, c, f, m, 0, mode, cycle);
            finish(ncid[2 * m + (int)f], path, MPI_COMM_WORLD, mode, 0);
        }
    mark();
    compute(c->o.compute_ms);
    for (int m = 0; m < c->M; ++m) {
        file_name(path, sizeof path, c, c->o.original ? ANAL : BACK, m, 0, mode, cycle);
        if (c->o.original)
            written_back(c, path, d->back + (size_t)m * ANAL_READS, NULL, mode);
        else
            write_back(c, path, d->back + (size_t)m * ANAL_READS, mode);
    }
}

/* ---- results -------------------------------------------------------------------------------- */

/* ---- memory ---------------------------------------------------------------------------------- */

/* A "Vm...:" line of /proc/self/status in bytes (0 if unknown). */
static double vm_bytes(const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    const size_t n = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, n) && line[n] == ':') kib = atof(line + n + 1);
    if (f) fclose(f);
    return kib * 1024;
}
/* CPU seconds (user + system) this process has used. */
static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_sec +
           1e-6 * (double)u.ru_stime.tv_usec;
}
/* Resets the peak resident size (VmHWM) to the current one (Linux >= 4.0). */
static void reset_peak(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) fputs("5", f), fclose(f);
}
/* Bytes per cycle that the other role reads of what this rank writes. */
static double read_from_me(const Ctx *c, int model) {
    double elems = 0;
    if (model) {
        for (int i = 0; i < HIST_READS; ++i) elems += read_var(HIST, i, c->o.kmax).nz;
        for (int i = 0; i < ANAL_READS; ++i) elems += read_var(ANAL, i, c->o.kmax).nz;
    } else {
        for (int i = 0; i < ANAL_READS; ++i) elems += c->M * read_var(BACK, i, c->o.kmax).nz;
    }
    return elems * (double)blk_size(c->mine) * sizeof(float);
}

/* One row of the CSV (columns: see main). */
static void csv_row(FILE *csv, const Ctx *c, const char *mode, int rep, int cycle, const char *agg, const char *phase,
                    double bytes, double seconds) {
    fprintf(csv, "%s,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%s,%s,%s,%.0f,%.6f\n", c->o.label, c->M, c->o.px, c->o.py,
            c->NX / c->o.px, c->NY / c->o.py, c->o.kmax, c->M * c->P, c->A, mode, rep, cycle,
            strcmp(c->o.role, "model") ? "assim" : "model", agg, phase, bytes, seconds);
}

/* Reduce the samples of one (mode, rep) over the role's ranks; rank 0 appends the rows to the CSV,
 * and two rows for the last cycle about memory: `mem.extra`, how far this rank's resident size rose
 * during the mode above the program's own (its arrays allocated and touched, before any I/O; max
 * over ranks), and `mem.read`, the bytes per cycle the other role reads from one rank (max over
 * ranks). What earlier modes left (libraries' pools, heap not returned) counts too: an upper bound.
 * And `cpu`: the CPU seconds (user + system) the rank used per measured cycle (cycles 1 .., the
 * timed part; max over ranks), which shows whether waiting ranks spin. */
static void report(const Ctx *c, Sample *samples, const char *mode, int rep, FILE *csv, double extra, double cpu) {
    const int n = c->o.cycles * P_ALL, model = strcmp(c->o.role, "model") == 0;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double *s = malloc(sizeof(double) * (size_t)n), *b = malloc(sizeof(double) * (size_t)n);
    double *smax = malloc(sizeof(double) * (size_t)n), *ssum = malloc(sizeof(double) * (size_t)n),
           *bsum = malloc(sizeof(double) * (size_t)n);
    for (int i = 0; i < c->o.cycles; ++i)
        for (int p = 0; p < P_ALL; ++p) s[i * P_ALL + p] = samples[i].s[p], b[i * P_ALL + p] = samples[i].b[p];
    MPI(MPI_Reduce(s, smax, n, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    MPI(MPI_Reduce(s, ssum, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    MPI(MPI_Reduce(b, bsum, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));
    char phase[64];
    if (g_rank == 0 && csv) {
        for (int i = 0; i < c->o.cycles; ++i)
            for (int p = 0; p < P_ALL; ++p)
                for (int agg = 0; agg < 2; ++agg) {
                    const int k = i * P_ALL + p;
                    if (p >= P_DTF && p < P_MSG && !is_transfer(mode)) continue;
                    if (p < P_APP) snprintf(phase, sizeof phase, "%s", app_phase[p]);
                    else if (p < P_MSG) snprintf(phase, sizeof phase, "dtf.%s", dtf_phase_name(p - P_DTF));
                    else snprintf(phase, sizeof phase, "%s", msg_phase[p - P_MSG]);
                    csv_row(csv, c, mode, rep, i, agg ? "mean" : "max", phase, bsum[k], agg ? ssum[k] / size : smax[k]);
                }
    }
    double *marks = malloc(sizeof(double) * (size_t)c->o.cycles), *markmax = malloc(sizeof(double) * (size_t)c->o.cycles);
    for (int i = 0; i < c->o.cycles; ++i) marks[i] = samples[i].mark;
    MPI(MPI_Reduce(marks, markmax, c->o.cycles, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    if (g_rank == 0 && csv)
        for (int i = 0; i < c->o.cycles; ++i) csv_row(csv, c, mode, rep, i, "max", "mark", 0, markmax[i]);
    free(marks), free(markmax);
    double mem[3] = {extra, read_from_me(c, model), cpu}, memmax[3];
    MPI(MPI_Reduce(mem, memmax, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD));
    if (g_rank == 0 && csv) {
        const int last = c->o.cycles - 1;
        csv_row(csv, c, mode, rep, last, "max", "mem.extra", memmax[0], 0);
        csv_row(csv, c, mode, rep, last, "max", "mem.read", memmax[1], 0);
        csv_row(csv, c, mode, rep, last, "max", "cpu", 0, memmax[2]);
        fflush(csv);
    }
    free(s), free(b), free(smax), free(ssum), free(bsum);
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(void) {
    if (g_rank == 0)
        fprintf(stderr,
                "usage: letkf_io --role model|assim [--members M] [--px P] [--py Q] [--grid IMAX JMAX KMAX]\n"
                "                [--global NX NY] [--cycles C] [--reps R] [--modes transfer,transfer-replay,transfer-persist,file,file-sync,mpi-raw]\n"
                "                [--verify 0|1] [--rotate 0|1] [--compute MS] [--dir DIR] [--config INI] [--csv FILE]\n"
                "                [--label NAME] [--calls plain|original]\n"
                "                [--api pnetcdf|pnetcdf-blocking|netcdf4|netcdf4-serial]\n"
                "  --compute: MS milliseconds of CPU work per cycle in each role (model: after its puts\n"
                "  completed, before it closes the files; assimilation: after reading, before writing back);\n"
                "  the cycles then start with a barrier that sleeps instead of spinning\n"
                "  --rotate 1: rep r runs the modes from the (r mod n)-th of the n on (default 0: as given)\n"
                "  --calls original: the original DTF benchmark's calls (bput, put_var1_double_all, the\n"
                "  write-back into the analysis file opened with NC_WRITE, flexible igets; new file names\n"
                "  every cycle); not with transfer-persist\n"
                "  --api netcdf4: netCDF-C on netCDF-4 files (classic model), blocking calls; pnetcdf-blocking:\n"
                "  PnetCDF's blocking calls in that shape; netcdf4-serial: netCDF-4, one file per model rank\n"
                "  (created and opened alone); not with --calls original nor transfer-persist\n"
                "  --grid: points per model rank (weak scaling, default 64 64 16); --global: a fixed grid per\n"
                "  member split among px x py ranks (strong scaling; KMAX from --grid). Launch both roles\n"
                "  with dtfrun (see bench/letkf.py); the model has members*px*py ranks, the assimilation as many.\n");
    MPI_Finalize();
    exit(2);
}

static int int_arg(int argc, char **argv, int i) {
    if (i >= argc) usage();
    char *end;
    long v = strtol(argv[i], &end, 10);
    if (*end || v < 0 || v > 1 << 24) usage();
    return (int)v;
}

static Opts parse(int argc, char **argv) {
    Opts o = {"", "default", ".", NULL, "letkf.ini", 2, 1, 1, 64, 64, 16, 0, 0, 4, 1, 1, 0, 0, 0, 0,
              "transfer,transfer-replay,file,file-sync,mpi-raw"};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const int more = i + 1 < argc;
        if (!strcmp(a, "--role") && more) o.role = argv[++i];
        else if (!strcmp(a, "--label") && more) o.label = argv[++i];
        else if (!strcmp(a, "--dir") && more) o.dir = argv[++i];
        else if (!strcmp(a, "--csv") && more) o.csv = argv[++i];
        else if (!strcmp(a, "--config") && more) o.config = argv[++i];
        else if (!strcmp(a, "--modes") && more) snprintf(o.modes, sizeof o.modes, "%s", argv[++i]);
        else if (!strcmp(a, "--members")) o.members = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--px")) o.px = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--py")) o.py = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--cycles")) o.cycles = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--reps")) o.reps = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--verify")) o.verify = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--rotate")) o.rotate = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--compute")) o.compute_ms = int_arg(argc, argv, ++i);
        else if (!strcmp(a, "--calls") && more && (!strcmp(argv[i + 1], "plain") || !strcmp(argv[i + 1], "original")))
            o.original = !strcmp(argv[++i], "original");
        else if (!strcmp(a, "--api") && more) {
            for (o.api = API_NETCDF4_SERIAL; o.api >= 0 && strcmp(argv[i + 1], api_name[o.api]); --o.api) {}
            if (o.api < 0) usage();
            ++i;
        }
        else if (!strcmp(a, "--grid")) {
            o.imax = int_arg(argc, argv, ++i);
            o.jmax = int_arg(argc, argv, ++i);
            o.kmax = int_arg(argc, argv, ++i);
        } else if (!strcmp(a, "--global")) {
            o.gx = int_arg(argc, argv, ++i);
            o.gy = int_arg(argc, argv, ++i);
        } else usage();
    }
    if ((strcmp(o.role, "model") && strcmp(o.role, "assim")) || o.members < 1 || o.px < 1 || o.py < 1 ||
        o.kmax < 1 || o.cycles < 1 || o.reps < 1)
        usage();
    return o;
}

int main(int argc, char **argv) {
    int provided; /* MPI_THREAD_MULTIPLE: dtf may run its progress thread (DTF_PROGRESS_THREAD) */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    Ctx c = {0};
    c.o = parse(argc, argv);
    g_nc4 = c.o.api == API_NETCDF4 || c.o.api == API_NETCDF4_SERIAL;
    g_serial = c.o.api == API_NETCDF4_SERIAL;
    g_blocking = c.o.api != API_PNETCDF;
    const int model = strcmp(c.o.role, "model") == 0;
    c.M = c.o.members, c.P = c.o.px * c.o.py, c.A = c.M * c.P;
    c.NX = c.o.gx ? c.o.gx : c.o.px * c.o.imax;
    c.NY = c.o.gy ? c.o.gy : c.o.py * c.o.jmax;
    for (c.qx = 1; (c.qx + 1) * (c.qx + 1) <= c.A; ++c.qx) {} /* the most square qx x qy with qx <= qy */
    while (c.A % c.qx) --c.qx;
    c.qy = c.A / c.qx;
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != c.A)
        die("the %s has %d ranks; members x px x py = %d x %d x %d needs %d", c.o.role, size, c.M, c.o.px, c.o.py, c.A);
    if (c.NX < c.o.px || c.NY < c.o.py || c.NX < c.qx || c.NY < c.qy)
        die("grid %d x %d is too small for %d x %d model and %d x %d assimilation ranks", c.NX, c.NY, c.o.px, c.o.py, c.qx, c.qy);
    if (model) {
        c.member = g_rank / c.P;
        MPI(MPI_Comm_split(MPI_COMM_WORLD, c.member, g_rank, &c.comm));
        MPI_Comm_rank(c.comm, &c.rank);
        c.mine = model_blk(&c, c.rank);
    } else {
        c.comm = MPI_COMM_WORLD;
        c.mine = assim_blk(&c, g_rank);
    }

    dtf_timers(1);
    NC(dtf_init(c.o.config, c.o.role));
    NC(dtf_intercomm(model ? "assim" : "model", &c.inter));
    FILE *csv = NULL;
    if (g_rank == 0 && c.o.csv && !(csv = fopen(c.o.csv, "w"))) die("cannot write '%s'", c.o.csv);
    if (csv)
        fprintf(csv, "label,members,px,py,imax,jmax,kmax,model_ranks,assim_ranks,mode,rep,cycle,component,agg,"
                     "phase,bytes,seconds\n");

    ModelData md;
    AssimData ad;
    if (model) {
        model_alloc(&c, &md);
    } else {
        ad = assim_alloc(&c);
    }
    Sample *samples = malloc(sizeof(Sample) * (size_t)c.o.cycles);
    const double rss0 = vm_bytes("VmRSS"); /* the plain program: its arrays, before any I/O */
    long bad = 0;
    char modes[sizeof c.o.modes], *list[sizeof c.o.modes], *save = NULL;
    int nmodes = 0;
    memcpy(modes, c.o.modes, sizeof modes);
    for (char *mode = strtok_r(modes, ",", &save); mode; mode = strtok_r(NULL, ",", &save)) list[nmodes++] = mode;
    for (int rep = 0; rep < c.o.reps; ++rep) {
        for (int k = 0; k < nmodes; ++k) {
            const char *mode = list[(k + (c.o.rotate ? rep : 0)) % nmodes];
            if (!is_transfer(mode) && strcmp(mode, "file") && strcmp(mode, "file-sync") && strcmp(mode, "mpi-raw"))
                die("unknown mode '%s' (transfer, transfer-replay, transfer-persist, file, file-sync, mpi-raw)", mode);
            if (c.o.original && !strcmp(mode, "transfer-persist"))
                die("--calls original: not with mode transfer-persist (its analysis files are written back into)");
            if (g_blocking && (c.o.original || !strcmp(mode, "transfer-persist")))
                die("--api %s: not with --calls original nor mode transfer-persist", api_name[c.o.api]);
            Links links, *raw = NULL;
            if (!strcmp(mode, "mpi-raw")) {
                links = model ? model_links(&c) : assim_links(&c);
                raw = &links;
            }
            memset(samples, 0, sizeof(Sample) * (size_t)c.o.cycles);
            reset_peak();
            double cpu = 0; /* CPU seconds of the timed part of cycles 1 .. */
            for (int cycle = 0; cycle < c.o.cycles; ++cycle) {
                /* Untimed: produce this cycle's values, and start both roles together. */
                if (model)
                    model_fill(&c, &md, cycle);
                else
                    for (int i = 0; i < c.M * ANAL_READS; ++i)
                        fill(ad.back[i], c.mine, read_var(BACK, i % ANAL_READS, c.o.kmax).nz, i / ANAL_READS, BACK,
                             read_var(BACK, i % ANAL_READS, 1).field, cycle);
                if (raw) raw_prepost(&c, raw, model);
                start_together(c.inter, c.o.compute_ms > 0);
                g_cur = &samples[cycle];
                dtf_timers_read(NULL, NULL, 1);
                dtf_counters_read(NULL, NULL, 1);
                const double cpu0 = cpu_seconds(), t0 = MPI_Wtime();
                if (model)
                    model_cycle(&c, &md, raw, mode, cycle);
                else
                    assim_cycle(&c, &ad, raw, mode, cycle);
                g_cur->s[P_TOTAL] = MPI_Wtime() - t0;
                if (cycle > 0) cpu += cpu_seconds() - cpu0;
                g_cur->b[P_TOTAL] = g_cur->b[P_IO];
                double dtf_s[DTF_NUM_PHASES];
                long long dtf_b[DTF_NUM_PHASES];
                dtf_timers_read(dtf_s, dtf_b, 0);
                for (int p = 0; p < DTF_NUM_PHASES; ++p) g_cur->s[P_DTF + p] = dtf_s[p], g_cur->b[P_DTF + p] = (double)dtf_b[p];
                if (raw) { /* the data messages this rank sent and received, nothing else */
                    for (int i = 0; i < raw->n; ++i)
                        g_cur->s[P_MSG + 1] += 1, g_cur->b[P_MSG + 1] += (double)raw->links[i].n * sizeof(float);
                } else {
                    long long n[DTF_NUM_COUNTS], nb[DTF_NUM_COUNTS];
                    dtf_counters_read(n, nb, 0);
                    g_cur->s[P_MSG] = (double)(n[DTF_COUNT_CONTROL_SENT] + n[DTF_COUNT_CONTROL_RECEIVED]);
                    g_cur->b[P_MSG] = (double)(nb[DTF_COUNT_CONTROL_SENT] + nb[DTF_COUNT_CONTROL_RECEIVED]);
                    g_cur->s[P_MSG + 1] = (double)(n[DTF_COUNT_DATA_SENT] + n[DTF_COUNT_DATA_RECEIVED]);
                    g_cur->b[P_MSG + 1] = (double)(nb[DTF_COUNT_DATA_SENT] + nb[DTF_COUNT_DATA_RECEIVED]);
                    g_cur->s[P_MSG + 2] = (double)n[DTF_COUNT_COLLECTIVES];
                    g_cur->s[P_MSG + 3] = (double)(n[DTF_COUNT_COLLECTIVE_SENT] + n[DTF_COUNT_COLLECTIVE_RECEIVED]);
                    g_cur->b[P_MSG + 3] = (double)(nb[DTF_COUNT_COLLECTIVE_SENT] + nb[DTF_COUNT_COLLECTIVE_RECEIVED]);
                    g_cur->b[P_MSG + 4] = (double)nb[DTF_COUNT_COPIED_WRITING];
                    g_cur->b[P_MSG + 5] = (double)nb[DTF_COUNT_COPIED_READING];
                    if (nb[DTF_COUNT_DATA_SENT]) g_cur->s[P_MSG + 4] = g_cur->b[P_MSG + 4] / (double)nb[DTF_COUNT_DATA_SENT];
                    if (nb[DTF_COUNT_DATA_RECEIVED])
                        g_cur->s[P_MSG + 5] = g_cur->b[P_MSG + 5] / (double)nb[DTF_COUNT_DATA_RECEIVED];
                }
                if (!c.o.verify) continue;
                if (model) {
                    if (c.o.original && !raw) unpad(&c, &md);
                    bad += check((const float *const *)md.back, BACK, c.mine, c.member, cycle, c.o.kmax, mode);
                } else {
                    for (int m = 0; m < c.M; ++m) {
                        bad += check((const float *const *)ad.hist + (size_t)m * HIST_READS, HIST, c.mine, m, cycle,
                                     c.o.kmax, mode);
                        bad += check((const float *const *)ad.anal + (size_t)m * ANAL_READS, ANAL, shifted(c.mine), m,
                                     cycle, c.o.kmax, mode);
                    }
                }
            }
            if (raw) free_links(raw);
            report(&c, samples, mode, rep, csv, vm_bytes("VmHWM") - rss0, c.o.cycles > 1 ? cpu / (c.o.cycles - 1) : 0);
        }
    }
    long total_bad = 0;
    MPI(MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    if (g_rank == 0) {
        if (c.o.verify)
            printf("letkf_io %s: %s (%d reps x %d cycles, modes %s)\n", c.o.role,
                   total_bad ? "WRONG VALUES" : "all values verified", c.o.reps, c.o.cycles, c.o.modes);
        if (total_bad) fprintf(stderr, "letkf_io %s: %ld wrong values\n", c.o.role, total_bad);
    }
    if (csv) fclose(csv);
    MPI_Comm_free(&c.inter);
    NC(dtf_finalize());
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
