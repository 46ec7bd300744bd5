// src/types against the real PnetCDF (oracle), on one MPI rank:
//  1. conversions: every (external type x memory type) pair of CDF-2 and CDF-5, tricky values, put
//     (return code and stored bytes, default and custom _FillValue) and get (return code and bytes);
//     unwritten (filled) variables read with every memory type (fill_converted);
//  2. flexible-API datatypes, Fortran ones included: memory type mapping and error codes;
//  3. layouts: varm imaps and MPI derived datatypes (vector, subarray with halo, indexed, ...) put
//     and get through PnetCDF and through gather/scatter + convert, same bytes out.
#include <pnetcdf.h>

#include <cfloat>
#include <cinttypes>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "types/convert.hpp"
#include "types/layout.hpp"

using namespace dtf::types;
using Bytes = std::vector<char>;

static int failures = 0, checks = 0;
#define CHECK(cond, ...)                                                                             \
    do {                                                                                             \
        ++checks;                                                                                    \
        if (!(cond)) {                                                                               \
            if (++failures <= 40) {                                                                  \
                std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                            \
                std::fprintf(stderr, __VA_ARGS__);                                                   \
                std::fputc('\n', stderr);                                                            \
            }                                                                                        \
        }                                                                                            \
    } while (0)
#define NC(call)                                                                                     \
    do {                                                                                             \
        int e_ = (call);                                                                             \
        if (e_ != NC_NOERR) {                                                                        \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, ncmpi_strerror(e_));  \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

static const MPI_Offset N = 160; // length of the 1-D test variables (>= values of any type)

// ---------------------------------------------------------------------------------------------
// Typed API by memory type, generated from the one type list.
struct Api {
    nc_type type;
    int (*put)(int, int, const MPI_Offset *, const MPI_Offset *, const void *);
    int (*get)(int, int, const MPI_Offset *, const MPI_Offset *, void *);
};
#define DTF_X(id, ctype, suffix, ...)                                                                \
    {id,                                                                                             \
     [](int nc, int v, const MPI_Offset *s, const MPI_Offset *c, const void *b) {                    \
         return ncmpi_put_vara_##suffix##_all(nc, v, s, c, static_cast<const ctype *>(b));           \
     },                                                                                              \
     [](int nc, int v, const MPI_Offset *s, const MPI_Offset *c, void *b) {                          \
         return ncmpi_get_vara_##suffix##_all(nc, v, s, c, static_cast<ctype *>(b));                 \
     }},
static const Api apis[] = {DTF_TYPES_FOREACH(DTF_X)};
#undef DTF_X
static const Api &api(nc_type t) {
    for (const Api &a : apis)
        if (a.type == t)
            return a;
    std::abort();
}

// ---------------------------------------------------------------------------------------------
// Tricky values, as long double (exact for every int64/uint64/double), kept per type when exact.
static std::vector<long double> master_values() {
    std::vector<long double> v = {0.0L, -0.0L, 1, -1, 0.5L, -0.5L, 1.5L, -1.5L, 2.5L, -2.5L, 3, 42, -42,
                                  0.49999999999999994L, 1e10L, -1e10L, 1e40L, -1e40L, NAN, -NAN,
                                  INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 3.4028235677973366e+38L,
                                  -3.4028235677973366e+38L, DBL_MAX, -DBL_MAX, FLT_MIN, 1.401298464324817e-45L,
                                  4.9406564584124654e-324L, 16777217, 9007199254740993.0L, 'a', 'z'};
    auto limits = [&](long double lo, long double hi) {
        for (long double x : {lo, hi, lo - 1, hi + 1, lo - 0.5L, hi + 0.5L, hi - 0.5L})
            v.push_back(x);
    };
    limits(SCHAR_MIN, SCHAR_MAX);
    limits(0, UCHAR_MAX);
    limits(SHRT_MIN, SHRT_MAX);
    limits(0, USHRT_MAX);
    limits(INT_MIN, INT_MAX);
    limits(0, UINT_MAX);
    limits(LLONG_MIN, LLONG_MAX);
    limits(0, ULLONG_MAX);
    // the largest float and double below the powers of two that bound the integer types
    for (int p : {7, 8, 15, 16, 31, 32, 63, 64}) {
        const long double two = std::ldexp(1.0L, p);
        v.push_back(std::nextafter(static_cast<float>(two), 0.0f));
        v.push_back(std::nextafter(static_cast<double>(two), 0.0));
        v.push_back(-std::nextafter(static_cast<double>(two), 0.0));
    }
    return v;
}

template <class T> static bool exact(long double v, T *out) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v) || std::isinf(v)) {
            *out = static_cast<T>(v);
            return true;
        }
        if (std::fabs(v) > std::numeric_limits<T>::max())
            return false;
        *out = static_cast<T>(v);
        return static_cast<long double>(*out) == v;
    } else {
        if (std::isnan(v) || v != std::trunc(v) || v < std::numeric_limits<T>::min() ||
            v > std::numeric_limits<T>::max())
            return false;
        *out = static_cast<T>(v);
        return true;
    }
}

