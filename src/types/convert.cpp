// Element conversion, dispatched once per call on (source type, destination type) to a typed loop.
#include "types/convert.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace dtf::types {
namespace {

// Per C type: its type id and default fill (from the one list).
template <class T> struct Traits;
#define DTF_X(id, ctype, suffix, name, mpitype, fillv, ext)                                          \
    template <> struct Traits<ctype> {                                                               \
        static constexpr nc_type type = id;                                                          \
        static ctype fill() { return static_cast<ctype>(fillv); }                                    \
    };
DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X

template <class T> constexpr bool is_char = std::is_same_v<T, char>;
template <class T> constexpr bool is_float = std::is_floating_point_v<T>;

// x86-64 cvttsd2si: truncation toward zero; NaN and values out of range give the "integer
// indefinite" value, the minimum of the destination register width.
int32_t cvtt32(double v) {
    return (v != v || v >= 2147483648.0 || v < -2147483648.0) ? INT32_MIN : static_cast<int32_t>(v);
}
int64_t cvtt64(double v) {
    const double two63 = 9223372036854775808.0;
    return (v != v || v >= two63 || v < -two63) ? INT64_MIN : static_cast<int64_t>(v);
}

// What a C cast (D)v of a floating value compiles to with GCC on x86-64 (no UB here; only values
// that passed PnetCDF's range check reach this, but those include NaN and 2^63 / 2^64).
template <class D> D float_to_int(double v) {
    if constexpr (std::is_same_v<D, unsigned long long> ||
                  (std::is_same_v<D, unsigned long> && sizeof(D) == 8)) {
        // below 2^63 (or NaN: unordered compares as below): signed conversion; else shifted by 2^63
        const double two63 = 9223372036854775808.0;
        if (!(v >= two63))
            return static_cast<D>(static_cast<uint64_t>(cvtt64(v)));
        return static_cast<D>(static_cast<uint64_t>(cvtt64(v - two63)) ^ (uint64_t(1) << 63));
    } else if constexpr (sizeof(D) == 8 || (std::is_unsigned_v<D> && sizeof(D) == 4)) {
        return static_cast<D>(static_cast<uint64_t>(cvtt64(v))); // 64-bit conversion, low bits
    } else {
        return static_cast<D>(static_cast<uint32_t>(cvtt32(v))); // 32-bit conversion, low bits
    }
}

// Is integer s within the range of integer type D? (exact, whatever the signedness)
template <class D, class S> bool int_fits(S s) {
    if constexpr (std::is_signed_v<S>) {
        if (s < 0) {
            if constexpr (std::is_unsigned_v<D>)
                return false;
            else
                return static_cast<long long>(s) >= static_cast<long long>(std::numeric_limits<D>::min());
        }
    }
    return static_cast<unsigned long long>(s) <= static_cast<unsigned long long>(std::numeric_limits<D>::max());
}

// Convert one value; false when out of range (the caller stores the fill value instead). Put and
// get differ in two places (PnetCDF's ncx code has separate put and get routines).
template <bool Put, class D, class S> bool convert1(S s, D &d) {
    if constexpr (std::is_same_v<D, S>) {
        d = s;
    } else if constexpr (!is_float<D> && !is_float<S>) {
        if (!int_fits<D>(s))
            return false;
        d = static_cast<D>(s);
    } else if constexpr (!is_float<D>) { // floating -> integer: compared in double
        const double v = static_cast<double>(s);
        const double max = static_cast<double>(std::numeric_limits<D>::max());
        // get only: (double)INT64_MAX is 2^63 (UINT64_MAX: 2^64); that value reads as the maximum
        if constexpr (!Put && sizeof(D) == 8) {
            if (v == max) {
                d = std::numeric_limits<D>::max();
                return true;
            }
        }
        if (v > max || v < static_cast<double>(std::numeric_limits<D>::min()))
            return false;
        d = float_to_int<D>(v);
    } else if constexpr (std::is_same_v<D, float> && std::is_same_v<S, double>) {
        if (s > static_cast<double>(std::numeric_limits<float>::max()) ||
            s < -static_cast<double>(std::numeric_limits<float>::max()))
            return false;
        d = static_cast<float>(s);
    } else if constexpr (Put && std::is_same_v<D, double> && std::is_same_v<S, float>) {
        // put only: float +-inf is beyond [-DBL_MAX, DBL_MAX], so out of range
        if (s > std::numeric_limits<double>::max() || s < -std::numeric_limits<double>::max())
            return false;
        d = s;
    } else { // integer -> floating, get float -> double: no check
        d = static_cast<D>(s);
    }
    return true;
}

// The typed loop. Elements are read and written through memcpy: buffers may be unaligned.
template <bool Put, class S, class D>
int run(const void *src, void *dst, size_t n, const void *erange_fill) {
    if constexpr (is_char<S> != is_char<D>) {
        return NC_ECHAR;
    } else {
        D fill = Traits<D>::fill();
        if (erange_fill)
            std::memcpy(&fill, erange_fill, sizeof fill);
        const char *in = static_cast<const char *>(src);
        char *out = static_cast<char *>(dst);
        int rc = NC_NOERR;
        for (size_t i = 0; i < n; ++i) {
            S s;
            D d;
            std::memcpy(&s, in + i * sizeof(S), sizeof s);
            if (!convert1<Put, D>(s, d)) {
                d = fill;
                rc = NC_ERANGE;
            }
            std::memcpy(out + i * sizeof(D), &d, sizeof d);
        }
        return rc;
    }
}

template <bool Put, class S>
int run_to(const void *src, void *dst, nc_type dst_type, size_t n, const void *fill) {
    switch (dst_type) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id:                                                                                         \
        return run<Put, S, ctype>(src, dst, n, fill);
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return NC_EBADTYPE;
    }
}

