// netCDF-4 files in transfer mode, the classic data model (NC_NETCDF4 | NC_CLASSIC_MODEL, and NC_NETCDF4
// files that use only its features). netCDF-C holds such a file through a dispatch table of dtf's, a
// user-defined format (nc_def_user_format, in a slot no one else took), and every call on it is made
// on an inner file: a CDF-5 file created or opened through netCDF-C's own PnetCDF path, which dtf
// serves as any virtual file (vfile.cpp). Matching, transport, the session protocol and replay are
// those of PnetCDF files; what netCDF-4 adds is answered here:
//   format         inq_format: NC_FORMAT_NETCDF4 (_CLASSIC); inq_format_extended: NC_FORMATX_NC4 with
//                  the mode of the create (a reader: of its open, with NC_NETCDF4), as netCDF-C answers
//   storage hints  chunking, filters (deflate, shuffle, fletcher32, any other by id) and endianness:
//                  checked and recorded as the library does, answered as it would (the default chunk
//                  sizes by its rule), never applied (no bytes are stored). They reach the readers as
//                  a hidden attribute "_dtf_netCDF4" of each variable that has some (and of the file:
//                  its format and which variables have one), put at the variable's first enddef and
//                  never shown.
//   fill           nc_set_fill as netCDF-4's: in any mode, for the variables defined after it; a
//                  variable not filled is marked so (its readers read zeros where nothing was written)
//   define mode    NC_NETCDF4 without the classic model enters and leaves define mode by itself
//   refused        groups, user-defined types, strings, quantize (it changes the values), a second
//                  unlimited dimension: at the define call, naming the file, the feature and the rule
// netCDF-C is not thread-safe, and calls this table only from the program's calls: the progress
// thread never comes here.
#include "frontend/netcdf4.hpp"

#if __has_include(<netcdf_dispatch.h>)
#include <netcdf.h>
#include <netcdf_dispatch.h>
#include <netcdf_filter.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "model/netcdf4_mark.h"

