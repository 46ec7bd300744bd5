/*
 * Shared by the demo components (model.c, assim.c): the grid, its decomposition, the initial field
 * and small helpers. All values are exact in float (multiples of 1/4), so both components can
 * check each other's data with ==.
 */
#ifndef DEMO_COMMON_H
#define DEMO_COMMON_H

#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

#include "dtf.h"

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

#endif