template <class T> static Bytes values_as() {
    Bytes out;
    for (long double v : master_values()) {
        T t;
        if (exact(v, &t))
            out.insert(out.end(), reinterpret_cast<char *>(&t), reinterpret_cast<char *>(&t) + sizeof t);
    }
    return out;
}

static Bytes values_of(nc_type t) {
    switch (t) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id:                                                                                         \
        return values_as<ctype>();
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    }
    std::abort();
}

static std::string hex(const char *p, size_t n) {
    std::string s;
    char b[4];
    for (size_t i = n; i-- > 0;) { // most significant byte first (little endian)
        std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(p[i]));
        s += b;
    }
    return s;
}

// First differing element of two buffers of type t, described; empty when equal.
static std::string diff(const Bytes &got, const Bytes &want, nc_type t, const Bytes *src = nullptr,
                        nc_type src_type = NC_NAT) {
    if (got == want)
        return "";
    const size_t sz = type_size(t);
    for (size_t i = 0; i * sz < want.size(); ++i) {
        if (std::memcmp(&got[i * sz], &want[i * sz], sz) == 0)
            continue;
        std::string s = "element " + std::to_string(i) + ": got " + hex(&got[i * sz], sz) + " want " +
                        hex(&want[i * sz], sz);
        const size_t ss = type_size(src_type);
        if (src && (i + 1) * ss <= src->size())
            s += " (source " + hex(&(*src)[i * ss], ss) + ")";
        return s;
    }
    return "sizes differ";
}

static const char *fmt_name(int format) { return format == NC_FORMAT_CDF5 ? "CDF-5" : "CDF-2"; }

// ---------------------------------------------------------------------------------------------
// 1. Conversions

// A custom fill value per external type (native bytes).
static Bytes custom_fill(nc_type x) {
    Bytes b(type_size(x));
    const long double v = x == NC_CHAR ? 'x' : x == NC_FLOAT ? 1.25L : x == NC_DOUBLE ? -2.5L : 99;
    switch (x) {
#define DTF_X(id, ctype, ...)                                                                        \
    case id: {                                                                                       \
        const ctype c = static_cast<ctype>(v);                                                       \
        std::memcpy(b.data(), &c, sizeof c);                                                         \
        break;                                                                                       \
    }
        DTF_TYPES_FOREACH(DTF_X)
#undef DTF_X
    }
    return b;
}

struct TypeVars {
    nc_type x;
    int dflt, custom, unwritten_dflt, unwritten_custom;
};

