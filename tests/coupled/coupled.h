/* What the coupled test programs linked with dtf share (filemode.c, letkf_pattern.c): the error
 * check and the block decomposition. The including file defines `rank` and `role`. */
#pragma once

#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>

#include "dtf.h"

/* A PnetCDF or dtf call that must succeed: else its error, dtf's message, and MPI_Abort(2). */
#define CHECK(call)                                                                                  \
    do {                                                                                             \
        int err_ = (call);                                                                           \
        if (err_ != NC_NOERR) {                                                                      \
            fprintf(stderr, "%s rank %d: %s failed: %s %s\n", role, rank, #call, ncmpi_strerror(err_),  \
                    dtf_errmsg());                                                                   \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                            \
        }                                                                                            \
    } while (0)

/* Split n into nparts blocks; block p is [*start, *start + *count). */
static inline void block(MPI_Offset n, int nparts, int p, MPI_Offset *start, MPI_Offset *count) {
    MPI_Offset base = n / nparts, extra = n % nparts;
    *start = p * base + (p < extra ? p : extra);
    *count = base + (p < extra ? 1 : 0);
}
