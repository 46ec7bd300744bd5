/* launcher_peer: one side of a cross-job MPI connection, used by the launcher.mpi_connect test.
 *
 *   dtfrun --name acceptor -n 2 ./launcher_peer accept SERVICE : \
 *          --name connector -n 3 ./launcher_peer connect SERVICE
 *
 * The two components are separate MPI jobs. The acceptor opens a port and publishes it under
 * SERVICE (this needs the name server dtfrun starts); the connector looks the name up (polling,
 * bounded by LOOKUP_TIMEOUT_S) and connects. Over the resulting intercommunicator every rank
 * contributes 1000*side + rank + 1 to an allreduce, so each side receives the sum over the other
 * side's ranks; both check it, rank 0 prints "<role>: peer sum X (expected X), OK", then they
 * disconnect. Exit status 0 on success, 1 on any error or mismatch. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LOOKUP_TIMEOUT_S 20.0

static int fail(const char *role, int rank, const char *what, int code)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, msg, &len);
    fprintf(stderr, "%s rank %d: %s failed: %s\n", role, rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* Rank 0 polls MPI_Lookup_name until the acceptor has published; MPI_SUCCESS or an error code. */
static int lookup_port(const char *service, char *port)
{
    double deadline = MPI_Wtime() + LOOKUP_TIMEOUT_S;
    int rc;
    while ((rc = MPI_Lookup_name(service, MPI_INFO_NULL, port)) != MPI_SUCCESS) {
        if (MPI_Wtime() > deadline)
            return rc;
        usleep(50 * 1000);
    }
    return MPI_SUCCESS;
}

/* Side 0 sums contributions of side 1 and vice versa. */
static long expected_sum(int other_side, int other_size)
{
    long sum = 0;
    for (int r = 0; r < other_size; ++r)
        sum += 1000L * other_side + r + 1;
    return sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 3 || (strcmp(argv[1], "accept") != 0 && strcmp(argv[1], "connect") != 0)) {
        if (rank == 0)
            fprintf(stderr, "usage: %s accept|connect SERVICE\n", argv[0]);
        MPI_Finalize();
        return 1;
    }
    const char *role = argv[1], *service = argv[2];
    const int side = strcmp(role, "accept") == 0 ? 0 : 1;
    char port[MPI_MAX_PORT_NAME] = "";
    MPI_Comm inter = MPI_COMM_NULL;
    int rc;

    if (side == 0) {
        if (rank == 0) {
            if ((rc = MPI_Open_port(MPI_INFO_NULL, port)) != MPI_SUCCESS)
                return fail(role, rank, "MPI_Open_port", rc);
            if ((rc = MPI_Publish_name(service, MPI_INFO_NULL, port)) != MPI_SUCCESS)
                return fail(role, rank, "MPI_Publish_name", rc);
        }
        if ((rc = MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter)) != MPI_SUCCESS)
            return fail(role, rank, "MPI_Comm_accept", rc);
    } else {
        if (rank == 0 && (rc = lookup_port(service, port)) != MPI_SUCCESS)
            return fail(role, rank, "MPI_Lookup_name (polled for 20 s)", rc);
        if ((rc = MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter)) != MPI_SUCCESS)
            return fail(role, rank, "MPI_Comm_connect", rc);
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);

    int remote_size = 0;
    MPI_Comm_remote_size(inter, &remote_size);
    long mine = 1000L * side + rank + 1, peer_sum = 0;
    if ((rc = MPI_Allreduce(&mine, &peer_sum, 1, MPI_LONG, MPI_SUM, inter)) != MPI_SUCCESS)
        return fail(role, rank, "MPI_Allreduce over the intercommunicator", rc);
    const long want = expected_sum(1 - side, remote_size);
    int ok = peer_sum == want, all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!ok)
        fprintf(stderr, "%s rank %d: peer sum %ld, expected %ld\n", role, rank, peer_sum, want);
    if (rank == 0)
        printf("%s: %d local ranks, %d remote ranks, peer sum %ld (expected %ld), %s\n", role, size,
               remote_size, peer_sum, want, all_ok ? "OK" : "MISMATCH");

    if ((rc = MPI_Comm_disconnect(&inter)) != MPI_SUCCESS)
        return fail(role, rank, "MPI_Comm_disconnect", rc);
    if (side == 0 && rank == 0) {
        MPI_Unpublish_name(service, MPI_INFO_NULL, port);
        MPI_Close_port(port);
    }
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
