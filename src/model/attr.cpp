// Conversion of netCDF values between external and memory types, bit-compatible with PnetCDF
// 1.12.3 on x86-64 (see attr.hpp for the rules and the oracle test that pins them down).
#include "model/attr.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace dtf::model {

int type_size(nc_type type) {
    switch (type) {
    case NC_BYTE: case NC_CHAR: case NC_UBYTE: return 1;
    case NC_SHORT: case NC_USHORT: return 2;
    case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
    case NC_DOUBLE: case NC_INT64: case NC_UINT64: return 8;
    default: return 0;
    }
}

bool is_valid_type(nc_type type) { return type >= NC_BYTE && type <= NC_UINT64; }

bool is_cdf5_type(nc_type type) { return type > NC_DOUBLE && type <= NC_UINT64; }

namespace {

template <class T> void put_value(void *out, T v) { std::memcpy(out, &v, sizeof v); }

template <class T> T get_value(const void *in) {
    T v;
    std::memcpy(&v, in, sizeof v);
    return v;
}

} // namespace

void default_fill(nc_type type, void *out) {
    switch (type) {
    case NC_BYTE: put_value<signed char>(out, NC_FILL_BYTE); break;
    case NC_CHAR: put_value<char>(out, NC_FILL_CHAR); break;
    case NC_SHORT: put_value<short>(out, NC_FILL_SHORT); break;
    case NC_INT: put_value<int>(out, NC_FILL_INT); break;
    case NC_FLOAT: put_value<float>(out, NC_FILL_FLOAT); break;
    case NC_DOUBLE: put_value<double>(out, NC_FILL_DOUBLE); break;
    case NC_UBYTE: put_value<unsigned char>(out, NC_FILL_UBYTE); break;
    case NC_USHORT: put_value<unsigned short>(out, NC_FILL_USHORT); break;
    case NC_UINT: put_value<unsigned>(out, NC_FILL_UINT); break;
    case NC_INT64: put_value<long long>(out, NC_FILL_INT64); break;
    case NC_UINT64: put_value<unsigned long long>(out, NC_FILL_UINT64); break;
    default: break;
    }
}

