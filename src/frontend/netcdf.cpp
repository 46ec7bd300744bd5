// netCDF-C's calls that open, create and close files, for the paths dtf handles (libdtf exports them
// ahead of libnetcdf: linked before it, or preloaded; the rest of netCDF-C is not touched):
//
//   file mode      the whole session goes through these calls, whatever the file's format (netCDF-4
//                  files included): the open or create waits for this component's turn on the path as
//                  PnetCDF's does (files.cpp), and the close tells the other components. The library's
//                  own calls inside them (PnetCDF's for a classic file, HDF5's MPI-IO for a netCDF-4
//                  one) are dtf's nested calls and pass straight on.
//   transfer mode  the calls are made by netcdf4.cpp: a classic file as is, netCDF-C's PnetCDF calls
//                  served (vfile.cpp); a netCDF-4 file as a virtual netCDF-4 file over a CDF-5 one.
//   serial calls   nc_create, nc_open (one process, no communicator): a session of this process alone;
//                  in file mode the writer of a path counts the processes that read a version
//                  (serial_readers=); in transfer mode the call is made as a parallel one over
//                  MPI_COMM_SELF, and the writer's session takes that many reader processes, each
//                  opening it alone (SerialOpen, WriterSession::serial).
// Calls before dtf_init and from inside dtf pass straight on.
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/export.hpp"
#include "common/trace.hpp"
#include "frontend/files.hpp"
#include "frontend/netcdf4.hpp"
#include "pnc/hook.h"

namespace dtf::runtime {
namespace {

// netCDF-C's own function `name`: the next definition after libdtf's, or, where netCDF-C was loaded
// in a scope of its own (Python dlopens its extension modules RTLD_LOCAL, and their libnetcdf with
// them), the definition in a loaded library other than libdtf.
void *next_definition(const char *name) {
    if (void *p = dlsym(RTLD_NEXT, name)) return p;
    std::vector<std::string> loaded;
    dl_iterate_phdr([](dl_phdr_info *info, size_t, void *out) {
        auto *names = static_cast<std::vector<std::string> *>(out);
        if (info->dlpi_name && *info->dlpi_name) names->push_back(info->dlpi_name);
        return 0;
    }, &loaded);
    Dl_info own{};
    dladdr(reinterpret_cast<void *>(&next_definition), &own);
    for (const std::string &path : loaded) {
        void *lib = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
        if (!lib) continue;
        void *p = dlsym(lib, name);
        Dl_info where{};
        const bool other = p && dladdr(p, &where) && where.dli_fbase != own.dli_fbase;
        dlclose(lib);
        if (other) return p;
    }
    return nullptr;
}

} // namespace

// (kept once found: netCDF-C may be loaded after a first look, by Python's import)
void *netcdf_c_function(const char *name) {
    static std::mutex mutex;
    static std::map<std::string, void *> found;
    std::lock_guard<std::mutex> lock(mutex);
    void *&p = found[name];
    if (!p) p = next_definition(name);
    return p;
}

namespace {

template <class F> F next(const char *name) {
    static_assert(sizeof(F) == sizeof(void *));
    return reinterpret_cast<F>(next_definition(name));
}

// A call whose netCDF-C function was not found (cannot happen when netCDF-C makes the call).
int missing(const char *name) {
    return guard([&]() -> int { fail(DTF_ERR_INTERNAL, "%s: netCDF-C's own %s was not found", name, name); });
}

// A create's mode with the format netCDF-C gives it when it names none: its default format's flags
// (nc_set_default_format, which netCDF4-python's serial create uses; read by setting it and back).
int with_default_format(int mode) {
    if (mode & (NC_64BIT_OFFSET | NC_64BIT_DATA | NC_NETCDF4)) return mode;
    using SetDefault = int (*)(int, int *);
    const auto set = reinterpret_cast<SetDefault>(netcdf_c_function("nc_set_default_format"));
    int format = NC_FORMAT_CLASSIC;
    if (!set || set(NC_FORMAT_CLASSIC, &format) != NC_NOERR) return mode;
    set(format, nullptr);
    switch (format) {
    case NC_FORMAT_64BIT_OFFSET: return mode | NC_64BIT_OFFSET;
    case NC_FORMAT_CDF5: return mode | NC_64BIT_DATA;
    case NC_FORMAT_NETCDF4: return mode | NC_NETCDF4;
    case NC_FORMAT_NETCDF4_CLASSIC: return mode | NC_NETCDF4 | NC_CLASSIC_MODEL;
    default: return mode;
    }
}

// The library's call, made as the config says for its path: in transfer mode (a parallel open or
// create) by netcdf4.cpp, outside dtf (its PnetCDF calls are the ones dtf serves).
int serve(const OpenCall &given, int *ncidp) {
    OpenCall call = given;
    int rc = DTF_PNC_PASS;
    std::string rule;
    if (!Entry::nested()) {
        Entry entry;
        if (Runtime *rt = Runtime::instance()) {
            trace::Span span("netcdf", call.name);
            if (call.create) call.mode = with_default_format(call.mode);
            rc = guard([&] { return open_or_create(*rt, call, ncidp); });
            Target t;
            if (rc == kNetcdfTransfer && find_target(*rt, call.path, &t))
                rule = format("%s:%d", rt->config().path.c_str(), t.rule->line);
        }
    }
    if (rc != kNetcdfTransfer) return rc == DTF_PNC_PASS ? call.real(ncidp) : rc;
    // (a serial call: made as a parallel one over this process alone, so that netCDF-C takes its
    // PnetCDF path for a classic file too)
    std::optional<SerialOpen> serial;
    if (call.serial) serial.emplace();
    if (!call.create) return nc4::open(call.path, call.mode, call.comm, call.info, ncidp, rule, call.serial);
    if (call.mode & NC_NETCDF4)
        return nc4::create(call.path, call.mode, call.comm, call.info, ncidp, rule, call.serial);
    if (!call.serial) return call.real(ncidp);
    return nc4::create_serial_classic(call.path, call.mode, ncidp);
}

int close_call(const char *name, int ncid, bool abort, int (*real)(int)) {
    int rc = DTF_PNC_PASS;
    if (!Entry::nested()) {
        Entry entry;
        if (Runtime *rt = Runtime::instance()) {
            trace::Span span("netcdf", name);
            rc = guard([&] { return close_file(*rt, false, ncid, abort, [&] { return real(ncid); }); });
        }
    }
    return rc == DTF_PNC_PASS ? real(ncid) : rc;
}

} // namespace
} // namespace dtf::runtime