// Both directions: type checks, plain copies, else the typed loop of (src_type, dst_type).
template <bool Put>
int convert(const void *src, nc_type src_type, void *dst, nc_type dst_type, size_t n,
            const void *erange_fill, int format) {
    if (!is_memtype(src_type) || !is_memtype(dst_type) || !is_external(Put ? dst_type : src_type))
        return NC_EBADTYPE;
    if ((src_type == NC_CHAR) != (dst_type == NC_CHAR))
        return NC_ECHAR;
    if (same_representation(src_type, dst_type, format)) {
        if (n)
            std::memcpy(dst, src, n * type_size(src_type));
        return NC_NOERR;
    }
    switch (src_type) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id:                                                                                         \
        return run_to<Put, ctype>(src, dst, dst_type, n, erange_fill);
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return NC_EBADTYPE;
    }
}

} // namespace

bool is_external(nc_type t) noexcept {
    switch (t) {
#define DTF_X(id, ctype, suffix, name, mpitype, fillv, ext)                                          \
    case id:                                                                                         \
        return ext;
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return false;
    }
}

bool is_memtype(nc_type t) noexcept { return type_size(t) != 0; }

size_t type_size(nc_type t) noexcept {
    switch (t) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id:                                                                                         \
        return sizeof(ctype);
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return 0;
    }
}

const char *type_name(nc_type t) noexcept {
    switch (t) {
#define DTF_X(id, ctype, suffix, name, ...)                                                          \
    case id:                                                                                         \
        return name;
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return "?";
    }
}

const char *api_suffix(nc_type t) noexcept {
    switch (t) {
#define DTF_X(id, ctype, suffix, ...)                                                                \
    case id:                                                                                         \
        return #suffix;
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return "?";
    }
}

MPI_Datatype mpi_type(nc_type t) noexcept {
    switch (t) {
#define DTF_X(id, ctype, suffix, name, mpitype, ...)                                                 \
    case id:                                                                                         \
        return mpitype;
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return MPI_DATATYPE_NULL;
    }
}

void fill_value(nc_type t, void *out) noexcept {
    switch (t) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id: {                                                                                       \
        const ctype v = Traits<ctype>::fill();                                                       \
        std::memcpy(out, &v, sizeof v);                                                              \
        return;                                                                                      \
    }
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    default:
        return;
    }
}

bool same_representation(nc_type a, nc_type b, int format) noexcept {
    if (a == b)
        return is_memtype(a);
    auto pair = [&](nc_type x, nc_type y) { return (a == x && b == y) || (a == y && b == x); };
    if (pair(MEM_LONG, sizeof(long) == 8 ? NC_INT64 : NC_INT))
        return true;
    return format != NC_FORMAT_CDF5 && pair(NC_BYTE, NC_UBYTE);
}

int convert_put(const void *mem, nc_type memtype, void *ext, nc_type xtype, size_t n,
                const void *var_fill, int format) noexcept {
    return convert<true>(mem, memtype, ext, xtype, n, var_fill, format);
}

int convert_get(const void *ext, nc_type xtype, void *mem, nc_type memtype, size_t n,
                int format) noexcept {
    return convert<false>(ext, xtype, mem, memtype, n, nullptr, format);
}

int fill_converted(nc_type xtype, const void *var_fill, nc_type memtype, void *out, size_t n,
                   int format) noexcept {
    if (!is_external(xtype) || !is_memtype(memtype))
        return NC_EBADTYPE;
    if (n == 0)
        return (xtype == NC_CHAR) != (memtype == NC_CHAR) ? NC_ECHAR : NC_NOERR;
    unsigned char xfill[8];
    if (!var_fill) {
        fill_value(xtype, xfill);
        var_fill = xfill;
    }
    const int rc = convert_get(var_fill, xtype, out, memtype, 1, format);
    if (rc != NC_NOERR && rc != NC_ERANGE)
        return rc;
    // Replicate the first element by doubling the filled prefix.
    const size_t sz = type_size(memtype), total = n * sz;
    char *p = static_cast<char *>(out);
    for (size_t done = sz; done < total; done *= 2)
        std::memcpy(p + done, p, done < total - done ? done : total - done);
    return rc;
}

} // namespace dtf::types
