/* A program linked with PnetCDF before dtf (-lpnetcdf -ldtf): its PnetCDF calls go to PnetCDF, never
 * through dtf. dtf_init must say so, with the fix, and fail (fault.link-order). */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>

#include "dtf.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const int rc = dtf_init(argc > 1 ? argv[1] : "dtf.ini", "writer");
    int ncid = -1; /* (a PnetCDF call, so that the program needs PnetCDF before dtf) */
    if (rc == 0) ncmpi_create(MPI_COMM_WORLD, "linkorder.nc", NC_CLOBBER, MPI_INFO_NULL, &ncid);
    printf("link-order: dtf_init returned %d (%s)\n", rc, rc == DTF_ERR_CONFIG ? "as expected" : "WRONG");
    MPI_Finalize();
    return rc == DTF_ERR_CONFIG ? 0 : 1;
}
