/*
 * RMA pull against point-to-point, one launch (bench/aggregate.py runs it): how an I/O server's ranks
 * could take the model ranks' output. The first W ranks are writers with B bytes each (their output
 * of one step); the last S ranks are the server, each taking the output of its group of writers
 * (consecutive writer ranks, as dtf groups them). Per round:
 *   p2p  the writers MPI_Isend their bytes to their server rank, which MPI_Irecv's them all (what
 *        dtf's I/O server does, as messages);
 *   rma  the writers' bytes are in an MPI window; the server ranks pull them with MPI_Get under a
 *        shared passive-target lock per writer (CFIO2's RDMA read): the writers make no call.
 * Then a barrier. Reported per mode (rank 0): the median over ROUNDS of the slowest server rank's
 * time to have all its bytes, and of the slowest writer's time until its bytes are taken (p2p: its
 * sends complete; rma: 0, it makes no call), and the bytes moved per round. Each round's bytes are
 * checked on the server.
 *
 * usage: mpirun -n W+S rma_pull S BYTES ROUNDS
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 4 || atoi(argv[1]) < 1 || atoi(argv[1]) >= size) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -n W+S rma_pull S BYTES ROUNDS (S >= 1, W >= 1)\n");
        MPI_Finalize();
        return 2;
    }
    const int servers = atoi(argv[1]), writers = size - servers, rounds = atoi(argv[3]);
    const int bytes = atoi(argv[2]);
    const int server = rank >= writers;
    /* writer w goes to server rank floor(w * S / W) (dtf's aggregator groups) */
    int first = -1, count = 0;
    for (int w = 0; w < writers; w++)
        if ((long long)w * servers / writers == rank - writers) first = first < 0 ? w : first, count++;
    char *mine = malloc((size_t)bytes), *in = server ? malloc((size_t)bytes * (size_t)count) : NULL;
    for (int i = 0; i < bytes; i++) mine[i] = (char)(rank * 31 + i);
    MPI_Win win;
    MPI_Win_create(server ? NULL : mine, server ? 0 : bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    double *serve_t = malloc(sizeof(double) * (size_t)rounds), *write_t = malloc(sizeof(double) * (size_t)rounds);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * (size_t)(count > 0 ? count : 1));
    int bad = 0;
    for (int mode = 0; mode < 2; mode++) {
        for (int r = 0; r < rounds; r++) {
            if (server) memset(in, 0, (size_t)bytes * (size_t)count);
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            double mine_t = 0;
            if (mode == 0) {
                if (server) {
                    for (int k = 0; k < count; k++)
                        MPI_Irecv(in + (size_t)k * bytes, bytes, MPI_BYTE, first + k, 0, MPI_COMM_WORLD, &reqs[k]);
                    MPI_Waitall(count, reqs, MPI_STATUSES_IGNORE);
                } else {
                    MPI_Send(mine, bytes, MPI_BYTE, writers + (int)((long long)rank * servers / writers), 0, MPI_COMM_WORLD);
                }
                mine_t = MPI_Wtime() - t0;
            } else if (server) {
                for (int k = 0; k < count; k++) {
                    MPI_Win_lock(MPI_LOCK_SHARED, first + k, 0, win);
                    MPI_Get(in + (size_t)k * bytes, bytes, MPI_BYTE, first + k, 0, bytes, MPI_BYTE, win);
                    MPI_Win_unlock(first + k, win);
                }
                mine_t = MPI_Wtime() - t0;
            }
            double both[2] = {server ? mine_t : 0, server ? 0 : mine_t}, max[2];
            MPI_Reduce(both, max, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
            serve_t[r] = max[0], write_t[r] = max[1];
            for (int k = 0; server && k < count; k++)
                for (int i = 0; i < bytes; i += 4093)
                    bad |= in[(size_t)k * bytes + i] != (char)((first + k) * 31 + i);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        if (rank == 0)
            printf("RESULT %s %d %d %lld %.6f %.6f\n", mode == 0 ? "p2p" : "rma", writers, servers,
                   (long long)bytes * writers, median(serve_t, rounds), median(write_t, rounds));
    }
    int any = 0;
    MPI_Reduce(&bad, &any, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0 && any) fprintf(stderr, "rma_pull: the server ranks got other bytes than the writers have\n");
    MPI_Win_free(&win);
    free(mine), free(in), free(serve_t), free(write_t), free(reqs);
    MPI_Finalize();
    return any ? 1 : 0;
}
