// The MPI point-to-point Channel (channel.hpp), and the one queue of every nonblocking MPI operation
// dtf has in flight in this process: control messages, write metadata, orders and data all go
// through it, so one progress() completes them all and one place knows what is still pending.
#pragma once

#include <mpi.h>

#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/buffers.hpp"
#include "transport/channel.hpp"
#include "transport/group.hpp"

namespace dtf::transport {

class MpiQueue {
public:
    // Sent buffers go back to `pool` (may be null).
    explicit MpiQueue(BufferPool *pool) : pool_(pool) {}
    ~MpiQueue();
    MpiQueue(const MpiQueue &) = delete;
    MpiQueue &operator=(const MpiQueue &) = delete;

    // Start one send of `bytes` per rank of `dests` on `comm`.
    Ticket send(MPI_Comm comm, const std::vector<int> &dests, int tag, std::vector<char> bytes, const char *what);
    // Send `size` bytes at `data` in place to `dest`, holding `keep` until the send is complete.
    Ticket send(MPI_Comm comm, int dest, int tag, const char *data, size_t size, std::shared_ptr<const void> keep,
                const char *what);
    Ticket receive(MPI_Comm comm, int source, int tag, char *buf, size_t size, const char *what);
    Ticket receive(MPI_Comm comm, int source, int tag, const std::vector<Span> &spans, const char *what);
    // Completes what has completed; true if anything did.
    bool progress();
    bool done(Ticket t) const { return remaining_.count(t) == 0; }
    void cancel(const std::vector<Ticket> &tickets); // the receives among them (Channel::cancel)
    // Gives up every operation on `comm` (a lost peer's): receives are cancelled, sends (which MPI
    // cannot take back) complete or fail unseen; none is counted or checked any more.
    void abandon(MPI_Comm comm);
    size_t pending_bytes(const std::vector<Ticket> &tickets) const;
    // Operations not done yet (all channels).
    size_t pending() const { return remaining_.size(); }
    // What they are, for messages: the first few operations' descriptions ("sending ...").
    std::string describe_pending() const;

private:
    struct Op {
        Ticket ticket;
        std::shared_ptr<std::vector<char>> buffer; // a send's bytes (shared by its requests), or a
                                                   // receive's staging buffer (below)
        size_t size;                               // bytes this request moves
        bool receive;
        const char *what;
        bool cancelled = false; // given up (cancel()): no longer counted, not checked
        std::vector<Span> scatter{}; // a receive into `buffer` whose bytes go there once complete
        MPI_Comm comm = MPI_COMM_NULL;
        std::shared_ptr<const void> keep{}; // the owner of a send's bytes sent in place
        bool data = false; // a receive of a data message (counters)
    };
    // One more request in flight, counted for its ticket.
    void track(MPI_Request request, Op op);
    BufferPool *pool_;
    std::vector<MPI_Request> requests_; // parallel to ops_
    std::vector<Op> ops_;
    std::unordered_map<Ticket, int> remaining_; // requests not complete, per ticket
    Ticket next_ = 1;
    std::vector<int> indices_;          // MPI_Testsome's output, kept: progress() runs in every wait
    std::vector<MPI_Status> statuses_;
};

// A Channel over an MPI communicator: an inter-communicator to a peer component, or an
// intra-communicator of this component (the remote group is then the communicator itself).
std::unique_ptr<Channel> mpi_channel(MPI_Comm comm, MpiQueue &queue);

// Groups made ahead: for each set of ranks that opened a file, kDepth groups whose communicator
// duplicates are made in the background for the next opens by the same ranks (a model creates two
// files one after the other). A create or open then takes a duplicate made since instead of
// waiting for a new one: MPI_Comm_idup is a collective of several rounds, and on a node with more
// ranks than cores each round waits for every rank's next time slice, on the critical path of every
// cycle of small files.
//
// Open MPI 4.1 runs a duplicate's context id agreement when it gets to it, not when MPI_Comm_idup is
// called, and one process's agreements in the order of their parents' ids; so, tried: two duplicates
// of one parent under way at once deadlock, one beside a file's own MPI_Iallreduce on its parent
// fails that, and one started by a rank at a time of its own (in a progress loop) held up
// PnetCDF's MPI_Comm_dup on the other ranks. Hence: the spares of a set of ranks are duplicates of
// kDepth communicators of their own, its seeds (duplicates of the program's, made at the first open
// by the set), which parent nothing else; spare i is a duplicate of seed i mod kDepth, started by
// every rank of the set at the same point of an open (refill(), once that open's own duplicate is
// complete, so that each seed parents one duplicate under way at most), and taken in that order at
// the opens, which all ranks make in the same order (collective calls): each open gets the same
// duplicate on all of them.
class SpareGroups {
public:
    static constexpr size_t kDepth = 2;
    SpareGroups() = default;
    ~SpareGroups();
    SpareGroups(const SpareGroups &) = delete;
    SpareGroups &operator=(const SpareGroups &) = delete;
    // The group of an open by the ranks of `comm` (in `component`, named so in errors) when they have
    // seeds: the oldest spare; `*ready` tests its duplicate done. nullptr without seeds.
    std::unique_ptr<Group> take(MPI_Comm comm, MPI_Comm component, const std::string &component_name,
                                std::unique_ptr<Pending> *ready);
    // After an open by the ranks of `group` (its duplicate complete), collective over them: at their
    // first open, make their seeds (`wait` is called with each duplicate of `comm` until it is done:
    // until then it is an operation on the program's communicator); then start spares up to kDepth.
    void refill(const Group &group, MPI_Comm comm, MPI_Comm component, MpiQueue &queue,
                const std::string &component_name, const std::function<void(Pending &)> &wait);
    // Completes and frees seeds and spares (collective over each set of ranks, which all finish dtf):
    // `wait` is called with each duplicate under way until it is done; one that does not complete is
    // left allocated (MPI may still write it).
    void finish(const std::function<void(Pending &)> &wait);

private:
    struct Spare {
        std::unique_ptr<Group> group;
        std::unique_ptr<Pending> ready;
    };
    struct Chain {
        std::vector<int> ranks;       // the set's component ranks
        std::vector<Spare> seeds;     // kDepth, complete
        std::deque<Spare> spares;     // started in this order, taken in this order
        size_t started = 0;           // spares started so far (the next is of seed started % kDepth)
    };
    static void abandon(Spare &s);
    std::list<Chain> chains_;
};

// A Group over a duplicate of `comm` (ranks of the communicator `component`, which is named
// `component_name` in errors), its channels on `queue`. The duplication is collective over `comm` and
// nonblocking: the group may be used once `*ready` tests done.
std::unique_ptr<Group> mpi_group(MPI_Comm comm, MPI_Comm component, MpiQueue &queue, const std::string &component_name,
                                 std::unique_ptr<Pending> *ready);
// The communicator of a group made by mpi_group() (MPI_COMM_NULL for any other group).
MPI_Comm mpi_comm_of(const Group &group);

} // namespace dtf::transport
