// Oracle test of src/model: the same call sequences run against real PnetCDF (a file in a temporary
// directory, one rank) and against dtf::model::Header, and every return code and every result
// (ids, names, lengths, types, attribute bytes, fill values) must be identical. Each call is
// written to a transcript per side; the transcripts are compared line by line.
//
// Sequences: scripted cases (define mode, names, limits, attributes and their conversions, fill,
// data mode, renames, copies, data-access checks, size limits, file layout, reopen read-only and
// read-write through encode/decode) and random sequences drawn from small pools of valid and
// invalid arguments. The fill values PnetCDF writes (at enddef, by ncmpi_fill_var_rec) are compared
// too: the file's values byte for byte against what the model's fills and the puts (of zeros) give. Not compared, because PnetCDF's answer is garbage: inq_num_rec_vars and
// inq_num_fix_vars of a reopened file, and the fill value of a variable whose _FillValue
// attribute (made by copy_att or rename_att) is smaller than the variable's type.
//
// Run: mpiexec -n 1 dtf_model_oracle [number of random sequences]; with
// DTF_ORACLE_ONLY=<script name> only that script runs and both transcripts are printed.
#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include <pnetcdf.h>

#include "model/attr.hpp"
#include "model/header.hpp"

using dtf::model::Access;
using dtf::model::Api;
using dtf::model::Header;

// Exported by libpnetcdf (not declared in pnetcdf.h): the name check and NFC normalization that
// PnetCDF applies to every name. Used to compare check_name() and to install the normalizer.
extern "C" int ncmpii_check_name(const char *name, int file_ver);
extern "C" int ncmpii_utf8_normalize(const char *str, char **normalp);

namespace {

int g_checks = 0, g_failed_checks = 0, g_failures = 0;
std::string g_dir;

void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fail(const char *fmt, ...) {
    ++g_failures;
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "FAIL ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
}

// One check: it failed if fail() was called during its lifetime.
struct Check {
    int before = g_failures;
    ~Check() {
        ++g_checks;
        g_failed_checks += g_failures > before;
    }
};

std::string fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char *f, ...) {
    char buf[4096];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

std::string hex(const void *p, size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += fmt("%02x", static_cast<const unsigned char *>(p)[i]);
    return s;
}

std::string quote(const char *s) {
    if (s == nullptr) return "NULL";
    std::string out = "\"";
    for (const char *p = s; *p && out.size() < 40; ++p)
        out += (*p >= ' ' && *p < 0x7f) ? std::string(1, *p) : fmt("\\x%02x", *p & 0xff);
    return out + (std::strlen(s) > 38 ? "...\"" : "\"");
}

// ---------------------------------------------------------------------------------------------
// Two implementations of one interface: real PnetCDF files and model headers. Each holds two
// files (0 and 1, for copy_att between files); calls apply to the selected one.

class Target {
public:
    virtual ~Target() = default;
    virtual void select(int file) = 0;
    virtual int reopen(bool writable) = 0; // close (after enddef) and open again
    virtual int def_dim(const char *name, int64_t len, int *id) = 0;
    virtual int def_var(const char *name, nc_type t, int nd, const int *dimids, int *id) = 0;
    virtual int rename_dim(int id, const char *n) = 0;
    virtual int rename_var(int id, const char *n) = 0;
    virtual int put_att(int varid, const char *name, nc_type t, int64_t len, const void *v,
                        nc_type mem) = 0;
    virtual int del_att(int varid, const char *name) = 0;
    virtual int rename_att(int varid, const char *name, const char *newname) = 0;
    virtual int copy_att(int varid_in, const char *name, int file_out, int varid_out) = 0;
    virtual int enddef() = 0;
    virtual int enddef_with(int64_t h_minfree, int64_t v_align, int64_t v_minfree, int64_t r_align) = 0; // ncmpi__enddef
    virtual int redef() = 0;
    virtual int set_fill(int mode, int *old) = 0;
    virtual int def_var_fill(int varid, int no_fill, const void *v) = 0;
    virtual int begin_indep() = 0;
    virtual int end_indep() = 0;
    virtual int inq(int *nd, int *nv, int *na, int *unlim) = 0;
    virtual int inq_format(int *f) = 0;
    virtual int inq_num_rec_vars(int *n) = 0;
    virtual int inq_num_fix_vars(int *n) = 0;
    virtual int inq_dim(int id, char *name, int64_t *len) = 0;
    virtual int inq_dimid(const char *name, int *id) = 0;
    virtual int inq_var(int id, char *name, nc_type *t, int *nd, int *dimids, int *na) = 0;
    virtual int inq_varid(const char *name, int *id) = 0;
    virtual int inq_varnatts(int id, int *n) = 0;
    virtual int inq_att(int varid, const char *name, nc_type *t, int64_t *len) = 0;
    virtual int inq_attid(int varid, const char *name, int *id) = 0;
    virtual int inq_attname(int varid, int num, char *name) = 0;
    virtual int get_att(int varid, const char *name, void *out, nc_type mem) = 0;
    virtual int inq_var_fill(int varid, int *no_fill, void *v) = 0;
    virtual int access(const Access &a) = 0;
    virtual int inq_layout(int64_t *header_size, int64_t *extent, int64_t *recsize) = 0;
    virtual int inq_varoffset(int varid, int64_t *offset) = 0;
    virtual int fill_var_rec(int varid, int64_t recno) = 0;
    // The values of variable `varid` in the file now, in its external type (native bytes), as hex
    // (data mode, collective).
    virtual int contents(int varid, std::string *out) = 0;
    // The header's bytes at the start of the file (hex), the record count left out (PnetCDF writes
    // it to the file at its own times).
    virtual std::string file_header() = 0;
};

std::string hex_without_numrecs(std::vector<char> bytes, int format) {
    const size_t numrecs_end = format == NC_FORMAT_CDF5 ? 12 : 8;
    for (size_t i = 4; i < numrecs_end && i < bytes.size(); ++i) bytes[i] = 0;
    std::string out;
    for (char c : bytes) out += fmt("%02x", static_cast<unsigned char>(c));
    return out;
}

// ---- real PnetCDF

int put_att_mem(int nc, int v, const char *n, nc_type t, MPI_Offset len, const void *p, nc_type m) {
    switch (m) {
    case NC_CHAR: return ncmpi_put_att_text(nc, v, n, len, static_cast<const char *>(p));
    case NC_BYTE: return ncmpi_put_att_schar(nc, v, n, t, len, static_cast<const signed char *>(p));
    case NC_UBYTE:
        return ncmpi_put_att_uchar(nc, v, n, t, len, static_cast<const unsigned char *>(p));
    case NC_SHORT: return ncmpi_put_att_short(nc, v, n, t, len, static_cast<const short *>(p));
    case NC_USHORT:
        return ncmpi_put_att_ushort(nc, v, n, t, len, static_cast<const unsigned short *>(p));
    case NC_INT: return ncmpi_put_att_int(nc, v, n, t, len, static_cast<const int *>(p));
    case NC_UINT: return ncmpi_put_att_uint(nc, v, n, t, len, static_cast<const unsigned *>(p));
    case NC_INT64:
        return ncmpi_put_att_longlong(nc, v, n, t, len, static_cast<const long long *>(p));
    case NC_UINT64:
        return ncmpi_put_att_ulonglong(nc, v, n, t, len,
                                       static_cast<const unsigned long long *>(p));
    case NC_FLOAT: return ncmpi_put_att_float(nc, v, n, t, len, static_cast<const float *>(p));
    case NC_DOUBLE: return ncmpi_put_att_double(nc, v, n, t, len, static_cast<const double *>(p));
    default: return ncmpi_put_att(nc, v, n, t, len, p);
    }
}

int get_att_mem(int nc, int v, const char *n, void *p, nc_type m) {
    switch (m) {
    case NC_CHAR: return ncmpi_get_att_text(nc, v, n, static_cast<char *>(p));
    case NC_BYTE: return ncmpi_get_att_schar(nc, v, n, static_cast<signed char *>(p));
    case NC_UBYTE: return ncmpi_get_att_uchar(nc, v, n, static_cast<unsigned char *>(p));
    case NC_SHORT: return ncmpi_get_att_short(nc, v, n, static_cast<short *>(p));
    case NC_USHORT: return ncmpi_get_att_ushort(nc, v, n, static_cast<unsigned short *>(p));
    case NC_INT: return ncmpi_get_att_int(nc, v, n, static_cast<int *>(p));
    case NC_UINT: return ncmpi_get_att_uint(nc, v, n, static_cast<unsigned *>(p));
    case NC_INT64: return ncmpi_get_att_longlong(nc, v, n, static_cast<long long *>(p));
    case NC_UINT64: return ncmpi_get_att_ulonglong(nc, v, n, static_cast<unsigned long long *>(p));
    case NC_FLOAT: return ncmpi_get_att_float(nc, v, n, static_cast<float *>(p));
    case NC_DOUBLE: return ncmpi_get_att_double(nc, v, n, static_cast<double *>(p));
    default: return ncmpi_get_att(nc, v, n, p);
    }
}

// The typed data calls for one memory type TN (text, int, double): put/get x collective/independent
// x var/var1/vara/vars/varm (varm with a null imap).
#define DTF_REAL_ACCESS(TN, CT)                                                                    \
    int access_##TN(int nc, const Access &a, CT *b) {                                              \
        const auto *s = reinterpret_cast<const MPI_Offset *>(a.start);                             \
        const auto *c = reinterpret_cast<const MPI_Offset *>(a.count);                             \
        const auto *st = reinterpret_cast<const MPI_Offset *>(a.stride);                           \
        const int v = a.varid;                                                                     \
        if (a.is_write && a.collective) switch (a.api) {                                           \
            case Api::var: return ncmpi_put_var_##TN##_all(nc, v, b);                              \
            case Api::var1: return ncmpi_put_var1_##TN##_all(nc, v, s, b);                         \
            case Api::vara: return ncmpi_put_vara_##TN##_all(nc, v, s, c, b);                      \
            case Api::vars: return ncmpi_put_vars_##TN##_all(nc, v, s, c, st, b);                  \
            case Api::varm: return ncmpi_put_varm_##TN##_all(nc, v, s, c, st, nullptr, b);         \
            }                                                                                      \
        if (a.is_write) switch (a.api) {                                                           \
            case Api::var: return ncmpi_put_var_##TN(nc, v, b);                                    \
            case Api::var1: return ncmpi_put_var1_##TN(nc, v, s, b);                               \
            case Api::vara: return ncmpi_put_vara_##TN(nc, v, s, c, b);                            \
            case Api::vars: return ncmpi_put_vars_##TN(nc, v, s, c, st, b);                        \
            case Api::varm: return ncmpi_put_varm_##TN(nc, v, s, c, st, nullptr, b);               \
            }                                                                                      \
        if (a.collective) switch (a.api) {                                                         \
            case Api::var: return ncmpi_get_var_##TN##_all(nc, v, b);                              \
            case Api::var1: return ncmpi_get_var1_##TN##_all(nc, v, s, b);                         \
            case Api::vara: return ncmpi_get_vara_##TN##_all(nc, v, s, c, b);                      \
            case Api::vars: return ncmpi_get_vars_##TN##_all(nc, v, s, c, st, b);                  \
            case Api::varm: return ncmpi_get_varm_##TN##_all(nc, v, s, c, st, nullptr, b);         \
            }                                                                                      \
        switch (a.api) {                                                                           \
        case Api::var: return ncmpi_get_var_##TN(nc, v, b);                                        \
        case Api::var1: return ncmpi_get_var1_##TN(nc, v, s, b);                                   \
        case Api::vara: return ncmpi_get_vara_##TN(nc, v, s, c, b);                                \
        case Api::vars: return ncmpi_get_vars_##TN(nc, v, s, c, st, b);                            \
        case Api::varm: return ncmpi_get_varm_##TN(nc, v, s, c, st, nullptr, b);                   \
        }                                                                                          \
        return NC_EINTERNAL;                                                                       \
    }

DTF_REAL_ACCESS(text, char)
DTF_REAL_ACCESS(int, int)
DTF_REAL_ACCESS(double, double)