namespace dtf::runtime::nc4 {
namespace {

// The head of netCDF-C's NC (libdispatch's nc.h, unchanged from 4.6 to 4.10), to reach the dispatch
// table of the inner file: checked on every file (the ncid and the table's model must agree).
struct NcHead {
    int ext_ncid;
    int int_ncid;
    const NC_Dispatch *dispatch;
    void *dispatchdata;
    char *path;
    int mode; // (open_inner sets it; what inq_format_extended answers for a classic file)
};

constexpr const char *kHidden = model::kNetcdf4Mark; // (the file's, and each hinted variable's)
static_assert(model::kNetcdf4Format == NC_FORMAT_NETCDF4 && model::kNetcdf4ClassicFormat == NC_FORMAT_NETCDF4_CLASSIC);
constexpr double kDefaultChunkBytes = 16777216.0; // netCDF-C 4.9's target size of a default chunk
constexpr size_t kDefault1dUnlimBytes = 4096;     // its default chunk of a 1-D record variable
// The chunk cache of a variable in a file netCDF-C 4.9.0 opened (HDF5's default, measured), and of
// one it defines (nc_get_chunk_cache's, which nc_set_chunk_cache sets).
constexpr size_t kOpenedCacheSize = 1048576, kOpenedCacheNelems = 521;
constexpr float kOpenedCachePreemption = 0.75f;

struct Filter {
    unsigned id;
    std::vector<unsigned> params;
};

struct Var {
    int storage = -1; // NC_CHUNKED, NC_CONTIGUOUS, NC_COMPACT; -1: the library's choice
    std::vector<size_t> chunks;
    int endian = NC_ENDIAN_NATIVE;
    std::vector<Filter> filters; // in the order inq_var_filter_ids gives them
    bool created = false;         // an enddef since its definition: its storage is fixed
    bool cache_set = false;
    size_t cache_size = 0, cache_nelems = 0;
    float cache_preemption = 0;
    // Whether it is not filled, as netCDF-C answers it: NC_NOFILL from the file's fill mode at its
    // definition, 1 from def_var_fill or in a file opened (model/netcdf4_mark.h: its readers).
    int no_fill = 0;
    bool hinted() const { return storage != -1 || endian != NC_ENDIAN_NATIVE || !filters.empty() || no_fill != 0; }
    const Filter *filter(unsigned id) const {
        for (const Filter &f : filters)
            if (f.id == id) return &f;
        return nullptr;
    }
};

struct File {
    int inner = -1;
    const NC_Dispatch *d = nullptr; // the inner file's table (netCDF-C's PnetCDF dispatch)
    int pnc = -1;                   // the inner file's PnetCDF ncid (pnetcdf_ncid; its puts and gets: vara)
    int format = NC_FORMAT_NETCDF4; // or NC_FORMAT_NETCDF4_CLASSIC
    int mode = 0;                   // what inq_format_extended answers
    bool writer = false;
    bool opened = false; // by nc_open_par (a file its writer defined): endianness as read back
    bool serial = false; // by nc_create or nc_open: no parallel access (nc_var_par_access)
    bool indef = false;
    int opened_vars = 0; // the variables the file had at its open (made in `vars` at their first use: var_of)
    int fill_mode = NC_FILL; // netCDF-4's: for the variables defined after it is set, in any mode
    std::map<int, Var> vars;
    std::set<int> hidden; // the variables (NC_GLOBAL: the file) whose hidden attribute the inner file has
    std::string path, rule;
    bool classic() const { return format == NC_FORMAT_NETCDF4_CLASSIC; }
    // The inner file's fill mode, which a variable defined takes unless it is given its own (t_def_var):
    // NC_FILL as create sets it, PnetCDF's NC_NOFILL in a file opened.
    int inner_fill() const { return opened ? NC_NOFILL : NC_FILL; }
};

std::mutex g_mutex;
std::map<int, File> g_files; // by the ncid netCDF-C gave the file (groups: none but the root)
int g_slot = 0;              // NC_UDF0 or NC_UDF1, once the table is registered
const NC_Dispatch *g_pnetcdf = nullptr; // netCDF-C's PnetCDF table, once a file showed it (inner_table)

// What create and open hand to the table's create and open, which netCDF-C calls inside them.
thread_local File *t_pending = nullptr;
thread_local bool t_inner = false; // an inner file's open, handed to netCDF-C's PnetCDF table (open_inner)
thread_local bool t_anchor = false; // the open of keep_file_list's file

template <class F> F c_function(const char *name) {
    return reinterpret_cast<F>(netcdf_c_function(name));
}

File *find(int ncid) {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_files.find(ncid);
    return it == g_files.end() ? nullptr : &it->second;
}

// The refusal of a feature the virtual file does not have: the error printed once, its code returned.
int refuse(const File &f, const char *feature) {
    return guard([&]() -> int {
        fail(DTF_ERR_UNSUPPORTED, "'%s' is a netCDF-4 file served in transfer mode (%s), which keeps the classic "
             "data model: %s cannot be served; leave the feature out, or serve the file in file mode "
             "(mode=\"file\")", f.path.c_str(), f.rule.c_str(), feature);
    });
}

// ---- the variables' storage -----------------------------------------------------------------------

struct Shape {
    std::vector<size_t> lens;
    std::vector<bool> unlimited;
    nc_type type = NC_NAT;
    size_t type_size = 0;
};

int shape_of(const File &f, int varid, Shape *s) {
    nc_type &type = s->type;
    int ndims = 0, dimids[NC_MAX_VAR_DIMS], unlim = -1;
    int rc = f.d->inq_var_all(f.inner, varid, nullptr, &type, &ndims, dimids, nullptr, nullptr, nullptr, nullptr,
                              nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (rc == NC_NOERR) rc = f.d->inq_type(f.inner, type, nullptr, &s->type_size);
    if (rc == NC_NOERR) rc = f.d->inq_unlimdim(f.inner, &unlim);
    s->lens.assign(static_cast<size_t>(ndims), 0);
    s->unlimited.assign(static_cast<size_t>(ndims), false);
    for (int d = 0; rc == NC_NOERR && d < ndims; d++) {
        s->unlimited[d] = dimids[d] == unlim;
        rc = f.d->inq_dim(f.inner, dimids[d], nullptr, &s->lens[d]);
    }
    return rc;
}

// netCDF-C's default chunk sizes: a 1-D record variable 4 KiB; else 1 along the unlimited dimension
// and the others scaled alike to about 16 MiB (at most their length), then evened out so that the
// last chunk along each is as full as the others.
std::vector<size_t> default_chunks(const Shape &s) {
    const size_t n = s.lens.size();
    std::vector<size_t> c(n, 0);
    if (n == 1 && s.unlimited[0]) {
        c[0] = std::max<size_t>(1, kDefault1dUnlimBytes / s.type_size);
        return c;
    }
    double values = 1;
    size_t fixed = 0;
    for (size_t d = 0; d < n; d++) {
        if (s.unlimited[d]) c[d] = 1;
        else values *= static_cast<double>(s.lens[d]), fixed++;
    }
    for (size_t d = 0; d < n; d++) {
        if (c[d]) continue;
        const double scale = std::pow(kDefaultChunkBytes / (values * static_cast<double>(s.type_size)),
                                      1.0 / static_cast<double>(fixed));
        const double want = scale * static_cast<double>(s.lens[d]) - 0.5;
        c[d] = want >= static_cast<double>(s.lens[d]) ? s.lens[d] : static_cast<size_t>(std::max(want, 0.0));
        if (!c[d]) c[d] = 1;
    }
    for (size_t d = 0; d < n; d++) {
        if (!s.lens[d]) continue;
        const size_t count = (s.lens[d] + c[d] - 1) / c[d];
        c[d] -= (count * c[d] - s.lens[d]) / count;
    }
    return c;
}

// The storage the library gives the variable: the program's, or contiguous unless it must be chunked
// (a record variable, or one with filters); a scalar is contiguous.
int storage_of(const Var &v, const Shape &s) {
    if (s.lens.empty()) return NC_CONTIGUOUS;
    if (v.storage != -1) return v.storage;
    const bool records = std::find(s.unlimited.begin(), s.unlimited.end(), true) != s.unlimited.end();
    return records || !v.filters.empty() ? NC_CHUNKED : NC_CONTIGUOUS;
}

// ---- the hidden attributes ------------------------------------------------------------------------

std::vector<long long> encode(const File &f, int varid) {
    if (varid == NC_GLOBAL) { // (and the variables that have a mark, which its readers then read alone)
        std::vector<long long> e{model::kNetcdf4MarkVersion, f.format};
        for (int marked : f.hidden)
            if (marked != NC_GLOBAL) e.push_back(marked);
        return e;
    }
    const Var &v = f.vars.at(varid);
    std::vector<long long> e{v.storage, v.endian, static_cast<long long>(v.chunks.size())};
    e.insert(e.end(), v.chunks.begin(), v.chunks.end());
    e.push_back(static_cast<long long>(v.filters.size()));
    for (const Filter &flt : v.filters) {
        e.push_back(flt.id);
        e.push_back(static_cast<long long>(flt.params.size()));
        e.insert(e.end(), flt.params.begin(), flt.params.end());
    }
    e.push_back(v.no_fill != 0 ? 1 : 0);
    return e;
}

bool decode(const std::vector<long long> &e, Var *v) {
    size_t i = 0;
    auto next = [&](long long *x) { return i < e.size() ? (*x = e[i++], true) : false; };
    long long storage, endian, n, nf;
    if (!next(&storage) || !next(&endian) || !next(&n) || n < 0) return false;
    v->storage = static_cast<int>(storage), v->endian = static_cast<int>(endian);
    for (long long k = 0, x; k < n; k++) {
        if (!next(&x)) return false;
        v->chunks.push_back(static_cast<size_t>(x));
    }
    if (!next(&nf)) return false;
    for (long long k = 0, id, np; k < nf; k++) {
        if (!next(&id) || !next(&np) || np < 0) return false;
        Filter flt{static_cast<unsigned>(id), {}};
        for (long long p = 0, x; p < np; p++) {
            if (!next(&x)) return false;
            flt.params.push_back(static_cast<unsigned>(x));
        }
        v->filters.push_back(std::move(flt));
    }
    long long no_fill;
    if (!next(&no_fill)) return false;
    v->no_fill = no_fill != 0 ? 1 : 0;
    return i == e.size();
}

// A variable's hints (null: no such variable). Those of a file opened are made at their first use,
// not one per variable at every open.
Var *var_of(File &f, int varid) {
    auto it = f.vars.find(varid);
    if (it != f.vars.end()) return &it->second;
    if (varid < 0 || varid >= f.opened_vars) return nullptr;
    Var &v = f.vars[varid];
    v.created = true;
    return &v;
}

int read_hidden(const File &f, int varid, std::vector<long long> *e) {
    nc_type type;
    size_t len;
    if (int rc = f.d->inq_att(f.inner, varid, kHidden, &type, &len)) return rc;
    e->resize(len);
    return f.d->get_att(f.inner, varid, kHidden, e->data(), NC_INT64);
}

// Before the inner file's enddef: the hidden attributes of each hinted variable not marked yet, and
// the file's, which lists them. Hints are fixed at a variable's first enddef, so each is put once and
// never changed (dtf's readers take a definition that only grows after the writer's first put).
int put_hidden(File &f) {
    bool added = false;
    for (const auto &[varid, v] : f.vars) {
        if (!v.hinted() || f.hidden.count(varid)) continue;
        const std::vector<long long> e = encode(f, varid);
        if (int rc = f.d->put_att(f.inner, varid, kHidden, NC_INT64, e.size(), e.data(), NC_INT64)) return rc;
        f.hidden.insert(varid);
        added = true;
    }
    if (!added && f.hidden.count(NC_GLOBAL)) return NC_NOERR;
    const std::vector<long long> e = encode(f, NC_GLOBAL);
    if (int rc = f.d->put_att(f.inner, NC_GLOBAL, kHidden, NC_INT64, e.size(), e.data(), NC_INT64)) return rc;
    f.hidden.insert(NC_GLOBAL);
    return NC_NOERR;
}

// An opened file: its format and the hints of the variables its mark lists.
int load_hidden(File &f) {
    std::vector<long long> e, v;
    if (int rc = read_hidden(f, NC_GLOBAL, &e)) return rc;
    if (e.size() < 2 || e[0] != model::kNetcdf4MarkVersion) return NC_ENOTNC;
    f.format = static_cast<int>(e[1]);
    f.hidden.insert(NC_GLOBAL);
    int nvars = 0;
    if (int rc = f.d->inq(f.inner, nullptr, &nvars, nullptr, nullptr)) return rc;
    f.opened_vars = nvars;
    for (size_t k = 2; k < e.size(); k++) {
        const int varid = static_cast<int>(e[k]);
        Var *var = var_of(f, varid);
        if (!var || read_hidden(f, varid, &v) != NC_NOERR || !decode(v, var)) return NC_ENOTNC;
        f.hidden.insert(varid);
    }
    return NC_NOERR;
}

bool is_hidden(const char *name) { return name && !std::strcmp(name, kHidden); }
int hidden_count(const File &f, int varid) { return static_cast<int>(f.hidden.count(varid)); }
// The number of the variable's hidden attribute in the inner file (-1: none), which the program's
// attribute numbers skip.
int hidden_number(const File &f, int varid) {
    int number = -1;
    if (hidden_count(f, varid) && f.d->inq_attid(f.inner, varid, kHidden, &number) != NC_NOERR) number = -1;
    return number;
}

// ---- define mode ----------------------------------------------------------------------------------

int enter_define(File &f) {
    if (int rc = f.d->redef(f.inner)) return rc;
    f.indef = true;
    return NC_NOERR;
}

int leave_define(File &f, size_t h_minfree, size_t v_align, size_t v_minfree, size_t r_align) {
    if (f.writer)
        if (int rc = put_hidden(f)) return rc;
    if (int rc = f.d->_enddef(f.inner, h_minfree, v_align, v_minfree, r_align)) return rc;
    f.indef = false;
    for (auto &[varid, v] : f.vars) v.created = true;
    return NC_NOERR;
}

// A define call: NC_NETCDF4 files enter define mode by themselves; classic-model ones must be in it.
int for_define(File &f) {
    if (f.indef) return NC_NOERR;
    if (!f.writer) return NC_EPERM;
    if (f.classic()) return NC_ENOTINDEFINE;
    return enter_define(f);
}

// A data call: NC_NETCDF4 files leave define mode by themselves.
int for_data(File &f) {
    if (!f.indef || f.classic()) return NC_NOERR;
    return leave_define(f, 0, 1, 0, 1);
}

// A storage hint on a variable: only before its storage is fixed (its first enddef).
int for_hint(File &f, int varid, Var **v) {
    if (!f.writer) return NC_EPERM;
    Var *var = var_of(f, varid);
    if (!var) return NC_ENOTVAR;
    if (var->created) return NC_ELATEDEF;
    if (int rc = for_define(f)) return rc;
    *v = var;
    return NC_NOERR;
}

// ---- the table ------------------------------------------------------------------------------------

#define DTF_NC4_FILE                                                                                \
    File *fp = find(ncid);                                                                          \
    if (!fp) return NC_EBADID;                                                                      \
    File &f = *fp;                                                                                  \
    (void)f

// The calls on the inner file as they are.
#define DTF_NC4_FORWARD(entry, ...)                                                                 \
    DTF_NC4_FILE;                                                                                   \
    return f.d->entry(f.inner, __VA_ARGS__)

int t_create(const char *, int, size_t, int, size_t *, void *, const NC_Dispatch *, int ncid) {
    if (!t_pending) return NC_EINTERNAL;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_files[ncid] = std::move(*t_pending);
    return NC_NOERR;
}

int open_inner(const char *path, int mode, int basepe, size_t *hint, void *mpidata, int ncid);

int t_open(const char *path, int mode, int basepe, size_t *hint, void *mpidata, const NC_Dispatch *, int ncid) {
    if (t_inner) return open_inner(path, mode, basepe, hint, mpidata, ncid);
    if (t_anchor) return NC_NOERR;
    return t_create(nullptr, 0, 0, 0, nullptr, nullptr, nullptr, ncid);
}

int t_redef(int ncid) {
    DTF_NC4_FILE;
    if (f.indef) return NC_EINDEFINE;
    if (!f.writer) return NC_EPERM;
    return enter_define(f);
}

int t_enddef(int ncid, size_t h_minfree, size_t v_align, size_t v_minfree, size_t r_align) {
    DTF_NC4_FILE;
    if (!f.indef) return NC_ENOTINDEFINE;
    return leave_define(f, h_minfree, v_align, v_minfree, r_align);
}

int t_sync(int ncid) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    return f.d->sync(f.inner);
}

// The inner file closes through netCDF-C's own call (which frees what it keeps of it); the outer one
// is then freed by netCDF-C's call that came here.
int finish(int ncid, const char *call) {
    DTF_NC4_FILE;
    const bool abort = !std::strcmp(call, "nc_abort");
    int rc = NC_NOERR;
    if (!abort && f.indef) rc = leave_define(f, 0, 1, 0, 1);
    const auto close = c_function<int (*)(int)>(call);
    const int closed = close ? close(f.inner) : NC_EINTERNAL;
    std::lock_guard<std::mutex> lock(g_mutex);
    g_files.erase(ncid);
    return rc ? rc : closed;
}
int t_abort(int ncid) { return finish(ncid, "nc_abort"); }
int t_close(int ncid, void *) { return finish(ncid, "nc_close"); }

// As netCDF-4: in any mode, for the variables defined after (t_def_var), not for those defined before.
int t_set_fill(int ncid, int mode, int *old) {
    DTF_NC4_FILE;
    if (!f.writer) return NC_EPERM;
    if (mode != NC_FILL && mode != NC_NOFILL) return NC_EINVAL;
    if (old) *old = f.fill_mode;
    f.fill_mode = mode;
    return NC_NOERR;
}

int t_inq_format(int ncid, int *format) {
    DTF_NC4_FILE;
    if (format) *format = f.format;
    return NC_NOERR;
}

int t_inq_format_extended(int ncid, int *format, int *mode) {
    DTF_NC4_FILE;
    if (format) *format = NC_FORMATX_NC4;
    if (mode) *mode = f.mode;
    return NC_NOERR;
}

int t_inq(int ncid, int *ndims, int *nvars, int *natts, int *unlim) {
    DTF_NC4_FILE;
    const int rc = f.d->inq(f.inner, ndims, nvars, natts, unlim);
    if (rc == NC_NOERR && natts) *natts -= hidden_count(f, NC_GLOBAL);
    return rc;
}

int t_inq_type(int ncid, nc_type type, char *name, size_t *size) { DTF_NC4_FORWARD(inq_type, type, name, size); }

int t_def_dim(int ncid, const char *name, size_t len, int *idp) {
    DTF_NC4_FILE;
    if (int rc = for_define(f)) return rc;
    int unlim = -1;
    if (len == NC_UNLIMITED && !f.classic() && f.d->inq_unlimdim(f.inner, &unlim) == NC_NOERR && unlim != -1)
        return refuse(f, "a second unlimited dimension");
    return f.d->def_dim(f.inner, name, len, idp);
}

int t_inq_dimid(int ncid, const char *name, int *idp) { DTF_NC4_FORWARD(inq_dimid, name, idp); }
int t_inq_dim(int ncid, int dimid, char *name, size_t *len) { DTF_NC4_FORWARD(inq_dim, dimid, name, len); }
int t_inq_unlimdim(int ncid, int *unlim) { DTF_NC4_FORWARD(inq_unlimdim, unlim); }

int t_rename_dim(int ncid, int dimid, const char *name) {
    DTF_NC4_FILE;
    if (int rc = for_define(f)) return rc;
    return f.d->rename_dim(f.inner, dimid, name);
}

int t_inq_att(int ncid, int varid, const char *name, nc_type *type, size_t *len) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENOTATT;
    return f.d->inq_att(f.inner, varid, name, type, len);
}

int t_inq_attid(int ncid, int varid, const char *name, int *idp) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENOTATT;
    int number = -1;
    const int rc = f.d->inq_attid(f.inner, varid, name, &number);
    const int hidden = hidden_number(f, varid);
    if (rc == NC_NOERR && idp) *idp = hidden != -1 && number > hidden ? number - 1 : number;
    return rc;
}

