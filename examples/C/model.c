/*
 * model.c - the "model" component of the dtf demo workflow: a toy weather model run as an ensemble.
 *
 * The ranks are split into MEMBERS ensemble members; each member is its own sub-communicator with a
 * 2-D decomposition of the (y, x) grid. Each cycle c = 1..CYCLES, every member
 *   1. (from cycle 2 on) reads its analysis anal.m<m>.nc that the assimilation wrote in cycle c-1,
 *      checks every value, and takes it as its state;
 *   2. advances its state (adds 1 K everywhere);
 *   3. writes its history file hist.m<m>.<c>.nc: T(time, z, y, x) and PS(time, y, x), float;
 * and at the end reads its last analysis (the initial state of a next run).
 * The files are plain PnetCDF on the member's communicator; dtf (configured by dtf.ini) decides how
 * they reach the assimilation: through the file system (mode="file") or directly (mode="transfer").
 *
 * Build: part of the dtf build (`make demo` builds and runs it); by hand:
 *     mpicc model.c -I<dtf>/include -L<dtf>/lib -Wl,--no-as-needed -ldtf -lpnetcdf -o model
 * Run:   dtfrun -c dtf.ini -n 4 ./model CYCLES NZ NY NX MEMBERS : -n 2 ./assim CYCLES NZ NY NX MEMBERS
 * Prints one line per cycle on rank 0 (bytes written and read by all members, seconds spent in I/O,
 * how long opening the analysis waited for the assimilation) and a final verdict.
 */
#include <string.h>

#include "demo_common.h"

static int member, rank, nranks; /* rank and size within the member */
static MPI_Comm member_comm;

/* The (y, x) block of this rank on a py x px grid of the member's ranks. */
static void my_block(const grid_t *g, MPI_Offset start[4], MPI_Offset count[4]) {
    int dims[2] = {0, 0};
    MPI_Dims_create(nranks, 2, dims);
    start[0] = 0, count[0] = 1; /* one record */
    start[1] = 0, count[1] = g->nz;
    demo_block(g->ny, dims[0], rank / dims[1], &start[2], &count[2]);
    demo_block(g->nx, dims[1], rank % dims[1], &start[3], &count[3]);
}

