// The mark of a netCDF-4 file served in transfer mode (frontend/netcdf4.cpp): a global attribute of
// the virtual CDF-5 file under it, never shown to the program, holding the file's netCDF-4 format. Its
// readers read elements no write reached as the variable's fill value, as HDF5 gives them (a PnetCDF
// file reads zeros there). No include: netcdf4.cpp includes netCDF-C's headers, not PnetCDF's.
#pragma once

namespace dtf::model {
constexpr char kNetcdf4Mark[] = "_dtf_netCDF4";
// The file's mark holds NC_INT64 values: its version, netCDF-C's format of the file,
// NC_FORMAT_NETCDF4 (no classic model: its writer may define in data mode, which netCDF-C then
// enters by itself) or NC_FORMAT_NETCDF4_CLASSIC, and the ids of the variables that have a mark (an
// open reads those alone, not a probe per variable).
constexpr long long kNetcdf4MarkVersion = 3;
constexpr long long kNetcdf4Format = 3, kNetcdf4ClassicFormat = 4;
class Header;
// The format the header's mark holds (kNetcdf4Format or kNetcdf4ClassicFormat); 0: no mark, a
// PnetCDF file (header.cpp).
long long netcdf4_format(const Header &h);
// A variable's mark (put where netcdf4.cpp has hints of it to keep: storage, filters, endianness) ends
// with whether netCDF-4 leaves it unfilled (nc_def_var_fill, or the file's fill mode at its
// definition): its readers read zeros where no write reached, as HDF5 gives them (header.cpp).
bool netcdf4_unfilled(const Header &h, int varid);
} // namespace dtf::model
