/* The writer of docs/FIRST-COUPLING.md: 3 ranks write T(y, x) of out_<cycle>.nc, rows split among
 * them, for 3 cycles. Plain PnetCDF plus the three dtf calls (marked). */
#include <dtf.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>

enum { NY = 6, NX = 8, CYCLES = 3 };

#define CHECK(call)                                                                        \
    do {                                                                                   \
        int err_ = (call);                                                                 \
        if (err_ != NC_NOERR) {                                                            \
            fprintf(stderr, "writer: %s: %s\n", #call, ncmpi_strerror(err_));              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(dtf_init("dtf.ini", "writer")); /* dtf */
    const MPI_Offset y0 = NY * rank / size, ny = NY * (rank + 1) / size - y0; /* this rank's rows */
    float *t = malloc(sizeof(float) * NX * (ny > 0 ? ny : 1));
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        char path[64];
        snprintf(path, sizeof path, "out_%d.nc", cycle);
        int ncid, dims[2], var;
        CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
        CHECK(ncmpi_def_dim(ncid, "y", NY, &dims[0]));
        CHECK(ncmpi_def_dim(ncid, "x", NX, &dims[1]));
        CHECK(ncmpi_def_var(ncid, "T", NC_FLOAT, 2, dims, &var));
        CHECK(ncmpi_enddef(ncid));
        for (MPI_Offset y = 0; y < ny; y++)
            for (int x = 0; x < NX; x++) t[y * NX + x] = (float)(1000 * cycle + 10 * (y0 + y) + x);
        const MPI_Offset start[2] = {y0, 0}, count[2] = {ny, NX};
        CHECK(ncmpi_put_vara_float_all(ncid, var, start, count, t));
        CHECK(dtf_transfer(path, ncid)); /* dtf: the readers get the data now */
        CHECK(ncmpi_close(ncid));
    }
    free(t);
    CHECK(dtf_finalize()); /* dtf */
    if (rank == 0) printf("writer: wrote %d files\n", CYCLES);
    MPI_Finalize();
    return 0;
}
