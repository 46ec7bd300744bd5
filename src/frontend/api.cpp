// The public C API (dtf.h). Every function runs as an Entry (the runtime lock) and converts errors
// to codes.
#include <pnetcdf.h>

#include <algorithm>

#include "common/export.hpp"
#include "common/counters.hpp"
#include "common/cwd.hpp"
#include "common/error.hpp"
#include "common/phase.hpp"
#include "common/trace.hpp"
#include "config/config.hpp"
#include "runtime/runtime.hpp"
#include "frontend/files.hpp"
#include "frontend/netcdf4.hpp"
#include "transport/mpi_util.hpp"

using dtf::runtime::Runtime;

DTF_API int dtf_init(const char *config_path, const char *component_name) {
    return dtf::guard([&] {
        dtf::runtime::Entry entry;
        if (const std::string lib = dtf::runtime::bypassing_dtf("ncmpi_create"); !lib.empty())
            dtf::fail(DTF_ERR_CONFIG, "dtf_init: this program's PnetCDF calls go to %s, not through dtf, which "
                      "therefore sees none of its files: it was linked with PnetCDF before dtf. Link with -ldtf "
                      "before -lpnetcdf (`pkg-config --libs dtf` gives both in that order), or run it with "
                      "LD_PRELOAD=libdtf.so", lib.c_str());
        if (const std::string lib = dtf::runtime::bypassing_dtf("nc_open"); !lib.empty())
            dtf::fail(DTF_ERR_CONFIG, "dtf_init: this program's netCDF-C calls go to %s, not through dtf, which "
                      "therefore coordinates none of its netCDF-4 or serial files: it was linked with netCDF-C before "
                      "dtf. Link with -ldtf before -lnetcdf, or run it with LD_PRELOAD=libdtf.so", lib.c_str());
        Runtime::init(config_path, component_name);
        return 0;
    });
}

DTF_API int dtf_transfer(const char *filename, int ncid) {
    return dtf::guard([&] {
        dtf::runtime::Entry entry;
        Runtime *rt = Runtime::instance();
        if (!rt)
            dtf::fail(DTF_ERR_NOT_INIT, "dtf_transfer('%s'): dtf_init has not been called", filename ? filename : "");
        if (!filename) dtf::fail(DTF_ERR_ARG, "dtf_transfer: filename is NULL");
        dtf::trace::Span span("dtf", "dtf_transfer");
        if (span.active()) span.args("\"path\":" + dtf::trace::quote(filename));
        std::string path = dtf::config::normalize_path(filename, dtf::current_dir());
        auto check = [&](const std::string &actual) {
            if (path != actual)
                dtf::fail(DTF_ERR_ARG, "dtf_transfer('%s', %d): ncid %d is the file '%s'", filename, ncid, ncid,
                          actual.c_str());
        };
        // (a PnetCDF ncid, or netCDF-C's of a file on PnetCDF: the virtual file under it)
        auto *vf = files(*rt).virtual_file(ncid);
        if (!vf && !files(*rt).open_file(ncid)) vf = files(*rt).virtual_file(dtf::runtime::nc4::pnetcdf_ncid(ncid));
        if (vf) {
            check(vf->path);
            return dtf::runtime::session_transfer(*rt, *vf);
        }
        const dtf::runtime::OpenFile *f = files(*rt).open_file(ncid);
        if (!f) return 0; // not a file dtf handles: nothing to move
        check(f->path);
        return 0; // file mode: the data moves through the file system at close
    });
}

DTF_API int dtf_finalize(void) {
    return dtf::guard([&] {
        dtf::runtime::Entry entry;
        Runtime::finalize();
        return 0;
    });
}

DTF_API int dtf_ioserver(void) {
    return dtf::guard([&] {
        dtf::runtime::Entry entry;
        Runtime *rt = Runtime::instance();
        if (!rt) dtf::fail(DTF_ERR_NOT_INIT, "dtf_ioserver: dtf_init has not been called");
        dtf::runtime::serve_io(*rt);
        return 0;
    });
}

DTF_API const char *dtf_strerror(int code) {
    if (const char *m = dtf::error_message(code)) return m;
    return ncmpi_strerror(code);
}

DTF_API const char *dtf_errmsg(void) { return dtf::last_error(); }

DTF_API int dtf_timers(int on) {
    dtf::phase::enable(on != 0);
    return DTF_SUCCESS;
}

DTF_API int dtf_timers_read(double *seconds, long long *bytes, int reset) {
    dtf::phase::Totals t = dtf::phase::read(reset != 0);
    if (seconds) std::copy(t.seconds, t.seconds + dtf::phase::Count, seconds);
    if (bytes) std::copy(t.bytes, t.bytes + dtf::phase::Count, bytes);
    return DTF_SUCCESS;
}

DTF_API const char *dtf_phase_name(int phase) { return dtf::phase::name(phase); }

DTF_API int dtf_counters_read(long long *messages, long long *bytes, int reset) {
    dtf::counters::Totals t = dtf::counters::read(reset != 0);
    if (messages) std::copy(t.messages, t.messages + dtf::counters::Count, messages);
    if (bytes) std::copy(t.bytes, t.bytes + dtf::counters::Count, bytes);
    return DTF_SUCCESS;
}

DTF_API const char *dtf_count_name(int count) { return dtf::counters::name(count); }

DTF_API int dtf_intercomm(const char *component, MPI_Comm *comm) {
    return dtf::guard([&] {
        dtf::runtime::Entry entry;
        Runtime *rt = Runtime::instance();
        if (!rt) dtf::fail(DTF_ERR_NOT_INIT, "dtf_intercomm: dtf_init has not been called");
        if (!component || !comm) dtf::fail(DTF_ERR_ARG, "dtf_intercomm: component or comm is NULL");
        const int c = rt->config().component_index(component);
        if (c < 0 || !rt->connected_to(c))
            dtf::fail(DTF_ERR_ARG, "dtf_intercomm('%s'): component '%s' is not connected to '%s' (no [FILE] section "
                      "names both)", component, rt->self_name().c_str(), component);
        dtf::transport::Blocking unlocked; // collective over both components
        dtf::transport::check_mpi(MPI_Comm_dup(rt->peer(c).inter, comm), "MPI_Comm_dup (dtf_intercomm)");
        return 0;
    });
}