int t_inq_attname(int ncid, int varid, int attnum, char *name) {
    DTF_NC4_FILE;
    int natts = 0;
    const int rc = varid == NC_GLOBAL ? f.d->inq(f.inner, nullptr, nullptr, &natts, nullptr)
                                      : f.d->inq_var_all(f.inner, varid, nullptr, nullptr, nullptr, nullptr, &natts,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                                         nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (rc) return rc;
    if (attnum < 0 || attnum >= natts - hidden_count(f, varid)) return NC_ENOTATT;
    const int hidden = hidden_number(f, varid); // (it may sit among attributes put after it)
    if (hidden != -1 && attnum >= hidden) attnum++;
    return f.d->inq_attname(f.inner, varid, attnum, name);
}

// An attribute change: netCDF-4 files take one in data mode too, the classic model only in define mode.
int t_rename_att(int ncid, int varid, const char *name, const char *newname) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENOTATT;
    if (is_hidden(newname)) return NC_ENAMEINUSE;
    if (int rc = for_define(f)) return rc;
    return f.d->rename_att(f.inner, varid, name, newname);
}

int t_del_att(int ncid, int varid, const char *name) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENOTATT;
    if (int rc = for_define(f)) return rc;
    return f.d->del_att(f.inner, varid, name);
}

