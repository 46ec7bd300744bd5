// The public C API (dtf.h). Every function holds the runtime lock and converts errors to codes.
#include <pnetcdf.h>

#include <mutex>

#include "common/api.hpp"
#include "common/cwd.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "runtime/runtime.hpp"
#include "runtime/vfile.hpp"

using dtf::runtime::Runtime;

DTF_API int dtf_init(const char *config_path, const char *component_name) {
    return dtf::guard([&] {
        std::lock_guard<std::recursive_mutex> lock(Runtime::mutex());
        Runtime::init(config_path, component_name);
        return 0;
    });
}

DTF_API int dtf_transfer(const char *filename, int ncid) {
    return dtf::guard([&] {
        std::lock_guard<std::recursive_mutex> lock(Runtime::mutex());
        Runtime *rt = Runtime::instance();
        if (!rt) dtf::fail(DTF_ERR_NOT_INIT, "dtf_transfer('%s'): dtf_init has not been called", filename ? filename : "");
        if (!filename) dtf::fail(DTF_ERR_ARG, "dtf_transfer: filename is NULL");
        std::string path = dtf::config::normalize_path(filename, dtf::current_dir());
        auto check = [&](const std::string &actual) {
            if (path != actual)
                dtf::fail(DTF_ERR_ARG, "dtf_transfer('%s', %d): ncid %d is the file '%s'", filename, ncid, ncid,
                          actual.c_str());
        };
        if (auto *vf = rt->virtual_file(ncid)) {
            check(vf->path);
            return dtf::runtime::vfile_transfer(*rt, *vf);
        }
        auto it = rt->open_files().find(ncid);
        if (it == rt->open_files().end()) return 0; // not a file dtf handles: nothing to move
        check(it->second.path);
        return 0; // file mode: the data moves through the file system at close
    });
}

DTF_API int dtf_finalize(void) {
    return dtf::guard([&] {
        std::lock_guard<std::recursive_mutex> lock(Runtime::mutex());
        Runtime::finalize();
        return 0;
    });
}

DTF_API const char *dtf_strerror(int code) {
    if (const char *m = dtf::error_message(code)) return m;
    return ncmpi_strerror(code);
}

DTF_API const char *dtf_errmsg(void) { return dtf::last_error(); }