// The alignment hints the next run's files are created and opened with (nc_header_align_size,
// nc_var_align_size, nc_record_align_size; 0: not given).
int64_t g_hints[3] = {0, 0, 0};

// An MPI info with g_hints (MPI_INFO_NULL without any); the caller frees it.
MPI_Info hints_info() {
    if (!g_hints[0] && !g_hints[1] && !g_hints[2]) return MPI_INFO_NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    const char *keys[3] = {"nc_header_align_size", "nc_var_align_size", "nc_record_align_size"};
    for (int i = 0; i < 3; ++i)
        if (g_hints[i]) MPI_Info_set(info, keys[i], std::to_string(g_hints[i]).c_str());
    return info;
}

// Big enough for every access the scripts make (they keep counts small).
std::vector<double> g_data(1 << 16);

class Real : public Target {
public:
    Real(const std::string &name, int format, int format2) {
        for (int i = 0; i < 2; ++i) {
            path_[i] = fmt("%s/%s.%d.nc", g_dir.c_str(), name.c_str(), i);
            const int f = i == 0 ? format : format2;
            const int cmode = NC_CLOBBER | (f == NC_FORMAT_CDF5   ? NC_64BIT_DATA
                                            : f == NC_FORMAT_CDF2 ? NC_64BIT_OFFSET
                                                                  : 0);
            MPI_Info info = hints_info();
            const int err = ncmpi_create(MPI_COMM_SELF, path_[i].c_str(), cmode, info, &nc_[i]);
            if (info != MPI_INFO_NULL) MPI_Info_free(&info);
            if (err != NC_NOERR)
                fail("ncmpi_create %s: %s", path_[i].c_str(), ncmpi_strerror(err));
        }
    }
    ~Real() override {
        for (int i = 0; i < 2; ++i) {
            if (nc_[i] >= 0) ncmpi_close(nc_[i]);
            std::remove(path_[i].c_str());
        }
    }
    void select(int file) override { cur_ = file; }
    int reopen(bool writable) override {
        if (int err = ncmpi_close(nc_[cur_])) return err;
        nc_[cur_] = -1;
        MPI_Info info = hints_info();
        const int err = ncmpi_open(MPI_COMM_SELF, path_[cur_].c_str(), writable ? NC_WRITE : NC_NOWRITE, info, &nc_[cur_]);
        if (info != MPI_INFO_NULL) MPI_Info_free(&info);
        return err;
    }
    int def_dim(const char *name, int64_t len, int *id) override {
        return ncmpi_def_dim(nc(), name, len, id);
    }
    int def_var(const char *name, nc_type t, int nd, const int *dimids, int *id) override {
        return ncmpi_def_var(nc(), name, t, nd, dimids, id);
    }
    int rename_dim(int id, const char *n) override { return ncmpi_rename_dim(nc(), id, n); }
    int rename_var(int id, const char *n) override { return ncmpi_rename_var(nc(), id, n); }
    int put_att(int varid, const char *name, nc_type t, int64_t len, const void *v,
                nc_type mem) override {
        return put_att_mem(nc(), varid, name, t, len, v, mem);
    }
    int del_att(int varid, const char *name) override { return ncmpi_del_att(nc(), varid, name); }
    int rename_att(int varid, const char *name, const char *newname) override {
        return ncmpi_rename_att(nc(), varid, name, newname);
    }
    int copy_att(int varid_in, const char *name, int file_out, int varid_out) override {
        return ncmpi_copy_att(nc(), varid_in, name, nc_[file_out], varid_out);
    }
    int enddef() override { return ncmpi_enddef(nc()); }
    int enddef_with(int64_t h_minfree, int64_t v_align, int64_t v_minfree, int64_t r_align) override {
        return ncmpi__enddef(nc(), h_minfree, v_align, v_minfree, r_align);
    }
    int redef() override { return ncmpi_redef(nc()); }
    int set_fill(int mode, int *old) override { return ncmpi_set_fill(nc(), mode, old); }
    int def_var_fill(int varid, int no_fill, const void *v) override {
        return ncmpi_def_var_fill(nc(), varid, no_fill, v);
    }
    int begin_indep() override { return ncmpi_begin_indep_data(nc()); }
    int end_indep() override { return ncmpi_end_indep_data(nc()); }
    int inq(int *nd, int *nv, int *na, int *unlim) override {
        return ncmpi_inq(nc(), nd, nv, na, unlim);
    }
    int inq_format(int *f) override { return ncmpi_inq_format(nc(), f); }
    int inq_num_rec_vars(int *n) override { return ncmpi_inq_num_rec_vars(nc(), n); }
    int inq_num_fix_vars(int *n) override { return ncmpi_inq_num_fix_vars(nc(), n); }
    int inq_dim(int id, char *name, int64_t *len) override {
        MPI_Offset l = -99;
        const int err = ncmpi_inq_dim(nc(), id, name, &l);
        *len = l;
        return err;
    }
    int inq_dimid(const char *name, int *id) override { return ncmpi_inq_dimid(nc(), name, id); }
    int inq_var(int id, char *name, nc_type *t, int *nd, int *dimids, int *na) override {
        return ncmpi_inq_var(nc(), id, name, t, nd, dimids, na);
    }
    int inq_varid(const char *name, int *id) override { return ncmpi_inq_varid(nc(), name, id); }
    int inq_varnatts(int id, int *n) override { return ncmpi_inq_varnatts(nc(), id, n); }
    int inq_att(int varid, const char *name, nc_type *t, int64_t *len) override {
        MPI_Offset l = -99;
        const int err = ncmpi_inq_att(nc(), varid, name, t, &l);
        *len = l;
        return err;
    }
    int inq_attid(int varid, const char *name, int *id) override {
        return ncmpi_inq_attid(nc(), varid, name, id);
    }
    int inq_attname(int varid, int num, char *name) override {
        return ncmpi_inq_attname(nc(), varid, num, name);
    }
    int get_att(int varid, const char *name, void *out, nc_type mem) override {
        return get_att_mem(nc(), varid, name, out, mem);
    }
    int inq_var_fill(int varid, int *no_fill, void *v) override {
        return ncmpi_inq_var_fill(nc(), varid, no_fill, v);
    }
    std::string file_header() override {
        MPI_Offset size = 0;
        int format = 0;
        if (ncmpi_inq_header_size(nc(), &size) != NC_NOERR || ncmpi_inq_format(nc(), &format) != NC_NOERR)
            return "(no header)";
        std::vector<char> bytes(static_cast<size_t>(size));
        FILE *f = std::fopen(path_[cur_].c_str(), "rb");
        const size_t got = f ? std::fread(bytes.data(), 1, bytes.size(), f) : 0;
        if (f) std::fclose(f);
        bytes.resize(got);
        return hex_without_numrecs(bytes, format);
    }
    int inq_layout(int64_t *header_size, int64_t *extent, int64_t *recsize) override {
        MPI_Offset a = -99, b = -99, c = -99;
        int err = ncmpi_inq_header_size(nc(), &a);
        if (err == NC_NOERR) err = ncmpi_inq_header_extent(nc(), &b);
        if (err == NC_NOERR) err = ncmpi_inq_recsize(nc(), &c);
        *header_size = a, *extent = b, *recsize = c;
        return err;
    }
    int inq_varoffset(int varid, int64_t *offset) override {
        MPI_Offset o = -99;
        const int err = ncmpi_inq_varoffset(nc(), varid, &o);
        *offset = o;
        return err;
    }
    int fill_var_rec(int varid, int64_t recno) override { return ncmpi_fill_var_rec(nc(), varid, recno); }
    int contents(int varid, std::string *out) override {
        nc_type t = NC_NAT;
        int nd = 0, dims[64]; // (the scripts' variables have few dimensions)
        if (int err = ncmpi_inq_varndims(nc(), varid, &nd)) return err;
        if (nd > 64) return NC_EMAXDIMS;
        if (int err = ncmpi_inq_var(nc(), varid, nullptr, &t, &nd, dims, nullptr)) return err;
        MPI_Offset n = 1;
        for (int d = 0; d < nd; ++d) {
            MPI_Offset len = 0;
            ncmpi_inq_dimlen(nc(), dims[d], &len);
            n *= len;
        }
        std::vector<char> bytes(static_cast<size_t>(n * dtf::model::type_size(t)) + 1);
        void *b = bytes.data();
        int err;
        switch (t) { // (each in its own type: no conversion)
        case NC_CHAR: err = ncmpi_get_var_text_all(nc(), varid, static_cast<char *>(b)); break;
        case NC_BYTE: err = ncmpi_get_var_schar_all(nc(), varid, static_cast<signed char *>(b)); break;
        case NC_UBYTE: err = ncmpi_get_var_uchar_all(nc(), varid, static_cast<unsigned char *>(b)); break;
        case NC_SHORT: err = ncmpi_get_var_short_all(nc(), varid, static_cast<short *>(b)); break;
        case NC_USHORT: err = ncmpi_get_var_ushort_all(nc(), varid, static_cast<unsigned short *>(b)); break;
        case NC_INT: err = ncmpi_get_var_int_all(nc(), varid, static_cast<int *>(b)); break;
        case NC_UINT: err = ncmpi_get_var_uint_all(nc(), varid, static_cast<unsigned *>(b)); break;
        case NC_FLOAT: err = ncmpi_get_var_float_all(nc(), varid, static_cast<float *>(b)); break;
        case NC_DOUBLE: err = ncmpi_get_var_double_all(nc(), varid, static_cast<double *>(b)); break;
        case NC_INT64: err = ncmpi_get_var_longlong_all(nc(), varid, static_cast<long long *>(b)); break;
        default: err = ncmpi_get_var_ulonglong_all(nc(), varid, static_cast<unsigned long long *>(b)); break;
        }
        *out = hex(b, bytes.size() - 1);
        return err;
    }
    // Data values are not the model's business otherwise: the buffer holds zeros for writes, and a
    // read that converts fill values out of range (NC_ERANGE) counts as success.
    int access(const Access &a) override {
        std::fill(g_data.begin(), g_data.end(), 0.0);
        void *b = g_data.data();
        int err;
        switch (a.memtype) {
        case NC_CHAR: err = access_text(nc(), a, static_cast<char *>(b)); break;
        case NC_INT: err = access_int(nc(), a, static_cast<int *>(b)); break;
        default: err = access_double(nc(), a, static_cast<double *>(b)); break;
        }
        return err == NC_ERANGE && !a.is_write ? NC_NOERR : err;
    }

private:
    int nc() const { return nc_[cur_]; }
    std::string path_[2];
    int nc_[2] = {-1, -1};
    int cur_ = 0;
};

// ---- the model