static void test_conversions(int format) {
    const char *path = format == NC_FORMAT_CDF5 ? "types_conv5.nc" : "types_conv2.nc";
    int ncid, dim, old;
    NC(ncmpi_create(MPI_COMM_SELF, path, NC_CLOBBER | (format == NC_FORMAT_CDF5 ? NC_64BIT_DATA : NC_64BIT_OFFSET),
                    MPI_INFO_NULL, &ncid));
    NC(ncmpi_set_fill(ncid, NC_FILL, &old));
    NC(ncmpi_def_dim(ncid, "n", N, &dim));
    std::vector<TypeVars> vars;
    for (const Api &a : apis) {
        const nc_type x = a.type;
        if (!is_external(x) || (format != NC_FORMAT_CDF5 && x > NC_DOUBLE))
            continue;
        TypeVars tv{x, 0, 0, 0, 0};
        const std::string n = type_name(x);
        const Bytes fill = custom_fill(x);
        NC(ncmpi_def_var(ncid, ("d_" + n).c_str(), x, 1, &dim, &tv.dflt));
        NC(ncmpi_def_var(ncid, ("c_" + n).c_str(), x, 1, &dim, &tv.custom));
        NC(ncmpi_def_var(ncid, ("ud_" + n).c_str(), x, 1, &dim, &tv.unwritten_dflt));
        NC(ncmpi_def_var(ncid, ("uc_" + n).c_str(), x, 1, &dim, &tv.unwritten_custom));
        NC(ncmpi_put_att(ncid, tv.custom, "_FillValue", x, 1, fill.data()));
        NC(ncmpi_put_att(ncid, tv.unwritten_custom, "_FillValue", x, 1, fill.data()));
        vars.push_back(tv);
    }
    NC(ncmpi_enddef(ncid));

    const MPI_Offset zero = 0;
    for (const TypeVars &tv : vars) {
        const nc_type x = tv.x;
        const size_t xs = type_size(x);
        const Bytes fill = custom_fill(x);
        // put direction: every memory type into both variables of type x
        for (const Api &m : apis) {
            const Bytes src = values_of(m.type);
            const MPI_Offset n = static_cast<MPI_Offset>(src.size() / type_size(m.type));
            for (int varid : {tv.dflt, tv.custom}) {
                Bytes before(N * xs, '\x5a'), stored(N * xs);
                NC(api(x).put(ncid, varid, &zero, &N, before.data()));
                const int rc = m.put(ncid, varid, &zero, &n, src.data());
                NC(api(x).get(ncid, varid, &zero, &N, stored.data()));
                Bytes want = before;
                const int want_rc = convert_put(src.data(), m.type, want.data(), x, n,
                                                varid == tv.custom ? fill.data() : nullptr, format);
                CHECK(rc == want_rc, "%s put %s -> %s%s: rc %d, convert_put %d", fmt_name(format),
                      type_name(m.type), type_name(x), varid == tv.custom ? " (custom fill)" : "", rc, want_rc);
                const std::string d = diff(stored, want, x, &src, m.type);
                CHECK(d.empty(), "%s put %s -> %s%s: %s", fmt_name(format), type_name(m.type), type_name(x),
                      varid == tv.custom ? " (custom fill)" : "", d.c_str());
            }
        }
        // get direction: type x's own values read with every memory type
        const Bytes xv = values_of(x);
        const MPI_Offset n = static_cast<MPI_Offset>(xv.size() / xs);
        NC(api(x).put(ncid, tv.dflt, &zero, &n, xv.data()));
        for (const Api &m : apis) {
            const size_t ms = type_size(m.type);
            Bytes got(N * ms, '\xa5'), want(N * ms, '\xa5');
            const int rc = m.get(ncid, tv.dflt, &zero, &n, got.data());
            const int want_rc = convert_get(xv.data(), x, want.data(), m.type, n, format);
            CHECK(rc == want_rc, "%s get %s -> %s: rc %d, convert_get %d", fmt_name(format), type_name(x),
                  type_name(m.type), rc, want_rc);
            const std::string d = diff(got, want, m.type, &xv, x);
            CHECK(d.empty(), "%s get %s -> %s: %s", fmt_name(format), type_name(x), type_name(m.type), d.c_str());
            // unwritten elements: the fill value converted
            for (int varid : {tv.unwritten_dflt, tv.unwritten_custom}) {
                Bytes ugot(N * ms), uwant(N * ms);
                const int urc = m.get(ncid, varid, &zero, &N, ugot.data());
                const int uwant_rc = fill_converted(x, varid == tv.unwritten_custom ? fill.data() : nullptr,
                                                    m.type, uwant.data(), N, format);
                CHECK(urc == uwant_rc && (urc == NC_ECHAR || ugot == uwant),
                      "%s unwritten %s%s read as %s: rc %d/%d %s", fmt_name(format), type_name(x),
                      varid == tv.unwritten_custom ? " (custom fill)" : "", type_name(m.type), urc, uwant_rc,
                      diff(ugot, uwant, m.type).c_str());
            }
        }
    }
    NC(ncmpi_close(ncid));
}

// ---------------------------------------------------------------------------------------------
// 2. Flexible-API element types (C and Fortran) and error codes

