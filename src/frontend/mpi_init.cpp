// Zero-change mode: with DTF_COMPONENT set (and DTF_INI_FILE), dtf initializes inside MPI_Init /
// MPI_Init_thread as that component, so that a program that never calls dtf_* (unchanged, run with
// LD_PRELOAD=libdtf.so) has its files handled: puts and gets go through the PnetCDF wrappers, data
// moves at ncmpi_close (the writer serves its readers there, a reader fetches what it has not), and
// dtf finalizes inside MPI_Finalize (runtime.cpp, on_mpi_finalize). MPI is asked for
// MPI_THREAD_MULTIPLE, which the progress thread needs (a level at least the one the program asked
// for). Without DTF_COMPONENT the wrappers only pass the call on.
//
// In a single MPMD launch the world is split by component here first (mpi/mpmd.hpp).
//
// Open MPI's Fortran bindings call PMPI_Init themselves, so the Fortran entry points are wrapped too:
// mpi_init_ and mpi_init_thread_ (mpif.h, `use mpi`) and their mpi_f08 versions, each passed on to
// the pmpi_ one of the next library (dlsym(RTLD_NEXT)).
#include <dlfcn.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

#include "common/export.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "mpi/mpmd.hpp"
#include "mpi/world.h"
#include "runtime/runtime.hpp"

namespace {

const char *zero_change_component() {
    const char *c = std::getenv("DTF_COMPONENT");
    return c && *c ? c : nullptr;
}

// Whether the config (DTF_INI_FILE) lets a program that cannot have dtf run on plain PnetCDF: some
// [FILE] section falls back to the file system (fallback=). False when it cannot be read.
bool config_falls_back() {
    const char *ini = std::getenv("DTF_INI_FILE");
    if (!ini || !*ini) return false;
    try {
        for (const auto &rule : dtf::config::load(ini).files)
            if (rule.falls_back()) return true;
    } catch (const dtf::Error &) {
    }
    return false;
}

// A program run with DTF_COMPONENT asked for dtf, and it could not start (the cause is reported
// above). It never checks what MPI_Init returns: going on, it would write the config's files to
// disk as plain PnetCDF, or read whatever file of that name is there, and end "successfully". So it
// stops here, the whole launch with it (MPI_Abort), unless the config lets its files fall back to
// the file system (fallback=).
int without_dtf(const char *component) {
    int rank = 0;
    PMPI_Comm_rank(dtf_world_(MPI_COMM_WORLD), &rank); // (its rank in its component)
    const char *ini = std::getenv("DTF_INI_FILE");
    if (config_falls_back()) {
        if (rank == 0)
            std::fprintf(stderr, "[dtf] warning: DTF_COMPONENT=%s: dtf could not start, and %s has fallback=: "
                         "this program runs on plain PnetCDF, its files on the file system\n", component, ini);
        return MPI_ERR_OTHER;
    }
    if (rank == 0)
        std::fprintf(stderr, "[dtf] DTF_COMPONENT=%s: dtf could not start (above), and without it this program "
                     "would run on plain PnetCDF with the files of %s: it stops here (MPI_Abort, status 1). "
                     "fallback= in a [FILE] section lets a program go on without dtf\n",
                     component, ini && *ini ? ini : "its config");
    std::fflush(nullptr);
    PMPI_Abort(MPI_COMM_WORLD, 1);
    return MPI_ERR_OTHER; // (MPI_Abort does not return)
}

// After MPI's initialization succeeded: the MPMD mode's world split (mpi/mpmd.hpp), then dtf's, as
// DTF_COMPONENT. A failure is reported (the message as for dtf_init); then without_dtf.
int start_dtf(int rc) {
    if (rc == MPI_SUCCESS) rc = dtf::mpmd::setup();
    const char *component = zero_change_component();
    if (rc != MPI_SUCCESS || !component) return rc;
    const int code = dtf::guard([&] {
        dtf::runtime::Entry entry;
        dtf::runtime::Runtime::init(nullptr, component, true);
        return 0;
    });
    return code == 0 ? MPI_SUCCESS : without_dtf(component);
}

template <class F> F next(const char *name) { return reinterpret_cast<F>(dlsym(RTLD_NEXT, name)); }

using FortranInitThread = void (*)(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr);
using FortranInit = void (*)(MPI_Fint *ierr);

// A Fortran MPI_Init: `init` (the next library's), or, in zero-change mode, `init_thread` asking
// for MPI_THREAD_MULTIPLE; then dtf. `ierr` may be null (mpi_f08's optional ierror).
void fortran_init(const char *init, const char *init_thread, MPI_Fint *ierr) {
    MPI_Fint rc = MPI_SUCCESS;
    if (zero_change_component()) {
        MPI_Fint required = MPI_THREAD_MULTIPLE, provided = 0;
        if (auto f = next<FortranInitThread>(init_thread)) f(&required, &provided, &rc);
        else rc = MPI_ERR_OTHER;
    } else if (auto f = next<FortranInit>(init)) {
        f(&rc);
    } else {
        rc = MPI_ERR_OTHER;
    }
    rc = start_dtf(rc);
    if (ierr) *ierr = rc;
}

void fortran_init_thread(const char *name, MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    MPI_Fint rc = MPI_SUCCESS, level = zero_change_component() ? MPI_THREAD_MULTIPLE : *required;
    if (auto f = next<FortranInitThread>(name)) f(&level, provided, &rc);
    else rc = MPI_ERR_OTHER;
    rc = start_dtf(rc);
    if (ierr) *ierr = rc;
}

} // namespace

DTF_API int MPI_Init(int *argc, char ***argv) {
    if (!zero_change_component()) return start_dtf(PMPI_Init(argc, argv)); // (the MPMD split, if any)
    int provided = 0;
    return start_dtf(PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
}

DTF_API int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    return start_dtf(PMPI_Init_thread(argc, argv, zero_change_component() ? MPI_THREAD_MULTIPLE : required, provided));
}

DTF_API void mpi_init_(MPI_Fint *ierr) { fortran_init("pmpi_init_", "pmpi_init_thread_", ierr); }
DTF_API void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    fortran_init_thread("pmpi_init_thread_", required, provided, ierr);
}
DTF_API void mpi_init_f08_(MPI_Fint *ierr) { fortran_init("pmpi_init_f08_", "pmpi_init_thread_f08_", ierr); }
DTF_API void mpi_init_thread_f08_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
    fortran_init_thread("pmpi_init_thread_f08_", required, provided, ierr);
}
