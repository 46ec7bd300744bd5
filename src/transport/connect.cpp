#include "transport/connect.hpp"

#include "transport/channel.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <random>
#include <sstream>
#include <thread>

#include "common/clock.hpp"
#include "common/log.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::transport {

namespace {

std::string make_nonce() {
    std::random_device rd;
    std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()));
    return format("%016llx", static_cast<unsigned long long>(gen()));
}

std::string host_name() {
    char h[256] = {0};
    gethostname(h, sizeof h - 1);
    return h;
}

struct PortRecord {
    std::string nonce, origin, port; // origin: "<host> <pid> <unix time>"
};

std::optional<PortRecord> parse_port(const std::optional<std::string> &text) {
    if (!text) return std::nullopt;
    size_t nl = text->find('\n'), sp = text->find(' ');
    if (nl == std::string::npos || sp == std::string::npos || sp > nl) return std::nullopt;
    return PortRecord{text->substr(0, sp), text->substr(sp + 1, nl - sp - 1), text->substr(nl + 1)};
}

std::string pair_key(const PairSpec &s) {
    return s.acceptor ? s.self + "--" + s.peer : s.peer + "--" + s.self;
}

// The wait for the peer's side of the pair: DTF_TIMEOUT, or while the peer is still connecting to
// components it may go on without before this pair (its connecting mark is on the board), as long
// again for each of them: those may never come, and the peer waits DTF_TIMEOUT for each.
class PeerWait {
public:
    PeerWait(Board &board, const PairSpec &spec, double timeout_s)
        : board_(board), spec_(spec), timeout_(timeout_s), deadline_(timeout_s) {}
    bool expired() {
        if (!deadline_.expired()) return false;
        if (limit_ == timeout_ && spec_.peer_waits_before > 0 && board_.get(connecting_key(spec_.peer))) {
            limit_ = timeout_ * (1 + spec_.peer_waits_before);
            log::debug("'%s' is still connecting to components before this pair: waiting up to %g s for it",
                       spec_.peer.c_str(), limit_);
        }
        return deadline_.elapsed() >= limit_;
    }
    double elapsed() const { return deadline_.elapsed(); }
    // What the timeout message says of the bound.
    std::string bound() const {
        if (limit_ == timeout_) return format("DTF_TIMEOUT=%g", timeout_);
        return format("DTF_TIMEOUT=%g, and as long for each of the %d components '%s' was connecting to first, which "
                      "it may go on without", timeout_, spec_.peer_waits_before, spec_.peer.c_str());
    }

private:
    Board &board_;
    const PairSpec &spec_;
    double timeout_, limit_ = timeout_;
    Deadline deadline_;
};

void accept_side(Board &board, const PairSpec &spec, const std::string &port, double timeout_s) {
    const std::string key = pair_key(spec), nonce = make_nonce();
    board.remove(key + ".ack");
    board.remove(key + ".go");
    board.put(key + ".port", format("%s %s %d %lld\n%s", nonce.c_str(), host_name().c_str(),
                                    static_cast<int>(getpid()), static_cast<long long>(time(nullptr)),
                                    port.c_str()));
    log::debug("published port for '%s' in %s", spec.peer.c_str(), board.where().c_str());
    PeerWait deadline(board, spec, timeout_s);
    Backoff backoff(1e-3, 50e-3);
    for (;;) {
        if (auto ack = board.get(key + ".ack")) {
            std::istringstream in(*ack);
            std::string a, b;
            if ((in >> a >> b) && a == nonce) {
                board.put(key + ".go", b);
                return;
            }
        }
        if (spec.check_peer) spec.check_peer();
        if (deadline.expired())
            fail(DTF_ERR_TIMEOUT,
                 "component '%s' waited %.1f s for component '%s' to connect (port published in %s as "
                 "'.dtf-%s.port'); is '%s' running, with the same config file and DTF_GLOBAL_PATH? (%s)",
                 spec.self.c_str(), deadline.elapsed(), spec.peer.c_str(), board.where().c_str(), key.c_str(),
                 spec.peer.c_str(), deadline.bound().c_str());
        backoff.sleep();
    }
}

