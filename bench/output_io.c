/*
 * Aggregated output benchmark (bench/aggregate.py runs it): a model's history output, as GRAPES
 * writes it. Role "model" (P ranks): each step creates DIR/out.<step>.nc with V float variables of
 * NZ x (P * NY) x NX points, each rank writing its block of rows with ncmpi_put_vara_float_all, and
 * closes it. Role "post" (1 rank): opens each step's file, reads one value, closes it (the reader
 * that makes dtf hand the file over; in file mode it reads from the disk).
 *
 * Which ranks write the file, and when, is the configuration's business (mode="file": every rank
 * through PnetCDF; persist=1 with aggregators=, subfiles=, aggregate_steps=: dtf writes it). The
 * model's rank 0 prints "RESULT <seconds> <bytes>": the time from a barrier before the first step to
 * a barrier after the last close (every file written by then when aggregate_steps divides STEPS; an
 * I/O server may still be writing), the bytes of values written, and the model's visible output time:
 * the time from each create to its close returning, summed over the steps (the slowest rank).
 * OUTPUT_IO_SYNC=1: the model calls ncmpi_sync before each close (file mode: the data is on disk when
 * the close returns). OUTPUT_IO_COMPUTE=S: after each close the model computes for S seconds, as a
 * sleep: computation on cores that the writing does not need (an I/O server on cores of its own).
 * OUTPUT_IO_DUMP=DIR: the post rank also reads every value of every variable and writes them, as
 * read, to DIR/post.<step>.bin (what the tests compare with the file-mode run's).
 *
 * usage: output_io (model|post) CONFIG DIR STEPS NX NY NZ V
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "dtf.h"

#define CHECK(call)                                                                             \
    do {                                                                                        \
        int rc_ = (call);                                                                       \
        if (rc_ != NC_NOERR) {                                                                  \
            fprintf(stderr, "output_io: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,          \
                    ncmpi_strerror(rc_));                                                       \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                       \
        }                                                                                       \
    } while (0)

/* OUTPUT_IO_DUMP: every value of the file's variables (dimensions z, y, x), as read, to DIR/post.<step>.bin. */
static void dump(int ncid, int nvars, const char *dir, int step) {
    MPI_Offset len[3];
    for (int d = 0; d < 3; d++) CHECK(ncmpi_inq_dimlen(ncid, d, &len[d]));
    const size_t n = (size_t)(len[0] * len[1] * len[2]);
    float *all = malloc(n * sizeof(float));
    char path[4096];
    snprintf(path, sizeof path, "%s/post.%d.bin", dir, step);
    FILE *f = fopen(path, "wb");
    if (!f || !all) {
        fprintf(stderr, "output_io: cannot write %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int v = 0; v < nvars; v++) {
        CHECK(ncmpi_get_var_float_all(ncid, v, all));
        if (fwrite(all, sizeof(float), n, f) != n) {
            fprintf(stderr, "output_io: cannot write %s\n", path);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    fclose(f);
    free(all);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 9) {
        fprintf(stderr, "usage: output_io (model|post) CONFIG DIR STEPS NX NY NZ V\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *role = argv[1], *config = argv[2], *dir = argv[3];
    const int steps = atoi(argv[4]), nx = atoi(argv[5]), ny = atoi(argv[6]), nz = atoi(argv[7]), nvars = atoi(argv[8]);
    const int model = argv[1][0] == 'm';
    const int sync = getenv("OUTPUT_IO_SYNC") && atoi(getenv("OUTPUT_IO_SYNC")) == 1;
    const double compute = getenv("OUTPUT_IO_COMPUTE") ? atof(getenv("OUTPUT_IO_COMPUTE")) : 0;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (dtf_init(config, role) != DTF_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 2);
    const size_t block = (size_t)nz * ny * nx;
    float *values = malloc(block * sizeof(float));
    for (size_t i = 0; i < block; i++) values[i] = (float)(rank * block + i);
    char path[4096];
    double t0 = 0, visible = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int s = 0; s < steps; s++) {
        snprintf(path, sizeof path, "%s/out.%d.nc", dir, s);
        const double step0 = MPI_Wtime();
        int ncid, dims[3], var;
        if (model) {
            CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
            CHECK(ncmpi_def_dim(ncid, "z", nz, &dims[0]));
            CHECK(ncmpi_def_dim(ncid, "y", (MPI_Offset)ny * size, &dims[1]));
            CHECK(ncmpi_def_dim(ncid, "x", nx, &dims[2]));
            for (int v = 0; v < nvars; v++) {
                char name[32];
                snprintf(name, sizeof name, "v%02d", v);
                CHECK(ncmpi_def_var(ncid, name, NC_FLOAT, 3, dims, &var));
            }
            CHECK(ncmpi_enddef(ncid));
            const MPI_Offset start[3] = {0, (MPI_Offset)rank * ny, 0}, count[3] = {nz, ny, nx};
            for (int v = 0; v < nvars; v++) CHECK(ncmpi_put_vara_float_all(ncid, v, start, count, values));
            if (sync) CHECK(ncmpi_sync(ncid));
        } else {
            const MPI_Offset at[3] = {0, 0, 0};
            float got;
            CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
            CHECK(ncmpi_get_var1_float_all(ncid, 0, at, &got));
            if (got != 0.0f) {
                fprintf(stderr, "output_io: %s: v00[0,0,0] = %g, expected 0\n", path, got);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            if (getenv("OUTPUT_IO_DUMP")) dump(ncid, nvars, getenv("OUTPUT_IO_DUMP"), s);
        }
        CHECK(ncmpi_close(ncid));
        visible += MPI_Wtime() - step0;
        if (model && compute > 0) usleep((useconds_t)(compute * 1e6));
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const double seconds = MPI_Wtime() - t0;
    double slowest = 0;
    MPI_Reduce(&visible, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (model && rank == 0)
        printf("RESULT %.6f %.0f %.6f\n", seconds, (double)steps * nvars * block * size * sizeof(float), slowest);
    free(values);
    dtf_finalize();
    MPI_Finalize();
    return 0;
}
