// netCDF external types as the header model needs them. Sizes, fill values and value conversion
// come from the one type list in src/types/convert.hpp (conversion follows PnetCDF 1.12.3 exactly:
// out-of-range values become the target's default fill and the call returns NC_ERANGE).
#pragma once

#include <pnetcdf.h>

namespace dtf::model {

// Size in bytes of an external type (NC_BYTE..NC_UINT64), 0 for anything else.
int type_size(nc_type type);

// NC_BYTE..NC_UINT64 (NC_STRING and user types are not netCDF-3 types).
bool is_valid_type(nc_type type);

// Types beyond the classic six need CDF-5 (NC_ESTRICTCDF2 in CDF-1/CDF-2 files).
bool is_cdf5_type(nc_type type);

// Writes the default fill value of `type` (NC_FILL_BYTE, ..., NC_FILL_UINT64) to `out` in native
// byte order. `out` must hold type_size(type) bytes.
void default_fill(nc_type type, void *out);

} // namespace dtf::model