static void test_flexible_types() {
    int ncid, dim, vi, vu, vb;
    NC(ncmpi_create(MPI_COMM_SELF, "types_flex.nc", NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &ncid));
    NC(ncmpi_def_dim(ncid, "n", N, &dim));
    NC(ncmpi_def_var(ncid, "i", NC_INT, 1, &dim, &vi));
    NC(ncmpi_def_var(ncid, "u", NC_UBYTE, 1, &dim, &vu));
    NC(ncmpi_def_var(ncid, "b", NC_BYTE, 1, &dim, &vb));
    NC(ncmpi_enddef(ncid));
    const MPI_Offset zero = 0;
    const MPI_Datatype numeric[] = {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
                                    MPI_INT, MPI_UNSIGNED, MPI_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_LONG_INT,
                                    MPI_UNSIGNED_LONG_LONG, MPI_LONG_LONG, MPI_INTEGER1, MPI_INTEGER2,
                                    MPI_INTEGER, MPI_INTEGER4, MPI_INTEGER8, MPI_REAL, MPI_REAL4, MPI_REAL8,
                                    MPI_DOUBLE_PRECISION};
    for (MPI_Datatype t : numeric) {
        const nc_type m = memtype_of_mpi(t);
        char tname[MPI_MAX_OBJECT_NAME];
        int len;
        MPI_Type_get_name(t, tname, &len);
        CHECK(m != NC_NAT, "%s: no memory type", tname);
        if (m == NC_NAT)
            continue;
        const Bytes src = values_of(m);
        const MPI_Offset n = static_cast<MPI_Offset>(src.size() / type_size(m));
        for (auto [varid, x] : {std::pair{vi, NC_INT}, std::pair{vu, NC_UBYTE}}) {
            // put bufcount x t, read back as x
            Bytes stored(N * type_size(x)), want(N * type_size(x), '\0');
            NC(api(x).put(ncid, varid, &zero, &N, want.data()));
            const int rc = ncmpi_put_vara_all(ncid, varid, &zero, &n, src.data(), n, t);
            NC(api(x).get(ncid, varid, &zero, &N, stored.data()));
            MemLayout l;
            CHECK(describe_flexible(n, t, x, n, &l) == NC_NOERR && l.contiguous(), "%s: describe", tname);
            const int want_rc = convert_put(src.data(), l.memtype, want.data(), x, n, nullptr, NC_FORMAT_CDF5);
            CHECK(rc == want_rc && stored == want, "%s put into %s: rc %d/%d %s", tname, type_name(x), rc,
                  want_rc, diff(stored, want, x, &src, m).c_str());
            // get: the stored values back through t
            Bytes got(N * 8, '\1'), gwant(N * 8, '\1');
            const int grc = ncmpi_get_vara_all(ncid, varid, &zero, &n, got.data(), n, t);
            const int gwant_rc = convert_get(stored.data(), x, gwant.data(), l.memtype, n, NC_FORMAT_CDF5);
            CHECK(grc == gwant_rc && got == gwant, "%s get from %s: rc %d/%d %s", tname, type_name(x), grc,
                  gwant_rc, diff(got, gwant, m).c_str());
        }
    }

    // Error codes, in PnetCDF's order (only cases where PnetCDF returns instead of aborting).
    MPI_Datatype st, cont0, vec, resized;
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {0, 8};
    MPI_Datatype tys[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, dp, tys, &st);
    MPI_Type_contiguous(0, MPI_INT, &cont0);
    MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(MPI_INT, 0, 8, &resized);
    for (MPI_Datatype *t : {&st, &cont0, &vec, &resized})
        MPI_Type_commit(t);
    struct Case {
        const char *what;
        int varid;
        nc_type x;
        MPI_Offset bufcount;
        MPI_Datatype type;
    } cases[] = {
        {"struct int+double", vi, NC_INT, 6, st},   {"MPI_INT8_T", vi, NC_INT, 12, MPI_INT8_T},
        {"MPI_2INT", vi, NC_INT, 6, MPI_2INT},       {"MPI_UINT64_T", vi, NC_INT, 12, MPI_UINT64_T},
        {"count short", vi, NC_INT, 11, MPI_INT},   {"count long", vi, NC_INT, 13, MPI_INT},
        {"count -2", vi, NC_INT, -2, MPI_INT},      {"empty type", vi, NC_INT, 1, cont0},
        {"MPI_BYTE", vb, NC_BYTE, 12, MPI_BYTE},    {"MPI_BYTE count", vi, NC_INT, 48, MPI_BYTE},
        {"MPI_UNSIGNED_LONG", vi, NC_INT, 12, MPI_UNSIGNED_LONG},
        {"-1 derived", vi, NC_INT, -1, vec},        {"-1 resized", vi, NC_INT, -1, resized},
        {"-1 MPI_INTEGER", vi, NC_INT, -1, MPI_INTEGER}, {"-1 MPI_BYTE", vb, NC_BYTE, -1, MPI_BYTE},
        {"-1 MPI_INT", vi, NC_INT, -1, MPI_INT},     {"-1 MPI_DOUBLE", vi, NC_INT, -1, MPI_DOUBLE},
        {"vector 3", vi, NC_INT, 3, vec},            {"null type", vi, NC_INT, 0, MPI_DATATYPE_NULL},
        {"null type 5", vi, NC_INT, 5, MPI_DATATYPE_NULL},
    };
    std::vector<double> buf(64, 0.0);
    const MPI_Offset twelve = 12;
    for (const Case &c : cases) {
        const int rc = ncmpi_put_vara_all(ncid, c.varid, &zero, &twelve, buf.data(), c.bufcount, c.type);
        MemLayout l;
        int mine = describe_flexible(c.bufcount, c.type, c.x, 12, &l);
        if (mine == NC_NOERR) // the conversion's code, as PnetCDF's put reports it
            mine = convert_put(buf.data(), l.memtype, std::vector<char>(12 * 8).data(), c.x, 12, nullptr,
                               NC_FORMAT_CDF5);
        CHECK(rc == mine, "flexible %s: PnetCDF %d, describe_flexible %d", c.what, rc, mine);
    }
    MemLayout l;
    CHECK(describe_flexible(7, MPI_DATATYPE_NULL, NC_SHORT, 3, &l) == NC_NOERR && l.memtype == NC_SHORT &&
              l.contiguous(), "MPI_DATATYPE_NULL: variable's type");
    CHECK(describe_flexible(12, MPI_INT, NC_CHAR, 12, &l) == NC_NOERR && l.memtype == NC_INT &&
              convert_put(buf.data(), NC_INT, buf.data() + 32, NC_CHAR, 12, nullptr, 5) == NC_ECHAR,
          "flexible MPI_INT into NC_CHAR is NC_ECHAR");
    CHECK(memtype_of_mpi(MPI_LONG) == MEM_LONG && memtype_of_mpi(MPI_CHARACTER) == NC_CHAR, "long, character");
    for (MPI_Datatype *t : {&st, &cont0, &vec, &resized})
        MPI_Type_free(t);
    NC(ncmpi_close(ncid));
}

// ---------------------------------------------------------------------------------------------
// 3. Layouts: varm and derived datatypes on a 2-D variable int a[6][8], request start {1,2} count {3,4}

