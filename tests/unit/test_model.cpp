// Unit tests of src/model (no MPI calls): types and conversions, names, the define/inquire calls
// with their PnetCDF error codes, fill values, data mode, access checks, the file layout, and the
// encode/decode round trip including truncated and corrupted input. The oracle test
// (test_model_oracle.cpp) compares all of this with real PnetCDF; this one pins down the
// behaviours in readable form and runs without MPI.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "model/attr.hpp"
#include "model/header.hpp"
#include "types/convert.hpp"

using namespace dtf::model;

namespace {

int g_passed = 0, g_failed = 0;

void check(bool ok, const char *name, const char *what, int line) {
    if (ok) {
        ++g_passed;
        return;
    }
    ++g_failed;
    std::fprintf(stderr, "FAIL [%s] %s (test_model.cpp:%d)\n", name, what, line);
}

#define CHECK(name, cond) check((cond), (name), #cond, __LINE__)

// Converts one value of C type From to To as an attribute put (or get) does; the code and the result.
enum class Direction { put, get };
template <class To, class From>
std::pair<int, To> conv(From v, nc_type from, nc_type to, Direction dir = Direction::put,
                        bool cdf5 = true) {
    To out{};
    const int format = cdf5 ? NC_FORMAT_CDF5 : NC_FORMAT_CLASSIC;
    const int err = dir == Direction::put ? dtf::types::convert_put(&v, from, &out, to, 1, nullptr, format)
                                          : dtf::types::convert_get(&v, from, &out, to, 1, format);
    return {err, out};
}

void test_types() {
    CHECK("size 1", type_size(NC_BYTE) == 1 && type_size(NC_CHAR) == 1 && type_size(NC_UBYTE) == 1);
    CHECK("size 2", type_size(NC_SHORT) == 2 && type_size(NC_USHORT) == 2);
    CHECK("size 4", type_size(NC_INT) == 4 && type_size(NC_UINT) == 4 && type_size(NC_FLOAT) == 4);
    CHECK("size 8", type_size(NC_DOUBLE) == 8 && type_size(NC_INT64) == 8);
    CHECK("size bad", type_size(NC_NAT) == 0 && type_size(NC_STRING) == 0 && type_size(99) == 0);
    CHECK("valid", is_valid_type(NC_BYTE) && is_valid_type(NC_UINT64) && !is_valid_type(NC_STRING));
    CHECK("cdf5 types", is_cdf5_type(NC_UBYTE) && is_cdf5_type(NC_INT64));
    CHECK("classic types", !is_cdf5_type(NC_DOUBLE) && !is_cdf5_type(NC_BYTE));
    int i;
    default_fill(NC_INT, &i);
    CHECK("fill int", i == NC_FILL_INT);
    double d;
    default_fill(NC_DOUBLE, &d);
    CHECK("fill double", d == NC_FILL_DOUBLE);
    unsigned long long u;
    default_fill(NC_UINT64, &u);
    CHECK("fill uint64", u == NC_FILL_UINT64);
}

void test_convert() {
    using sc = signed char;
    using uc = unsigned char;
    auto [e1, b1] = conv<sc>(100, NC_INT, NC_BYTE);
    CHECK("int 100 -> byte", e1 == NC_NOERR && b1 == 100);
    auto [e2, b2] = conv<sc>(200, NC_INT, NC_BYTE);
    CHECK("int 200 -> byte: fill value", e2 == NC_ERANGE && b2 == NC_FILL_BYTE);
    auto [e3, u3] = conv<uc>(sc(-1), NC_BYTE, NC_UBYTE);
    CHECK("schar -1 -> ubyte", e3 == NC_ERANGE && u3 == NC_FILL_UBYTE);
    // CDF-1/CDF-2: unsigned char <-> NC_BYTE copies the bytes.
    auto [e4, b4] = conv<sc>(uc(200), NC_UBYTE, NC_BYTE, Direction::put, false);
    CHECK("uchar 200 -> byte, cdf1", e4 == NC_NOERR && b4 == -56);
    auto [e5, b5] = conv<sc>(uc(200), NC_UBYTE, NC_BYTE, Direction::put, true);
    CHECK("uchar 200 -> byte, cdf5", e5 == NC_ERANGE && b5 == NC_FILL_BYTE);
    auto [e6, f6] = conv<float>(1e40, NC_DOUBLE, NC_FLOAT);
    CHECK("1e40 -> float", e6 == NC_ERANGE && f6 == NC_FILL_FLOAT);
    auto [e7, f7] = conv<float>(std::nan(""), NC_DOUBLE, NC_FLOAT);
    CHECK("nan -> float", e7 == NC_NOERR && std::isnan(f7));
    auto [e8, i8] = conv<int>(std::nan(""), NC_DOUBLE, NC_INT);
    CHECK("nan -> int: what x86-64 gives", e8 == NC_NOERR && i8 == INT32_MIN);
    CHECK("2147483647.5 -> int", conv<int>(2147483647.5, NC_DOUBLE, NC_INT).first == NC_ERANGE);
    CHECK("-1.9 -> int", conv<int>(-1.9, NC_DOUBLE, NC_INT) == std::make_pair(NC_NOERR, -1));
    CHECK("-0.5 -> uint", conv<unsigned>(-0.5, NC_DOUBLE, NC_UINT).first == NC_ERANGE);
    const double two63 = 9223372036854775808.0;
    auto [e9, l9] = conv<long long>(two63, NC_DOUBLE, NC_INT64, Direction::put);
    CHECK("2^63 -> int64, put: the x86-64 cast", e9 == NC_NOERR && l9 == INT64_MIN);
    auto [e10, l10] = conv<long long>(two63, NC_DOUBLE, NC_INT64, Direction::get);
    CHECK("2^63 -> int64, get: saturates", e10 == NC_NOERR && l10 == INT64_MAX);
    auto [e11, d11] = conv<double>(-INFINITY, NC_FLOAT, NC_DOUBLE, Direction::put);
    CHECK("-inf float -> double, put", e11 == NC_ERANGE && d11 == NC_FILL_DOUBLE);
    auto [e12, d12] = conv<double>(-INFINITY, NC_FLOAT, NC_DOUBLE, Direction::get);
    CHECK("-inf float -> double, get", e12 == NC_NOERR && std::isinf(d12));
    // Several values: all converted, the bad ones filled.
    const double in[3] = {1, 1e10, -2};
    short out[3];
    const int err = dtf::types::convert_put(in, NC_DOUBLE, out, NC_SHORT, 3, nullptr, NC_FORMAT_CDF5);
    CHECK("n values", err == NC_ERANGE && out[0] == 1 && out[1] == NC_FILL_SHORT && out[2] == -2);
}

void test_names() {
    CHECK("ok", check_name("x") == NC_NOERR && check_name("_a") == NC_NOERR);
    CHECK("digit first", check_name("1a") == NC_NOERR);
    CHECK("inner space", check_name("a b") == NC_NOERR);
    CHECK("utf8", check_name("\xc3\xa9t\xc3\xa9") == NC_NOERR);
    CHECK("null/empty", check_name(nullptr) == NC_EBADNAME && check_name("") == NC_EBADNAME);
    CHECK("slash", check_name("a/b") == NC_EBADNAME);
    CHECK("first char", check_name("-a") == NC_EBADNAME && check_name(" a") == NC_EBADNAME);
    CHECK("trailing space", check_name("a ") == NC_EBADNAME && check_name("a\t") == NC_EBADNAME);
    CHECK("control", check_name("a\x01") == NC_EBADNAME && check_name("a\x7f") == NC_EBADNAME);
    CHECK("bad utf8", check_name("\xff") == NC_EBADNAME && check_name("\xc0\xaf") == NC_EBADNAME);
    CHECK("surrogate", check_name("\xed\xa0\x80") == NC_EBADNAME);
    std::string n(NC_MAX_NAME, 'a');
    CHECK("max", check_name(n.c_str()) == NC_NOERR);
    CHECK("too long", check_name((n + "a").c_str()) == NC_EMAXNAME);
    CHECK("too long, slash", check_name((n + "/").c_str()) == NC_EBADNAME);
    CHECK("too long, bad char after the limit", check_name((n + "a\x01").c_str()) == NC_EMAXNAME);
}

// A toy normalizer: "e" + combining acute -> "é".
bool toy_nfc(const std::string &in, std::string *out) {
    *out = in;
    const std::string from = "e\xcc\x81", to = "\xc3\xa9";
    for (size_t p; (p = out->find(from)) != std::string::npos;) out->replace(p, from.size(), to);
    return true;
}

void test_normalizer() {
    set_name_normalizer(toy_nfc);
    Header h;
    int id = -1;
    CHECK("define decomposed", h.def_dim("e\xcc\x81x", 1, &id) == NC_NOERR && id == 0);
    CHECK("composed in use", h.def_dim("\xc3\xa9x", 1, &id) == NC_ENAMEINUSE);
    CHECK("lookup decomposed", h.inq_dimid("e\xcc\x81x", &id) == NC_NOERR && id == 0);
    char name[NC_MAX_NAME + 1];
    const int err = h.inq_dim(0, name, nullptr);
    CHECK("stored composed", err == NC_NOERR && std::string(name) == "\xc3\xa9x");
    set_name_normalizer(nullptr);
    CHECK("without normalizer", h.inq_dimid("e\xcc\x81x", &id) == NC_EBADDIM);
}

void test_cmode() {
    auto format = [](int cmode, int default_format) {
        int f = -1;
        const int err = format_from_cmode(cmode, default_format, &f);
        return err == NC_NOERR ? f : err;
    };
    CHECK("classic", format(NC_CLOBBER, NC_FORMAT_CLASSIC) == NC_FORMAT_CLASSIC);
    CHECK("default cdf5", format(0, NC_FORMAT_CDF5) == NC_FORMAT_CDF5);
    CHECK("offset", format(NC_64BIT_OFFSET, NC_FORMAT_CDF5) == NC_FORMAT_CDF2);
    CHECK("data", format(NC_64BIT_DATA, NC_FORMAT_CLASSIC) == NC_FORMAT_CDF5);
    CHECK("classic model", format(NC_CLASSIC_MODEL, NC_FORMAT_CDF5) == NC_FORMAT_CLASSIC);
    CHECK("both", format(NC_64BIT_OFFSET | NC_64BIT_DATA, 1) == NC_EINVAL_CMODE);
    CHECK("netcdf4", format(NC_NETCDF4, 1) == NC_ENOTBUILT);
}

void test_define() {
    Header h(NC_FORMAT_CLASSIC);
    int t = -1, x = -1, v = -1, id = -1;
    CHECK("dim", h.def_dim("time", NC_UNLIMITED, &t) == NC_NOERR && t == 0);
    CHECK("dim x", h.def_dim("x", 3, &x) == NC_NOERR && x == 1);
    CHECK("2nd unlimited", h.def_dim("t2", NC_UNLIMITED, &id) == NC_EUNLIMIT);
    CHECK("dup dim", h.def_dim("x", 2, &id) == NC_ENAMEINUSE);
    CHECK("dim size", h.def_dim("big", 2147483645LL, &id) == NC_EDIMSIZE);
    CHECK("negative size", h.def_dim("neg", -1, &id) == NC_EDIMSIZE);
    const int dims[2] = {t, x};
    CHECK("var", h.def_var("v", NC_FLOAT, 2, dims, &v) == NC_NOERR && v == 0);
    CHECK("dup var", h.def_var("v", NC_INT, 0, nullptr, &id) == NC_ENAMEINUSE);
    CHECK("bad type first", h.def_var("v", 99, 0, nullptr, &id) == NC_EBADTYPE);
    CHECK("cdf5 type", h.def_var("u", NC_UBYTE, 0, nullptr, &id) == NC_ESTRICTCDF2);
    const int bad[1] = {7}, unlim_second[2] = {x, t};
    CHECK("bad dim", h.def_var("w", NC_INT, 1, bad, &id) == NC_EBADDIM);
    CHECK("unlim pos", h.def_var("w", NC_INT, 2, unlim_second, &id) == NC_EUNLIMPOS);
    CHECK("ndims", h.def_var("w", NC_INT, -1, nullptr, &id) == NC_EINVAL);
    CHECK("att text", h.put_att(NC_GLOBAL, "title", NC_CHAR, 5, "hello", NC_CHAR) == NC_NOERR);
    const double dv[2] = {1.5, 1e40};
    CHECK("att erange", h.put_att(v, "range", NC_FLOAT, 2, dv, NC_DOUBLE) == NC_ERANGE);
    CHECK("att echar", h.put_att(v, "c", NC_CHAR, 2, dv, NC_DOUBLE) == NC_ECHAR);
    CHECK("att notvar", h.put_att(5, "c", NC_INT, 1, dv, NC_INT) == NC_ENOTVAR);
    CHECK("fill type", h.put_att(v, "_FillValue", NC_DOUBLE, 1, dv, NC_DOUBLE) == NC_EBADTYPE);
    CHECK("fill len", h.put_att(v, "_FillValue", NC_FLOAT, 2, dv, NC_DOUBLE) == NC_EINVAL);

    int nd, nv, na, unlim;
    CHECK("inq", h.inq(&nd, &nv, &na, &unlim) == NC_NOERR && nd == 2 && nv == 1 && na == 1);
    CHECK("unlimdimid", unlim == 0 && h.unlimdimid() == 0);
    char name[NC_MAX_NAME + 1];
    nc_type type;
    int ndims, dimids[4], natts;
    CHECK("inq_var", h.inq_var(v, name, &type, &ndims, dimids, &natts) == NC_NOERR);
    CHECK("inq_var values", std::string(name) == "v" && type == NC_FLOAT && ndims == 2 &&
                                dimids[1] == x && natts == 1);
    CHECK("inq_var global", h.inq_var(NC_GLOBAL, name, nullptr, nullptr, nullptr, nullptr) ==
                                NC_EGLOBAL);
    CHECK("inq_varnatts global", h.inq_varnatts(NC_GLOBAL, &natts) == NC_NOERR && natts == 1);
    float fv[2];
    CHECK("get_att", h.get_att(v, "range", fv, NC_FLOAT) == NC_NOERR);
    CHECK("stored with fill value", fv[0] == 1.5f && fv[1] == NC_FILL_FLOAT);
    int64_t len;
    CHECK("inq_att", h.inq_att(NC_GLOBAL, "title", &type, &len) == NC_NOERR);
    CHECK("inq_att values", type == NC_CHAR && len == 5);
    CHECK("inq_att missing", h.inq_att(NC_GLOBAL, "nope", &type, &len) == NC_ENOTATT);
    CHECK("inq_att empty name", h.inq_att(NC_GLOBAL, "", &type, &len) == NC_EBADNAME);
    CHECK("get_att text as int", h.get_att(NC_GLOBAL, "title", fv, NC_INT) == NC_ECHAR);
    CHECK("inq_dim unlimited", h.inq_dim(t, name, &len) == NC_NOERR && len == 0);
    h.set_numrecs(4);
    CHECK("numrecs", h.inq_dim(t, nullptr, &len) == NC_NOERR && len == 4);
    CHECK("shape", h.shape(v) == std::vector<int64_t>({4, 3}) && h.is_record_var(v));
    CHECK("rename dim to its name", h.rename_dim(x, "x") == NC_NOERR);
    CHECK("rename var to its name", h.rename_var(v, "v") == NC_ENAMEINUSE);
    CHECK("rename att", h.rename_att(v, "range", "r") == NC_NOERR);
    CHECK("renamed in place", h.inq_attid(v, "r", &id) == NC_NOERR && id == 0);
    CHECK("del att", h.del_att(v, "r") == NC_NOERR);
    CHECK("deleted", h.inq_varnatts(v, &natts) == NC_NOERR && natts == 0);
    CHECK("enddef", h.enddef() == NC_NOERR && !h.in_define_mode());
    CHECK("enddef again", h.enddef() == NC_ENOTINDEFINE);
}

void test_fill() {
    Header h(NC_FORMAT_CDF5);
    int x, a, b;
    h.def_dim("x", 2, &x);
    h.def_var("a", NC_INT, 1, &x, &a);
    int no_fill = -1, value = 0;
    CHECK("default nofill", h.inq_var_fill(a, &no_fill, &value) == NC_NOERR && no_fill == 1);
    CHECK("default value", value == NC_FILL_INT);
    int old = -1;
    CHECK("set_fill", h.set_fill(NC_FILL, &old) == NC_NOERR && old == NC_NOFILL);
    CHECK("set_fill all vars", h.inq_var_fill(a, &no_fill, nullptr) == NC_NOERR && no_fill == 0);
    CHECK("set_fill bad", h.set_fill(3, &old) == NC_EINVAL);
    h.def_var("b", NC_UINT64, 1, &x, &b);
    CHECK("new var follows file", h.inq_var_fill(b, &no_fill, nullptr) == NC_NOERR && no_fill == 0);
    const int seven = 7;
    CHECK("def_var_fill", h.def_var_fill(a, 0, &seven) == NC_NOERR);
    CHECK("fill value", h.inq_var_fill(a, &no_fill, &value) == NC_NOERR && value == 7);
    int64_t len;
    nc_type type;
    CHECK("as attribute", h.inq_att(a, "_FillValue", &type, &len) == NC_NOERR && len == 1);
    CHECK("global", h.def_var_fill(NC_GLOBAL, 0, nullptr) == NC_EGLOBAL);
    CHECK("inq global", h.inq_var_fill(NC_GLOBAL, nullptr, nullptr) == NC_EGLOBAL);
    CHECK("set_fill overrides", h.set_fill(NC_NOFILL, nullptr) == NC_NOERR);
    CHECK("every var", h.inq_var_fill(a, &no_fill, nullptr) == NC_NOERR && no_fill == 1);
    h.enddef();
    CHECK("data mode", h.def_var_fill(a, 0, &seven) == NC_ENOTINDEFINE);
    CHECK("data mode set_fill", h.set_fill(NC_FILL, nullptr) == NC_ENOTINDEFINE);
    h.redef();
    CHECK("late fill", h.def_var_fill(a, 0, &seven) == NC_ELATEFILL);
    const int err = h.put_att(b, "_FillValue", NC_UINT64, 1, &seven, NC_INT);
    CHECK("late fill att", err == NC_ELATEFILL);
    CHECK("late fill sets the mode", h.inq_var_fill(a, &no_fill, nullptr) == NC_NOERR && !no_fill);
}

void test_data_mode() {
    Header h;
    int x, v;
    h.def_dim("x", 2, &x);
    h.def_var("v", NC_INT, 1, &x, &v);
    h.put_att(NC_GLOBAL, "title", NC_CHAR, 5, "hello", NC_CHAR);
    h.enddef();
    CHECK("same space", h.put_att(NC_GLOBAL, "title", NC_CHAR, 8, "HELLO!!!", NC_CHAR) == NC_NOERR);
    CHECK("more space", h.put_att(NC_GLOBAL, "title", NC_CHAR, 9, "HELLO!!!!", NC_CHAR) ==
                            NC_ENOTINDEFINE);
    CHECK("new att", h.put_att(NC_GLOBAL, "new", NC_CHAR, 1, "x", NC_CHAR) == NC_ENOTINDEFINE);
    CHECK("del att", h.del_att(NC_GLOBAL, "title") == NC_ENOTINDEFINE);
    CHECK("rename shorter", h.rename_var(v, "w") == NC_NOERR);
    int found = -1;
    CHECK("found by its new name", h.inq_varid("w", &found) == NC_NOERR && found == v);
    CHECK("old name free", h.inq_varid("v", &found) == NC_ENOTVAR);
    CHECK("rename longer", h.rename_var(v, "ww") == NC_ENOTINDEFINE);
    {
        const std::vector<char> bytes = h.encode();
        Header back;
        CHECK("decoded names", Header::decode(bytes.data(), bytes.size(), &back) == NC_NOERR &&
                                   back.inq_varid("w", &found) == NC_NOERR && found == v &&
                                   back.inq_varid("v", &found) == NC_ENOTVAR);
    }
    CHECK("def_dim", h.def_dim("y", 1, nullptr) == NC_ENOTINDEFINE);
    CHECK("redef", h.redef() == NC_NOERR && h.redef() == NC_EINDEFINE);
    h.enddef();
    h.set_read_only(true);
    CHECK("read only", h.put_att(NC_GLOBAL, "title", NC_CHAR, 1, "x", NC_CHAR) == NC_EPERM);
    CHECK("read only redef", h.redef() == NC_EPERM);
    CHECK("read only def_dim", h.def_dim("y", 1, nullptr) == NC_ENOTINDEFINE);
}

void test_access() {
    Header h;
    int t, x, r, f, c;
    h.def_dim("t", NC_UNLIMITED, &t);
    h.def_dim("x", 3, &x);
    const int rd[2] = {t, x};
    h.def_var("r", NC_INT, 2, rd, &r);
    h.def_var("f", NC_DOUBLE, 1, &x, &f);
    h.def_var("c", NC_CHAR, 1, &x, &c);
    const int64_t s00[2] = {0, 0}, s03[2] = {0, 3}, s50[2] = {5, 0};
    const int64_t c11[2] = {1, 1}, c14[2] = {1, 4}, c10[2] = {1, 0}, cm1[2] = {-1, 1};
    Access a;
    a.varid = r;
    a.start = s00;
    a.count = c11;
    a.is_write = true;
    a.memtype = NC_INT;
    CHECK("define mode", h.check_access(a) == NC_EINDEFINE);
    h.enddef();
    CHECK("ok", h.check_access(a) == NC_NOERR);
    a.collective = false;
    CHECK("not indep", h.check_access(a) == NC_ENOTINDEP);
    a.collective = true;
    a.start = s50;
    CHECK("write beyond numrecs", h.check_access(a) == NC_NOERR);
    h.note_write(a);
    CHECK("numrecs grows", h.numrecs() == 6);
    a.is_write = false;
    a.start = s00;
    a.count = c14;
    CHECK("edge", h.check_access(a) == NC_EEDGE);
    a.start = s03;
    a.count = c11;
    CHECK("start at the end, count 1", h.check_access(a) == NC_EINVALCOORDS);
    a.count = c10;
    CHECK("start at the end, count 0", h.check_access(a) == NC_NOERR);
    a.count = cm1;
    CHECK("start at the end wins over a negative count", h.check_access(a) == NC_EINVALCOORDS);
    a.start = s00;
    CHECK("negative count", h.check_access(a) == NC_ENEGATIVECNT);
    a.start = nullptr;
    CHECK("null start", h.check_access(a) == NC_EINVALCOORDS);
    a.start = s00;
    a.count = nullptr;
    CHECK("null count", h.check_access(a) == NC_EEDGE);
    a.api = Api::var1;
    CHECK("var1 needs no count", h.check_access(a) == NC_NOERR);
    const int64_t st[2] = {1, 0};
    a.api = Api::vars;
    a.count = c11;
    a.stride = st;
    CHECK("stride", h.check_access(a) == NC_ESTRIDE);
    a.api = Api::vara;
    a.stride = nullptr;
    a.memtype = NC_CHAR;
    CHECK("echar", h.check_access(a) == NC_ECHAR);
    a.varid = c;
    CHECK("text", h.check_access(a) == NC_NOERR);
    a.varid = NC_GLOBAL;
    CHECK("global", h.check_access(a) == NC_EGLOBAL);
    a.varid = 7;
    CHECK("notvar", h.check_access(a) == NC_ENOTVAR);
    CHECK("indep", h.begin_indep_data() == NC_NOERR && h.check_access(a) == NC_EINDEP);
    h.set_read_only(true);
    a.is_write = true;
    CHECK("read only", h.check_access(a) == NC_EPERM);
}

void test_layout() {
    // The header of this file is 140 bytes; variables start at the 512-byte extent.
    Header h;
    int t, a, x, va, vb;
    h.def_dim("t", NC_UNLIMITED, &t);
    h.def_dim("a", 10, &a);
    h.def_dim("x", 1, &x);
    h.def_var("a", NC_BYTE, 1, &a, &va);
    h.def_var("b", NC_BYTE, 1, &x, &vb);
    h.enddef();
    int64_t size, extent, recsize, off_a, off_b;
    CHECK("layout", h.inq_layout(&size, &extent, &recsize) == NC_NOERR);
    CHECK("sizes", size == 140 && extent == 512 && recsize == 0);
    CHECK("offset a", h.inq_varoffset(va, &off_a) == NC_NOERR && off_a == 512);
    CHECK("offset b (a rounded up)", h.inq_varoffset(vb, &off_b) == NC_NOERR && off_b == 524);
    // CDF-1 offsets must fit in 31 bits.
    Header big;
    int d, d2, v;
    big.def_dim("big", 1500000000, &d);
    big.def_dim("x", 2, &d2);
    big.def_var("a", NC_BYTE, 1, &d, &v);
    big.def_var("b", NC_BYTE, 1, &d, &v);
    big.def_var("c", NC_BYTE, 1, &d2, &v);
    CHECK("offset beyond 2^31", big.enddef() == NC_EVARSIZE);
}

Header sample() {
    Header h(NC_FORMAT_CDF5);
    int t, x, v, s;
    h.set_fill(NC_FILL, nullptr);
    h.def_dim("time", NC_UNLIMITED, &t);
    h.def_dim("x", 4, &x);
    const int dims[2] = {t, x};
    h.def_var("v", NC_UINT64, 2, dims, &v);
    h.def_var("s", NC_CHAR, 0, nullptr, &s);
    h.def_var_fill(s, 1, nullptr);
    const double d[3] = {1.5, -2, 1e300};
    h.put_att(NC_GLOBAL, "title", NC_CHAR, 5, "hello", NC_CHAR);
    h.put_att(v, "scale", NC_DOUBLE, 3, d, NC_DOUBLE);
    const unsigned long long fill = 42;
    h.put_att(v, "_FillValue", NC_UINT64, 1, &fill, NC_UINT64);
    h.enddef();
    h.set_numrecs(7);
    return h;
}

void test_codec() {
    const Header h = sample();
    const std::vector<char> bytes = h.encode();
    Header back;
    CHECK("decode", Header::decode(bytes.data(), bytes.size(), &back) == NC_NOERR);
    CHECK("same numrecs", back.numrecs() == 7 && back.format() == NC_FORMAT_CDF5);
    CHECK("data mode", !back.in_define_mode());
    CHECK("same dims", back.dims().size() == 2 && back.dims()[0].name == "time");
    CHECK("same lengths", back.dims()[0].len == NC_UNLIMITED && back.dims()[1].len == 4);
    CHECK("same vars", back.vars().size() == 2 && back.vars()[0].type == NC_UINT64);
    CHECK("same atts", back.vars()[0].atts.size() == 2 &&
                           back.vars()[0].atts[0].bytes == h.vars()[0].atts[0].bytes);
    int no_fill = -1;
    unsigned long long fill = 0;
    CHECK("open: nofill file", back.fill_mode() == NC_NOFILL);
    CHECK("open: vars filled", back.inq_var_fill(1, &no_fill, nullptr) == NC_NOERR && !no_fill);
    CHECK("fill value", back.inq_var_fill(0, nullptr, &fill) == NC_NOERR && fill == 42);
    CHECK("late fill after open", back.redef() == NC_NOERR);
    CHECK("late fill after open", back.def_var_fill(0, 0, &fill) == NC_ELATEFILL);

    Header out;
    CHECK("not a header", Header::decode("garbage!", 8, &out) == NC_ENOTNC);
    CHECK("empty", Header::decode(nullptr, 0, &out) == NC_ENOTNC);
    int truncated_ok = 0;
    for (size_t n = 0; n < bytes.size(); ++n)
        truncated_ok += Header::decode(bytes.data(), n, &out) == NC_NOERR;
    CHECK("every truncation fails", truncated_ok == 0);
    std::vector<char> longer = bytes;
    longer.push_back(0);
    CHECK("trailing bytes", Header::decode(longer.data(), longer.size(), &out) == NC_EINVAL);
    // Random corruption: never crashes; what is accepted is a consistent header.
    std::mt19937 rng(1);
    int inconsistent = 0;
    for (int i = 0; i < 20000; ++i) {
        std::vector<char> c = bytes;
        for (int k = 1 + static_cast<int>(rng() % 3); k > 0; --k)
            c[rng() % c.size()] = static_cast<char>(rng());
        Header x, y;
        if (Header::decode(c.data(), c.size(), &x) != NC_NOERR) continue;
        const std::vector<char> again = x.encode();
        inconsistent += Header::decode(again.data(), again.size(), &y) != NC_NOERR ||
                        y.encode() != again;
    }
    CHECK("corruption", inconsistent == 0);
    // Valid in every field, invalid as a whole: a second unlimited dimension. Layout: magic 4,
    // version 4, format 4, numrecs 8, count 4; dimension "a": 4 + 1 + 8; "b": 4 + 1, length.
    Header two;
    two.def_dim("a", NC_UNLIMITED, nullptr);
    two.def_dim("b", 5, nullptr);
    std::vector<char> e = two.encode();
    CHECK("two dims", Header::decode(e.data(), e.size(), &out) == NC_NOERR);
    e[24 + 13 + 5] = 0;
    CHECK("second unlimited", Header::decode(e.data(), e.size(), &out) == NC_EINVAL);

    // HeaderFinal's test: the same header but for the record count, and nothing else.
    Header more = h;
    more.set_numrecs(9);
    const std::vector<char> counted = more.encode();
    CHECK("other count", counted != bytes && Header::same_but_numrecs(counted, bytes));
    CHECK("same header", Header::same_but_numrecs(bytes, bytes));
    Header renamed = h;
    CHECK("renamed", renamed.redef() == NC_NOERR && renamed.rename_var(1, "w") == NC_NOERR);
    CHECK("another header", !Header::same_but_numrecs(renamed.encode(), bytes));
    CHECK("none", !Header::same_but_numrecs({}, bytes) && !Header::same_but_numrecs({}, {}));
}

// revision(): a writer skips encoding its header when the revision is the one it encoded (its
// dtf_transfer), so a call that changes the encoding but for the record count must change it. Every
// public call that may change a header, successful or not, in define and in data mode.
void test_revision() {
    Header h(NC_FORMAT_CDF5), other(NC_FORMAT_CDF5);
    int t = -1, x = -1, v = -1, w = -1, old = 0;
    const int ival = 7;
    const float fill = 1.5f;
    const int64_t start[2] = {3, 0}, count[2] = {1, 4};
    other.put_att(NC_GLOBAL, "from", NC_INT, 1, &ival, NC_INT);
    const std::vector<std::pair<const char *, std::function<void()>>> calls = {
        {"def_dim", [&] { h.def_dim("time", NC_UNLIMITED, &t); }},
        {"def_dim 2", [&] { h.def_dim("x", 4, &x); }},
        {"def_var", [&] { const int d[2] = {t, x}; h.def_var("temp", NC_FLOAT, 2, d, &v); }},
        {"def_var 2", [&] { h.def_var("scalar", NC_INT, 0, nullptr, &w); }},
        {"def_var taken", [&] { h.def_var("temp", NC_INT, 0, nullptr, nullptr); }},
        {"put_att", [&] { h.put_att(NC_GLOBAL, "title", NC_CHAR, 3, "abc", NC_CHAR); }},
        {"put_att var", [&] { h.put_att(v, "units", NC_CHAR, 1, "K", NC_CHAR); }},
        {"put_att again", [&] { h.put_att(v, "units", NC_CHAR, 2, "mK", NC_CHAR); }},
        {"copy_att", [&] { other.copy_att(NC_GLOBAL, "from", h, NC_GLOBAL); }},
        {"set_fill", [&] { h.set_fill(NC_FILL, &old); }},
        {"def_var_fill", [&] { h.def_var_fill(v, 0, &fill); }},
        {"def_var_fill off", [&] { h.def_var_fill(w, 1, nullptr); }},
        {"rename_att", [&] { h.rename_att(v, "units", "unit"); }},
        {"del_att", [&] { h.del_att(NC_GLOBAL, "from"); }},
        {"rename_var", [&] { h.rename_var(w, "scalar_long_name"); }},
        {"rename_dim", [&] { h.rename_dim(x, "xx"); }},
        {"enddef", [&] { h.enddef(); }},
        {"begin_indep_data", [&] { h.begin_indep_data(); }},
        {"end_indep_data", [&] { h.end_indep_data(); }},
        {"note_write", [&] {
             dtf::model::Access a;
             a.varid = v, a.api = dtf::model::Api::vara, a.start = start, a.count = count, a.is_write = true;
             h.note_write(a);
         }},
        {"set_numrecs", [&] { h.set_numrecs(9); }},
        {"rename_var in data mode", [&] { h.rename_var(w, "s"); }},
        {"rename_dim in data mode", [&] { h.rename_dim(x, "y"); }},
        {"rename_att in data mode", [&] { h.rename_att(v, "unit", "u"); }},
        {"put_att in data mode", [&] { h.put_att(v, "u", NC_CHAR, 1, "C", NC_CHAR); }},
        {"del_att in data mode", [&] { h.del_att(v, "u"); }},
        {"set_fill in data mode", [&] { h.set_fill(NC_NOFILL, &old); }},
        {"redef", [&] { h.redef(); }},
        {"def_var after redef", [&] { h.def_var("more", NC_DOUBLE, 0, nullptr, nullptr); }},
        {"set_fill after redef", [&] { h.set_fill(NC_NOFILL, &old); }},
        {"enddef again", [&] { h.enddef(); }},
    };
    int changed = 0;
    for (const auto &[name, call] : calls) {
        const uint64_t rev = h.revision();
        const std::vector<char> before = h.encode();
        call();
        const std::vector<char> after = h.encode();
        check(h.revision() != rev || Header::same_but_numrecs(before, after), name,
              "encoding changed but for the record count, revision did not", __LINE__);
        changed += !Header::same_but_numrecs(before, after);
    }
    CHECK("the calls changed the header", changed >= 15);
    Header copy = h;
    CHECK("a copy keeps the revision", copy.revision() == h.revision());
    const std::vector<char> bytes = h.encode();
    Header decoded;
    CHECK("decode", Header::decode(bytes.data(), bytes.size(), &decoded) == NC_NOERR);
    CHECK("a decode gives a new revision", decoded.revision() != h.revision() && decoded.revision() != copy.revision());
    CHECK("new headers differ", Header().revision() != Header().revision());
}

} // namespace

int main() {
    test_types();
    test_convert();
    test_names();
    test_normalizer();
    test_cmode();
    test_define();
    test_fill();
    test_data_mode();
    test_access();
    test_layout();
    test_codec();
    test_revision();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