std::string connect_side(Board &board, const PairSpec &spec, double timeout_s) {
    const std::string key = pair_key(spec), nonce = make_nonce();
    PeerWait deadline(board, spec, timeout_s);
    Backoff backoff(1e-3, 50e-3);
    std::optional<PortRecord> seen;
    for (;;) {
        auto rec = parse_port(board.get(key + ".port"));
        if (rec && (!seen || seen->nonce != rec->nonce)) {
            board.put(key + ".ack", rec->nonce + " " + nonce);
            seen = rec;
        }
        if (seen) {
            auto go = board.get(key + ".go");
            if (go && *go == nonce) return seen->port;
        }
        if (spec.check_peer) spec.check_peer();
        if (deadline.expired()) {
            std::string found = seen ? format("; the port entry found there (written by host/pid/time %s) never "
                                              "answered: left over from an earlier run?",
                                              seen->origin.c_str())
                                     : "; no port entry was found there";
            fail(DTF_ERR_TIMEOUT,
                 "component '%s' waited %.1f s for component '%s' to accept a connection in %s%s. Is '%s' "
                 "running, with the same config file and DTF_GLOBAL_PATH? (%s)",
                 spec.self.c_str(), deadline.elapsed(), spec.peer.c_str(), board.where().c_str(), found.c_str(),
                 spec.peer.c_str(), deadline.bound().c_str());
        }
        backoff.sleep();
    }
}

} // namespace

std::string connecting_key(const std::string &component) { return component + ".connecting"; }
std::string went_on_key(const std::string &component, const std::string &peer) {
    return component + "--" + peer + ".went-on";
}

MPI_Comm connect_pair(MPI_Comm local, Board *board, const PairSpec &spec, double timeout_s) {
    int rank;
    MPI_Comm_rank(local, &rank);
    char port[MPI_MAX_PORT_NAME] = {0};
    on_root(local, 0, [&] {
        ScopedErrorsReturn errors_return;
        if (spec.acceptor) {
            check_mpi(MPI_Open_port(MPI_INFO_NULL, port), "MPI_Open_port");
            try {
                accept_side(*board, spec, port, timeout_s);
            } catch (...) { // (a peer that comes later must not find this port: nobody accepts there)
                MPI_Close_port(port);
                for (const char *suffix : {".port", ".ack", ".go"}) board->remove(pair_key(spec) + suffix);
                throw;
            }
        } else {
            std::string p = connect_side(*board, spec, timeout_s);
            snprintf(port, sizeof port, "%s", p.c_str());
        }
    });
    MPI_Comm inter = MPI_COMM_NULL;
    int rc = spec.acceptor ? MPI_Comm_accept(port, MPI_INFO_NULL, 0, local, &inter)
                           : MPI_Comm_connect(port, MPI_INFO_NULL, 0, local, &inter);
    if (rank == 0) { // each side removes what it published (file entries: the acceptor removes all)
        ScopedErrorsReturn errors_return;
        if (spec.acceptor) MPI_Close_port(port);
        const std::string key = pair_key(spec);
        for (const char *suffix : {".port", ".ack", ".go"}) board->remove(key + suffix);
    }
    if (rc != MPI_SUCCESS)
        fail(DTF_ERR_CONNECT, "component '%s': %s to component '%s' failed: %s", spec.self.c_str(),
             spec.acceptor ? "MPI_Comm_accept" : "MPI_Comm_connect", spec.peer.c_str(),
             mpi_error_string(rc).c_str());
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    return inter;
}

namespace {
// The first byte of a failed side's string in exchange_with_peer (never in a component name).
constexpr char kExchangeFailed = '\x01';
} // namespace