static const MPI_Offset Y = 6, X = 8, start[2] = {1, 2}, cnt[2] = {3, 4};
static const int64_t NEL = 12;

struct LayoutFile {
    int ncid, vi, vd; // int and double variables
};

// Region of variable varid as ints/doubles (the dense array in request order), via the typed API.
template <class T> static Bytes region(const LayoutFile &f, int varid) {
    Bytes r(NEL * sizeof(T));
    if constexpr (std::is_same_v<T, int>)
        NC(ncmpi_get_vara_int_all(f.ncid, varid, start, cnt, reinterpret_cast<int *>(r.data())));
    else
        NC(ncmpi_get_vara_double_all(f.ncid, varid, start, cnt, reinterpret_cast<double *>(r.data())));
    return r;
}

static void reset(const LayoutFile &f) {
    std::vector<int> a(Y * X);
    std::vector<double> d(Y * X);
    for (int i = 0; i < Y * X; ++i) {
        a[i] = 1000 + i;
        d[i] = 0.25 + i;
    }
    NC(ncmpi_put_var_int_all(f.ncid, f.vi, a.data()));
    NC(ncmpi_put_var_double_all(f.ncid, f.vd, d.data()));
}

// Typed varm on the int variable: imap (units of int), buffer of `len` ints, request at user+off.
static void check_varm(const LayoutFile &f, const char *what, const MPI_Offset imap[2], int len, int off) {
    std::vector<int> user(len);
    for (int i = 0; i < len; ++i)
        user[i] = 7 * i - 50;
    reset(f);
    NC(ncmpi_put_varm_int_all(f.ncid, f.vi, start, cnt, nullptr, imap, user.data() + off));
    const Bytes stored = region<int>(f, f.vi);
    MemLayout l;
    Bytes dense;
    CHECK(describe_typed(NC_INT, NEL, &l) == NC_NOERR && apply_imap(&l, 2, cnt, imap) == NC_NOERR &&
              gather(l, user.data() + off, dense) == NC_NOERR,
          "varm %s: describe/gather", what);
    CHECK(dense == stored, "varm %s put: %s", what, diff(dense, stored, NC_INT).c_str());
    // get: PnetCDF's get_varm vs scatter of the region
    std::vector<int> a(len, -7), b(len, -7);
    NC(ncmpi_get_varm_int_all(f.ncid, f.vi, start, cnt, nullptr, imap, a.data() + off));
    CHECK(scatter(l, region<int>(f, f.vi).data(), b.data() + off) == NC_NOERR && a == b, "varm %s get", what);
}

// Flexible API with buftype on the int or double variable; user buffer of `len` elements of the
// type's element (int or double). imap optional (varm). Put and get compared byte for byte.
template <class T>
static void check_flex(const LayoutFile &f, const char *what, int varid, nc_type x, MPI_Offset bufcount,
                       MPI_Datatype type, int len, const MPI_Offset *imap = nullptr) {
    std::vector<T> user(len);
    for (int i = 0; i < len; ++i)
        user[i] = static_cast<T>(3 * i + 1) * (i % 2 ? 1 : -1);
    reset(f);
    const int rc = imap ? ncmpi_put_varm_all(f.ncid, varid, start, cnt, nullptr, imap, user.data(), bufcount, type)
                        : ncmpi_put_vara_all(f.ncid, varid, start, cnt, user.data(), bufcount, type);
    const Bytes stored = x == NC_INT ? region<int>(f, varid) : region<double>(f, varid);
    MemLayout l;
    Bytes dense;
    int mine = describe_flexible(bufcount, type, x, NEL, &l);
    if (mine == NC_NOERR)
        mine = apply_imap(&l, 2, cnt, imap);
    if (mine == NC_NOERR)
        mine = gather(l, user.data(), dense);
    CHECK(mine == NC_NOERR && l.memtype == (sizeof(T) == 4 ? NC_INT : NC_DOUBLE), "flex %s: describe/gather %d",
          what, mine);
    if (mine != NC_NOERR)
        return;
    Bytes want(NEL * type_size(x));
    const int want_rc = convert_put(dense.data(), l.memtype, want.data(), x, NEL, nullptr, NC_FORMAT_CDF5);
    CHECK(rc == want_rc && stored == want, "flex %s put: rc %d/%d %s", what, rc, want_rc,
          diff(stored, want, x).c_str());
    // get
    std::vector<T> a(len, T(-9)), b(len, T(-9));
    const int grc = imap ? ncmpi_get_varm_all(f.ncid, varid, start, cnt, nullptr, imap, a.data(), bufcount, type)
                         : ncmpi_get_vara_all(f.ncid, varid, start, cnt, a.data(), bufcount, type);
    Bytes mem(NEL * sizeof(T));
    const int want_grc = convert_get(stored.data(), x, mem.data(), l.memtype, NEL, NC_FORMAT_CDF5);
    CHECK(scatter(l, mem.data(), b.data()) == NC_NOERR, "flex %s: scatter", what);
    CHECK(grc == want_grc && a == b, "flex %s get: rc %d/%d, buffers %s", what, grc, want_grc,
          a == b ? "equal" : "differ");
}