class Model : public Target {
public:
    Model(int format, int format2) : h_{Header(format), Header(format2)} {
        for (Header &h : h_) h.set_alignment_hints(g_hints[0], g_hints[1], g_hints[2]);
    }
    void select(int file) override { cur_ = file; }
    int reopen(bool writable) override {
        Header &h = h_[cur_];
        if (h.in_define_mode()) h.enddef();
        const std::vector<char> bytes = h.encode();
        Header fresh;
        if (int err = Header::decode(bytes.data(), bytes.size(), &fresh)) return err;
        fresh.set_read_only(!writable);
        fresh.set_alignment_hints(g_hints[0], g_hints[1], g_hints[2]);
        h = fresh;
        return NC_NOERR;
    }
    int def_dim(const char *name, int64_t len, int *id) override {
        return h().def_dim(name, len, id);
    }
    int def_var(const char *name, nc_type t, int nd, const int *dimids, int *id) override {
        return h().def_var(name, t, nd, dimids, id);
    }
    int rename_dim(int id, const char *n) override { return h().rename_dim(id, n); }
    int rename_var(int id, const char *n) override { return h().rename_var(id, n); }
    int put_att(int varid, const char *name, nc_type t, int64_t len, const void *v,
                nc_type mem) override {
        // ncmpi_put_att_text has no type argument (always NC_CHAR); the generic ncmpi_put_att
        // takes the values in the external type.
        if (mem == NC_CHAR) t = NC_CHAR;
        return h().put_att(varid, name, t, len, v, mem == NC_NAT ? t : mem);
    }
    int del_att(int varid, const char *name) override { return h().del_att(varid, name); }
    int rename_att(int varid, const char *name, const char *newname) override {
        return h().rename_att(varid, name, newname);
    }
    int copy_att(int varid_in, const char *name, int file_out, int varid_out) override {
        return h().copy_att(varid_in, name, h_[file_out], varid_out);
    }
    int enddef() override { return filled(h().enddef()); }
    int enddef_with(int64_t h_minfree, int64_t v_align, int64_t v_minfree, int64_t r_align) override {
        return filled(h().enddef(h_minfree, v_align, v_minfree, r_align));
    }
    int redef() override { return h().redef(); }
    int set_fill(int mode, int *old) override { return h().set_fill(mode, old); }
    int def_var_fill(int varid, int no_fill, const void *v) override {
        return h().def_var_fill(varid, no_fill, v);
    }
    int begin_indep() override { return h().begin_indep_data(); }
    int end_indep() override { return h().end_indep_data(); }
    int inq(int *nd, int *nv, int *na, int *unlim) override { return h().inq(nd, nv, na, unlim); }
    int inq_format(int *f) override { return h().inq_format(f); }
    int inq_num_rec_vars(int *n) override { return h().inq_num_rec_vars(n); }
    int inq_num_fix_vars(int *n) override { return h().inq_num_fix_vars(n); }
    int inq_dim(int id, char *name, int64_t *len) override { return h().inq_dim(id, name, len); }
    int inq_dimid(const char *name, int *id) override { return h().inq_dimid(name, id); }
    int inq_var(int id, char *name, nc_type *t, int *nd, int *dimids, int *na) override {
        return h().inq_var(id, name, t, nd, dimids, na);
    }
    int inq_varid(const char *name, int *id) override { return h().inq_varid(name, id); }
    int inq_varnatts(int id, int *n) override { return h().inq_varnatts(id, n); }
    int inq_att(int varid, const char *name, nc_type *t, int64_t *len) override {
        return h().inq_att(varid, name, t, len);
    }
    int inq_attid(int varid, const char *name, int *id) override {
        return h().inq_attid(varid, name, id);
    }
    int inq_attname(int varid, int num, char *name) override {
        return h().inq_attname(varid, num, name);
    }
    int get_att(int varid, const char *name, void *out, nc_type mem) override {
        return h().get_att(varid, name, out, mem);
    }
    int inq_var_fill(int varid, int *no_fill, void *v) override {
        return h().inq_var_fill(varid, no_fill, v);
    }
    int inq_layout(int64_t *header_size, int64_t *extent, int64_t *recsize) override {
        return h().inq_layout(header_size, extent, recsize);
    }
    std::string file_header() override { return hex_without_numrecs(h().file_header(), h().format()); }
    int inq_varoffset(int varid, int64_t *offset) override {
        return h().inq_varoffset(varid, offset);
    }
    int access(const Access &a) override {
        const int err = h().check_access(a);
        if (err == NC_NOERR && a.is_write) {
            h().note_write(a);
            // (Real writes zeros; vars and varm reach the same elements, varm's imap is the memory's)
            const std::vector<int64_t> shape = h().shape(a.varid);
            const size_t nd = shape.size();
            std::vector<int64_t> start(nd, 0), count(shape), stride(nd, 1);
            for (size_t d = 0; d < nd && a.api != Api::var; ++d) {
                start[d] = a.start[d];
                count[d] = a.api == Api::var1 ? 1 : a.count[d];
                if ((a.api == Api::vars || a.api == Api::varm) && a.stride) stride[d] = a.stride[d];
            }
            set(a.varid, start, count, stride, nullptr);
        }
        return err;
    }
    int fill_var_rec(int varid, int64_t recno) override {
        Header::Region f;
        const int err = h().fill_rec(varid, recno, &f);
        if (err == NC_NOERR) fill(f);
        return err;
    }
    int contents(int varid, std::string *out) override {
        std::vector<char> &v = data_[cur_][varid];
        const std::vector<int64_t> shape = h().shape(varid);
        int64_t n = 1;
        for (int64_t len : shape) n *= len;
        v.resize(std::max(v.size(), static_cast<size_t>(n * es(varid))));
        *out = hex(v.data(), static_cast<size_t>(n * es(varid)));
        return NC_NOERR;
    }

private:
    Header &h() { return h_[cur_]; }
    int es(int varid) {
        nc_type t = NC_NAT;
        h().inq_var(varid, nullptr, &t, nullptr, nullptr, nullptr);
        return dtf::model::type_size(t);
    }
    // The file's values of `varid` (in the external type, native bytes): `value` (zeros if null)
    // over the strided box (row-major; the record dimension first, so records grow the end).
    void set(int varid, const std::vector<int64_t> &start, const std::vector<int64_t> &count,
             const std::vector<int64_t> &stride, const char *value) {
        const std::vector<int64_t> shape = h().shape(varid);
        const size_t nd = shape.size(), e = static_cast<size_t>(es(varid));
        int64_t total = 1, n = 1;
        for (size_t d = 0; d < nd; ++d) total *= shape[d], n *= count[d];
        std::vector<char> &v = data_[cur_][varid];
        v.resize(std::max(v.size(), static_cast<size_t>(total) * e));
        std::vector<int64_t> i(nd, 0);
        for (int64_t k = 0; k < n; ++k) {
            int64_t at = 0;
            for (size_t d = 0; d < nd; ++d) at = at * shape[d] + start[d] + i[d] * stride[d];
            if (value) std::memcpy(&v[static_cast<size_t>(at) * e], value, e);
            else std::memset(&v[static_cast<size_t>(at) * e], 0, e);
            for (size_t d = nd; d-- > 0;)
                if (++i[d] < count[d]) break;
                else i[d] = 0;
        }
    }
    void fill(const Header::Region &f) {
        char value[16];
        int no_fill = 0;
        h().inq_var_fill(f.varid, &no_fill, value);
        set(f.varid, f.start, f.count, std::vector<int64_t>(f.start.size(), 1), value);
    }
    int filled(int err) { // after an enddef
        if (err == NC_NOERR)
            for (const Header::Region &f : h().enddef_fills()) fill(f);
        return err;
    }
    Header h_[2];
    std::map<int, std::vector<char>> data_[2];
    int cur_ = 0;
};

// ---------------------------------------------------------------------------------------------
// The transcript: every call with its arguments, code and outputs.

class Rec {
public:
    explicit Rec(Target &t) : t_(t) {}
    std::vector<std::string> lines;

    void note(const std::string &s) { lines.push_back(s); }
    int log(int err, const std::string &call, const std::string &out = "") {
        lines.push_back(call + " -> " + std::to_string(err) + (out.empty() ? "" : " " + out));
        return err;
    }
    void select(int f) {
        file_ = f;
        t_.select(f);
        note(fmt("select %d", f));
    }
    // After ncmpi_open, PnetCDF 1.12.3's ncmpi_inq_num_rec_vars/num_fix_vars return garbage
    // (counts only computed at enddef): they are not compared for reopened files.
    int reopen(bool w) {
        opened_ = true;
        data_mode_[file_] = true;
        return log(t_.reopen(w), fmt("reopen(%d)", w));
    }
    int def_dim(const char *n, int64_t len) {
        int id = -99;
        const int err = t_.def_dim(n, len, &id);
        return log(err, fmt("def_dim(%s, %lld)", quote(n).c_str(), (long long)len),
                   fmt("id=%d", id));
    }
    int def_var(const char *n, nc_type t, std::vector<int> dims, bool null_dims = false) {
        int id = -99;
        const int nd = static_cast<int>(dims.size());
        const int err = t_.def_var(n, t, nd, null_dims ? nullptr : dims.data(), &id);
        return log(err, fmt("def_var(%s, %d, %s)", quote(n).c_str(), t, ints(dims).c_str()),
                   fmt("id=%d", id));
    }
    int def_var_nd(const char *n, nc_type t, int nd, const int *dims) {
        int id = -99;
        const int err = t_.def_var(n, t, nd, dims, &id);
        return log(err, fmt("def_var(%s, %d, nd=%d)", quote(n).c_str(), t, nd), fmt("id=%d", id));
    }
    int rename_dim(int id, const char *n) {
        return log(t_.rename_dim(id, n), fmt("rename_dim(%d, %s)", id, quote(n).c_str()));
    }
    int rename_var(int id, const char *n) {
        return log(t_.rename_var(id, n), fmt("rename_var(%d, %s)", id, quote(n).c_str()));
    }
    int put_att(int v, const char *n, nc_type t, int64_t len, const void *p, nc_type mem) {
        return log(t_.put_att(v, n, t, len, p, mem),
                   fmt("put_att(%d, %s, %d, %lld, mem=%d)", v, quote(n).c_str(), t,
                       (long long)len, mem));
    }
    int put_text(int v, const char *n, const char *s) {
        return put_att(v, n, NC_CHAR, static_cast<int64_t>(std::strlen(s)), s, NC_CHAR);
    }
    int del_att(int v, const char *n) {
        return log(t_.del_att(v, n), fmt("del_att(%d, %s)", v, quote(n).c_str()));
    }
    int rename_att(int v, const char *n, const char *nn) {
        return log(t_.rename_att(v, n, nn),
                   fmt("rename_att(%d, %s, %s)", v, quote(n).c_str(), quote(nn).c_str()));
    }
    int copy_att(int vin, const char *n, int fout, int vout) {
        return log(t_.copy_att(vin, n, fout, vout),
                   fmt("copy_att(%d, %s, file %d, %d)", vin, quote(n).c_str(), fout, vout));
    }
    int enddef() {
        const int err = t_.enddef();
        data_mode_[file_] |= err == NC_NOERR;
        return log(err, "enddef");
    }
    int enddef_with(int64_t h_minfree, int64_t v_align, int64_t v_minfree, int64_t r_align) {
        const int err = t_.enddef_with(h_minfree, v_align, v_minfree, r_align);
        data_mode_[file_] |= err == NC_NOERR;
        return log(err, fmt("_enddef(%lld, %lld, %lld, %lld)", (long long)h_minfree, (long long)v_align,
                            (long long)v_minfree, (long long)r_align));
    }
    int redef() {
        const int err = t_.redef();
        data_mode_[file_] &= err != NC_NOERR;
        return log(err, "redef");
    }
    int set_fill(int mode) {
        int old = -99;
        const int err = t_.set_fill(mode, &old);
        return log(err, fmt("set_fill(%d)", mode), fmt("old=%d", old));
    }
    int def_var_fill(int v, int no_fill, const void *p) {
        return log(t_.def_var_fill(v, no_fill, p),
                   fmt("def_var_fill(%d, %d, %s)", v, no_fill, p ? "value" : "NULL"));
    }
    int begin_indep() { return log(t_.begin_indep(), "begin_indep_data"); }
    int end_indep() { return log(t_.end_indep(), "end_indep_data"); }

