// netCDF-4 files in transfer mode (netcdf4.cpp): what netCDF-C's open and create calls (netcdf.cpp)
// hand over for a path the config serves in transfer mode. No PnetCDF or netCDF-C header here: the
// two define the same names, and netcdf4.cpp is the one file that includes netCDF-C's (dtf's own
// dispatch contract, pnc/hook.h, names neither's).
#pragma once

#include <mpi.h>

#include <string>

#include "pnc/hook.h"

namespace dtf::runtime {

// netCDF-C's own function `name` (not libdtf's): netcdf.cpp finds it.
void *netcdf_c_function(const char *name);

namespace nc4 {

// nc_create_par of a netCDF-4 file (cmode has NC_NETCDF4) at `path`, which `rule` ("dtf.ini:12")
// serves in transfer mode: a virtual netCDF-4 file over a virtual CDF-5 one. Returns a netCDF code.
// `serial`: the program called nc_create (made parallel over MPI_COMM_SELF): the file then refuses
// parallel calls as netCDF-C does (nc_var_par_access: NC_ENOPAR).
int create(const char *path, int cmode, MPI_Comm comm, MPI_Info info, int *ncidp, const std::string &rule,
           bool serial);
// nc_open_par of such a path: the file its writer made, a netCDF-4 one as above, a classic one as is.
int open(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp, const std::string &rule,
         bool serial);
// nc_create of a classic file at such a path: made parallel over MPI_COMM_SELF (netCDF-C's PnetCDF
// path, which dtf serves), answering and filling as netCDF-C's classic library (the one nc_create takes).
int create_serial_classic(const char *path, int cmode, int *ncidp);
// nc_put_vara (`put`) or nc_get_vara on the virtual file of PnetCDF ncid `ncid` (File::pnc), values of
// netCDF type `memtype`, as netCDF-C's PnetCDF path would make it (files.cpp). DTF_PNC_PASS: not such a
// call (another ncid or memtype, a variable the file does not have): netCDF-C's path makes it.
int vara(int ncid, int varid, const size_t *start, const size_t *count, void *value, int memtype, bool put);
// The PnetCDF ncid under netCDF-C's `ncid` (a netCDF-4 file above, or a file netCDF-C's PnetCDF path
// opened), for dtf_transfer; -1 if there is none.
int pnetcdf_ncid(int ncid);

} // namespace nc4
} // namespace dtf::runtime