// flatten() of an int datatype against its type map: the ints MPI_Pack takes from an array holding each
// int's own index, as runs of consecutive indices (bytes).
static void check_flatten(const char *what, MPI_Datatype type) {
    MPI_Aint lb, extent;
    MPI_Type_get_extent(type, &lb, &extent);
    int size;
    MPI_Type_size(type, &size);
    std::vector<int> index(static_cast<size_t>(extent / 4));
    for (size_t i = 0; i < index.size(); ++i) index[i] = static_cast<int>(i);
    std::vector<int> packed(static_cast<size_t>(size / 4));
    int pos = 0;
    MPI_Pack(index.data(), 1, type, packed.data(), size, &pos, MPI_COMM_SELF);
    std::vector<ByteRun> want, got;
    for (int i : packed)
        if (!want.empty() && want.back().offset + want.back().bytes == 4 * int64_t{i}) want.back().bytes += 4;
        else want.push_back({4 * int64_t{i}, 4});
    MPI_Datatype elem;
    const int rc = flatten(type, &got, &elem);
    CHECK(rc == NC_NOERR && elem == MPI_INT && got.size() == want.size() &&
              std::equal(got.begin(), got.end(), want.begin(),
                         [](const ByteRun &x, const ByteRun &y) { return x.offset == y.offset && x.bytes == y.bytes; }),
          "flatten %s: %zu runs, expected %zu", what, got.size(), want.size());
}

// place() of a request's dense elements (each int its own index), in chunks of every length taken in
// a scrambled order, against scatter() of them all; `valid`: whether the layout has a strided map.
static void check_place(const char *what, const MemLayout &l, bool valid) {
    const StridedMap m = strided_map(l);
    CHECK(m.valid() == valid, "strided_map %s: %s", what, m.valid() ? "valid" : "not valid");
    if (!m.valid()) return;
    std::vector<int> dense(static_cast<size_t>(l.nelems));
    for (size_t i = 0; i < dense.size(); ++i) dense[i] = static_cast<int>(i);
    std::vector<int> want(256, -1), got(256, -1); // the user's buffer at [64]: imap offsets may be negative
    CHECK(scatter(l, reinterpret_cast<const char *>(dense.data()), want.data() + 64) == NC_NOERR, "scatter %s", what);
    std::vector<std::pair<int64_t, int64_t>> chunks; // (first, n)
    for (int64_t first = 0, n = 1; first < l.nelems; first += n, n = n % 5 + 1)
        chunks.emplace_back(first, std::min<int64_t>(n, l.nelems - first));
    for (size_t i = 0; i < chunks.size(); ++i) std::swap(chunks[i], chunks[(i * 7) % chunks.size()]);
    for (const auto &[first, n] : chunks)
        place(m, sizeof(int), first, n, reinterpret_cast<const char *>(dense.data() + first), got.data() + 64);
    CHECK(got == want, "place %s differs from scatter", what);
}