    // ---- inquiries
    int inq(int *nd = nullptr, int *nv = nullptr, int *na = nullptr) {
        int a = -99, b = -99, c = -99, d = -99;
        const int err = t_.inq(&a, &b, &c, &d);
        log(err, "inq", fmt("ndims=%d nvars=%d ngatts=%d unlim=%d", a, b, c, d));
        int f = -99, r = -99, x = -99;
        const int e1 = t_.inq_format(&f), e2 = t_.inq_num_rec_vars(&r);
        const int e3 = t_.inq_num_fix_vars(&x);
        log(e1, "inq_format", fmt("%d", f));
        if (!opened_) {
            log(e2, "inq_num_rec_vars", fmt("%d", r));
            log(e3, "inq_num_fix_vars", fmt("%d", x));
        }
        if (nd) *nd = a;
        if (nv) *nv = b;
        if (na) *na = c;
        return err;
    }
    int inq_dim(int id) {
        char name[NC_MAX_NAME + 1] = "?";
        int64_t len = -99;
        const int err = t_.inq_dim(id, name, &len);
        return log(err, fmt("inq_dim(%d)", id),
                   fmt("%s len=%lld", quote(name).c_str(), (long long)len));
    }
    int inq_dimid(const char *n) {
        int id = -99;
        const int err = t_.inq_dimid(n, &id);
        return log(err, fmt("inq_dimid(%s)", quote(n).c_str()), fmt("id=%d", id));
    }
    int inq_var(int id, int *natts = nullptr) {
        char name[NC_MAX_NAME + 1] = "?";
        nc_type t = -99;
        int nd = -99, na = -99, dims[64];
        std::fill(dims, dims + 64, -99);
        const int err = t_.inq_var(id, name, &t, &nd, dims, &na);
        log(err, fmt("inq_var(%d)", id),
            fmt("%s type=%d ndims=%d dims=%s natts=%d", quote(name).c_str(), t, nd,
                ints(std::vector<int>(dims, dims + (nd > 0 && nd < 64 ? nd : 0))).c_str(), na));
        if (natts) *natts = na;
        return err;
    }
    int inq_varid(const char *n) {
        int id = -99;
        const int err = t_.inq_varid(n, &id);
        return log(err, fmt("inq_varid(%s)", quote(n).c_str()), fmt("id=%d", id));
    }
    int inq_varnatts(int v) {
        int n = -99;
        const int err = t_.inq_varnatts(v, &n);
        return log(err, fmt("inq_varnatts(%d)", v), fmt("%d", n));
    }
    int inq_att(int v, const char *n) {
        nc_type t = -99;
        int64_t len = -99;
        int id = -99;
        const int err = t_.inq_att(v, n, &t, &len);
        log(err, fmt("inq_att(%d, %s)", v, quote(n).c_str()),
            fmt("type=%d len=%lld", t, (long long)len));
        const int e2 = t_.inq_attid(v, n, &id);
        log(e2, fmt("inq_attid(%d, %s)", v, quote(n).c_str()), fmt("id=%d", id));
        return err;
    }
    int inq_attname(int v, int num, std::string *out = nullptr) {
        char name[NC_MAX_NAME + 1] = "?";
        const int err = t_.inq_attname(v, num, name);
        log(err, fmt("inq_attname(%d, %d)", v, num), quote(name));
        if (out) *out = name;
        return err;
    }
    // get_att into a buffer marked with 0xee; logs the bytes the attribute should fill plus 8.
    int get_att(int v, const char *n, nc_type mem) {
        unsigned char buf[8192];
        std::memset(buf, 0xee, sizeof buf);
        nc_type t = NC_NAT;
        int64_t len = 0;
        if (t_.inq_att(v, n, &t, &len) != NC_NOERR || len > 1000) len = 0;
        const int size = dtf::model::type_size(mem == NC_NAT ? t : mem);
        const int err = t_.get_att(v, n, buf, mem);
        return log(err, fmt("get_att(%d, %s, mem=%d)", v, quote(n).c_str(), mem),
                   hex(buf, static_cast<size_t>(len) * (size ? size : 1) + 8));
    }
    int inq_var_fill(int v) {
        unsigned char buf[16];
        std::memset(buf, 0xee, sizeof buf);
        int no_fill = -99;
        const int err = t_.inq_var_fill(v, &no_fill, buf);
        return log(err, fmt("inq_var_fill(%d)", v),
                   fmt("no_fill=%d value=%s", no_fill, hex(buf, 16).c_str()));
    }
    int access(Api api, int varid, std::vector<int64_t> start, std::vector<int64_t> count,
               std::vector<int64_t> stride, bool write, nc_type mem, bool coll = true) {
        Access a;
        a.api = api;
        a.varid = varid;
        a.start = start.empty() ? nullptr : start.data();
        a.count = count.empty() ? nullptr : count.data();
        a.stride = stride.empty() ? nullptr : stride.data();
        a.is_write = write;
        a.collective = coll;
        a.memtype = mem;
        const int err = t_.access(a);
        return log(err, fmt("%s%s(%d, start=%s count=%s stride=%s, mem=%d)%s",
                            write ? "put" : "get", kApi[static_cast<int>(api)], varid,
                            i64s(start).c_str(), i64s(count).c_str(), i64s(stride).c_str(), mem,
                            coll ? "_all" : ""));
    }

    int fill_var_rec(int v, int64_t rec) {
        return log(t_.fill_var_rec(v, rec), fmt("fill_var_rec(%d, %lld)", v, (long long)rec));
    }
    // Every variable's values in the file (data mode).
    void contents() {
        int nv = 0;
        t_.inq(nullptr, &nv, nullptr, nullptr);
        for (int v = 0; v < nv; ++v) {
            std::string values;
            const int err = t_.contents(v, &values);
            log(err, fmt("contents(%d)", v), values);
        }
    }

    // Everything an inquiring reader can see.
    void dump() {
        int nd = 0, nv = 0, na = 0;
        inq(&nd, &nv, &na);
        for (int d = 0; d < nd; ++d) inq_dim(d);
        atts(NC_GLOBAL, na);
        for (int v = 0; v < nv; ++v) {
            int natts = 0;
            inq_var(v, &natts);
            inq_var_fill(v);
            atts(v, natts);
        }
        if (data_mode_[file_]) layout(nv);
    }
    // Header size and extent, record size, variable offsets (data mode).
    void layout(int nvars) {
        int64_t a = -99, b = -99, c = -99;
        const int err = t_.inq_layout(&a, &b, &c);
        log(err, "inq_header_size/extent/recsize",
            fmt("%lld %lld %lld", (long long)a, (long long)b, (long long)c));
        for (int v = 0; v < nvars; ++v) {
            int64_t o = -99;
            const int e = t_.inq_varoffset(v, &o);
            log(e, fmt("inq_varoffset(%d)", v), fmt("%lld", (long long)o));
        }
        log(0, "file header", t_.file_header());
    }
    void atts(int v, int n) {
        for (int i = 0; i < n; ++i) {
            std::string name;
            if (inq_attname(v, i, &name) != NC_NOERR) continue;
            inq_att(v, name.c_str());
            get_att(v, name.c_str(), NC_NAT);
        }
    }

private:
    static constexpr const char *kApi[] = {"_var", "_var1", "_vara", "_vars", "_varm"};
    bool opened_ = false;
    bool data_mode_[2] = {false, false};
    int file_ = 0;
    static std::string ints(const std::vector<int> &v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
        return s + "]";
    }
    static std::string i64s(const std::vector<int64_t> &v) {
        std::string s = "[";
        for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
        return s + "]";
    }
    Target &t_;
};

// Runs `script` on a real file and on the model and compares the transcripts.
// DTF_ORACLE_ONLY=<name>: run only that script, printing both transcripts.
const char *g_only = nullptr;

template <class F>
void run(const std::string &name, int format, F script, int format2 = NC_FORMAT_CDF5) {
    if (g_only != nullptr && name != g_only) return;
    Check check;
    std::vector<std::string> real_lines, model_lines;
    {
        Real real(name, format, format2);
        Rec r(real);
        script(r);
        r.dump();
        real_lines = std::move(r.lines);
    }
    {
        Model model(format, format2);
        Rec m(model);
        script(m);
        m.dump();
        model_lines = std::move(m.lines);
    }
    const size_t n = std::max(real_lines.size(), model_lines.size());
    if (g_only != nullptr)
        for (size_t i = 0; i < n; ++i)
            std::printf("%-70s | %s\n", i < real_lines.size() ? real_lines[i].c_str() : "",
                        i < model_lines.size() ? model_lines[i].c_str() : "");
    for (size_t i = 0; i < n; ++i) {
        const std::string a = i < real_lines.size() ? real_lines[i] : "<end>";
        const std::string b = i < model_lines.size() ? model_lines[i] : "<end>";
        if (a == b) continue;
        fail("[%s, format %d] line %zu differs:\n  pnetcdf: %s\n  model:   %s", name.c_str(),
             format, i + 1, a.c_str(), b.c_str());
        for (size_t k = i >= 3 ? i - 3 : 0; k < i; ++k)
            std::fprintf(stderr, "  (before: %s)\n", real_lines[k].c_str());
        return;
    }
}

const int kFormats[] = {NC_FORMAT_CLASSIC, NC_FORMAT_CDF2, NC_FORMAT_CDF5};