int t_get_att(int ncid, int varid, const char *name, void *value, nc_type type) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENOTATT;
    return f.d->get_att(f.inner, varid, name, value, type);
}

int t_put_att(int ncid, int varid, const char *name, nc_type type, size_t len, const void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (is_hidden(name)) return NC_ENAMEINUSE;
    if (f.classic() && type > NC_DOUBLE) return NC_ESTRICTNC3;
    if (type == NC_STRING) return refuse(f, "an attribute of strings (NC_STRING)");
    if (type > NC_MAX_ATOMIC_TYPE) return refuse(f, "an attribute of a user-defined type");
    if (int rc = for_define(f)) return rc;
    return f.d->put_att(f.inner, varid, name, type, len, value, memtype);
}

int t_def_var(int ncid, const char *name, nc_type type, int ndims, const int *dimids, int *varidp) {
    DTF_NC4_FILE;
    if (f.classic() && type > NC_DOUBLE) return NC_ESTRICTNC3;
    if (type == NC_STRING) return refuse(f, "a variable of strings (NC_STRING)");
    if (type > NC_MAX_ATOMIC_TYPE) return refuse(f, "a variable of a user-defined type");
    if (int rc = for_define(f)) return rc;
    int varid = -1;
    int rc = f.d->def_var(f.inner, name, type, ndims, dimids, &varid);
    if (rc == NC_NOERR && f.fill_mode != f.inner_fill())
        rc = f.d->def_var_fill(f.inner, varid, f.fill_mode == NC_NOFILL, nullptr);
    if (rc == NC_NOERR) {
        f.vars[varid] = Var{};
        f.vars[varid].no_fill = f.fill_mode == NC_NOFILL ? NC_NOFILL : 0; // (netCDF-C's var->no_fill = fill_mode)
        if (varidp) *varidp = varid;
    }
    return rc;
}

int t_inq_varid(int ncid, const char *name, int *varidp) { DTF_NC4_FORWARD(inq_varid, name, varidp); }

int t_rename_var(int ncid, int varid, const char *name) {
    DTF_NC4_FILE;
    if (int rc = for_define(f)) return rc;
    return f.d->rename_var(f.inner, varid, name);
}

int t_get_vara(int ncid, int varid, const size_t *start, const size_t *count, void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    const int rc = vara(f.pnc, varid, start, count, value, memtype, false);
    return rc != DTF_PNC_PASS ? rc : f.d->get_vara(f.inner, varid, start, count, value, memtype);
}

int t_put_vara(int ncid, int varid, const size_t *start, const size_t *count, const void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    const int rc = vara(f.pnc, varid, start, count, const_cast<void *>(value), memtype, true);
    return rc != DTF_PNC_PASS ? rc : f.d->put_vara(f.inner, varid, start, count, value, memtype);
}

int t_get_vars(int ncid, int varid, const size_t *start, const size_t *count, const ptrdiff_t *stride, void *value,
               nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    return f.d->get_vars(f.inner, varid, start, count, stride, value, memtype);
}

int t_put_vars(int ncid, int varid, const size_t *start, const size_t *count, const ptrdiff_t *stride,
               const void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    return f.d->put_vars(f.inner, varid, start, count, stride, value, memtype);
}

int t_get_varm(int ncid, int varid, const size_t *start, const size_t *count, const ptrdiff_t *stride,
               const ptrdiff_t *imap, void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    return f.d->get_varm(f.inner, varid, start, count, stride, imap, value, memtype);
}

int t_put_varm(int ncid, int varid, const size_t *start, const size_t *count, const ptrdiff_t *stride,
               const ptrdiff_t *imap, const void *value, nc_type memtype) {
    DTF_NC4_FILE;
    if (int rc = for_data(f)) return rc;
    return f.d->put_varm(f.inner, varid, start, count, stride, imap, value, memtype);
}

// What the variable's storage is: the recorded hints, the library's defaults where none was given.
void answer_storage(const File &f, const Var &v, const Shape &s, int *shufflep, int *deflatep, int *levelp,
                    int *fletcher32p, int *contiguousp, size_t *chunksizesp, int *endiannessp) {
    const Filter *deflate = v.filter(H5Z_FILTER_DEFLATE);
    if (shufflep) *shufflep = v.filter(H5Z_FILTER_SHUFFLE) != nullptr;
    if (deflatep) *deflatep = deflate != nullptr;
    if (levelp) *levelp = deflate && !deflate->params.empty() ? static_cast<int>(deflate->params[0]) : 0;
    if (fletcher32p) *fletcher32p = v.filter(H5Z_FILTER_FLETCHER32) != nullptr;
    const int storage = storage_of(v, s);
    if (contiguousp) *contiguousp = storage;
    if (chunksizesp && storage == NC_CHUNKED) {
        const std::vector<size_t> c = v.chunks.empty() ? default_chunks(s) : v.chunks;
        std::copy(c.begin(), c.end(), chunksizesp);
    }
    // (a file read back: the native order, as it was stored; text has none, HDF5's strings no order)
    const int native = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? NC_ENDIAN_LITTLE : NC_ENDIAN_BIG;
    if (endiannessp)
        *endiannessp = v.endian == NC_ENDIAN_NATIVE && f.opened && s.type != NC_CHAR ? native : v.endian;
}

int t_inq_var_all(int ncid, int varid, char *name, nc_type *xtypep, int *ndimsp, int *dimidsp, int *nattsp,
                  int *shufflep, int *deflatep, int *levelp, int *fletcher32p, int *contiguousp,
                  size_t *chunksizesp, int *no_fill, void *fill_valuep, int *endiannessp, unsigned *idp,
                  size_t *nparamsp, unsigned *params) {
    DTF_NC4_FILE;
    const Var *known = var_of(f, varid);
    const int unfilled = known ? known->no_fill : 0;
    // (netCDF-C's PnetCDF table reads the fill value only with the mode; netCDF-4 leaves the value of a
    // variable it does not fill as it was)
    int inner_no_fill = 0;
    int rc = f.d->inq_var_all(f.inner, varid, name, xtypep, ndimsp, dimidsp, nattsp, nullptr, nullptr, nullptr,
                              nullptr, nullptr, nullptr, fill_valuep && !unfilled ? &inner_no_fill : nullptr,
                              unfilled ? nullptr : fill_valuep, nullptr, nullptr, nullptr, nullptr);
    if (rc) return rc;
    if (nattsp) *nattsp -= hidden_count(f, varid);
    if (no_fill) *no_fill = unfilled;
    Shape s;
    if ((rc = shape_of(f, varid, &s))) return rc;
    static const Var kNone;
    const Var &v = known ? *known : kNone;
    answer_storage(f, v, s, shufflep, deflatep, levelp, fletcher32p, contiguousp, chunksizesp, endiannessp);
    const Filter *first = v.filters.empty() ? nullptr : &v.filters.front();
    if (idp) *idp = first ? first->id : 0;
    if (nparamsp) *nparamsp = first ? first->params.size() : 0;
    if (params && first) std::copy(first->params.begin(), first->params.end(), params);
    return NC_NOERR;
}