static void test_layouts() {
    LayoutFile f;
    int dims[2];
    NC(ncmpi_create(MPI_COMM_SELF, "types_layout.nc", NC_CLOBBER | NC_64BIT_DATA, MPI_INFO_NULL, &f.ncid));
    NC(ncmpi_def_dim(f.ncid, "y", Y, &dims[0]));
    NC(ncmpi_def_dim(f.ncid, "x", X, &dims[1]));
    NC(ncmpi_def_var(f.ncid, "a", NC_INT, 2, dims, &f.vi));
    NC(ncmpi_def_var(f.ncid, "d", NC_DOUBLE, 2, dims, &f.vd));
    NC(ncmpi_enddef(f.ncid));

    // typed varm: imap in ints; element (i,j) of the request at user[off + i*imap[0] + j*imap[1]]
    const MPI_Offset dense[2] = {4, 1}, transpose[2] = {1, 3}, gaps[2] = {10, 2}, negative[2] = {-4, 1},
                     repeat[2] = {0, 1}, reversed[2] = {4, -1};
    check_varm(f, "dense", dense, 12, 0);
    check_varm(f, "transpose", transpose, 12, 0);
    check_varm(f, "gaps", gaps, 27, 0);
    check_varm(f, "negative", negative, 12, 8);
    check_varm(f, "repeat", repeat, 4, 0);
    check_varm(f, "reversed", reversed, 12, 3);

    // flexible API with derived datatypes
    MPI_Datatype sub, vec, idx, blk, st, cont, cont6, rvec, dsub;
    const int sizes[2] = {5, 6}, subsizes[2] = {3, 4}, starts[2] = {1, 1}; // halo of 1 around 3x4
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &sub);
    MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &dsub);
    MPI_Type_vector(3, 4, 6, MPI_INT, &vec);
    const int blens[4] = {2, 3, 1, 6}, displs[4] = {10, 0, 20, 4}; // out of order, no overlap
    MPI_Type_indexed(4, blens, displs, MPI_INT, &idx);
    const int bdispl[3] = {5, 1, 9};
    MPI_Type_create_indexed_block(3, 4, bdispl, MPI_INT, &blk);
    const int sbl[2] = {4, 8};
    const MPI_Aint sdp[2] = {0, 40};
    const MPI_Datatype sty[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, sbl, sdp, sty, &st);
    MPI_Type_contiguous(12, MPI_INT, &cont);
    MPI_Type_contiguous(6, MPI_INT, &cont6);
    MPI_Datatype v23;
    MPI_Type_vector(2, 3, 5, MPI_INT, &v23);
    MPI_Type_create_resized(v23, 0, 12 * sizeof(int), &rvec);
    MPI_Type_free(&v23);
    for (MPI_Datatype *t : {&sub, &dsub, &vec, &idx, &blk, &st, &cont, &cont6, &rvec})
        MPI_Type_commit(t);

    MPI_Datatype fsub, sub3; // the same block in Fortran order (first dimension fastest); a 3-D block
    const int fsizes[2] = {6, 5}, fsubsizes[2] = {4, 3};
    MPI_Type_create_subarray(2, fsizes, fsubsizes, starts, MPI_ORDER_FORTRAN, MPI_INT, &fsub);
    const int sizes3[3] = {4, 5, 6}, subsizes3[3] = {2, 3, 4}, starts3[3] = {1, 2, 1};
    MPI_Type_create_subarray(3, sizes3, subsizes3, starts3, MPI_ORDER_C, MPI_INT, &sub3);
    for (MPI_Datatype *t : {&fsub, &sub3}) MPI_Type_commit(t);
    for (const auto &[name, t] : {std::pair<const char *, MPI_Datatype>{"subarray", sub}, {"Fortran subarray", fsub},
                                  {"3-D subarray", sub3}, {"vector", vec}, {"indexed", idx}, {"struct", st}})
        check_flatten(name, t);
    check_flex<int>(f, "Fortran-order subarray with halo", f.vi, NC_INT, 1, fsub, 30);
    {   // where a get's pieces can be placed straight from the writers' messages
        const MPI_Offset c3[3] = {2, 3, 4}, m3[3] = {1, 2, 6};
        struct Case {
            const char *what;
            MPI_Offset bufcount;
            MPI_Datatype type;
            int64_t nelems;
            const MPI_Offset *imap, *count;
            int ndims;
            bool valid;
        } cases[] = {{"subarray", 1, sub, NEL, nullptr, nullptr, 0, true},
                     {"subarray x2", 2, sub, 2 * NEL, nullptr, nullptr, 0, true},
                     {"Fortran subarray", 1, fsub, NEL, nullptr, nullptr, 0, true},
                     {"3-D subarray", 1, sub3, 24, nullptr, nullptr, 0, true},
                     {"varm transpose", -1, MPI_INT, NEL, transpose, cnt, 2, true},
                     {"varm gaps", -1, MPI_INT, NEL, gaps, cnt, 2, true},
                     {"varm negative", -1, MPI_INT, NEL, negative, cnt, 2, true},
                     {"varm reversed", -1, MPI_INT, NEL, reversed, cnt, 2, true},
                     {"varm 3-D", -1, MPI_INT, 24, m3, c3, 3, true},
                     {"varm repeat", -1, MPI_INT, NEL, repeat, cnt, 2, false},
                     {"vector", 1, vec, NEL, nullptr, nullptr, 0, false},
                     {"subarray + varm", 1, sub, NEL, transpose, cnt, 2, false},
                     {"contiguous", -1, MPI_INT, NEL, nullptr, nullptr, 0, false}};
        for (const Case &c : cases) {
            MemLayout l;
            CHECK(describe_flexible(c.bufcount, c.type, NC_INT, c.nelems, &l) == NC_NOERR &&
                      apply_imap(&l, c.ndims, c.count, c.imap) == NC_NOERR,
                  "place %s: describe", c.what);
            check_place(c.what, l, c.valid);
        }
    }
    for (MPI_Datatype *t : {&fsub, &sub3}) MPI_Type_free(t);
    check_flex<int>(f, "subarray with halo", f.vi, NC_INT, 1, sub, 30);
    check_flex<int>(f, "vector", f.vi, NC_INT, 1, vec, 16);
    check_flex<int>(f, "indexed", f.vi, NC_INT, 1, idx, 21);
    check_flex<int>(f, "indexed block", f.vi, NC_INT, 1, blk, 13);
    check_flex<int>(f, "struct of ints", f.vi, NC_INT, 1, st, 18);
    check_flex<int>(f, "contiguous", f.vi, NC_INT, 1, cont, 12);
    check_flex<int>(f, "contiguous x2", f.vi, NC_INT, 2, cont6, 12);
    check_flex<int>(f, "resized vector x2", f.vi, NC_INT, 2, rvec, 24);
    check_flex<int>(f, "int subarray into double", f.vd, NC_DOUBLE, 1, sub, 30);
    check_flex<double>(f, "double subarray into int", f.vi, NC_INT, 1, dsub, 30);
    check_flex<double>(f, "bufcount -1 double into int", f.vi, NC_INT, -1, MPI_DOUBLE, 12);
    check_flex<double>(f, "MPI_DATATYPE_NULL", f.vd, NC_DOUBLE, 0, MPI_DATATYPE_NULL, 12);
    check_flex<int>(f, "varm vector + transpose", f.vi, NC_INT, 1, vec, 16, transpose);
    check_flex<int>(f, "varm subarray + transpose", f.vi, NC_INT, 1, sub, 30, transpose);
    {   // with a packed buftype, imap offsets must stay within the packed elements
        MemLayout l;
        CHECK(describe_flexible(1, sub, NC_INT, NEL, &l) == NC_NOERR && apply_imap(&l, 2, cnt, reversed) == NC_EINVAL,
              "imap out of the packed buffer");
    }
    check_flex<int>(f, "varm MPI_INT + gaps", f.vi, NC_INT, 12, MPI_INT, 27, gaps);

    // The layout owns its datatype: the user may free theirs before gather/scatter.
    {
        MPI_Datatype mine;
        MPI_Type_dup(vec, &mine);
        MemLayout l;
        CHECK(describe_flexible(1, mine, NC_INT, NEL, &l) == NC_NOERR && !l.contiguous(), "dup: describe");
        MPI_Type_free(&mine);
        std::vector<int> user(16), back(16, 0);
        for (int i = 0; i < 16; ++i)
            user[i] = i;
        Bytes d;
        CHECK(gather(l, user.data(), d) == NC_NOERR && scatter(l, d.data(), back.data()) == NC_NOERR, "dup");
        const int *e = reinterpret_cast<const int *>(d.data());
        CHECK(e[0] == 0 && e[4] == 6 && e[11] == 15 && back[6] == 6 && back[4] == 0, "dup: values");
        MemLayout moved = std::move(l); // moved-from gives up the datatype
        CHECK(l.buftype == MPI_DATATYPE_NULL && moved.buftype != MPI_DATATYPE_NULL, "move");
    }
    // Zero copy for the common case; count-1 dimensions do not make an imap non-contiguous.
    {
        MemLayout l;
        std::vector<char> scratch;
        const MPI_Offset c[3] = {1, 4, 1}, m[3] = {99, 1, 7};
        int a[4] = {1, 2, 3, 4};
        CHECK(describe_typed(NC_INT, 4, &l) == NC_NOERR && apply_imap(&l, 3, c, m) == NC_NOERR && l.contiguous() &&
                  gather_view(l, a, scratch) == reinterpret_cast<const char *>(a) && scratch.empty(),
              "zero copy");
        CHECK(apply_imap(&l, 2, cnt, transpose) == NC_EINVAL, "imap count product mismatch");
    }
    for (MPI_Datatype *t : {&sub, &dsub, &vec, &idx, &blk, &st, &cont, &cont6, &rvec})
        MPI_Type_free(t);
    NC(ncmpi_close(f.ncid));
}