template <class F> void run_all_formats(const std::string &name, F script) {
    for (int f : kFormats) run(name, f, script);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Scripts

namespace {

const nc_type kNumeric[] = {NC_BYTE, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE,
                            NC_UBYTE, NC_USHORT, NC_UINT, NC_INT64, NC_UINT64};

// Interesting values of each C type (boundaries of every other type, NaN, infinities, ...).
std::vector<std::vector<char>> specials(nc_type t) {
    std::vector<std::vector<char>> out;
    auto add = [&](auto v) {
        const char *p = reinterpret_cast<const char *>(&v);
        out.emplace_back(p, p + sizeof v);
    };
    switch (t) {
    case NC_BYTE: for (int v : {-128, -127, -1, 0, 127}) add(static_cast<signed char>(v)); break;
    case NC_UBYTE: for (int v : {0, 127, 128, 255}) add(static_cast<unsigned char>(v)); break;
    case NC_SHORT:
        for (int v : {-32768, -129, -128, -1, 127, 128, 255, 256, 32767}) add(short(v));
        break;
    case NC_USHORT:
        for (int v : {0, 127, 255, 256, 32767, 32768, 65535}) add(static_cast<unsigned short>(v));
        break;
    case NC_INT:
        for (int v : {INT32_MIN, -32769, -1, 0, 255, 65535, 65536, 16777217, INT32_MAX}) add(v);
        break;
    case NC_UINT:
        for (unsigned v : {0u, 65536u, 2147483647u, 2147483648u, UINT32_MAX}) add(v);
        break;
    case NC_INT64:
        for (long long v : {(long long)INT64_MIN, -2147483649LL, -1LL, 2147483648LL, 4294967295LL,
                            4294967296LL, 9007199254740993LL, (long long)INT64_MAX})
            add(v);
        break;
    case NC_UINT64:
        for (unsigned long long v : {0ULL, 4294967296ULL, 9223372036854775807ULL,
                                     9223372036854775808ULL, (unsigned long long)UINT64_MAX})
            add(v);
        break;
    case NC_FLOAT:
        for (float v : {NAN, -INFINITY, INFINITY, -1.5f, -0.5f, -0.0f, 127.5f, 255.9f,
                        2147483648.0f, 9223372036854775808.0f, 18446744073709551616.0f, 3e38f,
                        1e-40f})
            add(v);
        break;
    case NC_DOUBLE:
        for (double v : {(double)NAN, -(double)INFINITY, (double)INFINITY, -0.9, -128.9, 127.9,
                         255.9, 32767.9, 65535.9, 2147483647.9, -2147483648.9, 4294967295.9,
                         9223372036854775807.0, -9223372036854775808.0, 18446744073709551615.0,
                         3.4028234663852886e38, 3.4028235677973366e38, 1e-50, 1e300})
            add(v);
        break;
    default: break;
    }
    return out;
}

bool type_ok(int format, nc_type t) { return format == NC_FORMAT_CDF5 || t <= NC_DOUBLE; }

const char *const kLong256 =
    "a123456789b123456789c123456789d123456789e123456789f123456789g123456789h123456789i123456789"
    "j123456789k123456789l123456789m123456789n123456789o123456789p123456789q123456789r123456789"
    "s123456789t123456789u123456789v123456789w123456789x123456789y12345";

// Names: valid, invalid, at and beyond the length limit, UTF-8 (composed and decomposed).
std::vector<std::string> name_pool() {
    const std::string l256 = kLong256, l257 = l256 + "z";
    return {"x", "_x", "1x", "a b", "x.y-z+w", "tab\there", "ab ", "ab\t", " a", "-a", ".a", "a/b",
            "/", "a\x7f", "a\x01", "\xc3\xa9t\xc3\xa9", "e\xcc\x81", "\xc3\xa9", "\xff", "a\xc3",
            "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf", "\xf0\x9f\x98\x80", "\xe2\x82\xac",
            l256, l257, l256.substr(0, 255) + "/", l257 + "/", l257 + " ",
            l256.substr(0, 254) + "\xc3\xa9",
            "_FillValue", "title", ""};
}

void script_names(Rec &r) {
    const std::vector<std::string> names = name_pool();
    r.def_dim(nullptr, 1);
    r.def_var(nullptr, NC_INT, {});
    r.put_text(NC_GLOBAL, nullptr, "x");
    for (const std::string &n : names) {
        r.def_dim(n.c_str(), 2);
        r.def_var(n.c_str(), NC_INT, {});
        r.put_text(NC_GLOBAL, n.c_str(), "v");
        r.inq_dimid(n.c_str());
        r.inq_varid(n.c_str());
        r.inq_att(NC_GLOBAL, n.c_str());
    }
    r.inq_dimid(nullptr);
    r.inq_varid(nullptr);
    r.inq_att(NC_GLOBAL, nullptr);
    r.get_att(NC_GLOBAL, nullptr, NC_INT);
    // Renames to every name, then back.
    r.def_dim("d", 1);
    r.def_var("v", NC_INT, {});
    r.put_text(0, "a", "v");
    for (const std::string &n : names) {
        r.rename_dim(0, n.c_str());
        r.rename_var(0, n.c_str());
        r.rename_att(0, "a", n.c_str());
        r.rename_att(0, n.c_str(), "a");
    }
    r.rename_dim(0, nullptr);
    r.rename_var(0, nullptr);
    r.rename_att(0, nullptr, "b");
    r.rename_att(0, "a", nullptr);
    r.del_att(0, nullptr);
    r.copy_att(0, nullptr, 0, NC_GLOBAL);
}

void script_dims(Rec &r) {
    const int64_t lens[] = {-1, 1, 2147483644LL, 2147483645LL, 2147483646LL, 2147483647LL,
                            2147483648LL, 4294967292LL, 4294967293LL, 4294967295LL, 4294967296LL,
                            INT64_MAX, INT64_MIN};
    int i = 0;
    for (int64_t len : lens) r.def_dim(fmt("d%d", i++).c_str(), len);
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("t2", NC_UNLIMITED);
    r.def_dim("t", 5);
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("d0", -1);
    r.def_dim("d1", -1);
    r.def_dim("a/b", -1);
    r.def_dim("a/b", NC_UNLIMITED);
    r.def_dim("d1", 3);
    for (int d = -2; d < 20; ++d) r.inq_dim(d);
    r.inq_dimid("t");
    r.inq_dimid("nope");
    r.inq_dimid("a/b");
    r.inq_dimid("");
}

void script_vars(Rec &r) {
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 3);
    r.def_dim("y", 4);
    for (nc_type t = -1; t <= 14; ++t) r.def_var(fmt("v%d", t + 1).c_str(), t, {1});
    r.def_var("v99", 99, {1});
    r.def_var("s", NC_INT, {});
    r.def_var("rec", NC_DOUBLE, {0, 1, 2});
    r.def_var("rec_only", NC_CHAR, {0});
    r.def_var("unlim2", NC_INT, {1, 0});
    r.def_var("unlim3", NC_INT, {0, 0});
    r.def_var("bad1", NC_INT, {3});
    r.def_var("bad2", NC_INT, {-1});
    r.def_var("bad3", NC_INT, {1, 7});
    r.def_var("samedim", NC_INT, {1, 1, 1});
    r.def_var_nd("negnd", NC_INT, -1, nullptr);
    r.def_var("nulldims", NC_INT, {1}, true);
    r.def_var_nd("zeronull", NC_INT, 0, nullptr);
    // Several errors at once: which one wins.
    r.def_var("rec", 99, {7});
    r.def_var("rec", NC_INT, {7});
    r.def_var("rec", NC_INT64, {7});
    r.def_var("rec", NC_INT, {1, 0});
    r.def_var("a/b", 99, {7});
    r.def_var("a/b", NC_INT, {7});
    r.def_var("new", NC_UINT, {7});
    r.def_var("new", NC_UBYTE, {1, 0});
    r.def_var("new2", 99, {1}, true);
    r.def_var_nd("new3", 99, -1, nullptr);
    r.def_var("rec", NC_INT, {1}, true);
    r.def_var_nd("rec", NC_INT, -1, nullptr);
    // Sizes beyond 64 bits (checked at def_var, fill mode is off: enddef would write them).
    r.def_dim("huge", 2147483644);
    r.def_dim("huge2", 4294967292LL);
    r.def_dim("huge5", INT64_MAX / 4);
    for (int d = 3; d <= 5; ++d)
        for (nc_type t : {NC_BYTE, NC_SHORT, NC_INT, NC_DOUBLE}) {
            r.def_var(fmt("h%d_%d", d, t).c_str(), t, {d});
            r.def_var(fmt("hh%d_%d", d, t).c_str(), t, {d, d});
            r.def_var(fmt("hr%d_%d", d, t).c_str(), t, {0, d, d});
            r.def_var(fmt("hx%d_%d", d, t).c_str(), t, {1, d, 2, d});
        }
    for (int v = -3; v < 24; ++v) {
        r.inq_var(v);
        r.inq_varnatts(v);
    }
    r.inq_varid("rec");
    r.inq_varid("nope");
    r.inq_varid("");
}

// Every (memory type, external type, value): put, then the stored bytes (dump) and every get.
void script_conversions(Rec &r, int format) {
    int k = 0;
    for (nc_type m : kNumeric) {
        for (nc_type x : kNumeric)
            for (const std::vector<char> &v : specials(m))
                r.put_att(NC_GLOBAL, fmt("p%d", k++).c_str(), x, 1, v.data(), m);
        // Several values at once (some out of range for most targets).
        std::vector<char> all;
        for (const std::vector<char> &v : specials(m)) all.insert(all.end(), v.begin(), v.end());
        const int64_t n = static_cast<int64_t>(specials(m).size());
        for (nc_type x : kNumeric)
            r.put_att(NC_GLOBAL, fmt("p%d", k++).c_str(), x, n, all.data(), m);
    }
    k = 0;
    for (nc_type x : kNumeric) {
        if (!type_ok(format, x)) continue;
        for (const std::vector<char> &v : specials(x)) {
            const std::string name = fmt("g%d", k++);
            r.put_att(NC_GLOBAL, name.c_str(), x, 1, v.data(), NC_NAT);
            for (nc_type m : kNumeric) r.get_att(NC_GLOBAL, name.c_str(), m);
            r.get_att(NC_GLOBAL, name.c_str(), NC_CHAR);
        }
    }
    r.put_text(NC_GLOBAL, "text", "hello");
    for (nc_type m : kNumeric) r.get_att(NC_GLOBAL, "text", m);
    r.get_att(NC_GLOBAL, "text", NC_CHAR);
    r.put_text(NC_GLOBAL, "empty", "");
    r.get_att(NC_GLOBAL, "empty", NC_CHAR);
    r.get_att(NC_GLOBAL, "empty", NC_INT);
    const int zero[1] = {0};
    r.put_att(NC_GLOBAL, "empty_int", NC_INT, 0, zero, NC_INT);
    r.put_att(NC_GLOBAL, "empty_null", NC_DOUBLE, 0, nullptr, NC_INT);
    r.get_att(NC_GLOBAL, "empty_null", NC_CHAR);
    r.get_att(NC_GLOBAL, "empty_null", NC_SHORT);
}

void script_att_errors(Rec &r) {
    r.def_dim("x", 2);
    r.def_var("v", NC_INT, {0});
    r.def_var("c", NC_CHAR, {0});
    const int iv[3] = {1, 2, 3};
    const double dv[2] = {2.5, 3.5};
    for (int varid : {-3, -2, NC_GLOBAL, 0, 1, 2, 9}) {
        r.put_att(varid, "a", NC_INT, 3, iv, NC_INT);
        r.put_att(varid, "a/b", 99, 3, iv, NC_INT);
        r.put_att(varid, "b", 99, 3, iv, NC_INT);
        r.put_att(varid, "b", NC_STRING, 3, iv, NC_INT);
        r.put_att(varid, "b", NC_UINT64, -1, iv, NC_INT);
        r.put_att(varid, "b", NC_CHAR, -1, iv, NC_INT);
        r.put_att(varid, "b", NC_CHAR, 3, iv, NC_INT);
        r.put_att(varid, "b", NC_INT, -1, iv, NC_INT);
        r.put_att(varid, "b", NC_INT, 2, nullptr, NC_INT);
        r.put_att(varid, "b", NC_INT, 0, nullptr, NC_INT);
        r.put_att(varid, "t", NC_CHAR, -1, "abc", NC_CHAR);
        r.put_att(varid, "t", NC_CHAR, 2, nullptr, NC_CHAR);
        r.put_att(varid, "t", NC_CHAR, 3, "abc", NC_CHAR);
        r.put_att(varid, "t", NC_INT, 3, "abcdefghijkl", NC_NAT);
        r.put_att(varid, "_FillValue", NC_INT, 1, iv, NC_INT);
        r.put_att(varid, "_FillValue", NC_INT, 2, iv, NC_INT);
        r.put_att(varid, "_FillValue", NC_DOUBLE, 1, dv, NC_DOUBLE);
        r.put_att(varid, "_FillValue", NC_DOUBLE, 2, dv, NC_DOUBLE);
        r.put_att(varid, "_FillValue", NC_CHAR, 1, "z", NC_CHAR);
        r.put_att(varid, "_FillValue", 99, 1, iv, NC_INT);
        r.put_att(varid, "_FillValue", NC_INT, -1, iv, NC_INT);
        r.put_att(varid, "_FillValue", NC_INT, 1, nullptr, NC_INT);
        r.put_att(varid, "_FillValue", NC_UBYTE, 1, iv, NC_INT);
        r.get_att(varid, "a", NC_INT);
        r.get_att(varid, "a", NC_CHAR);
        r.get_att(varid, "nope", NC_INT);
        r.get_att(varid, "t", NC_CHAR);
        r.get_att(varid, "t", NC_DOUBLE);
        r.inq_att(varid, "a");
        r.inq_att(varid, "nope");
        r.inq_att(varid, "");
        for (int i = -1; i < 5; ++i) r.inq_attname(varid, i);
        r.inq_varnatts(varid);
        r.del_att(varid, "nope");
        r.del_att(varid, "a/b");
        r.del_att(varid, "");
    }
    // Replacing keeps the attribute number; deleting renumbers.
    r.put_text(NC_GLOBAL, "one", "1");
    r.put_text(NC_GLOBAL, "two", "2");
    r.put_text(NC_GLOBAL, "three", "3");
    r.put_att(NC_GLOBAL, "one", NC_DOUBLE, 1, dv, NC_DOUBLE);
    r.del_att(NC_GLOBAL, "two");
    r.put_text(NC_GLOBAL, "two", "22");
    r.del_att(NC_GLOBAL, "two");
    r.del_att(NC_GLOBAL, "two");
}

void script_fill(Rec &r) {
    r.def_dim("x", 2);
    r.def_var("i", NC_INT, {0});
    r.def_var("f", NC_FLOAT, {0});
    r.def_var("c", NC_CHAR, {0});
    const int iv = 7;
    const float fv = 1.25f;
    for (int v = -2; v < 5; ++v) r.inq_var_fill(v);
    r.set_fill(NC_FILL);
    r.def_var("after_fill", NC_DOUBLE, {0});
    r.set_fill(5);
    r.set_fill(-1);
    r.def_var_fill(1, 0, &fv);
    r.def_var_fill(0, 1, &iv);
    r.def_var_fill(2, 0, nullptr);
    r.def_var_fill(NC_GLOBAL, 0, nullptr);
    r.def_var_fill(9, 0, nullptr);
    r.def_var_fill(-2, 0, nullptr);
    for (int v = 0; v < 4; ++v) r.inq_var_fill(v);
    r.set_fill(NC_NOFILL);
    r.def_var("after_nofill", NC_SHORT, {0});
    for (int v = 0; v < 5; ++v) r.inq_var_fill(v);
    r.def_var_fill(0, 3, nullptr);
    r.def_var_fill(3, 0, nullptr);
    r.inq_var_fill(0);
    r.inq_var_fill(3);
    // _FillValue as an attribute: replaces, moves to the end when def_var_fill rewrites it.
    r.put_text(0, "first", "a");
    r.put_att(0, "_FillValue", NC_INT, 1, &iv, NC_INT);
    r.put_text(0, "last", "z");
    r.def_var_fill(0, 0, &iv);
    r.inq_attname(0, 2);
    r.def_var_fill(0, 1, nullptr);
    r.inq_var_fill(0);
    r.del_att(0, "_FillValue");
    r.inq_var_fill(0);
    // A _FillValue of another type or length made by renaming or copying.
    const short sv[3] = {1, 2, 3};
    r.put_att(1, "other", NC_SHORT, 3, sv, NC_SHORT);
    r.rename_att(1, "other", "_FillValue");
    r.inq_var_fill(1);
    r.put_att(NC_GLOBAL, "_FillValue", NC_SHORT, 3, sv, NC_SHORT);
    r.copy_att(NC_GLOBAL, "_FillValue", 0, 0);
    r.inq_var_fill(0);
    r.copy_att(NC_GLOBAL, "_FillValue", 0, 2);
    r.inq_var_fill(2);
    r.put_text(2, "_FillValue", "q");
    r.inq_var_fill(2);
    r.enddef();
    r.set_fill(NC_FILL);
    r.def_var_fill(0, 0, &iv);
    r.def_var_fill(NC_GLOBAL, 0, &iv);
    r.def_var_fill(9, 0, &iv);
    r.put_att(0, "_FillValue", NC_INT, 1, &iv, NC_INT);
    r.put_att(0, "_FillValue", NC_SHORT, 1, sv, NC_SHORT);
    r.redef();
    r.set_fill(NC_FILL);
    r.def_var("after_redef", NC_INT, {0});
    r.def_var_fill(0, 0, &iv);
    r.def_var_fill(0, 1, &iv);
    r.def_var_fill(0, 0, nullptr);
    r.inq_var_fill(0);
    r.put_att(0, "_FillValue", NC_INT, 1, &iv, NC_INT);
    r.put_att(0, "_FillValue", NC_INT, 2, &iv, NC_INT);
    r.put_att(0, "_FillValue", NC_SHORT, 1, sv, NC_SHORT);
    r.put_att(4, "_FillValue", NC_SHORT, 1, sv, NC_SHORT);
    r.def_var_fill(5, 0, &iv);
    r.def_var_fill(7, 0, &iv);
    r.rename_att(0, "_FillValue", "fv");
    r.rename_att(0, "fv", "_FillValue");
    r.del_att(0, "_FillValue");
    r.copy_att(NC_GLOBAL, "_FillValue", 0, 0);
    r.enddef();
}

void script_data_mode(Rec &r) {
    r.def_dim("x", 2);
    r.def_dim("yy", 3);
    r.def_var("v", NC_INT, {0});
    r.def_var("w", NC_INT, {0});
    r.put_text(NC_GLOBAL, "title", "hello");
    r.put_text(0, "units", "m");
    r.enddef();
    r.enddef();
    const short sv[5] = {1, 2, 3, 4, 5};
    const double dv[2] = {1, 2};
    r.put_text(NC_GLOBAL, "title", "HELLO");
    r.put_text(NC_GLOBAL, "title", "HELLO!!!");
    r.put_text(NC_GLOBAL, "title", "HELLO!!!!");
    r.put_att(NC_GLOBAL, "title", NC_SHORT, 4, sv, NC_SHORT);
    r.put_att(NC_GLOBAL, "title", NC_SHORT, 5, sv, NC_SHORT);
    r.put_att(NC_GLOBAL, "title", NC_DOUBLE, 1, dv, NC_DOUBLE);
    r.put_att(NC_GLOBAL, "title", NC_DOUBLE, 2, dv, NC_DOUBLE);
    r.put_text(0, "units", "km");
    r.put_text(0, "units", "kms!");
    r.put_text(0, "units", "kms!!");
    r.put_text(0, "newatt", "x");
    r.put_att(0, "_FillValue", NC_INT, 1, sv, NC_SHORT);
    r.put_att(9, "units", NC_INT, 1, sv, NC_SHORT);
    r.put_att(0, "a/b", NC_INT, 1, sv, NC_SHORT);
    r.put_att(0, "units", 99, 1, sv, NC_SHORT);
    r.del_att(0, "units");
    r.del_att(0, "nope");
    r.del_att(9, "units");
    r.rename_att(0, "units", "u");
    r.rename_att(0, "u", "units");
    r.rename_att(0, "u", "w");
    r.rename_att(0, "nope", "w");
    r.rename_att(0, "u", "a/b");
    r.rename_att(9, "u", "w");
    r.rename_dim(0, "z");
    r.rename_dim(0, "zz");
    r.rename_dim(0, "yy");
    r.rename_dim(1, "y");
    r.rename_dim(7, "q");
    r.rename_dim(0, "a/b");
    r.rename_var(0, "a");
    r.rename_var(0, "aa");
    r.rename_var(0, "w");
    r.rename_var(9, "b");
    r.rename_var(0, "");
    r.def_dim("new", 1);
    r.def_dim("a/b", -1);
    r.def_var("new", NC_INT, {});
    r.def_var("a/b", 99, {9});
    r.set_fill(NC_FILL);
    r.set_fill(77);
    r.copy_att(NC_GLOBAL, "title", 0, 0);
    r.copy_att(NC_GLOBAL, "title", 0, NC_GLOBAL);
    r.redef();
    r.redef();
    r.put_text(NC_GLOBAL, "title", "a much longer title");
    r.rename_dim(0, "a_much_longer_name");
    r.enddef();
}

// Copies within a file and into a second file (CDF-5, or CDF-1 for the CDF-5 run).
void script_copy(Rec &r) {
    for (int f = 1; f >= 0; --f) {
        r.select(f);
        r.def_dim("x", 2);
        r.def_var("i", NC_INT, {0});
        r.def_var("d", NC_DOUBLE, {0});
    }
    const int iv = 5;
    const double dv = 0.5;
    r.put_text(NC_GLOBAL, "title", "t");
    r.put_att(0, "five", NC_INT, 1, &iv, NC_INT);
    // (only the double variable has one: a _FillValue copied to a variable of a larger type
    // makes PnetCDF read past the attribute)
    r.put_att(1, "_FillValue", NC_DOUBLE, 1, &dv, NC_DOUBLE);
    r.put_att(1, "scale", NC_DOUBLE, 1, &dv, NC_DOUBLE);
    r.put_text(1, "units", "m");
    for (int vin : {-2, NC_GLOBAL, 0, 1, 7})
        for (int vout : {-2, NC_GLOBAL, 0, 1, 7})
            for (int f : {0, 1})
                for (const char *n : {"title", "_FillValue", "scale", "nope", "a/b"})
                    r.copy_att(vin, n, f, vout);
    r.copy_att(1, "scale", 0, 1);
    r.copy_att(1, "units", 0, 1);
    r.inq_attname(1, 0);
    r.inq_attname(1, 1);
    r.enddef();
    r.select(1);
    r.enddef();
    r.select(0);
    r.copy_att(1, "units", 1, 1);
    r.copy_att(1, "units", 1, 0);
    r.copy_att(NC_GLOBAL, "title", 1, NC_GLOBAL);
    r.copy_att(1, "units", 0, 1);
    r.copy_att(1, "units", 0, 0);
    r.select(1);
    r.dump();
    r.select(0);
}

void script_copy_types(Rec &r) {
    // From this file (CDF-5) into a CDF-1 file: CDF-5 types cannot go there.
    r.select(1);
    r.def_dim("x", 2);
    r.def_var("i", NC_INT, {0});
    r.select(0);
    r.def_dim("x", 2);
    r.def_var("i", NC_INT64, {0});
    const long long ll = 5;
    const unsigned char ub = 200;
    r.put_att(NC_GLOBAL, "ll", NC_INT64, 1, &ll, NC_INT64);
    r.put_att(NC_GLOBAL, "ub", NC_UBYTE, 1, &ub, NC_UBYTE);
    r.put_att(0, "_FillValue", NC_INT64, 1, &ll, NC_INT64);
    r.copy_att(NC_GLOBAL, "ll", 1, NC_GLOBAL);
    r.copy_att(NC_GLOBAL, "ub", 1, NC_GLOBAL);
    r.copy_att(0, "_FillValue", 1, 0);
    r.copy_att(0, "_FillValue", 1, NC_GLOBAL);
    r.select(1);
    r.dump();
    r.select(0);
}

// Start/count/stride checks of the data calls, in each mode.
void script_access(Rec &r) {
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 3);
    r.def_dim("z", 0 + 1);
    r.def_var("rec", NC_INT, {0, 1});
    r.def_var("fix", NC_DOUBLE, {1, 2});
    r.def_var("txt", NC_CHAR, {0});
    r.def_var("sc", NC_INT, {});
    r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, true, NC_INT);
    r.enddef();
    using V = std::vector<int64_t>;
    const V starts[] = {{0, 0}, {0, 3}, {0, 4}, {-1, 0}, {0, -1}, {2, 0}, {5, 2}, {3, 3}};
    const V counts[] = {{1, 1}, {0, 0}, {1, 3}, {1, 4}, {2, 0}, {0, 1}, {-1, 1}, {1, -1}, {3, 2}};
    const V strides[] = {{}, {1, 1}, {1, 2}, {2, 1}, {0, 1}, {1, -1}, {3, 3}};
    for (int varid : {0, 1}) {
        for (bool write : {true, false}) {
            for (const V &s : starts) {
                r.access(Api::var1, varid, s, {}, {}, write, NC_INT);
                for (const V &c : counts) {
                    r.access(Api::vara, varid, s, c, {}, write, NC_DOUBLE);
                    for (const V &st : strides) r.access(Api::vars, varid, s, c, st, write, NC_INT);
                }
            }
            r.access(Api::var, varid, {}, {}, {}, write, NC_INT);
            r.access(Api::vara, varid, {}, {1, 1}, {}, write, NC_INT);
            r.access(Api::vara, varid, {0, 0}, {}, {}, write, NC_INT);
            r.access(Api::varm, varid, {0, 0}, {1, 1}, {1, 2}, write, NC_INT);
            r.access(Api::varm, varid, {0, 0}, {1, 1}, {0, 2}, write, NC_INT);
            r.inq_dim(0);
        }
    }
    for (bool write : {true, false}) {
        r.access(Api::vara, 2, {0}, {2}, {}, write, NC_CHAR);
        r.access(Api::vara, 2, {0}, {2}, {}, write, NC_INT);
        r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, write, NC_CHAR);
        r.access(Api::vara, 3, {}, {}, {}, write, NC_INT);
        r.access(Api::var1, 3, {}, {}, {}, write, NC_INT);
        r.access(Api::vars, 3, {5}, {5}, {0}, write, NC_INT);
        r.access(Api::vara, 9, {0}, {1}, {}, write, NC_INT);
        r.access(Api::vara, -1, {0}, {1}, {}, write, NC_INT);
        r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, write, NC_INT, false);
    }
    r.begin_indep();
    r.begin_indep();
    for (bool write : {true, false}) {
        r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, write, NC_INT, false);
        r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, write, NC_INT, true);
        r.access(Api::vara, 9, {0, 0}, {1, 1}, {}, write, NC_INT, true);
        r.access(Api::vara, 0, {7, 0}, {1, 1}, {}, write, NC_INT, false);
    }
    r.end_indep();
    r.end_indep();
    r.access(Api::vara, 0, {9, 0}, {1, 1}, {}, true, NC_INT);
    r.access(Api::vara, 0, {9, 0}, {2, 1}, {}, false, NC_INT);
    r.access(Api::vara, 0, {10, 0}, {0, 1}, {}, false, NC_INT);
    r.access(Api::vara, 0, {11, 0}, {0, 1}, {}, false, NC_INT);
    r.inq_dim(0);
    r.redef();
    r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, false, NC_INT);
    r.begin_indep();
    r.end_indep();
    r.enddef();
}

