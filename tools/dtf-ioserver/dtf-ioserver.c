/*
 * dtf-ioserver: the I/O server of dtf, launched as one more component of a workflow,
 *
 *     dtfrun -c dtf.ini --name model -n 8 ./model : --name io -n 2 dtf-ioserver io
 *
 * It writes the files of the [FILE] sections that name it in ioserver= (persist=1 files): the writer
 * ranks send it their values when they close a file and go on, and the server's ranks write the file
 * with PnetCDF while the model computes, then tell the readers. It ends when every component it
 * serves has called dtf_finalize.
 *
 * usage: dtf-ioserver NAME [CONFIG]   (NAME: its comp_name; CONFIG: the INI file, default $DTF_INI_FILE)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtf.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 2 || argc > 3 || argv[1][0] == '-') {
        if (rank == 0) fprintf(stderr, "usage: dtf-ioserver NAME [CONFIG]\n"
                                       "  NAME: the component's comp_name; CONFIG: default $DTF_INI_FILE\n");
        MPI_Finalize();
        return 2;
    }
    int status = 0;
    if (dtf_init(argc == 3 ? argv[2] : getenv("DTF_INI_FILE"), argv[1]) != DTF_SUCCESS) {
        status = 1; /* (dtf_init printed why) */
    } else {
        if (dtf_ioserver() != DTF_SUCCESS) status = 1;
        if (dtf_finalize() != DTF_SUCCESS) status = 1;
    }
    MPI_Finalize();
    return status;
}