// Table-derived facts.
static void test_table() {
    CHECK(type_size(NC_INT) == 4 && type_size(MEM_LONG) == sizeof(long) && type_size(NC_UINT64) == 8 &&
              type_size(NC_STRING) == 0,
          "type_size");
    CHECK(is_external(NC_UINT64) && !is_external(MEM_LONG) && is_memtype(MEM_LONG) && !is_memtype(NC_NAT),
          "is_external / is_memtype");
    CHECK(std::strcmp(type_name(NC_UINT64), "uint64") == 0 && std::strcmp(api_suffix(NC_BYTE), "schar") == 0 &&
              std::strcmp(api_suffix(NC_CHAR), "text") == 0 && mpi_type(MEM_LONG) == MPI_LONG,
          "names");
    long long f64;
    long fl;
    fill_value(NC_INT64, &f64);
    fill_value(MEM_LONG, &fl);
    CHECK(f64 == NC_FILL_INT64 && fl == NC_FILL_INT, "fill_value");
    CHECK(same_representation(NC_BYTE, NC_UBYTE, NC_FORMAT_CDF2) &&
              !same_representation(NC_BYTE, NC_UBYTE, NC_FORMAT_CDF5) &&
              same_representation(MEM_LONG, NC_INT64, NC_FORMAT_CDF5) && !same_representation(NC_INT, NC_UINT, 5),
          "same_representation");
    CHECK(convert_put(nullptr, NC_STRING, nullptr, NC_INT, 0, nullptr, 5) == NC_EBADTYPE &&
              convert_get(nullptr, MEM_LONG, nullptr, NC_INT, 0, 5) == NC_EBADTYPE,
          "bad type");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const double t0 = MPI_Wtime();
    test_table();
    test_conversions(NC_FORMAT_CDF5);
    test_conversions(NC_FORMAT_CDF2);
    test_flexible_types();
    test_layouts();
    std::printf("test_types: %d checks, %d failed (%.1f s)\n", checks, failures, MPI_Wtime() - t0);
    MPI_Finalize();
    return failures ? 1 : 0;
}
