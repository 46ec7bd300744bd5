/*
 * Cost of cheap PnetCDF calls, to compare with and without dtf interposed (passthrough_overhead.sh
 * runs it both ways). One rank.
 *
 *   passthrough_overhead <file.nc> [iters] [reps]
 *
 * For each operation, times `reps` loops of `iters` calls (the 1-element writes: iters/20, they do
 * real I/O) and prints one line: "<op> <median ns/call> <min ns/call>". Each operation is timed
 * twice, interleaved: through the normal symbol (the dtf wrapper when dtf is interposed) and through
 * a pointer to libpnetcdf's own function ("<op>@direct"). Their difference within one process is a
 * far less noisy measure of the wrapper than the comparison of two processes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int e_ = (call);                                                                           \
        if (e_ != NC_NOERR) {                                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncmpi_strerror(e_));     \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

enum { OP_INQ_VARID, OP_INQ_DIMLEN, OP_PUT_VARA_INT, NOPS };
static const char *const op_names[NOPS] = {"ncmpi_inq_varid", "ncmpi_inq_dimlen", "ncmpi_put_vara_int(1)"};
#define XLEN 4096

static int ncid, dimid, varid;

/* The functions under test: [0] as the program links them, [1] libpnetcdf's own. */
static __typeof__(&ncmpi_inq_varid) inq_varid[2] = {ncmpi_inq_varid};
static __typeof__(&ncmpi_inq_dimlen) inq_dimlen[2] = {ncmpi_inq_dimlen};
static __typeof__(&ncmpi_put_vara_int) put_vara_int[2] = {ncmpi_put_vara_int};

/* Find libpnetcdf through a symbol dtf does not define, and look the functions up in it. */
static void find_direct(void) {
    Dl_info info;
    void *lib = NULL, *f77 = dlsym(RTLD_DEFAULT, "nfmpi_create_");
    if (f77 && dladdr(f77, &info)) lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) {
        fprintf(stderr, "cannot find libpnetcdf: %s\n", dlerror());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    inq_varid[1] = (__typeof__(inq_varid[1]))dlsym(lib, "ncmpi_inq_varid");
    inq_dimlen[1] = (__typeof__(inq_dimlen[1]))dlsym(lib, "ncmpi_inq_dimlen");
    put_vara_int[1] = (__typeof__(put_vara_int[1]))dlsym(lib, "ncmpi_put_vara_int");
    if (!inq_varid[1] || !inq_dimlen[1] || !put_vara_int[1]) MPI_Abort(MPI_COMM_WORLD, 1);
}

/* One timed loop of n calls of op (d: 1 for the direct pointer); returns ns per call. */
static double run(int op, int d, long n) {
    struct timespec t0, t1;
    int id;
    MPI_Offset len, one = 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < n; i++) {
        switch (op) {
        case OP_INQ_VARID: CHECK(inq_varid[d](ncid, "v", &id)); break;
        case OP_INQ_DIMLEN: CHECK(inq_dimlen[d](ncid, dimid, &len)); break;
        default: {
            MPI_Offset start = i % XLEN;
            int v = (int)i;
            CHECK(put_vara_int[d](ncid, varid, &start, &one, &v));
        }
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / (double)n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: passthrough_overhead file.nc [iters] [reps]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long iters = argc > 2 ? atol(argv[2]) : 1000000;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    if (iters < 20 || reps < 1 || reps > 1000) {
        fprintf(stderr, "need iters >= 20 and 1 <= reps <= 1000\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    find_direct();
    CHECK(ncmpi_create(MPI_COMM_SELF, argv[1], NC_CLOBBER, MPI_INFO_NULL, &ncid));
    CHECK(ncmpi_def_dim(ncid, "x", XLEN, &dimid));
    CHECK(ncmpi_def_var(ncid, "v", NC_INT, 1, &dimid, &varid));
    CHECK(ncmpi_enddef(ncid));
    CHECK(ncmpi_begin_indep_data(ncid));

    double t[2][1000];
    for (int op = 0; op < NOPS; op++) {
        long n = op == OP_PUT_VARA_INT ? iters / 20 : iters;
        run(op, 0, n / 10 + 1); /* warm up: resolve symbols, fault in pages */
        run(op, 1, n / 10 + 1);
        for (int r = 0; r < reps; r++)
            for (int d = 0; d < 2; d++) t[d][r] = run(op, d, n);
        for (int d = 0; d < 2; d++) {
            qsort(t[d], reps, sizeof *t[d], cmp_double);
            printf("%s%s %.2f %.2f\n", op_names[op], d ? "@direct" : "", t[d][reps / 2], t[d][0]);
        }
    }
    CHECK(ncmpi_end_indep_data(ncid));
    CHECK(ncmpi_close(ncid));
    MPI_Finalize();
    return 0;
}
