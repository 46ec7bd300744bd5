// The MPMD mode (mpmd.hpp) and the state of the generated MPI wrappers (world.h).
#include "mpi/mpmd.hpp"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "config/config.hpp"
#include "mpi/world.h"

extern "C" {
int dtf_world_on_ = 0;
MPI_Comm dtf_world_comm_ = MPI_COMM_NULL;
MPI_Fint dtf_world_fint_ = 0;
MPI_Fint dtf_world_real_fint_ = 0;

void *dtf_mpi_next_(void **cache, const char *name, void *ierr) {
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    if (!f) {
        std::fprintf(stderr, "[dtf] error: %s not found after libdtf: is the program's MPI library loaded?\n", name);
        if (ierr) *static_cast<MPI_Fint *>(ierr) = MPI_ERR_OTHER;
    }
    return f;
}
}

namespace dtf::mpmd {

namespace {

int g_context = 0;
const char *g_source = "MPI_APPNUM";
std::map<int, MPI_Comm> g_links;

bool wanted() {
    if (const char *v = std::getenv("DTF_MPMD"); v && (!std::strcmp(v, "0") || !std::strcmp(v, "1"))) return *v == '1';
    if (std::getenv("DTF_APPNUM")) return true;
    const char *contexts = std::getenv("OMPI_NUM_APP_CTX");
    return contexts && std::atoi(contexts) > 1;
}

// This process's program in the launch: DTF_APPNUM where the launcher sets it per program (srun
// --multi-prog gives every rank MPI_APPNUM 0), else MPI_APPNUM. False, reported, when neither says.
bool find_context() {
    if (const char *v = std::getenv("DTF_APPNUM")) {
        char *end = nullptr;
        const long n = std::strtol(v, &end, 10);
        if (!*v || *end || n < 0 || n > 1 << 20) {
            std::fprintf(stderr, "[dtf] error: DTF_ERR_CONFIG: DTF_APPNUM='%s': expected the number of this "
                                 "program in the launch, an integer >= 0\n", v);
            return false;
        }
        g_context = static_cast<int>(n);
        g_source = "DTF_APPNUM";
        return true;
    }
    int *appnum = nullptr, flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (!flag || !appnum) {
        std::fprintf(stderr, "[dtf] error: DTF_ERR_MPI: MPMD launch (DTF_MPMD=1): MPI gives no MPI_APPNUM, so dtf "
                             "cannot tell the programs of the launch apart (set DTF_APPNUM to each program's "
                             "number in the launch: 0, 1, ...)\n");
        return false;
    }
    g_context = *appnum;
    return true;
}

// DTF_TIMEOUT, read here since the configuration is not parsed yet (config.cpp checks it later).
double init_timeout() {
    const char *v = std::getenv("DTF_TIMEOUT");
    const double t = v ? std::atof(v) : 0;
    return t > 0 ? t : config::Settings{}.timeout_s;
}

// A failed MPI call inside MPI_Init: reported (there is no dtf_errmsg to read yet).
int failed(int rc, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(rc, text, &len);
    std::fprintf(stderr, "[dtf] error: DTF_ERR_MPI: MPMD launch: %s failed: %s\n", what, text);
    return rc;
}

} // namespace

int setup() {
    if (!wanted()) return MPI_SUCCESS;
    if (!find_context()) return MPI_ERR_OTHER;
    int rank = 0, size = 1, rc;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    // Every process of the launch joins here; one that runs without dtf never does: bounded.
    std::vector<int> contexts(static_cast<size_t>(size));
    MPI_Request req;
    if ((rc = PMPI_Iallgather(&g_context, 1, MPI_INT, contexts.data(), 1, MPI_INT, MPI_COMM_WORLD, &req)) !=
        MPI_SUCCESS)
        return failed(rc, "MPI_Iallgather of the application contexts");
    const double timeout = init_timeout(), start = PMPI_Wtime();
    for (int done = 0; !done;) {
        if ((rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
            return failed(rc, "MPI_Test of the application contexts' MPI_Iallgather");
        if (done) break;
        if (PMPI_Wtime() - start > timeout) {
            std::fprintf(stderr, "[dtf] error: DTF_ERR_TIMEOUT: MPMD launch: program %d (%s) waited in MPI_Init "
                                 "for the other programs of the launch to split MPI_COMM_WORLD with it; gave up after "
                                 "%.1f s (DTF_TIMEOUT=%g): every program of an MPMD launch must be linked with dtf "
                                 "or preloaded (DTF_MPMD=0 turns the mode off)\n",
                         g_context, g_source, PMPI_Wtime() - start, timeout);
            return MPI_ERR_OTHER;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    MPI_Comm component;
    if ((rc = PMPI_Comm_split(MPI_COMM_WORLD, g_context, rank, &component)) != MPI_SUCCESS)
        return failed(rc, "MPI_Comm_split of MPI_COMM_WORLD by application context");
    // One inter-communicator per pair of contexts, made in ascending order of the other context on
    // every process (so in one global order of the pairs: none waits for another in a cycle).
    std::map<int, int> leaders; // context -> its lowest rank in MPI_COMM_WORLD
    for (int r = size - 1; r >= 0; --r) leaders[contexts[static_cast<size_t>(r)]] = r;
    constexpr int kTag = 30571;
    for (const auto &[other, leader] : leaders) {
        if (other == g_context) continue;
        MPI_Comm inter;
        if ((rc = PMPI_Intercomm_create(component, 0, MPI_COMM_WORLD, leader, kTag, &inter)) != MPI_SUCCESS)
            return failed(rc, "MPI_Intercomm_create between the application contexts");
        PMPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
        g_links[other] = inter;
    }
    dtf_world_comm_ = component;
    dtf_world_fint_ = PMPI_Comm_c2f(component);
    dtf_world_real_fint_ = PMPI_Comm_c2f(MPI_COMM_WORLD);
    dtf_world_on_ = 1;
    return MPI_SUCCESS;
}

bool active() { return dtf_world_on_ != 0; }
int context() { return g_context; }
const char *context_source() { return g_source; }
const std::map<int, MPI_Comm> &links() { return g_links; }

} // namespace dtf::mpmd