int t_var_par_access(int ncid, int varid, int access) {
    DTF_NC4_FILE;
    if (f.serial) return NC_ENOPAR; // (before the variable is looked at, as netCDF-C does)
    return f.d->var_par_access(f.inner, varid, access);
}

int t_def_var_fill(int ncid, int varid, int no_fill, const void *value) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    int rc = f.d->def_var_fill(f.inner, varid, no_fill, value);
    if (rc == NC_NOERR) v->no_fill = no_fill != 0 ? 1 : 0;
    // (netCDF-4 deletes the fill value of a variable it stops filling)
    if (rc == NC_NOERR && no_fill && f.d->inq_attid(f.inner, varid, _FillValue, nullptr) == NC_NOERR)
        rc = f.d->del_att(f.inner, varid, _FillValue);
    return rc;
}

int t_show_metadata(int) { return NC_NOERR; }

int t_inq_unlimdims(int ncid, int *nunlim, int *ids) {
    DTF_NC4_FILE;
    int unlim = -1;
    if (int rc = f.d->inq_unlimdim(f.inner, &unlim)) return rc;
    if (nunlim) *nunlim = unlim == -1 ? 0 : 1;
    if (ids && unlim != -1) ids[0] = unlim;
    return NC_NOERR;
}

// The root group, the only one.
int t_inq_ncid(int, const char *, int *) { return NC_ENOGRP; }
int t_inq_grps(int ncid, int *n, int *) {
    DTF_NC4_FILE;
    if (n) *n = 0;
    return NC_NOERR;
}
int t_inq_grpname(int ncid, char *name) {
    DTF_NC4_FILE;
    if (name) std::strcpy(name, "/");
    return NC_NOERR;
}
int t_inq_grpname_full(int ncid, size_t *len, char *name) {
    DTF_NC4_FILE;
    if (len) *len = 1;
    if (name) std::strcpy(name, "/");
    return NC_NOERR;
}
int t_inq_grp_parent(int, int *) { return NC_ENOGRP; }
int t_inq_grp_full_ncid(int ncid, const char *name, int *grp) {
    DTF_NC4_FILE;
    if (!name || std::strcmp(name, "/")) return NC_ENOGRP;
    if (grp) *grp = ncid;
    return NC_NOERR;
}

int count_to(int n, int *count, int *ids) {
    if (count) *count = n;
    for (int i = 0; ids && i < n; i++) ids[i] = i;
    return NC_NOERR;
}
int t_inq_varids(int ncid, int *n, int *ids) {
    DTF_NC4_FILE;
    int nvars = 0;
    if (int rc = f.d->inq(f.inner, nullptr, &nvars, nullptr, nullptr)) return rc;
    return count_to(nvars, n, ids);
}
int t_inq_dimids(int ncid, int *n, int *ids, int) {
    DTF_NC4_FILE;
    int ndims = 0;
    if (int rc = f.d->inq(f.inner, &ndims, nullptr, nullptr, nullptr)) return rc;
    return count_to(ndims, n, ids);
}
int t_inq_typeids(int ncid, int *n, int *) {
    DTF_NC4_FILE;
    if (n) *n = 0;
    return NC_NOERR;
}

int t_inq_type_equal(int, nc_type t1, int, nc_type t2, int *equal) {
    if (t1 > NC_MAX_ATOMIC_TYPE || t2 > NC_MAX_ATOMIC_TYPE) return NC_EBADTYPE;
    if (equal) *equal = t1 == t2;
    return NC_NOERR;
}

int t_def_grp(int ncid, const char *, int *) {
    DTF_NC4_FILE;
    return f.classic() ? NC_ESTRICTNC3 : refuse(f, "groups (nc_def_grp)");
}
int t_rename_grp(int ncid, const char *) {
    DTF_NC4_FILE;
    return f.classic() ? NC_ESTRICTNC3 : refuse(f, "renaming the root group");
}

int t_inq_user_type(int, nc_type, char *, size_t *, nc_type *, size_t *, int *) { return NC_EBADTYPE; }

int t_inq_typeid(int ncid, const char *name, nc_type *type) {
    DTF_NC4_FILE;
    static const char *const names[] = {"byte", "char", "short", "int", "float", "double",
                                        "ubyte", "ushort", "uint", "int64", "uint64", "string"};
    for (int t = NC_BYTE; t <= NC_STRING; t++)
        if (name && !std::strcmp(name, names[t - NC_BYTE])) {
            if (type) *type = t;
            return NC_NOERR;
        }
    return NC_EBADTYPE;
}

// User-defined types: refused at the definition; nothing else can name one.
int user_type(int ncid) {
    DTF_NC4_FILE;
    return f.classic() ? NC_ESTRICTNC3 : refuse(f, "user-defined types (compound, vlen, enum, opaque)");
}
int t_def_compound(int ncid, size_t, const char *, nc_type *) { return user_type(ncid); }
int t_insert_compound(int, nc_type, const char *, size_t, nc_type) { return NC_EBADTYPE; }
int t_insert_array_compound(int, nc_type, const char *, size_t, nc_type, int, const int *) { return NC_EBADTYPE; }
int t_inq_compound_field(int, nc_type, int, char *, size_t *, nc_type *, int *, int *) { return NC_EBADTYPE; }
int t_inq_compound_fieldindex(int, nc_type, const char *, int *) { return NC_EBADTYPE; }
int t_def_vlen(int ncid, const char *, nc_type, nc_type *) { return user_type(ncid); }
int t_put_vlen_element(int, int, void *, size_t, const void *) { return NC_EBADTYPE; }
int t_get_vlen_element(int, int, const void *, size_t *, void *) { return NC_EBADTYPE; }
int t_def_enum(int ncid, nc_type, const char *, nc_type *) { return user_type(ncid); }
int t_insert_enum(int, nc_type, const char *, const void *) { return NC_EBADTYPE; }
int t_inq_enum_member(int, nc_type, int, char *, void *) { return NC_EBADTYPE; }
int t_inq_enum_ident(int, nc_type, long long, char *) { return NC_EBADTYPE; }
int t_def_opaque(int ncid, size_t, const char *, nc_type *) { return user_type(ncid); }

// A filter recorded (replacing one of the same id), in the library's order: fletcher32 first, then
// shuffle, then the others as defined.
int add_filter(File &f, int varid, Var &v, Filter flt) {
    Shape s;
    if (int rc = shape_of(f, varid, &s)) return rc;
    if (s.lens.empty()) return NC_EINVAL;
    if (v.storage == NC_CONTIGUOUS || v.storage == NC_COMPACT) v.storage = NC_CHUNKED;
    for (Filter &old : v.filters)
        if (old.id == flt.id) return old = std::move(flt), NC_NOERR;
    auto rank = [](unsigned id) { return id == H5Z_FILTER_FLETCHER32 ? 0 : id == H5Z_FILTER_SHUFFLE ? 1 : 2; };
    auto at = v.filters.begin();
    while (at != v.filters.end() && rank(at->id) <= rank(flt.id)) ++at;
    v.filters.insert(at, std::move(flt));
    return NC_NOERR;
}

void drop_filter(Var &v, unsigned id) {
    v.filters.erase(std::remove_if(v.filters.begin(), v.filters.end(), [id](const Filter &x) { return x.id == id; }),
                    v.filters.end());
}

