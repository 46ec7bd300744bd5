// netCDF external types and value conversion as PnetCDF 1.12.3 does it (pure C++, no MPI).
//
// PnetCDF converts attribute values between the C type of the user's buffer (the "memory type",
// named by the nc_type of the matching external type: NC_BYTE for signed char, NC_UBYTE for
// unsigned char, NC_INT64 for long long, ...) and the external type in the file. The rules,
// established against the real library (tests/unit/test_model_oracle.cpp compares every case):
//   - text (NC_CHAR) converts only to text; callers reject the mix with NC_ECHAR before converting;
//   - a value outside the target's range becomes the target's default fill value (NC_FILL_INT, ...)
//     and the call returns NC_ERANGE after converting all the other values (this build has
//     PNETCDF_ERANGE_FILL=1);
//   - a floating-point value is out of range when it compares greater than (double)MAX or less
//     than (double)MIN of the target; it is truncated toward zero otherwise. Values that pass this
//     test without fitting (NaN, and 2^63 / 2^64 for the 64-bit targets) get what the x86-64 cast
//     yields, except that reading (Direction::get) maps 2^63 / 2^64 to the 64-bit maximum;
//   - writing float to double rejects +-inf (NC_ERANGE); reading does not; same-type copies never
//     check;
//   - in CDF-1/CDF-2 files, unsigned char <-> NC_BYTE copies the bytes without a range check.
#pragma once

#include <cstdint>

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

enum class Direction { put, get };

// Converts `n` values of type `from` at `in` to type `to` at `out` (both native byte order, both
// valid numeric types, or both NC_CHAR). Returns NC_NOERR or NC_ERANGE (all values are converted).
// `cdf5`: the file is CDF-5 (the unsigned char <-> NC_BYTE exemption applies to CDF-1/CDF-2 only).
int convert(const void *in, nc_type from, void *out, nc_type to, int64_t n, Direction dir,
            bool cdf5);

} // namespace dtf::model
