#include "model/attr.hpp"

#include "types/convert.hpp"

namespace dtf::model {

bool is_valid_type(nc_type type) { return type >= NC_BYTE && type <= NC_UINT64; }

int type_size(nc_type type) { return is_valid_type(type) ? static_cast<int>(types::type_size(type)) : 0; }

bool is_cdf5_type(nc_type type) { return type > NC_DOUBLE && type <= NC_UINT64; }

void default_fill(nc_type type, void *out) { types::fill_value(type, out); }

} // namespace dtf::model