int t_def_var_deflate(int ncid, int varid, int shuffle, int deflate, int level) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    if (deflate && (level < NC_MIN_DEFLATE_LEVEL || level > NC_MAX_DEFLATE_LEVEL)) return NC_EINVAL;
    int rc = NC_NOERR;
    if (shuffle) rc = add_filter(f, varid, *v, {H5Z_FILTER_SHUFFLE, {}});
    else drop_filter(*v, H5Z_FILTER_SHUFFLE);
    if (rc == NC_NOERR && deflate) rc = add_filter(f, varid, *v, {H5Z_FILTER_DEFLATE, {static_cast<unsigned>(level)}});
    return rc;
}

int t_def_var_fletcher32(int ncid, int varid, int on) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    if (!on) return drop_filter(*v, H5Z_FILTER_FLETCHER32), NC_NOERR;
    return add_filter(f, varid, *v, {H5Z_FILTER_FLETCHER32, {}});
}

int t_def_var_chunking(int ncid, int varid, int storage, const size_t *chunks) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    Shape s;
    if (int rc = shape_of(f, varid, &s)) return rc;
    const bool records = std::find(s.unlimited.begin(), s.unlimited.end(), true) != s.unlimited.end();
    if (storage == NC_CHUNKED) {
        if (s.lens.empty()) return NC_EINVAL;
        std::vector<size_t> c;
        for (size_t d = 0; chunks && d < s.lens.size(); d++) {
            if (!chunks[d]) return NC_EINVAL;
            if (!s.unlimited[d] && chunks[d] > s.lens[d]) return NC_EBADCHUNK;
            c.push_back(chunks[d]);
        }
        v->chunks = std::move(c);
    } else if (storage == NC_CONTIGUOUS || storage == NC_COMPACT) {
        if (records || !v->filters.empty()) return NC_EINVAL;
        v->chunks.clear();
    } else {
        return NC_EINVAL;
    }
    v->storage = storage;
    return NC_NOERR;
}

int t_def_var_endian(int ncid, int varid, int endian) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    if (endian != NC_ENDIAN_NATIVE && endian != NC_ENDIAN_LITTLE && endian != NC_ENDIAN_BIG) return NC_EINVAL;
    v->endian = endian;
    return NC_NOERR;
}

int t_def_var_filter(int ncid, int varid, unsigned id, size_t nparams, const unsigned *params) {
    DTF_NC4_FILE;
    Var *v = nullptr;
    if (int rc = for_hint(f, varid, &v)) return rc;
    if (nparams && !params) return NC_EINVAL;
    return add_filter(f, varid, *v, {id, std::vector<unsigned>(params, params + nparams)});
}

int t_set_var_chunk_cache(int ncid, int varid, size_t size, size_t nelems, float preemption) {
    DTF_NC4_FILE;
    Var *var = var_of(f, varid);
    if (!var) return NC_ENOTVAR;
    if (preemption < 0 || preemption > 1) return NC_EINVAL;
    Var &v = *var;
    v.cache_set = true, v.cache_size = size, v.cache_nelems = nelems, v.cache_preemption = preemption;
    return NC_NOERR;
}

int t_get_var_chunk_cache(int ncid, int varid, size_t *size, size_t *nelems, float *preemption) {
    DTF_NC4_FILE;
    const Var *var = var_of(f, varid);
    if (!var) return NC_ENOTVAR;
    const Var &v = *var;
    size_t s = kOpenedCacheSize, n = kOpenedCacheNelems;
    float p = kOpenedCachePreemption;
    if (v.cache_set) {
        s = v.cache_size, n = v.cache_nelems, p = v.cache_preemption;
    } else if (!f.opened) {
        const auto global = c_function<int (*)(size_t *, size_t *, float *)>("nc_get_chunk_cache");
        if (int rc = global ? global(&s, &n, &p) : NC_EINTERNAL) return rc;
    }
    if (size) *size = s;
    if (nelems) *nelems = n;
    if (preemption) *preemption = p;
    return NC_NOERR;
}

int t_inq_var_filter_ids(int ncid, int varid, size_t *n, unsigned *ids) {
    DTF_NC4_FILE;
    const Var *v = var_of(f, varid);
    if (!v) return NC_ENOTVAR;
    if (n) *n = v->filters.size();
    for (size_t i = 0; ids && i < v->filters.size(); i++) ids[i] = v->filters[i].id;
    return NC_NOERR;
}

int t_inq_var_filter_info(int ncid, int varid, unsigned id, size_t *nparams, unsigned *params) {
    DTF_NC4_FILE;
    const Var *v = var_of(f, varid);
    if (!v) return NC_ENOTVAR;
    const Filter *flt = v->filter(id);
    if (!flt) return NC_ENOFILTER;
    std::vector<unsigned> p = flt->params;
    // (HDF5 stores the element size as shuffle's parameter: a file read back shows it)
    Shape s;
    if (f.opened && id == H5Z_FILTER_SHUFFLE && p.empty() && shape_of(f, varid, &s) == NC_NOERR)
        p.push_back(static_cast<unsigned>(s.type_size));
    if (nparams) *nparams = p.size();
    if (params) std::copy(p.begin(), p.end(), params);
    return NC_NOERR;
}

int t_def_var_quantize(int ncid, int, int, int) {
    DTF_NC4_FILE;
    return refuse(f, "quantize (nc_def_var_quantize: it changes the values)");
}

int t_inq_var_quantize(int ncid, int varid, int *mode, int *nsd) {
    DTF_NC4_FILE;
    if (!var_of(f, varid)) return NC_ENOTVAR;
    if (mode) *mode = NC_NOQUANTIZE;
    if (nsd) *nsd = 0;
    return NC_NOERR;
}

int t_inq_filter_avail(int, unsigned id) {
    return id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE || id == H5Z_FILTER_FLETCHER32 ? NC_NOERR
                                                                                              : NC_ENOFILTER;
}

NC_Dispatch make_table(int model) {
    NC_Dispatch t{};
    t.model = model;
    t.dispatch_version = NC_DISPATCH_VERSION;
    t.create = t_create, t.open = t_open, t.redef = t_redef, t._enddef = t_enddef, t.sync = t_sync;
    t.abort = t_abort, t.close = t_close, t.set_fill = t_set_fill, t.inq_format = t_inq_format;
    t.inq_format_extended = t_inq_format_extended, t.inq = t_inq, t.inq_type = t_inq_type;
    t.def_dim = t_def_dim, t.inq_dimid = t_inq_dimid, t.inq_dim = t_inq_dim, t.inq_unlimdim = t_inq_unlimdim;
    t.rename_dim = t_rename_dim, t.inq_att = t_inq_att, t.inq_attid = t_inq_attid, t.inq_attname = t_inq_attname;
    t.rename_att = t_rename_att, t.del_att = t_del_att, t.get_att = t_get_att, t.put_att = t_put_att;
    t.def_var = t_def_var, t.inq_varid = t_inq_varid, t.rename_var = t_rename_var;
    t.get_vara = t_get_vara, t.put_vara = t_put_vara, t.get_vars = t_get_vars, t.put_vars = t_put_vars;
    t.get_varm = t_get_varm, t.put_varm = t_put_varm, t.inq_var_all = t_inq_var_all;
    t.var_par_access = t_var_par_access, t.def_var_fill = t_def_var_fill, t.show_metadata = t_show_metadata;
    t.inq_unlimdims = t_inq_unlimdims, t.inq_ncid = t_inq_ncid, t.inq_grps = t_inq_grps;
    t.inq_grpname = t_inq_grpname, t.inq_grpname_full = t_inq_grpname_full, t.inq_grp_parent = t_inq_grp_parent;
    t.inq_grp_full_ncid = t_inq_grp_full_ncid, t.inq_varids = t_inq_varids, t.inq_dimids = t_inq_dimids;
    t.inq_typeids = t_inq_typeids, t.inq_type_equal = t_inq_type_equal, t.def_grp = t_def_grp;
    t.rename_grp = t_rename_grp, t.inq_user_type = t_inq_user_type, t.inq_typeid = t_inq_typeid;
    t.def_compound = t_def_compound, t.insert_compound = t_insert_compound;
    t.insert_array_compound = t_insert_array_compound, t.inq_compound_field = t_inq_compound_field;
    t.inq_compound_fieldindex = t_inq_compound_fieldindex, t.def_vlen = t_def_vlen;
    t.put_vlen_element = t_put_vlen_element, t.get_vlen_element = t_get_vlen_element, t.def_enum = t_def_enum;
    t.insert_enum = t_insert_enum, t.inq_enum_member = t_inq_enum_member, t.inq_enum_ident = t_inq_enum_ident;
    t.def_opaque = t_def_opaque, t.def_var_deflate = t_def_var_deflate, t.def_var_fletcher32 = t_def_var_fletcher32;
    t.def_var_chunking = t_def_var_chunking, t.def_var_endian = t_def_var_endian;
    t.def_var_filter = t_def_var_filter, t.set_var_chunk_cache = t_set_var_chunk_cache;
    t.get_var_chunk_cache = t_get_var_chunk_cache, t.inq_var_filter_ids = t_inq_var_filter_ids;
    t.inq_var_filter_info = t_inq_var_filter_info, t.def_var_quantize = t_def_var_quantize;
    t.inq_var_quantize = t_inq_var_quantize, t.inq_filter_avail = t_inq_filter_avail;
    return t;
}

