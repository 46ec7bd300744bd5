/* A program linked with PnetCDF before dtf (-lpnetcdf -ldtf; with LINK_NETCDF, netCDF-C before dtf:
 * -lnetcdf -ldtf): its PnetCDF (netCDF-C) calls go to that library, never through dtf. dtf_init must
 * say so, with the fix, and fail (fault.link-order, frontends.link-order). */
#include <mpi.h>
#include <stdio.h>
#ifdef LINK_NETCDF
#include <netcdf.h>
#include <netcdf_par.h>
#else
#include <pnetcdf.h>
#endif

#include "dtf.h"

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const int rc = dtf_init(argc > 1 ? argv[1] : "dtf.ini", "writer");
    int ncid = -1; /* (a call of the library, so that the program needs it before dtf) */
#ifdef LINK_NETCDF
    if (rc == 0) nc_create_par("linkorder.nc", NC_CLOBBER, MPI_COMM_WORLD, MPI_INFO_NULL, &ncid);
#else
    if (rc == 0) ncmpi_create(MPI_COMM_WORLD, "linkorder.nc", NC_CLOBBER, MPI_INFO_NULL, &ncid);
#endif
    printf("link-order: dtf_init returned %d (%s)\n", rc, rc == DTF_ERR_CONFIG ? "as expected" : "WRONG");
    MPI_Finalize();
    return rc == DTF_ERR_CONFIG ? 0 : 1;
}
