// Type conversion between netCDF external types and the memory types of PnetCDF's APIs, element for
// element what PnetCDF 1.12.3 (built with --enable-erange-fill, its default) does, so that a reader
// of a transferred variable sees byte for byte what the file would give. dtf keeps external values
// in NATIVE byte order (a file stores them big-endian; nothing here swaps bytes).
//
// The rules (checked against PnetCDF by tests/unit/test_types.cpp):
//  - NC_CHAR converts only to and from text (char): any other mix is NC_ECHAR and converts nothing.
//  - Out of range ("NC_ERANGE") is decided on the source value: integer -> integer exactly;
//    floating -> integer when (double)v > (double)MAX or (double)v < (double)MIN of the destination;
//    double -> float when |v| > FLT_MAX (so +-inf too); put float -> double when |v| > DBL_MAX
//    (+-inf: a put flags it, a get does not). NaN is never out of range. Integers convert to
//    float/double without a check (rounded to nearest).
//  - Every element is converted; an out-of-range one is replaced by a fill value and the call
//    returns NC_ERANGE. put (memory -> external): the variable's fill value (its _FillValue
//    attribute, else the default NC_FILL_* of its type). get (external -> memory): the default fill
//    of the memory type, where C long gets NC_FILL_INT (not NC_FILL_INT64) even when it is 64-bit.
//  - A floating value that passes the check but does not fit (NaN, 2^63 into int64, 2^64 into
//    uint64) converts like x86-64's cvttsd2si, which PnetCDF's plain C cast compiles to: NaN -> int
//    gives INT_MIN, NaN -> long long/long gives INT64_MIN, NaN -> short/byte/ubyte/ushort/uint 0,
//    a put of 2^63 into int64 INT64_MIN and of 2^64 into uint64 0. A get instead reads the value
//    (double)MAX of a 64-bit integer (2^63, 2^64) as MAX.
//  - CDF-1/CDF-2 files: NC_BYTE <-> uchar copies the bytes (no range check), as in netCDF.
#pragma once

#include <pnetcdf.h>

#include <cstddef>

namespace dtf::types {

// Memory type id of C `long` (typed-API suffix _long, MPI_LONG). It is not an nc_type: PnetCDF
// converts long like the integer of its size, but a get that is out of range stores NC_FILL_INT in a
// long, while a long long gets NC_FILL_INT64. (The generated pnc_info.h gives long functions
// memtype NC_INT64; use memtype_of_mpi(info->mpitype) from layout.hpp to tell them apart.)
constexpr nc_type MEM_LONG = 100;

// The one list of types. X(id, ctype, suffix, name, mpitype, fillv, external):
//   id       nc_type of the external type with this C type (MEM_LONG for long)
//   ctype    C type of one element in memory; dtf stores external values in the same C type
//   suffix   typed-API suffix (ncmpi_put_vara_<suffix>_all); name: CDL name of the type
//   mpitype  MPI datatype of the flexible API (and of the typed API with this suffix)
//   fillv    default fill value: of the external type, and what a get stores in this memory type
//            for an out-of-range element
//   external 1 if id is also an external (file) type
#define DTF_TYPES_FOREACH(X)                                                                         \
    X(NC_CHAR, char, text, "char", MPI_CHAR, NC_FILL_CHAR, 1)                                        \
    X(NC_BYTE, signed char, schar, "byte", MPI_SIGNED_CHAR, NC_FILL_BYTE, 1)                         \
    X(NC_UBYTE, unsigned char, uchar, "ubyte", MPI_UNSIGNED_CHAR, NC_FILL_UBYTE, 1)                  \
    X(NC_SHORT, short, short, "short", MPI_SHORT, NC_FILL_SHORT, 1)                                  \
    X(NC_USHORT, unsigned short, ushort, "ushort", MPI_UNSIGNED_SHORT, NC_FILL_USHORT, 1)            \
    X(NC_INT, int, int, "int", MPI_INT, NC_FILL_INT, 1)                                              \
    X(NC_UINT, unsigned int, uint, "uint", MPI_UNSIGNED, NC_FILL_UINT, 1)                            \
    X(::dtf::types::MEM_LONG, long, long, "long", MPI_LONG, NC_FILL_INT, 0)                          \
    X(NC_FLOAT, float, float, "float", MPI_FLOAT, NC_FILL_FLOAT, 1)                                  \
    X(NC_DOUBLE, double, double, "double", MPI_DOUBLE, NC_FILL_DOUBLE, 1)                            \
    X(NC_INT64, long long, longlong, "int64", MPI_LONG_LONG_INT, NC_FILL_INT64, 1)                   \
    X(NC_UINT64, unsigned long long, ulonglong, "uint64", MPI_UNSIGNED_LONG_LONG, NC_FILL_UINT64, 1)

bool is_external(nc_type t) noexcept; // one of the 11 external types (any format)
bool is_memtype(nc_type t) noexcept;  // one of the 12 memory types (the externals and MEM_LONG)
size_t type_size(nc_type t) noexcept; // bytes of one element; 0 if unknown
const char *type_name(nc_type t) noexcept;  // CDL name ("int", "uint64", "long"); "?" if unknown
const char *api_suffix(nc_type t) noexcept; // typed-API suffix ("text", "schar", ...); "?" if unknown
MPI_Datatype mpi_type(nc_type t) noexcept;  // MPI datatype of a memory type; MPI_DATATYPE_NULL if unknown

// Convert n elements; source and destination must not overlap (they may be unaligned). `format`
// is the file's NC_FORMAT_* (only CDF-1/2 vs CDF-5 matters). Return NC_NOERR, NC_ERANGE (every
// element converted, the out-of-range ones replaced), NC_ECHAR or NC_EBADTYPE (nothing converted).
// put: user memory -> variable (external type). var_fill: the variable's fill value (in xtype), or
// null for the default of xtype; it is what an out-of-range element becomes.
int convert_put(const void *mem, nc_type memtype, void *ext, nc_type xtype, size_t n,
                const void *var_fill, int format) noexcept;
// get: variable (external type) -> user memory; out of range gives the memory type's default fill.
int convert_get(const void *ext, nc_type xtype, void *mem, nc_type memtype, size_t n,
                int format) noexcept;

// True when converting a <-> b is a plain byte copy in both directions (same type, long and the
// integer of its size, NC_BYTE/uchar in CDF-1/2): callers may then skip the conversion (zero copy).
bool same_representation(nc_type a, nc_type b, int format) noexcept;

// Default fill value (NC_FILL_*) of a type into out (type_size(t) bytes). MEM_LONG: NC_FILL_INT.
void fill_value(nc_type t, void *out) noexcept;

// n elements of memtype holding what a get of an unwritten element returns: the variable's fill
// value (var_fill in xtype, or null for the default) converted to memtype. Returns convert_get's
// code: a double variable's default fill read as int is NC_ERANGE (out gets NC_FILL_INT), as in PnetCDF.
int fill_converted(nc_type xtype, const void *var_fill, nc_type memtype, void *out, size_t n,
                   int format) noexcept;

} // namespace dtf::types