void tell_exchange_failed(MPI_Comm inter, const std::string &why) {
    const std::string text = kExchangeFailed + why.substr(0, 1000); // (small: sent eagerly)
    int len = static_cast<int>(text.size());
    MPI_Request reqs[2];
    const int tag = static_cast<int>(Tag::Handshake);
    if (MPI_Isend(&len, 1, MPI_INT, 0, tag, inter, &reqs[0]) != MPI_SUCCESS) return;
    if (MPI_Isend(text.data(), len, MPI_CHAR, 0, tag, inter, &reqs[1]) != MPI_SUCCESS) {
        MPI_Request_free(&reqs[0]);
        return;
    }
    // A moment for the sends to leave (the buffers live here); past it they are let go.
    Deadline deadline(1.0);
    for (int done = 0; !done && !deadline.expired();) {
        if (MPI_Testall(2, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS) break;
        if (!done) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    for (auto &req : reqs)
        if (req != MPI_REQUEST_NULL) MPI_Request_free(&req);
}

std::string exchange_with_peer(MPI_Comm inter, MPI_Comm local, const std::string &mine, double timeout_s,
                               const std::string &peer_name) {
    const int tag = static_cast<int>(Tag::Handshake);
    std::string theirs;
    on_root(local, 0, [&] {
        Deadline deadline(timeout_s);
        auto what = [&] { return format("waiting for the handshake of component '%s'", peer_name.c_str()); };
        int len = static_cast<int>(mine.size()), their_len = 0;
        MPI_Request reqs[2];
        check_mpi(MPI_Isend(&len, 1, MPI_INT, 0, tag, inter, &reqs[0]), "MPI_Isend");
        check_mpi(MPI_Irecv(&their_len, 1, MPI_INT, 0, tag, inter, &reqs[1]), "MPI_Irecv");
        wait_request(&reqs[1], deadline, what);
        wait_request(&reqs[0], deadline, what);
        theirs.resize(static_cast<size_t>(their_len));
        check_mpi(MPI_Isend(mine.data(), len, MPI_CHAR, 0, tag, inter, &reqs[0]), "MPI_Isend");
        check_mpi(MPI_Irecv(theirs.data(), their_len, MPI_CHAR, 0, tag, inter, &reqs[1]), "MPI_Irecv");
        wait_request(&reqs[1], deadline, what);
        wait_request(&reqs[0], deadline, what);
    });
    int len = static_cast<int>(theirs.size());
    check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, local), "MPI_Bcast");
    theirs.resize(static_cast<size_t>(len));
    check_mpi(MPI_Bcast(theirs.data(), len, MPI_CHAR, 0, local), "MPI_Bcast");
    if (!theirs.empty() && theirs[0] == kExchangeFailed) {
        int rank = 0;
        MPI_Comm_rank(local, &rank);
        throw Error(DTF_ERR_CONNECT, format("%s could not start dtf, so this component cannot connect to it: %s",
                                            peer_name.c_str(), theirs.c_str() + 1), rank != 0);
    }
    return theirs;
}

int open_all_routes(MPI_Comm inter, bool acceptor, double timeout_s, const std::string &peer_name) {
    int remote = 0;
    MPI_Comm_remote_size(inter, &remote);
    const int tag = static_cast<int>(Tag::Routes);
    // What travels is this rank's node: a hash of its host name (FNV-1a).
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    uint32_t node = 2166136261u;
    for (const char *c = host; *c; ++c) node = (node ^ static_cast<unsigned char>(*c)) * 16777619u;
    std::vector<uint32_t> out(static_cast<size_t>(remote), node), in(static_cast<size_t>(remote), 0);
    std::vector<MPI_Request> reqs(static_cast<size_t>(remote));
    Deadline deadline(timeout_s);
    auto phase = [&](bool send) {
        for (int r = 0; r < remote; ++r) {
            uint32_t *b = (send ? out : in).data() + r;
            check_mpi(send ? MPI_Isend(b, 1, MPI_UINT32_T, r, tag, inter, &reqs[static_cast<size_t>(r)])
                           : MPI_Irecv(b, 1, MPI_UINT32_T, r, tag, inter, &reqs[static_cast<size_t>(r)]),
                      send ? "MPI_Isend (opening routes)" : "MPI_Irecv (opening routes)");
        }
        for (auto &req : reqs)
            wait_request(&req, deadline, [&] {
                return format("opening the connections to component '%s'", peer_name.c_str());
            });
    };
    phase(acceptor);  // the acceptor's ranks open every connection...
    phase(!acceptor); // ...and the answers travel on them
    return static_cast<int>(std::count(in.begin(), in.end(), node));
}

} // namespace dtf::transport
