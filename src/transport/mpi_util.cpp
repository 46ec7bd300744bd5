#include "transport/mpi_util.hpp"

#include <vector>

namespace dtf::transport {

namespace {
BlockingHooks g_hooks;
}

void set_blocking_hooks(BlockingHooks hooks) { g_hooks = hooks; }

Blocking::Blocking() : released_(g_hooks.release && g_hooks.release()) {}

Blocking::~Blocking() {
    if (released_) g_hooks.reacquire();
}

std::string mpi_error_string(int rc) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) return format("MPI error %d", rc);
    return std::string(s, static_cast<size_t>(len));
}

ScopedErrorsReturn::ScopedErrorsReturn() {
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &world_);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &self_);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
}

ScopedErrorsReturn::~ScopedErrorsReturn() {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, world_);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, self_);
    MPI_Errhandler_free(&world_);
    MPI_Errhandler_free(&self_);
}

std::vector<std::pair<std::string, std::string>> info_entries(MPI_Info info) {
    std::vector<std::pair<std::string, std::string>> out;
    if (info == MPI_INFO_NULL) return out;
    int n = 0;
    MPI_Info_get_nkeys(info, &n);
    for (int i = 0; i < n; ++i) {
        char key[MPI_MAX_INFO_KEY + 1];
        int len = 0, found = 0;
        MPI_Info_get_nthkey(info, i, key);
        MPI_Info_get_valuelen(info, key, &len, &found);
        if (!found) continue;
        std::string value(static_cast<size_t>(len) + 1, '\0');
        MPI_Info_get(info, key, len, value.data(), &found); // len: without the terminator
        value.resize(static_cast<size_t>(len));
        out.emplace_back(key, value);
    }
    return out;
}

MPI_Info make_info(const std::vector<std::pair<std::string, std::string>> &entries) {
    MPI_Info info;
    check_mpi(MPI_Info_create(&info), "MPI_Info_create");
    for (const auto &[key, value] : entries) MPI_Info_set(info, key.c_str(), value.c_str());
    return info;
}

void check_mpi(int rc, const char *what) {
    if (rc != MPI_SUCCESS) fail(DTF_ERR_MPI, "%s failed: %s", what, mpi_error_string(rc).c_str());
}

namespace {
// Broadcast (code, message) from `root` to every rank of `comm`.
// `idle`: the others may wait long for the root (its part of on_root waits for a peer component up to
// DTF_TIMEOUT): they sleep between looks instead of spinning a core each inside MPI_Bcast.
void share(MPI_Comm comm, int root, int &code, std::string &message, bool idle = false) {
    Blocking blocking;
    int header[2] = {code, static_cast<int>(message.size())};
    if (idle) {
        MPI_Request req;
        check_mpi(MPI_Ibcast(header, 2, MPI_INT, root, comm, &req), "MPI_Ibcast (error agreement)");
        Backoff backoff(1e-4, 10e-3);
        for (int done = 0;;) {
            check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) break;
            backoff.sleep();
        }
    } else {
        check_mpi(MPI_Bcast(header, 2, MPI_INT, root, comm), "MPI_Bcast (error agreement)");
    }
    code = header[0];
    if (code == 0) return;
    message.resize(static_cast<size_t>(header[1]));
    check_mpi(MPI_Bcast(message.data(), header[1], MPI_CHAR, root, comm), "MPI_Bcast (error agreement)");
}
} // namespace

void on_root(MPI_Comm comm, int root, const std::function<void()> &fn) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    int code = 0;
    std::string message;
    if (rank == root) {
        try {
            fn();
        } catch (const Error &e) {
            code = e.code();
            message = e.what();
        }
    }
    share(comm, root, code, message, true);
    if (code != 0) throw Error(code, message, rank != root);
}

void on_all(MPI_Comm comm, const std::function<void()> &fn) {
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int own_code = 0;
    std::string own_message;
    try {
        fn();
    } catch (const Error &e) {
        own_code = e.code();
        own_message = e.what();
    }
    int mine = own_code ? rank : size, first = size;
    {
        Blocking blocking;
        check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce (error agreement)");
    }
    if (first == size) return;
    int code = own_code;
    std::string message = own_message;
    share(comm, first, code, message);
    if (own_code != 0) throw Error(own_code, own_message); // each failing rank reports its own failure
    throw Error(code, format("rank %d: %s", first, message.c_str()), true);
}

void wait_request(MPI_Request *req, const Deadline &deadline, const std::function<std::string()> &what) {
    Blocking blocking;
    Backoff backoff;
    for (;;) {
        int done = 0;
        check_mpi(MPI_Test(req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) return;
        if (deadline.expired())
            fail(DTF_ERR_TIMEOUT, "%s (waited %.1f s; DTF_TIMEOUT=%g)", what().c_str(), deadline.elapsed(),
                 deadline.timeout());
        backoff.sleep();
    }
}

} // namespace dtf::transport