static void write_history(const grid_t *g, int cycle, const float *t, double *seconds, double *bytes) {
    char path[64];
    int ncid, dim[4], var_t, var_ps;
    MPI_Offset start[4], count[4];
    hist_path(path, sizeof path, member, cycle);
    my_block(g, start, count);
    double t_begin = demo_now();
    DEMO_CHECK(ncmpi_create(member_comm, path, NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    DEMO_CHECK(ncmpi_def_dim(ncid, "time", NC_UNLIMITED, &dim[0]));
    DEMO_CHECK(ncmpi_def_dim(ncid, "z", g->nz, &dim[1]));
    DEMO_CHECK(ncmpi_def_dim(ncid, "y", g->ny, &dim[2]));
    DEMO_CHECK(ncmpi_def_dim(ncid, "x", g->nx, &dim[3]));
    DEMO_CHECK(ncmpi_def_var(ncid, "T", NC_FLOAT, 4, dim, &var_t));
    DEMO_CHECK(ncmpi_put_att_text(ncid, var_t, "units", 1, "K"));
    int ps_dims[3] = {dim[0], dim[2], dim[3]};
    DEMO_CHECK(ncmpi_def_var(ncid, "PS", NC_FLOAT, 3, ps_dims, &var_ps));
    DEMO_CHECK(ncmpi_put_att_int(ncid, NC_GLOBAL, "cycle", NC_INT, 1, &cycle));
    DEMO_CHECK(ncmpi_put_att_int(ncid, NC_GLOBAL, "member", NC_INT, 1, &member));
    DEMO_CHECK(ncmpi_enddef(ncid));
    DEMO_CHECK(ncmpi_put_vara_float_all(ncid, var_t, start, count, t));
    MPI_Offset ps_start[3] = {0, start[2], start[3]}, ps_count[3] = {1, count[2], count[3]};
    DEMO_CHECK(ncmpi_put_vara_float_all(ncid, var_ps, ps_start, ps_count, t)); /* lowest level as PS */
    DEMO_CHECK(dtf_transfer(path, ncid));
    DEMO_CHECK(ncmpi_close(ncid));
    *seconds += demo_now() - t_begin;
    *bytes += (double)(count[1] * count[2] * count[3] + count[2] * count[3]) * sizeof(float);
}

/* Read the member's analysis into t; return the number of values that differ from what the
 * assimilation must have written (hist + 0.5). */
static long read_analysis(const grid_t *g, int cycle, float *t, double *seconds, double *wait, double *bytes) {
    char path[64];
    int ncid, var;
    MPI_Offset start[4], count[4];
    anal_path(path, sizeof path, member);
    my_block(g, start, count);
    double t_begin = demo_now();
    DEMO_CHECK(ncmpi_open(member_comm, path, NC_NOWRITE, MPI_INFO_NULL, &ncid));
    *wait += demo_now() - t_begin;
    DEMO_CHECK(ncmpi_inq_varid(ncid, "T", &var));
    DEMO_CHECK(ncmpi_get_vara_float_all(ncid, var, &start[1], &count[1], t));
    DEMO_CHECK(dtf_transfer(path, ncid));
    DEMO_CHECK(ncmpi_close(ncid));
    *seconds += demo_now() - t_begin;
    *bytes += (double)(count[1] * count[2] * count[3]) * sizeof(float);
    long bad = 0, i = 0;
    for (MPI_Offset z = 0; z < count[1]; z++)
        for (MPI_Offset y = start[2]; y < start[2] + count[2]; y++)
            for (MPI_Offset x = start[3]; x < start[3] + count[3]; x++, i++)
                bad += t[i] != hist_value(member, cycle, z, y, x) + 0.5f;
    return bad;
}

int main(int argc, char **argv) {
    /* MPI_THREAD_MULTIPLE lets dtf's progress thread move data while this program computes. */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int cycles = argc > 1 ? atoi(argv[1]) : 3;
    grid_t g = {argc > 4 ? atoll(argv[2]) : 16, argc > 4 ? atoll(argv[3]) : 128, argc > 4 ? atoll(argv[4]) : 128};
    int members = argc > 5 ? atoi(argv[5]) : 2;
    if (members < 1 || world_size % members != 0) {
        if (world_rank == 0) fprintf(stderr, "model: %d ranks cannot form %d equal members\n", world_size, members);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    member = world_rank / (world_size / members);
    MPI_Comm_split(MPI_COMM_WORLD, member, world_rank, &member_comm);
    MPI_Comm_rank(member_comm, &rank);
    MPI_Comm_size(member_comm, &nranks);

    DEMO_CHECK(dtf_init("dtf.ini", "model"));
    MPI_Offset start[4], count[4];
    my_block(&g, start, count);
    size_t n = (size_t)(count[1] * count[2] * count[3]);
    float *t = malloc(sizeof(float) * (n ? n : 1));
    size_t i = 0;
    for (MPI_Offset z = 0; z < count[1]; z++)
        for (MPI_Offset y = start[2]; y < start[2] + count[2]; y++)
            for (MPI_Offset x = start[3]; x < start[3] + count[3]; x++) t[i++] = t0(member, z, y, x);

    long bad = 0;
    for (int c = 1; c <= cycles; c++) {
        double io[4] = {0, 0, 0, 0}, io_max[4]; /* write s, read s, open wait s, bytes */
        double t_cycle = demo_now();
        if (c > 1) bad += read_analysis(&g, c - 1, t, &io[1], &io[2], &io[3]);
        for (i = 0; i < n; i++) t[i] += 1.0f; /* the "physics" */
        write_history(&g, c, t, &io[0], &io[3]);
        MPI_Reduce(io, io_max, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&io[3], &io_max[3], 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        if (world_rank == 0)
            printf("cycle %d: %d members wrote their history in %.3f s, read their analysis in %.3f s (of which "
                   "%.3f s waiting for assim); %.2f MB moved; cycle %.3f s\n",
                   c, members, io_max[0], io_max[1], io_max[2], io_max[3] / 1e6, demo_now() - t_cycle);
        demo_resources(MPI_COMM_WORLD, "model", c);
    }
    double final[3] = {0, 0, 0}; /* the last analysis: the initial state of the next run */
    bad += read_analysis(&g, cycles, t, &final[0], &final[1], &final[2]);
    DEMO_CHECK(dtf_finalize());
    long total_bad = 0;
    MPI_Allreduce(&bad, &total_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0)
        printf("model: %d members x %d ranks, %d cycles, grid %lld x %lld x %lld: %s\n", members, nranks, cycles,
               (long long)g.nz, (long long)g.ny, (long long)g.nx,
               total_bad ? "WRONG analysis values" : "all analysis values verified");
    free(t);
    MPI_Comm_free(&member_comm);
    MPI_Finalize();
    return total_bad ? 1 : 0;
}
