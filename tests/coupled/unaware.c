/*
 * A coupled component that has never heard of dtf: plain MPI and PnetCDF, linked without libdtf (for
 * the zero-change mode: coupled.py unaware runs it with LD_PRELOAD=libdtf.so and DTF_COMPONENT).
 *   writer  creates DIR/unaware.nc: t(y, x) doubles, row blocks over its ranks, closes it
 *   reader  opens it, reads column blocks (another decomposition), checks every value, closes it
 * Prints "unaware reader: all values verified" when they are; exit status 1 on wrong data, 2 on an
 * error. With UNAWARE_DUMP=PREFIX each reader rank also writes the bytes it read to PREFIX.<rank>
 * (coupled.py compares them with a run through the file system).
 *
 * usage: unaware writer|reader DIR [NY NX]
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        int err_ = (call);                                                                             \
        if (err_ != NC_NOERR) {                                                                        \
            fprintf(stderr, "unaware: %s failed: %s\n", #call, ncmpi_strerror(err_));                   \
            MPI_Abort(MPI_COMM_WORLD, 2);                                                              \
        }                                                                                              \
    } while (0)

static double value(MPI_Offset y, MPI_Offset x) { return 1000.0 * (double)y + (double)x + 0.25; }

/* [start, start + count) of `n` split over `size` ranks, the first ones one longer. */
static void block(MPI_Offset n, int size, int rank, MPI_Offset *start, MPI_Offset *count) {
    MPI_Offset base = n / size, extra = n % size;
    *start = rank * base + (rank < extra ? rank : extra);
    *count = base + (rank < extra ? 1 : 0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, ncid, var, dims[2], bad = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: unaware writer|reader DIR [NY NX]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const MPI_Offset ny = argc > 4 ? atoll(argv[3]) : 7, nx = argc > 4 ? atoll(argv[4]) : 9;
    char path[4096];
    snprintf(path, sizeof path, "%s/unaware.nc", argv[2]);
    MPI_Offset start[2], count[2];
    if (!strcmp(argv[1], "writer")) {
        CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER, MPI_INFO_NULL, &ncid));
        CHECK(ncmpi_def_dim(ncid, "y", ny, &dims[0]));
        CHECK(ncmpi_def_dim(ncid, "x", nx, &dims[1]));
        CHECK(ncmpi_def_var(ncid, "t", NC_DOUBLE, 2, dims, &var));
        CHECK(ncmpi_enddef(ncid));
        block(ny, size, rank, &start[0], &count[0]);
        start[1] = 0, count[1] = nx;
        double *buf = malloc(sizeof(double) * (size_t)(count[0] * nx + 1));
        for (MPI_Offset j = 0; j < count[0]; j++)
            for (MPI_Offset i = 0; i < nx; i++) buf[j * nx + i] = value(start[0] + j, i);
        CHECK(ncmpi_put_vara_double_all(ncid, var, start, count, buf));
        CHECK(ncmpi_close(ncid));
        free(buf);
    } else {
        CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
        CHECK(ncmpi_inq_varid(ncid, "t", &var));
        start[0] = 0, count[0] = ny;
        block(nx, size, rank, &start[1], &count[1]);
        double *buf = malloc(sizeof(double) * (size_t)(ny * count[1] + 1));
        CHECK(ncmpi_get_vara_double_all(ncid, var, start, count, buf));
        CHECK(ncmpi_close(ncid));
        if (getenv("UNAWARE_DUMP")) {
            char dump[4200];
            snprintf(dump, sizeof dump, "%s.%d", getenv("UNAWARE_DUMP"), rank);
            FILE *f = fopen(dump, "wb");
            if (!f || fwrite(buf, sizeof(double), (size_t)(ny * count[1]), f) != (size_t)(ny * count[1])) bad = 1;
            if (f) fclose(f);
        }
        for (MPI_Offset j = 0; j < ny; j++)
            for (MPI_Offset i = 0; i < count[1]; i++)
                if (buf[j * count[1] + i] != value(j, start[1] + i)) {
                    if (!bad) fprintf(stderr, "unaware rank %d: t[%lld][%lld] = %g, expected %g\n", rank, (long long)j,
                                      (long long)(start[1] + i), buf[j * count[1] + i], value(j, start[1] + i));
                    bad = 1;
                }
        free(buf);
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !any && strcmp(argv[1], "writer")) printf("unaware reader: all values verified\n");
    MPI_Finalize();
    return any;
}
