/*
 * assim.c - the "assim" component of the dtf demo workflow (a toy data assimilation).
 *
 * Each cycle c = 1..CYCLES it reads T and PS from hist.<c>.nc (slabs along y: a different
 * decomposition than the model's), checks every value, adds an analysis increment of 0.5 K and writes
 * T back into anal.nc, which the model reads at the start of the next cycle.
 *
 * Build and run: see model.c. Prints one line per cycle on rank 0 and a final verdict.
 */
#include "demo_common.h"

static int rank, nranks;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int cycles = argc > 1 ? atoi(argv[1]) : 3;
    grid_t g = {argc > 4 ? atoll(argv[2]) : 16, argc > 4 ? atoll(argv[3]) : 128, argc > 4 ? atoll(argv[4]) : 128};

    DEMO_CHECK(dtf_init("dtf.ini", "assim"));
    MPI_Offset start[4] = {0, 0, 0, 0}, count[4] = {1, g.nz, 0, g.nx};
    demo_block(g.ny, nranks, rank, &start[2], &count[2]);
    size_t n = (size_t)(count[1] * count[2] * count[3]);
    float *t = malloc(sizeof(float) * (n ? n : 1)), *ps = malloc(sizeof(float) * (n ? n : 1));
    long bad = 0;

    for (int c = 1; c <= cycles; c++) {
        char path[64];
        int ncid, var_t, var_ps, dim[3];
        double io[4] = {0, 0, 0, 0}, io_max[4]; /* read s, open wait s, write s, bytes */
        snprintf(path, sizeof path, "hist.%04d.nc", c);

        double t_begin = demo_now();
        DEMO_CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
        io[1] = demo_now() - t_begin;
        DEMO_CHECK(ncmpi_inq_varid(ncid, "T", &var_t));
        DEMO_CHECK(ncmpi_inq_varid(ncid, "PS", &var_ps));
        DEMO_CHECK(ncmpi_get_vara_float_all(ncid, var_t, start, count, t));
        MPI_Offset ps_start[3] = {0, start[2], 0}, ps_count[3] = {1, count[2], g.nx};
        DEMO_CHECK(ncmpi_get_vara_float_all(ncid, var_ps, ps_start, ps_count, ps));
        DEMO_CHECK(dtf_transfer(path, ncid));
        DEMO_CHECK(ncmpi_close(ncid));
        io[0] = demo_now() - t_begin;
        io[3] += (double)(n + (size_t)(count[2] * count[3])) * sizeof(float);

        size_t i = 0;
        for (MPI_Offset z = 0; z < count[1]; z++)
            for (MPI_Offset y = start[2]; y < start[2] + count[2]; y++)
                for (MPI_Offset x = 0; x < g.nx; x++, i++) {
                    bad += t[i] != hist_value(c, z, y, x);
                    if (z == 0) bad += ps[i] != hist_value(c, 0, y, x);
                    t[i] += 0.5f; /* the analysis increment */
                }

        t_begin = demo_now();
        DEMO_CHECK(ncmpi_create(MPI_COMM_WORLD, "anal.nc", NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
        DEMO_CHECK(ncmpi_def_dim(ncid, "z", g.nz, &dim[0]));
        DEMO_CHECK(ncmpi_def_dim(ncid, "y", g.ny, &dim[1]));
        DEMO_CHECK(ncmpi_def_dim(ncid, "x", g.nx, &dim[2]));
        DEMO_CHECK(ncmpi_def_var(ncid, "T", NC_FLOAT, 3, dim, &var_t));
        DEMO_CHECK(ncmpi_enddef(ncid));
        DEMO_CHECK(ncmpi_put_vara_float_all(ncid, var_t, &start[1], &count[1], t));
        DEMO_CHECK(dtf_transfer("anal.nc", ncid));
        DEMO_CHECK(ncmpi_close(ncid));
        io[2] = demo_now() - t_begin;
        io[3] += (double)n * sizeof(float);

        MPI_Reduce(io, io_max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&io[3], &io_max[3], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("cycle %d: read %s in %.3f s (of which %.3f s waiting for the model), wrote anal.nc in %.3f s; "
                   "%.2f MB moved\n",
                   c, path, io_max[0], io_max[1], io_max[2], io_max[3] / 1e6);
    }
    DEMO_CHECK(dtf_finalize());
    long total_bad = 0;
    MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("assim: %d ranks, %d cycles: %s\n", nranks, cycles,
               total_bad ? "WRONG history values" : "all history values verified");
    free(t);
    free(ps);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
