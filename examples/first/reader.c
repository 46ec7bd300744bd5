/* The reader of docs/FIRST-COUPLING.md: 2 ranks read T(y, x) of out_<cycle>.nc, columns split among
 * them (another decomposition than the writer's), with iget + wait_all, and check every value. Plain
 * PnetCDF plus the dtf calls (marked). */
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
            fprintf(stderr, "reader: %s: %s\n", #call, ncmpi_strerror(err_));              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                  \
        }                                                                                  \
    } while (0)

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, wrong = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(dtf_init("dtf.ini", "reader")); /* dtf */
    const MPI_Offset x0 = NX * rank / size, nx = NX * (rank + 1) / size - x0; /* this rank's columns */
    float *t = malloc(sizeof(float) * NY * (nx > 0 ? nx : 1));
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        char path[64];
        snprintf(path, sizeof path, "out_%d.nc", cycle);
        int ncid, var, req;
        CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid)); /* waits for the writer */
        CHECK(ncmpi_inq_varid(ncid, "T", &var));
        const MPI_Offset start[2] = {0, x0}, count[2] = {NY, nx};
        CHECK(ncmpi_iget_vara_float(ncid, var, start, count, t, &req));
        CHECK(ncmpi_wait_all(ncid, 1, &req, NULL)); /* the data arrives here */
        CHECK(dtf_transfer(path, ncid)); /* dtf (optional on the reader: the close does it too) */
        CHECK(ncmpi_close(ncid));
        for (int y = 0; y < NY; y++)
            for (MPI_Offset x = 0; x < nx; x++)
                wrong += t[y * nx + x] != (float)(1000 * cycle + 10 * y + x0 + x);
    }
    free(t);
    CHECK(dtf_finalize()); /* dtf */
    int all = 0;
    MPI_Reduce(&wrong, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("reader: read %d files, %s\n", CYCLES, all ? "SOME VALUES WRONG" : "every value right");
    MPI_Finalize();
    return all ? 1 : 0;
}