// Variables too large for CDF-1/CDF-2 (the last one may be).
void script_vlens(Rec &r, int variant) {
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("big", 1500000000LL);
    r.def_dim("x", 2);
    switch (variant) {
    case 0: r.def_var("a", NC_INT, {1}); break;                           // large, last fixed
    case 1: r.def_var("a", NC_INT, {1}); r.def_var("b", NC_BYTE, {2}); break; // not last
    case 2: r.def_var("a", NC_INT, {1}); r.def_var("b", NC_INT, {1}); break;  // two
    case 3: r.def_var("a", NC_INT, {1}); r.def_var("r", NC_BYTE, {0}); break; // with a record var
    case 4: r.def_var("r", NC_INT, {0, 1}); break;                            // large record, last
    case 5: r.def_var("r", NC_INT, {0, 1}); r.def_var("s", NC_INT, {0}); break;
    case 6: r.def_var("a", NC_SHORT, {1}); r.def_var("b", NC_SHORT, {1}); break;
    case 7: r.def_var("a", NC_DOUBLE, {1, 2}); break;
    case 8: r.def_var("a", NC_SHORT, {1}); r.def_var("b", NC_BYTE, {1, 2}); break;
    // Each small enough, but beyond 2^31 bytes in all (CDF-1 offsets are 32-bit).
    case 9:
        for (const char *n : {"a", "b", "c"}) r.def_var(n, NC_BYTE, {1});
        break;
    default:
        for (const char *n : {"a", "b"}) r.def_var(n, NC_BYTE, {1});
        r.def_var("r", NC_BYTE, {0, 2}); // (a record variable beyond 2^31 bytes)
        break;
    }
    r.enddef();
    r.redef();
    r.def_var("late", NC_BYTE, {2});
    r.enddef();
}

