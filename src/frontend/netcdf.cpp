// netCDF-C's calls that open, create and close files, for the paths dtf handles (libdtf exports them
// ahead of libnetcdf: linked before it, or preloaded; the rest of netCDF-C is not touched):
//
//   file mode      the whole session goes through these calls, whatever the file's format (netCDF-4
//                  files included): the open or create waits for this component's turn on the path as
//                  PnetCDF's does (files.cpp), and the close tells the other components. The library's
//                  own calls inside them (PnetCDF's for a classic file, HDF5's MPI-IO for a netCDF-4
//                  one) are dtf's nested calls and pass straight on.
//   transfer mode  the calls pass on, and netCDF-C's PnetCDF calls are served (vfile.cpp); creating a
//                  netCDF-4 file, which PnetCDF never sees, is refused with the reason.
//   serial calls   nc_create, nc_open (one process, no communicator) of a path the config names for
//                  this component: refused, not coordinated yet (docs/USER-GUIDE.md, section 10).
// Calls before dtf_init and from inside dtf pass straight on.
#include <dlfcn.h>
#include <link.h>
#include <mpi.h>

#include <cstddef>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/export.hpp"
#include "common/trace.hpp"
#include "frontend/files.hpp"
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

template <class F> F next(const char *name) {
    static_assert(sizeof(F) == sizeof(void *));
    return reinterpret_cast<F>(next_definition(name));
}

// A call whose netCDF-C function was not found (cannot happen when netCDF-C makes the call).
int missing(const char *name) {
    return guard([&]() -> int { fail(DTF_ERR_INTERNAL, "%s: netCDF-C's own %s was not found", name, name); });
}

int parallel_open(const OpenCall &call, int *ncidp) {
    if (Entry::nested()) return DTF_PNC_PASS;
    Entry entry;
    Runtime *rt = Runtime::instance();
    if (!rt) return DTF_PNC_PASS;
    trace::Span span("netcdf", call.name);
    return guard([&] { return open_or_create(*rt, call, ncidp); });
}

int serial_open(const char *name, const char *path) {
    if (Entry::nested()) return DTF_PNC_PASS;
    Entry entry;
    Runtime *rt = Runtime::instance();
    if (!rt) return DTF_PNC_PASS;
    return guard([&] {
        Target t;
        if (!find_target(*rt, path, &t)) return DTF_PNC_PASS;
        fail(DTF_ERR_UNSUPPORTED, "%s of '%s': %s:%d names it, and dtf does not coordinate serial netCDF files yet "
             "(opened by one process, without a communicator): open it with nc_open_par or nc_create_par over the "
             "component's ranks, or leave it out of the config", name, t.path.c_str(), rt->config().path.c_str(),
             t.rule->line);
    });
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

using dtf::runtime::OpenCall;

DTF_API int nc_create_par(const char *path, int cmode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, MPI_Comm, MPI_Info, int *)>("nc_create_par");
    if (!real) return dtf::runtime::missing("nc_create_par");
    auto call = [&](int *id) { return real(path, cmode, comm, info, id); };
    const int rc = dtf::runtime::parallel_open(OpenCall{"nc_create_par", true, false, comm, path, cmode, info, call},
                                               ncidp);
    return rc == DTF_PNC_PASS ? call(ncidp) : rc;
}

DTF_API int nc_open_par(const char *path, int mode, MPI_Comm comm, MPI_Info info, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, MPI_Comm, MPI_Info, int *)>("nc_open_par");
    if (!real) return dtf::runtime::missing("nc_open_par");
    auto call = [&](int *id) { return real(path, mode, comm, info, id); };
    const int rc = dtf::runtime::parallel_open(OpenCall{"nc_open_par", false, false, comm, path, mode, info, call},
                                               ncidp);
    return rc == DTF_PNC_PASS ? call(ncidp) : rc;
}

DTF_API int nc_create(const char *path, int cmode, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, int *)>("nc_create");
    if (!real) return dtf::runtime::missing("nc_create");
    const int rc = dtf::runtime::serial_open("nc_create", path);
    return rc == DTF_PNC_PASS ? real(path, cmode, ncidp) : rc;
}

DTF_API int nc__create(const char *path, int cmode, size_t initialsz, size_t *chunksizehintp, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, size_t, size_t *, int *)>("nc__create");
    if (!real) return dtf::runtime::missing("nc__create");
    const int rc = dtf::runtime::serial_open("nc__create", path);
    return rc == DTF_PNC_PASS ? real(path, cmode, initialsz, chunksizehintp, ncidp) : rc;
}

DTF_API int nc_open(const char *path, int mode, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, int *)>("nc_open");
    if (!real) return dtf::runtime::missing("nc_open");
    const int rc = dtf::runtime::serial_open("nc_open", path);
    return rc == DTF_PNC_PASS ? real(path, mode, ncidp) : rc;
}

DTF_API int nc__open(const char *path, int mode, size_t *chunksizehintp, int *ncidp) {
    static const auto real = dtf::runtime::next<int (*)(const char *, int, size_t *, int *)>("nc__open");
    if (!real) return dtf::runtime::missing("nc__open");
    const int rc = dtf::runtime::serial_open("nc__open", path);
    return rc == DTF_PNC_PASS ? real(path, mode, chunksizehintp, ncidp) : rc;
}

DTF_API int nc_close(int ncid) {
    static const auto real = dtf::runtime::next<int (*)(int)>("nc_close");
    if (!real) return dtf::runtime::missing("nc_close");
    return dtf::runtime::close_call("nc_close", ncid, false, real);
}

DTF_API int nc_abort(int ncid) {
    static const auto real = dtf::runtime::next<int (*)(int)>("nc_abort");
    if (!real) return dtf::runtime::missing("nc_abort");
    return dtf::runtime::close_call("nc_abort", ncid, true, real);
}
