/*
 * assim.c - the "assim" component of the dtf demo workflow: a toy data assimilation.
 *
 * Each cycle c = 1..CYCLES it reads T and PS of every ensemble member m from hist.m<m>.<c>.nc
 * (slabs along y over all its ranks: a different decomposition than the model's) and checks every
 * value; then, as a real assimilation would once it has seen the whole ensemble, it adds an analysis
 * increment of 0.5 K to each member and writes T into anal.m<m>.nc, which member m reads at the
 * start of the next cycle.
 *
 * Build and run: see model.c. Prints one line per cycle on rank 0 and a final verdict.
 */
#include "demo_common.h"

static int rank, nranks;

/* Read member m's history of cycle c into t (and PS into ps); return the number of wrong values. */
static long read_history(const grid_t *g, int m, int c, const MPI_Offset start[4], const MPI_Offset count[4],
                         float *t, float *ps, double io[4]) {
    char path[64];
    int ncid, var_t, var_ps;
    hist_path(path, sizeof path, m, c);
    double t_begin = demo_now();
    DEMO_CHECK(ncmpi_open(MPI_COMM_WORLD, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    io[1] += demo_now() - t_begin;
    DEMO_CHECK(ncmpi_inq_varid(ncid, "T", &var_t));
    DEMO_CHECK(ncmpi_inq_varid(ncid, "PS", &var_ps));
    DEMO_CHECK(ncmpi_get_vara_float_all(ncid, var_t, start, count, t));
    MPI_Offset ps_start[3] = {0, start[2], 0}, ps_count[3] = {1, count[2], g->nx};
    DEMO_CHECK(ncmpi_get_vara_float_all(ncid, var_ps, ps_start, ps_count, ps));
    DEMO_CHECK(dtf_transfer(path, ncid));
    DEMO_CHECK(ncmpi_close(ncid));
    io[0] += demo_now() - t_begin;
    io[3] += (double)(count[1] * count[2] * count[3] + count[2] * count[3]) * sizeof(float);
    long bad = 0;
    size_t i = 0;
    for (MPI_Offset z = 0; z < count[1]; z++)
        for (MPI_Offset y = start[2]; y < start[2] + count[2]; y++)
            for (MPI_Offset x = 0; x < g->nx; x++, i++) {
                bad += t[i] != hist_value(m, c, z, y, x);
                if (z == 0) bad += ps[i] != hist_value(m, c, 0, y, x);
            }
    return bad;
}

static void write_analysis(const grid_t *g, int m, const MPI_Offset start[4], const MPI_Offset count[4],
                           const float *t, double io[4]) {
    char path[64];
    int ncid, var_t, dim[3];
    anal_path(path, sizeof path, m);
    double t_begin = demo_now();
    DEMO_CHECK(ncmpi_create(MPI_COMM_WORLD, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    DEMO_CHECK(ncmpi_def_dim(ncid, "z", g->nz, &dim[0]));
    DEMO_CHECK(ncmpi_def_dim(ncid, "y", g->ny, &dim[1]));
    DEMO_CHECK(ncmpi_def_dim(ncid, "x", g->nx, &dim[2]));
    DEMO_CHECK(ncmpi_def_var(ncid, "T", NC_FLOAT, 3, dim, &var_t));
    DEMO_CHECK(ncmpi_enddef(ncid));
    DEMO_CHECK(ncmpi_put_vara_float_all(ncid, var_t, &start[1], &count[1], t));
    DEMO_CHECK(dtf_transfer(path, ncid));
    DEMO_CHECK(ncmpi_close(ncid));
    io[2] += demo_now() - t_begin;
    io[3] += (double)(count[1] * count[2] * count[3]) * sizeof(float);
}

int main(int argc, char **argv) {
    /* MPI_THREAD_MULTIPLE lets dtf's progress thread move data while this program computes. */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    int cycles = argc > 1 ? atoi(argv[1]) : 3;
    grid_t g = {argc > 4 ? atoll(argv[2]) : 16, argc > 4 ? atoll(argv[3]) : 128, argc > 4 ? atoll(argv[4]) : 128};
    int members = argc > 5 ? atoi(argv[5]) : 2;

    DEMO_CHECK(dtf_init("dtf.ini", "assim"));
    MPI_Offset start[4] = {0, 0, 0, 0}, count[4] = {1, g.nz, 0, g.nx};
    demo_block(g.ny, nranks, rank, &start[2], &count[2]);
    size_t n = (size_t)(count[1] * count[2] * count[3]);
    float *t = malloc(sizeof(float) * (n ? n : 1) * (size_t)members), *ps = malloc(sizeof(float) * (n ? n : 1));
    long bad = 0;

    for (int c = 1; c <= cycles; c++) {
        double io[4] = {0, 0, 0, 0}, io_max[4]; /* read s, open wait s, write s, bytes */
        for (int m = 0; m < members; m++) bad += read_history(&g, m, c, start, count, t + (size_t)m * n, ps, io);
        for (size_t i = 0; i < n * (size_t)members; i++) t[i] += 0.5f; /* the analysis increment */
        for (int m = 0; m < members; m++) write_analysis(&g, m, start, count, t + (size_t)m * n, io);
        MPI_Reduce(io, io_max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&io[3], &io_max[3], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("cycle %d: read %d histories in %.3f s (of which %.3f s waiting for the model), wrote %d analyses "
                   "in %.3f s; %.2f MB moved\n",
                   c, members, io_max[0], io_max[1], members, io_max[2], io_max[3] / 1e6);
        demo_resources(MPI_COMM_WORLD, "assim", c);
    }
    DEMO_CHECK(dtf_finalize());
    long total_bad = 0;
    MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("assim: %d ranks, %d members, %d cycles: %s\n", nranks, members, cycles,
               total_bad ? "WRONG history values" : "all history values verified");
    free(t);
    free(ps);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