namespace {

// One source value, widened without loss: signed integers to int64, unsigned to uint64,
// floating point to double.
struct Num {
    enum Kind { sint, uint, real } kind;
    int64_t i = 0;
    uint64_t u = 0;
    double d = 0;
};

Num load(const char *p, nc_type t) {
    switch (t) {
    case NC_BYTE: return {Num::sint, get_value<signed char>(p)};
    case NC_SHORT: return {Num::sint, get_value<short>(p)};
    case NC_INT: return {Num::sint, get_value<int>(p)};
    case NC_INT64: return {Num::sint, get_value<long long>(p)};
    case NC_UBYTE: return {Num::uint, 0, get_value<unsigned char>(p)};
    case NC_USHORT: return {Num::uint, 0, get_value<unsigned short>(p)};
    case NC_UINT: return {Num::uint, 0, get_value<unsigned>(p)};
    case NC_UINT64: return {Num::uint, 0, get_value<unsigned long long>(p)};
    case NC_FLOAT: return {Num::real, 0, 0, get_value<float>(p)};
    default: return {Num::real, 0, 0, get_value<double>(p)};
    }
}

// What the x86-64 code PnetCDF is compiled to yields for a NaN cast to T (cvttsd2si returns the
// "integer indefinite" 0x80..0; narrow types are converted through 32 bits, uint32 through 64
// bits, uint64 through the signed 64-bit conversion).
template <class T> T nan_cast() {
    if constexpr (std::is_same_v<T, int>) return std::numeric_limits<int>::min();
    if constexpr (std::is_same_v<T, long long>) return std::numeric_limits<long long>::min();
    if constexpr (std::is_same_v<T, unsigned long long>) return 1ULL << 63;
    return 0;
}

// A finite or NaN double that passed PnetCDF's range test (d <= (double)MAX, d >= (double)MIN).
template <class T> T real_to_int(double d, Direction dir) {
    constexpr T max = std::numeric_limits<T>::max();
    if (std::isnan(d)) return nan_cast<T>();
    if (dir == Direction::get && d == static_cast<double>(max)) return max; // saturates on read
    if constexpr (sizeof(T) == 8) {
        // (double)MAX rounds up to 2^63 (2^64): the cast overflows; x86-64 yields these.
        if (std::is_signed_v<T> && d >= 9223372036854775808.0) return std::numeric_limits<T>::min();
        if (!std::is_signed_v<T> && d >= 18446744073709551616.0) return 0;
    }
    return static_cast<T>(d);
}

// Stores v as integer type T; false when out of range (out is left untouched).
template <class T> bool store_int(const Num &v, void *out, Direction dir) {
    constexpr T max = std::numeric_limits<T>::max(), min = std::numeric_limits<T>::min();
    switch (v.kind) {
    case Num::sint:
        if (v.i < 0 ? (!std::is_signed_v<T> || v.i < static_cast<int64_t>(min))
                    : static_cast<uint64_t>(v.i) > static_cast<uint64_t>(max))
            return false;
        put_value<T>(out, static_cast<T>(v.i));
        return true;
    case Num::uint:
        if (v.u > static_cast<uint64_t>(max)) return false;
        put_value<T>(out, static_cast<T>(v.u));
        return true;
    default:
        if (v.d > static_cast<double>(max) || v.d < static_cast<double>(min)) return false;
        put_value<T>(out, real_to_int<T>(v.d, dir));
        return true;
    }
}

template <class T> T int_to_real(const Num &v) {
    return v.kind == Num::sint ? static_cast<T>(v.i) : static_cast<T>(v.u);
}

bool store_float(const Num &v, void *out) {
    if (v.kind != Num::real) {
        put_value<float>(out, int_to_real<float>(v));
        return true;
    }
    if (v.d > FLT_MAX || v.d < -FLT_MAX) return false; // NaN passes
    put_value<float>(out, static_cast<float>(v.d));
    return true;
}

// Only float sources reach the real branch (double -> double is a plain copy).
bool store_double(const Num &v, void *out, Direction dir) {
    if (v.kind != Num::real) {
        put_value<double>(out, int_to_real<double>(v));
        return true;
    }
    if (dir == Direction::put && (v.d > DBL_MAX || v.d < -DBL_MAX)) return false;
    put_value<double>(out, v.d);
    return true;
}

bool store(const Num &v, nc_type t, void *out, Direction dir) {
    switch (t) {
    case NC_BYTE: return store_int<signed char>(v, out, dir);
    case NC_SHORT: return store_int<short>(v, out, dir);
    case NC_INT: return store_int<int>(v, out, dir);
    case NC_INT64: return store_int<long long>(v, out, dir);
    case NC_UBYTE: return store_int<unsigned char>(v, out, dir);
    case NC_USHORT: return store_int<unsigned short>(v, out, dir);
    case NC_UINT: return store_int<unsigned>(v, out, dir);
    case NC_UINT64: return store_int<unsigned long long>(v, out, dir);
    case NC_FLOAT: return store_float(v, out);
    default: return store_double(v, out, dir);
    }
}

} // namespace

int convert(const void *in, nc_type from, void *out, nc_type to, int64_t n, Direction dir,
            bool cdf5) {
    const auto *src = static_cast<const char *>(in);
    auto *dst = static_cast<char *>(out);
    const bool raw_bytes = !cdf5 && ((from == NC_UBYTE && to == NC_BYTE) ||
                                     (from == NC_BYTE && to == NC_UBYTE));
    if (from == to || raw_bytes) {
        if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * type_size(to));
        return NC_NOERR;
    }
    const int in_size = type_size(from), out_size = type_size(to);
    int err = NC_NOERR;
    for (int64_t k = 0; k < n; ++k, src += in_size, dst += out_size) {
        if (store(load(src, from), to, dst, dir)) continue;
        default_fill(to, dst);
        err = NC_ERANGE;
    }
    return err;
}

} // namespace dtf::model
