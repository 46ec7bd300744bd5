// Connecting two separately launched components into an inter-communicator.
//
// Protocol (on rank 0 of each side, over a rendezvous Board; key K = "<acceptor>--<connector>"):
//   acceptor : open an MPI port; put K.port = "<nonceA> <host> <pid> <time>\n<port>"; wait for
//              K.ack = "<nonceA> <nonceB>" carrying its own nonceA; put K.go = "<nonceB>"; accept.
//   connector: poll K.port; ack every new nonceA it sees with "<nonceA> <nonceB>"; connect once
//              K.go carries its own nonceB.
// Entries left by a crashed earlier run carry other nonces and are ignored; every wait is bounded by
// the timeout and polls with backoff. Only after both roots agreed do all ranks enter
// MPI_Comm_accept/MPI_Comm_connect, so no rank blocks in MPI while a peer is missing.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "transport/rendezvous.hpp"

namespace dtf::transport {

struct PairSpec {
    std::string self; // this component's name
    std::string peer; // the peer component's name
    bool acceptor;    // true on the side with the lower component index
    std::function<void()> check_peer; // called while waiting for the peer; throws to give up on it
    // Pairs the peer connects before this one in which it may wait DTF_TIMEOUT for a component that may
    // never come (Config::optional_pairs_before): while the peer's connecting mark is on the board,
    // this side waits as long again for each.
    int peer_waits_before = 0;
};

// The board entry of a component whose dtf_init is connecting (its root puts it before the first
// pair and removes it after the last).
std::string connecting_key(const std::string &component);
// The board entry of `component` that went on without `peer`, which did not connect (its value: the
// run id, Runtime::run_id): a reader that starts later in the run reads its files from the disk.
std::string went_on_key(const std::string &component, const std::string &peer);

// Collective over `local`. `board` is used on rank 0 only (may be null elsewhere). Returns an
// inter-communicator with MPI_ERRORS_RETURN. Throws DTF_ERR_TIMEOUT naming the peer and the board.
MPI_Comm connect_pair(MPI_Comm local, Board *board, const PairSpec &spec, double timeout_s);

// Exchange a string between the roots of an inter-communicator and broadcast the peer's string to
// every local rank. Collective over both groups of `inter`. Bounded by `timeout_s`. Throws
// DTF_ERR_CONNECT, with the peer's reason, when the peer's side is tell_exchange_failed's.
std::string exchange_with_peer(MPI_Comm inter, MPI_Comm local, const std::string &mine, double timeout_s,
                               const std::string &peer_name);

// The side of exchange_with_peer of a root that will not make the exchange (its dtf_init failed):
// sends `why`, so that the peer's exchange fails at once saying it, rather than wait for the timeout.
// Does not wait for the peer's side (its small messages are left unreceived).
void tell_exchange_failed(MPI_Comm inter, const std::string &why);

// Make every rank pair of `inter` exchange one small message, the acceptor side first, so that the
// network connections between the two components are opened now, one initiator per pair. Open MPI
// 4.1's TCP transport opens them lazily, and two ranks that open one to each other at the same time
// (common once a progress thread sends and receives at any moment) can fail with "Open MPI failed to
// TCP connect to a peer MPI process" and then lose messages. Collective over both groups; bounded.
// Returns how many of the peer's ranks share this rank's node (the messages carry a hash of the host
// name), so that a rank can tell when the components together have more ranks on its node than cores.
int open_all_routes(MPI_Comm inter, bool acceptor, double timeout_s, const std::string &peer_name);

} // namespace dtf::transport