// A complete file, then reopened read-only (every modification refused) and read-write.
void script_reopen(Rec &r) {
    r.def_dim("time", NC_UNLIMITED);
    r.def_dim("lat", 3);
    r.def_var("temp", NC_FLOAT, {0, 1});
    r.def_var("lat", NC_DOUBLE, {1});
    r.put_text(NC_GLOBAL, "title", "reopen");
    const float fv = -1;
    r.def_var_fill(0, 0, &fv);
    r.set_fill(NC_FILL);
    r.enddef();
    r.access(Api::vara, 0, {0, 0}, {4, 3}, {}, true, NC_DOUBLE);
    r.reopen(false);
    r.dump();
    const int iv = 1;
    r.def_dim("n", 1);
    r.def_var("n", NC_INT, {});
    r.put_att(NC_GLOBAL, "title", NC_CHAR, 6, "REOPEN", NC_CHAR);
    r.put_att(NC_GLOBAL, "a/b", 99, 1, &iv, NC_INT);
    r.del_att(NC_GLOBAL, "title");
    r.rename_att(NC_GLOBAL, "title", "t");
    r.rename_dim(0, "t");
    r.rename_var(0, "t");
    r.copy_att(NC_GLOBAL, "title", 0, 0);
    r.redef();
    r.enddef();
    r.set_fill(NC_FILL);
    r.def_var_fill(0, 0, &fv);
    r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, true, NC_DOUBLE);
    r.access(Api::vara, 0, {3, 0}, {1, 3}, {}, false, NC_DOUBLE);
    r.access(Api::vara, 0, {4, 0}, {1, 3}, {}, false, NC_DOUBLE);
    r.begin_indep();
    r.access(Api::vara, 0, {0, 0}, {1, 1}, {}, false, NC_DOUBLE, false);
    r.end_indep();
    r.reopen(true);
    r.dump();
    r.put_att(NC_GLOBAL, "title", NC_CHAR, 6, "REOPEN", NC_CHAR);
    r.rename_var(0, "t");
    r.access(Api::vara, 0, {6, 0}, {1, 1}, {}, true, NC_DOUBLE);
    r.redef();
    r.def_dim("n", 1);
    r.set_fill(NC_NOFILL);
    r.enddef();
    r.reopen(true);
}

// The header extent grows with the header, never shrinks, and survives reopening.
void script_extent(Rec &r) {
    const std::string big(700, 'a');
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 3);
    r.def_var("f", NC_BYTE, {1});
    r.def_var("r", NC_SHORT, {0, 1});
    r.enddef();
    r.dump();
    r.redef();
    r.put_text(NC_GLOBAL, "big", big.c_str());
    r.enddef();
    r.dump();
    r.redef();
    r.del_att(NC_GLOBAL, "big");
    r.def_var("g", NC_DOUBLE, {1});
    r.enddef();
    r.dump();
    r.reopen(true);
    r.dump();
    r.redef();
    r.def_var("h", NC_INT, {0});
    r.enddef();
}

// The layout under alignment hints (given at create and open) and ncmpi__enddef's free space and
// alignment arguments: fixed-size and record variables of odd sizes, a redefinition that adds to
// each section and grows the header, a reopen and one more redefinition.
void script_alignment(Rec &r, unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int64_t>(rng() % static_cast<unsigned>(n)); };
    const int64_t sizes[] = {0, 1, 4, 6, 100, 512, 1000};
    auto enddef = [&] {
        if (pick(2)) return r.enddef();
        return r.enddef_with(sizes[pick(7)], sizes[pick(7)], sizes[pick(7)], sizes[pick(7)]);
    };
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 1 + pick(7));
    r.def_dim("y", 1 + pick(5));
    r.def_var("a", NC_BYTE, {1});
    r.def_var("r", NC_SHORT, {0, 2});
    r.def_var("b", NC_DOUBLE, {2, 1});
    if (pick(2)) r.def_var("s", NC_CHAR, {0, 1});
    enddef();
    r.dump();
    r.redef();
    r.put_text(NC_GLOBAL, "grows", std::string(static_cast<size_t>(pick(600)), 'g').c_str());
    r.def_var("c", NC_INT, {1});
    r.def_var("u", NC_FLOAT, {0});
    enddef();
    r.dump();
    r.reopen(true);
    r.dump();
    r.redef();
    r.def_var("d", NC_SHORT, {2});
    enddef();
    r.dump();
}

// The fill values PnetCDF writes: at enddef, every variable in fill mode defined since define mode
// was entered (fixed-size ones whole, record ones over the records there are); ncmpi_fill_var_rec on
// a record; nothing on records that puts add. Then redefinitions after data, and after a reopen.
void script_fill_values(Rec &r) {
    const int ifill = 7, nofill_ifill = -5;
    const short sfill = 300;
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 3);
    r.set_fill(NC_FILL);
    r.def_var("a", NC_INT, {1});          // 0: fixed, default fill
    r.def_var("b", NC_FLOAT, {1});        // 1: fixed, NC_NOFILL
    r.def_var_fill(1, 1, nullptr);
    r.def_var("c", NC_SHORT, {1});        // 2: fixed, custom fill by def_var_fill
    r.def_var_fill(2, 0, &sfill);
    r.def_var("r", NC_INT, {0, 1});       // 3: record, _FillValue attribute
    r.put_att(3, "_FillValue", NC_INT, 1, &ifill, NC_INT);
    r.def_var("s", NC_DOUBLE, {0, 1});    // 4: record, default fill
    r.def_var("n", NC_BYTE, {0, 1});      // 5: record, NC_NOFILL without _FillValue
    r.def_var_fill(5, 1, nullptr);
    r.def_var("m", NC_INT, {0, 1});       // 6: record, NC_NOFILL with a _FillValue attribute
    r.put_att(6, "_FillValue", NC_INT, 1, &nofill_ifill, NC_INT);
    r.def_var_fill(6, 1, nullptr);
    r.def_var("ch", NC_CHAR, {1});        // 7: fixed text, default fill
    r.enddef();
    r.contents();
    // Records added by puts are not filled; a put of zeros over a filled part.
    r.access(Api::vara, 3, {2, 0}, {1, 2}, {}, true, NC_INT);
    r.access(Api::vara, 0, {1}, {1}, {}, true, NC_INT);
    r.contents();
    // fill_var_rec: the record whole, over what was written; beyond the records it adds them.
    r.fill_var_rec(3, 2);
    r.fill_var_rec(3, 0);
    r.fill_var_rec(4, 1);
    r.fill_var_rec(5, 0);                 // NC_ENOTFILL
    r.fill_var_rec(6, 1);                 // filled all the same (it has a _FillValue)
    r.fill_var_rec(0, 0);                 // NC_ENOTRECVAR
    r.fill_var_rec(4, 4);                 // 5 records now
    r.access(Api::vars, 4, {0, 0}, {2, 2}, {3, 2}, true, NC_DOUBLE);
    r.contents();
    r.begin_indep();
    r.fill_var_rec(3, 0);                 // NC_EINDEP
    r.end_indep();
    // A redefinition after data: only the new variables in fill mode are filled (a record one over
    // the 5 records), set_fill in define mode turns the mode of every variable.
    r.redef();
    r.def_var("new_r", NC_SHORT, {0, 1}); // 8
    r.def_var("new_f", NC_INT, {1});      // 9
    r.fill_var_rec(3, 0);                 // NC_EINDEFINE
    r.enddef();
    r.contents();
    r.redef();
    r.set_fill(NC_NOFILL);
    r.def_var("late_r", NC_INT, {0, 1});  // 10: NC_NOFILL
    r.def_var("late_f", NC_INT, {1});     // 11
    r.def_var_fill(11, 0, &ifill);
    r.enddef();
    // (an NC_NOFILL variable added after data holds in PnetCDF's file what the data it moved left
    // there: undefined, written whole before it is compared)
    r.access(Api::var, 10, {}, {}, {}, true, NC_INT);
    r.contents();
    // After a reopen (NC_NOFILL is the default again): a new variable in fill mode by def_var_fill.
    r.reopen(true);
    r.redef();
    r.def_var("opened", NC_INT, {0, 1});  // 12
    r.def_var_fill(12, 0, nullptr);
    r.enddef();
    r.fill_var_rec(12, 5);
    r.contents();
}

// Random sequences of definitions, fill settings, puts and fill_var_rec, then the values.
void script_fill_random(Rec &r, unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const nc_type types[] = {NC_BYTE, NC_CHAR, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE};
    const unsigned char custom[8] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88}; // (any type's first bytes)
    r.def_dim("t", NC_UNLIMITED);
    r.def_dim("x", 1 + pick(4));
    int nvars = 0;
    for (int round = 0; round < 3; ++round) {
        if (round) r.redef();
        if (pick(2)) r.set_fill(pick(2) ? NC_FILL : NC_NOFILL);
        for (int k = pick(3) + (round == 0); k > 0; --k) {
            const nc_type t = types[pick(6)];
            r.def_var(fmt("v%d", nvars).c_str(), t, pick(2) ? std::vector<int>{0, 1} : std::vector<int>{1});
            // (a variable added after data in NC_NOFILL mode holds what the data PnetCDF moved left there
            // in its file, which is undefined: in fill mode here)
            if (round) r.def_var_fill(nvars, 0, t != NC_CHAR && pick(2) ? custom : nullptr);
            else if (t != NC_CHAR && pick(3) == 0) r.def_var_fill(nvars, pick(2), pick(2) ? custom : nullptr);
            ++nvars;
        }
        r.enddef();
        for (int k = pick(4); k > 0; --k) {
            const int v = pick(nvars);
            if (pick(2)) r.fill_var_rec(v, pick(4));
            else r.access(Api::vara, v, {pick(3), 0}, {1, 1}, {}, true, NC_INT); // (a fixed one: NC_EINVALCOORDS
                                                                                // or its element; text: NC_ECHAR)
        }
        r.contents();
    }
}