// ---- registration, create and open ----------------------------------------------------------------

// Whether netCDF-C opens a file of a user-defined format without reading it (4.9.0 and before; 4.9.1
// reads its magic number first, and would then take a CDF-5 file's own path).
bool udf_open_reads_nothing() {
    static const bool nothing = [] {
        const auto libvers = c_function<const char *(*)()>("nc_inq_libvers");
        int major = 0, minor = 0, patch = 0;
        return libvers && std::sscanf(libvers(), "%d.%d.%d", &major, &minor, &patch) == 3 &&
               major * 10000 + minor * 100 + patch <= 40900;
    }();
    return nothing;
}

// netCDF-C frees its list of open files (512 KiB, NCFILELISTLENGTH pointers) whenever its last file
// closes, and allocates it zeroed at the next open: a program that opens and closes its files in turn
// (a reader of one member's file after another) paid that at every open, more than the rest of the
// open costs. A file of dtf's table opened once and never closed keeps the list (it takes one
// ncid, as every virtual netCDF-4 file's inner file does): with a netCDF-C that opens such a file
// without reading it (udf_open_reads_nothing; a later one would look for the path). Once, as the
// table is registered.
void keep_file_list() {
    if (!udf_open_reads_nothing()) return;
    const auto open = c_function<int (*)(const char *, int, int *)>("nc_open");
    int ncid = -1;
    t_anchor = true;
    if (open) open("dtf: netCDF-C's list of open files", g_slot, &ncid);
    t_anchor = false;
}

// The table in the first user-defined format slot no one else took (ParallelIO takes NC_UDF0).
int define_table(const std::string &path) {
    const auto define = c_function<int (*)(int, NC_Dispatch *, char *)>("nc_def_user_format");
    const auto inquire = c_function<int (*)(int, NC_Dispatch **, char *)>("nc_inq_user_format");
    if (!define || !inquire)
        fail(DTF_ERR_UNSUPPORTED, "netCDF-4 file '%s' in transfer mode: this netCDF-C has no user-defined formats "
             "(nc_def_user_format, netCDF-C 4.7 and later)", path.c_str());
    for (int slot : {NC_UDF0, NC_UDF1}) {
        NC_Dispatch *taken = nullptr;
        if (inquire(slot, &taken, nullptr) == NC_NOERR && taken) continue;
        static NC_Dispatch table;
        table = make_table(slot == NC_UDF0 ? NC_FORMATX_UDF0 : NC_FORMATX_UDF1);
        if (int rc = define(slot, &table, nullptr))
            fail(DTF_ERR_UNSUPPORTED, "netCDF-4 file '%s' in transfer mode: netCDF-C refused dtf's dispatch table "
                 "(nc_def_user_format: %d; dtf was built for dispatch version %d)", path.c_str(), rc,
                 NC_DISPATCH_VERSION);
        return slot;
    }
    fail(DTF_ERR_UNSUPPORTED, "netCDF-4 file '%s' in transfer mode: both of netCDF-C's user-defined formats "
         "(NC_UDF0, NC_UDF1) are taken by another library", path.c_str());
}

// dtf's table, registered at the first netCDF-4 file (and netCDF-C's file list kept from then on).
void register_table(const std::string &path) {
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        if (g_slot) return;
        g_slot = define_table(path);
    }
    keep_file_list();
}

// netCDF-C's head of `ncid`, if netCDF-C knows it.
NcHead *head_of(int ncid) {
    const auto check_id = c_function<int (*)(int, NcHead **)>("NC_check_id");
    NcHead *head = nullptr;
    return check_id && check_id(ncid, &head) == NC_NOERR && head && head->dispatch ? head : nullptr;
}

// The inner file's dispatch table, checked to be netCDF-C's PnetCDF one.
const NC_Dispatch *inner_table(int inner, const std::string &path) {
    const NcHead *head = head_of(inner);
    if (!head || head->ext_ncid != inner || head->dispatch->model != NC_FORMATX_PNETCDF ||
        head->dispatch->dispatch_version != NC_DISPATCH_VERSION)
        fail(DTF_ERR_UNSUPPORTED, "netCDF-4 file '%s' in transfer mode: this netCDF-C (dispatch version %d "
             "expected) does not keep its files as dtf expects", path.c_str(), NC_DISPATCH_VERSION);
    std::lock_guard<std::mutex> lock(g_mutex);
    g_pnetcdf = head->dispatch;
    return head->dispatch;
}

// The inner file's open through netCDF-C's PnetCDF table without netCDF-C's format probe (an
// MPI_File_open and a read of the magic number, which dtf answers with a temporary file of the
// header): netCDF-C opens it as a file of dtf's format (no probe in 4.9.0), and the
// table's open (t_open, then here) hands the file to the PnetCDF table, with the mode netCDF-C gives a
// file it probed (its format's flags, no NC_NETCDF4). Once a file showed the PnetCDF table;
// otherwise, or with a netCDF-C that reads a user format's file, the open it probes.
int open_par_inner(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    using OpenPar = int (*)(const char *, int, MPI_Comm, MPI_Info, int *);
    const auto open_par = c_function<OpenPar>("nc_open_par");
    if (!open_par) return NC_EINTERNAL;
    bool direct = false;
    {
        std::lock_guard<std::mutex> lock(g_mutex);
        direct = g_pnetcdf && g_slot && udf_open_reads_nothing();
    }
    if (!direct) return open_par(path, mode, comm, info, ncidp);
    t_inner = true;
    const int rc = open_par(path, mode | g_slot, comm, info, ncidp);
    t_inner = false;
    return rc;
}

int open_inner(const char *path, int mode, int basepe, size_t *hint, void *mpidata, int ncid) {
    NcHead *head = head_of(ncid);
    if (!head) return NC_EINTERNAL;
    const int base = mode & ~(NC_NETCDF4 | NC_UDF0 | NC_UDF1);
    head->dispatch = g_pnetcdf;
    head->mode = base;
    if (int rc = g_pnetcdf->open(path, base, basepe, hint, mpidata, g_pnetcdf, ncid)) return rc;
    int format = 0;
    if (int rc = g_pnetcdf->inq_format(ncid, &format)) return rc;
    if (format == NC_FORMAT_64BIT_OFFSET) head->mode |= NC_64BIT_OFFSET;
    if (format == NC_FORMAT_64BIT_DATA) head->mode |= NC_64BIT_DATA;
    return NC_NOERR;
}

