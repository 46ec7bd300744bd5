/*
 * Shared by the demo components (model.c, assim.c): the grid, its decomposition, the initial field
 * and small helpers. All values are exact in float (multiples of 1/4), so both components can
 * check each other's data with ==.
 */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <dirent.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef DEMO_WITHOUT_DTF
/* The zero-change build (demo.sh --mode zero-change): no dtf call, not linked with dtf; run with
 * dtfrun --preload, dtf starts in MPI_Init, moves the data at ncmpi_close and ends in MPI_Finalize. */
#define dtf_init(ini, component) NC_NOERR
#define dtf_transfer(path, ncid) ((void)(path), (void)(ncid), NC_NOERR)
#define dtf_finalize() NC_NOERR
#define dtf_errmsg() ""
#else
#include "dtf.h"
#endif

#define DEMO_CHECK(call)                                                                             \
    do {                                                                                             \
        int err_ = (call);                                                                           \
        if (err_ != NC_NOERR) {                                                                      \
            fprintf(stderr, "%s:%d: %s failed: %s\n  %s\n", __FILE__, __LINE__, #call,                \
                    ncmpi_strerror(err_), dtf_errmsg());                                             \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                            \
        }                                                                                            \
    } while (0)

typedef struct {
    MPI_Offset nz, ny, nx;
} grid_t;

/* Initial temperature of ensemble member m. */
static inline float t0(int m, MPI_Offset z, MPI_Offset y, MPI_Offset x) {
    return 200.0f + 16.0f * (float)m + 8.0f * (float)z + 0.5f * (float)(y % 64) + 0.25f * (float)(x % 64);
}

/* What member m writes into its history file in cycle c: the model adds 1 per cycle, the
 * assimilation 0.5. */
static inline float hist_value(int m, int cycle, MPI_Offset z, MPI_Offset y, MPI_Offset x) {
    return t0(m, z, y, x) + 1.5f * (float)cycle - 0.5f;
}

/* File names: one history file per member and cycle, one analysis file per member. */
static inline void hist_path(char *out, size_t n, int m, int cycle) { snprintf(out, n, "hist.m%d.%04d.nc", m, cycle); }
static inline void anal_path(char *out, size_t n, int m) { snprintf(out, n, "anal.m%d.nc", m); }

/* Split n into nparts nearly equal blocks; block p is [*start, *start + *count). */
static inline void demo_block(MPI_Offset n, int nparts, int p, MPI_Offset *start, MPI_Offset *count) {
    MPI_Offset base = n / nparts, extra = n % nparts;
    *start = p * base + (p < extra ? p : extra);
    *count = base + (p < extra ? 1 : 0);
}

static inline double demo_now(void) { return MPI_Wtime(); }

/* With DEMO_RESOURCES=1 in the environment (the soak test, tests/soak/soak.py, sets it): one line per
 * cycle on rank 0 with the largest resident memory, open file descriptors (but those on /proc) and
 * communicator handle index over the ranks of `comm`. A fresh communicator gets the lowest free
 * handle, so a leak of communicators shows as a growing index. Collective over `comm`. */
static inline void demo_resources(MPI_Comm comm, const char *who, int cycle) {
    static int enabled = -1;
    if (enabled < 0) enabled = getenv("DEMO_RESOURCES") && atoi(getenv("DEMO_RESOURCES")) == 1;
    if (!enabled) return;
    long pages = 0, resident = 0, fds = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        fclose(f);
    }
    /* (Not those open on /proc: this directory, and /proc/self/maps, which ThreadSanitizer's runtime
     * reads now and then from a thread of its own.) */
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));) {
        char link[64] = "", path[300];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
        if (readlink(path, link, sizeof link - 1) > 0 && !strncmp(link, "/proc/", 6)) continue;
        ++fds;
    }
    if (d) closedir(d);
    MPI_Comm probe;
    MPI_Comm_dup(MPI_COMM_SELF, &probe);
    long mine[3] = {resident * (sysconf(_SC_PAGESIZE) / 1024), fds,
                    (long)MPI_Comm_c2f(probe)}, most[3];
    MPI_Comm_free(&probe);
    MPI_Reduce(mine, most, 3, MPI_LONG, MPI_MAX, 0, comm);
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) printf("resources %s cycle %d: rss_kib %ld fds %ld comm_index %ld\n", who, cycle, most[0], most[1], most[2]);
}

#endif
