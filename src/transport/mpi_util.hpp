// Small MPI helpers shared by the transport and the runtime: error checks with context, error
// agreement across the ranks of a communicator (a failure on one rank never hangs the others), and
// bounded waits on requests.
#pragma once

#include <mpi.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.hpp"
#include "common/error.hpp"

namespace dtf::transport {

// MPI calls without a communicator (MPI_Lookup_name, MPI_Open_port, ...) report errors through
// MPI_COMM_WORLD's handler, which is the application's. This switches it (and MPI_COMM_SELF's) to
// MPI_ERRORS_RETURN for the scope and restores the application's handlers afterwards.
class ScopedErrorsReturn {
public:
    ScopedErrorsReturn();
    ~ScopedErrorsReturn();
    ScopedErrorsReturn(const ScopedErrorsReturn &) = delete;
    ScopedErrorsReturn &operator=(const ScopedErrorsReturn &) = delete;

private:
    MPI_Errhandler world_, self_;
};

// Hooks run around every call of these helpers that blocks for other ranks (collectives, bounded
// waits): the runtime sets them to release its lock there, so that a rank blocked in a collective
// does not stop its own progress thread from serving other components. release() returns whether
// it released anything (then reacquire() is called afterwards).
struct BlockingHooks {
    bool (*release)() = nullptr;
    void (*reacquire)() = nullptr;
};
void set_blocking_hooks(BlockingHooks hooks);

// The scope of one call that may block for other ranks or processes (uses the hooks; the runtime
// also puts real PnetCDF calls and its sleeps in one).
class Blocking {
public:
    Blocking();
    ~Blocking();
    Blocking(const Blocking &) = delete;
    Blocking &operator=(const Blocking &) = delete;

private:
    bool released_;
};

// The (key, value) pairs of `info` in its order (none for MPI_INFO_NULL), and an info made of them.
std::vector<std::pair<std::string, std::string>> info_entries(MPI_Info info);
MPI_Info make_info(const std::vector<std::pair<std::string, std::string>> &entries);

// Throw DTF_ERR_MPI "<what> failed: <MPI error string>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char *what);
std::string mpi_error_string(int rc);

// Run `fn` on rank `root` of `comm`; broadcast its outcome. Every rank returns normally or throws the
// same error (quietly on the ranks other than root). Collective over `comm`.
void on_root(MPI_Comm comm, int root, const std::function<void()> &fn);

// Run `fn` on every rank of `comm`, then agree: if any rank failed, every rank throws the error of the
// lowest failing rank (ranks that failed themselves throw their own). Collective over `comm`; blocks
// in MPI without the runtime lock (for dtf_init; the runtime's own is Runtime::on_all).
void on_all(MPI_Comm comm, const std::function<void()> &fn);

// Wait for `req`, polling with backoff, until `deadline`; on expiry cancel nothing (the caller decides)
// and throw DTF_ERR_TIMEOUT with "<what()> (waited S s; DTF_TIMEOUT=T)".
void wait_request(MPI_Request *req, const Deadline &deadline, const std::function<std::string()> &what);

} // namespace dtf::transport