// Random sequences from small pools of valid and invalid arguments (the same sequence for both
// sides: nothing depends on results).
void script_random(Rec &r, unsigned seed) {
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    const char *names[] = {"a", "b", "c", "t", "x", "_FillValue", "a/b", "", "1", "title",
                           "e\xcc\x81", "\xc3\xa9"}; // (NFC: the last two are the same name)
    const nc_type types[] = {NC_BYTE, NC_CHAR, NC_SHORT, NC_INT, NC_FLOAT, NC_DOUBLE, NC_UBYTE,
                             NC_INT64, NC_UINT64, 0, 99};
    const int64_t lens[] = {0, 1, 2, 3, -1}; // (no large ones: enddef in fill mode writes them)
    auto name = [&] { return names[pick(12)]; };
    auto id = [&] { return pick(7) - 2; };
    auto type = [&] { return types[pick(11)]; };
    std::vector<std::vector<char>> vals;
    for (nc_type t : kNumeric)
        for (const std::vector<char> &v : specials(t)) vals.push_back(v);
    for (int step = 0; step < 150; ++step) {
        const int op = pick(31);
        char buf[64] = {};
        const std::vector<char> &v = vals[pick(static_cast<int>(vals.size()))];
        std::memcpy(buf, v.data(), v.size());
        std::memcpy(buf + 8, v.data(), v.size());
        const nc_type mems[] = {NC_CHAR, NC_NAT, NC_BYTE, NC_SHORT, NC_INT, NC_DOUBLE, NC_FLOAT,
                                NC_UBYTE, NC_INT64, NC_UINT64, NC_USHORT, NC_UINT};
        const nc_type mem = v.size() == 8 ? (pick(2) ? NC_DOUBLE : NC_INT64)
                          : v.size() == 4 ? (pick(2) ? NC_INT : NC_FLOAT)
                          : v.size() == 2 ? NC_SHORT : NC_BYTE;
        switch (op) {
        case 0: case 1: r.def_dim(name(), lens[pick(5)]); break;
        case 2: case 3: {
            std::vector<int> dims;
            for (int k = pick(3); k > 0; --k) dims.push_back(id());
            r.def_var(name(), type(), dims);
            break;
        }
        case 4: r.rename_dim(id(), name()); break;
        case 5: r.rename_var(id(), name()); break;
        case 6: case 7: case 8: {
            const nc_type m = pick(4) == 0 ? mems[pick(12)] : mem;
            r.put_att(id(), name(), type(), pick(5), buf, m);
            break;
        }
        case 9: r.put_text(id(), name(), pick(2) ? "abc" : "abcdefgh"); break;
        case 10: r.del_att(id(), name()); break;
        // (no _FillValue made by renaming or copying: one of a smaller type than its variable
        // makes PnetCDF's inq_var_fill read past the attribute)
        case 11: r.rename_att(id(), name(), names[pick(5)]); break;
        case 12: r.copy_att(id(), names[pick(5)], pick(2), id()); break;
        case 13: r.enddef(); break;
        case 14: r.redef(); break;
        case 15: r.set_fill(pick(3) == 0 ? 3 : (pick(2) ? NC_FILL : NC_NOFILL)); break;
        case 16: r.def_var_fill(id(), pick(3), pick(2) ? buf : nullptr); break;
        case 17: r.inq_var_fill(id()); break;
        case 18: r.get_att(id(), name(), mems[pick(12)]); break;
        case 19: r.inq_att(id(), name()); break;
        case 20: r.inq_attname(id(), pick(4) - 1); break;
        case 21: r.inq_dim(id()); break;
        case 22: r.inq_var(id()); break;
        case 23: pick(2) ? r.begin_indep() : r.end_indep(); break;
        case 24: case 25: {
            std::vector<int64_t> s, c, st; // as long as any variable's rank
            for (int k = 0; k < 2; ++k) {
                s.push_back(pick(5) - 1);
                c.push_back(pick(4) - 1);
                st.push_back(pick(3));
            }
            const Api api = static_cast<Api>(pick(5));
            r.access(api, id(), s, c, api == Api::vars ? st : std::vector<int64_t>{}, pick(2),
                     pick(3) == 0 ? NC_CHAR : NC_INT, pick(4) != 0);
            break;
        }
        case 26: r.inq_dimid(name()); break;
        case 27: r.inq_varid(name()); break;
        case 28: r.inq_varnatts(id()); break;
        case 29:
            if (pick(4) == 0) r.reopen(pick(2));
            break;
        default: r.inq(); break;
        }
    }
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Checks without scripts

namespace {

bool pnetcdf_nfc(const std::string &name, std::string *out) {
    char *p = nullptr;
    if (ncmpii_utf8_normalize(name.c_str(), &p) != NC_NOERR || p == nullptr) return false;
    *out = p;
    std::free(p);
    return true;
}

// check_name against PnetCDF's own function on the name pool and on random byte strings.
void test_check_name() {
    std::vector<std::string> names = name_pool();
    std::mt19937 rng(7);
    const unsigned char bytes[] = {'a', 'Z', '0', '_', ' ', '\t', '/', '-', 0x7f, 0x01, 0x80, 0xbf,
                                   0xc2, 0xc3, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0,
                                   0x90};
    for (int i = 0; i < 20000; ++i) {
        std::string s;
        // Short ones, and some around the NC_MAX_NAME limit.
        const int len = static_cast<int>(i < 19000 ? rng() % 8 + 1 : 250 + rng() % 12);
        for (int k = 0; k < len; ++k) s += static_cast<char>(bytes[rng() % sizeof bytes]);
        names.push_back(s);
    }
    Check check;
    int bad = 0;
    for (const std::string &n : names) {
        for (int ver : {1, 2, 5}) {
            const int want = ncmpii_check_name(n.c_str(), ver);
            const int got = dtf::model::check_name(n.c_str());
            if (want != got && ++bad <= 5)
                fail("check_name(%s) = %d, PnetCDF says %d", quote(n.c_str()).c_str(), got, want);
        }
    }
}

void test_cmode() {
    const int cmodes[] = {0, NC_64BIT_OFFSET, NC_64BIT_DATA, NC_64BIT_OFFSET | NC_64BIT_DATA,
                          NC_NETCDF4, NC_CLASSIC_MODEL, NC_CLASSIC_MODEL | NC_64BIT_OFFSET,
                          NC_CLASSIC_MODEL | NC_64BIT_DATA, NC_NETCDF4 | NC_CLASSIC_MODEL,
                          NC_NETCDF4 | NC_64BIT_DATA, NC_32BIT, NC_SHARE | NC_NOCLOBBER, NC_WRITE};
    const std::string path = g_dir + "/cmode.nc";
    for (int def : {NC_FORMAT_CLASSIC, NC_FORMAT_CDF2, NC_FORMAT_CDF5}) {
        int old;
        ncmpi_set_default_format(def, &old);
        for (int cmode : cmodes) {
            std::remove(path.c_str());
            int nc, want_format = -1, got_format = -1;
            const int want = ncmpi_create(MPI_COMM_SELF, path.c_str(), cmode, MPI_INFO_NULL, &nc);
            if (want == NC_NOERR) {
                ncmpi_inq_format(nc, &want_format);
                ncmpi_close(nc);
            }
            const int got = dtf::model::format_from_cmode(cmode, def, &got_format);
            Check check;
            if (want != got || want_format != got_format)
                fail("format_from_cmode(0x%x, %d) = %d/%d, PnetCDF %d/%d", cmode, def, got,
                     got_format, want, want_format);
        }
        ncmpi_set_default_format(old, nullptr);
    }
    std::remove(path.c_str());
}

// A header with some of everything, its encoding decoded, truncated and corrupted.
void test_decode() {
    Header h(NC_FORMAT_CDF5);
    h.set_fill(NC_FILL, nullptr); // (decode gives every variable no_fill 0, as ncmpi_open)
    int t, x, v;
    h.def_dim("time", NC_UNLIMITED, &t);
    h.def_dim("x", 4, &x);
    const int dims[2] = {t, x};
    h.def_var("v", NC_UINT64, 2, dims, &v);
    h.def_var("s", NC_CHAR, 0, nullptr, nullptr);
    const double d[3] = {1.5, -2, 1e300};
    h.put_att(NC_GLOBAL, "title", NC_CHAR, 5, "hello", NC_CHAR);
    h.put_att(v, "scale", NC_DOUBLE, 3, d, NC_DOUBLE);
    h.put_att(v, "_FillValue", NC_UINT64, 1, d, NC_DOUBLE);
    h.enddef();
    h.set_numrecs(7);
    const std::vector<char> bytes = h.encode();
    Header back;
    Check check;
    if (Header::decode(bytes.data(), bytes.size(), &back) != NC_NOERR || back.encode() != bytes)
        fail("encode/decode round trip");
    int decoded_ok = 0;
    for (size_t n = 0; n < bytes.size(); ++n) {
        Header out;
        if (Header::decode(bytes.data(), n, &out) == NC_NOERR) ++decoded_ok;
        std::vector<char> corrupt = bytes;
        for (int bit = 0; bit < 8; ++bit) {
            corrupt[n] = static_cast<char>(bytes[n] ^ (1 << bit));
            Header c, c2;
            if (Header::decode(corrupt.data(), corrupt.size(), &c) == NC_NOERR) {
                // Accepted (a name, a value, a length that is still valid): a consistent header.
                const std::vector<char> again = c.encode();
                const int err = Header::decode(again.data(), again.size(), &c2);
                if (err != NC_NOERR || c2.encode() != again)
                    fail("corrupted byte %zu bit %d decodes inconsistently", n, bit);
            }
        }
        // Large counts and lengths must fail without allocating.
        corrupt = bytes;
        corrupt[n] = static_cast<char>(0xff);
        Header c;
        (void)Header::decode(corrupt.data(), corrupt.size(), &c);
    }
    if (decoded_ok != 0) fail("%d truncations decoded", decoded_ok);
}

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    unsigned seeds = 1000;
    if (argc > 1) seeds = static_cast<unsigned>(std::atoi(argv[1]));
    const char *tmp = std::getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/dtf_model_oracle_XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) {
        std::perror("mkdtemp");
        return 1;
    }
    g_dir = dir;
    dtf::model::set_name_normalizer(pnetcdf_nfc);
    g_only = std::getenv("DTF_ORACLE_ONLY");

    test_check_name();
    test_cmode();
    test_decode();
    run_all_formats("names", script_names);
    run_all_formats("dims", script_dims);
    run_all_formats("vars", script_vars);
    for (int f : kFormats) run("conversions", f, [f](Rec &r) { script_conversions(r, f); });
    run_all_formats("att_errors", script_att_errors);
    run_all_formats("fill", script_fill);
    // (PnetCDF 1.12.3 checks ncmpi_fill_var_rec's mode and arguments only in its safe mode; without
    // it, it fills a record in define mode too, or crashes on a bad varid: dtf always checks.)
    setenv("PNETCDF_SAFE_MODE", "1", 1);
    run_all_formats("fill_values", script_fill_values);
    for (unsigned seed = 1; seed <= 30; ++seed)
        run(fmt("fill_random%u", seed), kFormats[seed % 3], [seed](Rec &r) { script_fill_random(r, seed); });
    unsetenv("PNETCDF_SAFE_MODE");
    run_all_formats("data_mode", script_data_mode);
    for (int f : kFormats) {
        const int other = f == NC_FORMAT_CDF5 ? NC_FORMAT_CLASSIC : NC_FORMAT_CDF5;
        run("copy", f, script_copy, other);
    }
    run("copy_types", NC_FORMAT_CDF5, script_copy_types, NC_FORMAT_CLASSIC);
    run_all_formats("access", script_access);
    for (int f : kFormats)
        for (int variant = 0; variant < 11; ++variant)
            run(fmt("vlens%d", variant), f, [variant](Rec &r) { script_vlens(r, variant); });
    run_all_formats("reopen", script_reopen);
    run_all_formats("extent", script_extent);
    // Alignment hints: none, each alone, all (aligned or not to 4), and _enddef's arguments.
    const int64_t hint_sets[][3] = {{0, 0, 0}, {1024, 0, 0}, {0, 512, 0}, {0, 0, 256}, {1024, 512, 2048}, {10, 6, 7}};
    for (unsigned seed = 1; seed <= 24; ++seed) {
        std::copy(std::begin(hint_sets[seed % 6]), std::end(hint_sets[seed % 6]), g_hints);
        run(fmt("alignment%u", seed), kFormats[seed % 3], [seed](Rec &r) { script_alignment(r, seed); });
    }
    std::fill(std::begin(g_hints), std::end(g_hints), 0);
    for (unsigned seed = 1; seed <= seeds; ++seed) {
        const int f = kFormats[seed % 3];
        run(fmt("random%u", seed), f, [seed](Rec &r) { script_random(r, seed); });
    }

    rmdir(dir.c_str());
    std::printf("%d passed, %d failed\n", g_checks - g_failed_checks, g_failed_checks);
    MPI_Finalize();
    return g_failed_checks == 0 ? 0 : 1;
}
