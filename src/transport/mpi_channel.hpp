// The MPI point-to-point Channel (channel.hpp), and the one queue of every nonblocking MPI operation
// dtf has in flight in this process: control messages, write metadata, orders and data all go
// through it, so one progress() completes them all and one place knows what is still pending.
#pragma once

#include <mpi.h>

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

    // Start one send of `bytes` per rank of `dests` on `comm`. `data`: the message is a data message
    // (counters, trace).
    Ticket send(MPI_Comm comm, const std::vector<int> &dests, int tag, bool data, std::vector<char> bytes,
                const char *what);
    // Send `size` bytes at `data` in place to `dest`, holding `keep` until the send is complete.
    Ticket send(MPI_Comm comm, int dest, int tag, bool is_data, const char *data, size_t size,
                std::shared_ptr<const void> keep, const char *what);
    Ticket receive(MPI_Comm comm, int source, int tag, bool data, char *buf, size_t size, const char *what);
    Ticket receive(MPI_Comm comm, int source, int tag, bool data, const std::vector<Span> &spans, const char *what);
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
// intra-communicator of this component (the remote group is then the communicator itself). With
// `first_tag` >= 0, the channel of a group session on a communicator that several share: its tags
// (Meta, Orders, Readback) are the session's own, `first_tag` + group_slot(tag).
std::unique_ptr<Channel> mpi_channel(MPI_Comm comm, MpiQueue &queue, int first_tag = -1);

// The groups of the files this process opens (group.hpp): one communicator per set of ranks that
// open files together, a duplicate of the program's communicator made at their first open and kept
// until dtf_finalize, and every open by those ranks a session on it, with kGroupTags tags of its own
// (session n of the set: from kGroupTags * n on, modulo the tags MPI has). The ranks number their
// sessions alike without a word, since they open in the same order (PnetCDF's opens are collective
// over them). The session's collectives are point-to-point messages on its collective tag, which
// a communicator of its own would otherwise keep apart from other sessions': so a cycle creates no
// communicator (MPI_Comm_idup is a collective of several rounds: on a node with more ranks than
// cores each round waits for every rank's next time slice), and the collectives of two sessions
// need no common order (a served session ends when its readers are done, at a point of each rank's
// own, while the next session of the same ranks goes on).
class KeptGroups {
public:
    KeptGroups() = default;
    ~KeptGroups(); // (frees no communicator: MPI may be finalized already)
    KeptGroups(const KeptGroups &) = delete;
    KeptGroups &operator=(const KeptGroups &) = delete;
    // The group of an open by the ranks of `comm` (in `component`, named so in errors), its channels on
    // `queue`. At the first open by these ranks the duplicate is made (collective over `comm`): `wait`
    // is called with it until it is done.
    std::unique_ptr<Group> take(MPI_Comm comm, MPI_Comm component, const std::string &component_name,
                                MpiQueue &queue, int tag_ub, const std::function<void(Pending &)> &wait);
    // Frees the communicators (dtf_finalize); a group still held fails if used after.
    void finish();

    struct Set; // (mpi_group.cpp)
private:
    std::list<std::shared_ptr<Set>> sets_;
};

// The communicator of a group made by KeptGroups (MPI_COMM_NULL for any other group): a communicator
// over the group's ranks, for PnetCDF's calls (which duplicate it).
MPI_Comm mpi_comm_of(const Group &group);

} // namespace dtf::transport