using dtf::runtime::next;
using dtf::runtime::serve;
using dtf::runtime::missing;

// The library's own function NAME, of type TYPE, as `real`.
#define DTF_NC_REAL(name, type)                                                                     \
    static const auto real = next<type>(#name);                                                     \
    if (!real) return missing(#name)

DTF_API int nc_create_par(const char *path, int cmode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    DTF_NC_REAL(nc_create_par, int (*)(const char *, int, MPI_Comm, MPI_Info, int *));
    return serve({"nc_create_par", true, false, false, comm, path, cmode, info,
                  [&](int *id) { return real(path, cmode, comm, info, id); }}, ncidp);
}

DTF_API int nc_open_par(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    DTF_NC_REAL(nc_open_par, int (*)(const char *, int, MPI_Comm, MPI_Info, int *));
    return serve({"nc_open_par", false, false, false, comm, path, mode, info,
                  [&](int *id) { return real(path, mode, comm, info, id); }}, ncidp);
}

// The serial calls: a session of this process alone.
DTF_API int nc_create(const char *path, int cmode, int *ncidp) {
    DTF_NC_REAL(nc_create, int (*)(const char *, int, int *));
    return serve({"nc_create", true, false, true, MPI_COMM_SELF, path, cmode, MPI_INFO_NULL,
                  [&](int *id) { return real(path, cmode, id); }}, ncidp);
}

DTF_API int nc__create(const char *path, int cmode, size_t initialsz, size_t *chunksizehintp, int *ncidp) {
    DTF_NC_REAL(nc__create, int (*)(const char *, int, size_t, size_t *, int *));
    return serve({"nc__create", true, false, true, MPI_COMM_SELF, path, cmode, MPI_INFO_NULL,
                  [&](int *id) { return real(path, cmode, initialsz, chunksizehintp, id); }}, ncidp);
}

DTF_API int nc_open(const char *path, int mode, int *ncidp) {
    DTF_NC_REAL(nc_open, int (*)(const char *, int, int *));
    return serve({"nc_open", false, false, true, MPI_COMM_SELF, path, mode, MPI_INFO_NULL,
                  [&](int *id) { return real(path, mode, id); }}, ncidp);
}

DTF_API int nc__open(const char *path, int mode, size_t *chunksizehintp, int *ncidp) {
    DTF_NC_REAL(nc__open, int (*)(const char *, int, size_t *, int *));
    return serve({"nc__open", false, false, true, MPI_COMM_SELF, path, mode, MPI_INFO_NULL,
                  [&](int *id) { return real(path, mode, chunksizehintp, id); }}, ncidp);
}

DTF_API int nc_close(int ncid) {
    DTF_NC_REAL(nc_close, int (*)(int));
    return dtf::runtime::close_call("nc_close", ncid, false, real);
}

DTF_API int nc_abort(int ncid) {
    DTF_NC_REAL(nc_abort, int (*)(int));
    return dtf::runtime::close_call("nc_abort", ncid, true, real);
}