// A classic file opened or created serially (nc_open, nc_create), which dtf made parallel over
// MPI_COMM_SELF: netCDF-C answers its format as its classic library's, not as its PnetCDF path's.
int serial_classic_format(int ncid, int *formatp, int *modep) {
    if (int rc = g_pnetcdf->inq_format_extended(ncid, nullptr, modep)) return rc;
    if (formatp) *formatp = NC_FORMATX_NC3;
    return NC_NOERR;
}

void as_serial_classic(int ncid) {
    static NC_Dispatch table;
    NcHead *head = head_of(ncid);
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!head || head->dispatch != g_pnetcdf) return;
    if (!table.inq_format_extended) {
        table = *g_pnetcdf;
        table.inq_format_extended = serial_classic_format;
    }
    head->dispatch = &table;
}

// netCDF-C's call making the virtual netCDF-4 file over the inner one (`f`), which it closes if that fails.
int wrap(File &f, int mode, MPI_Comm comm, MPI_Info info, bool create, int *ncidp) {
    using Call = int (*)(const char *, int, MPI_Comm, MPI_Info, int *);
    const auto call = c_function<Call>(create ? "nc_create_par" : "nc_open_par");
    const auto close = c_function<int (*)(int)>("nc_abort");
    t_pending = &f;
    const int rc = call ? call(f.path.c_str(), mode | g_slot, comm, info, ncidp) : NC_EINTERNAL;
    t_pending = nullptr;
    if (rc != NC_NOERR && close) close(f.inner);
    return rc;
}

} // namespace

int create_serial_classic(const char *path, int cmode, int *ncidp) {
    const auto create_par = c_function<int (*)(const char *, int, MPI_Comm, MPI_Info, int *)>("nc_create_par");
    if (!create_par) return NC_EINTERNAL;
    if (int rc = create_par(path, cmode, MPI_COMM_SELF, MPI_INFO_NULL, ncidp)) return rc;
    // (netCDF-C's classic library fills by default; its PnetCDF path, as PnetCDF, does not)
    int rc = guard([&] {
        inner_table(*ncidp, path);
        return NC_NOERR;
    });
    if (rc == NC_NOERR) rc = g_pnetcdf->set_fill(*ncidp, NC_FILL, nullptr);
    if (rc != NC_NOERR) {
        c_function<int (*)(int)>("nc_abort")(*ncidp);
        return rc;
    }
    as_serial_classic(*ncidp);
    return NC_NOERR;
}

int pnetcdf_ncid(int ncid) {
    if (const File *f = find(ncid)) ncid = f->inner;
    const NcHead *head = head_of(ncid);
    // (netCDF-C's PnetCDF path keeps PnetCDF's ncid as its internal one)
    return head && head->dispatch->model == NC_FORMATX_PNETCDF ? head->int_ncid : -1;
}

int create(const char *path, int cmode, MPI_Comm comm, MPI_Info info, int *ncidp, const std::string &rule,
           bool serial) {
    File f;
    f.serial = serial;
    int rc = guard([&] {
        register_table(path);
        return NC_NOERR;
    });
    if (rc) return rc;
    const int keep = NC_NOCLOBBER | NC_SHARE;
    const auto create_par = c_function<int (*)(const char *, int, MPI_Comm, MPI_Info, int *)>("nc_create_par");
    if ((rc = create_par(path, (cmode & keep) | NC_64BIT_DATA, comm, info, &f.inner))) return rc;
    f.format = cmode & NC_CLASSIC_MODEL ? NC_FORMAT_NETCDF4_CLASSIC : NC_FORMAT_NETCDF4;
    f.mode = cmode;
    f.writer = f.indef = true;
    f.path = path, f.rule = rule;
    rc = guard([&] {
        f.d = inner_table(f.inner, path);
        f.pnc = pnetcdf_ncid(f.inner);
        return NC_NOERR;
    });
    // netCDF-4 files are filled (PnetCDF's are not, by default)
    if (rc == NC_NOERR) rc = f.d->set_fill(f.inner, f.inner_fill(), nullptr);
    if (rc != NC_NOERR) {
        c_function<int (*)(int)>("nc_abort")(f.inner);
        return rc;
    }
    rc = wrap(f, cmode & ~(NC_NETCDF4 | NC_CLASSIC_MODEL), comm, info, true, ncidp);
    if (rc == NC_NOERR)
        log::debug("nc_create_par of '%s': a virtual netCDF-4 file (ncid %d over %d)", path, *ncidp, f.inner);
    return rc;
}

int open(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp, const std::string &rule,
         bool serial) {
    File f;
    f.serial = serial;
    if (int rc = open_par_inner(path, mode, comm, info, &f.inner)) return rc;
    // a classic file is as its writer made it; a netCDF-4 one carries the hidden attribute
    int rc = guard([&] {
        f.d = inner_table(f.inner, path);
        f.pnc = pnetcdf_ncid(f.inner);
        return NC_NOERR;
    });
    int attid = -1;
    if (rc == NC_NOERR && f.d->inq_attid(f.inner, NC_GLOBAL, kHidden, &attid) != NC_NOERR) {
        if (serial) as_serial_classic(f.inner);
        *ncidp = f.inner;
        return NC_NOERR;
    }
    if (rc == NC_NOERR) rc = guard([&] {
        register_table(path);
        return NC_NOERR;
    });
    f.writer = (mode & NC_WRITE) != 0;
    f.opened = true;
    f.mode = mode | NC_NETCDF4;
    f.path = path, f.rule = rule;
    if (rc == NC_NOERR) rc = load_hidden(f);
    if (rc != NC_NOERR) {
        c_function<int (*)(int)>("nc_abort")(f.inner);
        return rc;
    }
    rc = wrap(f, mode, comm, info, false, ncidp);
    if (rc == NC_NOERR)
        log::debug("nc_open_par of '%s': a virtual netCDF-4 file (ncid %d over %d)", path, *ncidp, f.inner);
    return rc;
}

} // namespace dtf::runtime::nc4

#else // built without netCDF-C's headers

#include "common/error.hpp"

namespace dtf::runtime::nc4 {

int create(const char *path, int, MPI_Comm, MPI_Info, int *, const std::string &rule, bool) {
    return guard([&]() -> int {
        fail(DTF_ERR_UNSUPPORTED, "nc_create_par of '%s' as a netCDF-4 file: %s names it in transfer mode, and this "
             "dtf was built without netCDF-C's headers (netcdf_dispatch.h; Debian: libnetcdf-pnetcdf-dev): serve it "
             "in file mode (mode=\"file\"), or build dtf with them", path, rule.c_str());
    });
}

int open(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp, const std::string &, bool) {
    using Call = int (*)(const char *, int, MPI_Comm, MPI_Info, int *);
    return reinterpret_cast<Call>(netcdf_c_function("nc_open_par"))(path, mode, comm, info, ncidp);
}

int create_serial_classic(const char *path, int cmode, int *ncidp) {
    using Call = int (*)(const char *, int, MPI_Comm, MPI_Info, int *);
    return reinterpret_cast<Call>(netcdf_c_function("nc_create_par"))(path, cmode, MPI_COMM_SELF, MPI_INFO_NULL,
                                                                        ncidp);
}

int pnetcdf_ncid(int) { return -1; }

} // namespace dtf::runtime::nc4

#endif
