// Byte messages between the ranks of this component and the ranks of one group (a peer component, or
// this component's ranks of a communicator), behind one small interface with two implementations:
// MPI point-to-point (mpi_channel.hpp), and an in-process loopback (LoopbackNet below) so that the
// protocol above it can be unit-tested in one process without MPI.
//
// Every operation is nonblocking: send() and receive() return a Ticket, progress() completes what
// has completed, done() tells. Messages from one rank to another with the same tag arrive in the
// order they were sent (MPI's rule, kept by the loopback).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace dtf::transport {

// Every message tag dtf uses, in one place (they are MPI tags; the loopback uses them as keys).
enum class Tag : int {
    Control = 0x0d71,   // control messages between components (runtime/message.hpp)
    Meta = 0x0d72,      // writer -> its matcher, within the writer's file communicator: write metadata
    Orders = 0x0d73,    // matcher -> writer, same: pieces to send, or finish
    Readback = 0x0d74,  // writer <-> writer, same: a get on the file they write (session/readback.cpp)
    Collective = 0x0d75, // dtf's collectives over a file's ranks, point to point (mpi_group.cpp)
    Handshake = 0x0d7f, // the roots of two components once connected: version and configuration
    Routes = 0x0d7e,    // one byte per rank pair right after connecting (open_all_routes)
    // Data (writer -> reader: the data of pieces) has a tag per writer session: data_tag().
};

// Tags from kDataTagFirst to the MPI_TAG_UB carry data messages, one tag per writer session, so
// that the messages of two sessions in flight between the same two ranks (a closed file still
// served while the next one pushes its data) can never be taken for each other's.
constexpr int kDataTagFirst = 0x1000;
// The tag of the session whose root is rank `root_rank` of a writer component of `writer_size`
// ranks, and whose number there is `serial` (the root's count, see Runtime::new_stamp): distinct for
// the same root until `serial` wraps around (tags / writer_size of them), and distinct between
// roots. nullopt when the tags below `tag_ub` do not give each rank of the writer component one.
std::optional<Tag> data_tag(int root_rank, uint32_t serial, int writer_size, int tag_ub);

// The tags of a group's channel and collectives (Meta, Orders, Readback, Collective). Every session
// of the same ranks is a group on one communicator (KeptGroups, mpi_channel.hpp), where each has
// kGroupTags tags of its own, one per slot, so that two sessions in flight at once never meet.
constexpr int kGroupTags = 4;
constexpr int group_slot(Tag tag) { return static_cast<int>(tag) - static_cast<int>(Tag::Meta); } // 0 .. 3

// A nonblocking operation: done once its bytes have left (send) or arrived (receive).
using Ticket = uint64_t;

struct Incoming {
    int source; // rank in the remote group
    std::vector<char> bytes;
};

// Where part of a received message goes.
struct Span {
    char *data;
    size_t size;
};

class Channel {
public:
    virtual ~Channel() = default;
    // Number of ranks in the group messages go to and come from.
    virtual int remote_size() const = 0;
    // Send `bytes` to every rank of `dests` (one buffer for all, kept until sent). `what` names the
    // message in errors. A buffer from the process's BufferPool goes back to it once sent.
    virtual Ticket send(const std::vector<int> &dests, Tag tag, std::vector<char> bytes, const char *what) = 0;
    Ticket send(int dest, Tag tag, std::vector<char> bytes, const char *what) {
        return send(std::vector<int>{dest}, tag, std::move(bytes), what);
    }
    // Send the `size` bytes at `data` to `dest` where they are, without a copy: they must stay unchanged
    // until the ticket is done, and `keep` (what owns them) is held until then. One contiguous message,
    // which Open MPI's shared-memory transport moves with one single-copy read.
    virtual Ticket send(int dest, Tag tag, const char *data, size_t size, std::shared_ptr<const void> keep,
                        const char *what) = 0;
    // The next message with `tag` from any rank, received whole, if one has arrived.
    virtual std::optional<Incoming> poll(Tag tag, const char *what) = 0;
    // Receive exactly `size` bytes with `tag` from `source` into `buf`, which must stay valid until
    // done(). A message of another size is an error (DTF_ERR_PEER), never a partial fill.
    virtual Ticket receive(int source, Tag tag, char *buf, size_t size, const char *what) = 0;
    // The same, the message's bytes going in order to `spans` (their sizes add up to the message's):
    // straight into the application's memory, without a copy on the MPI channel (a derived datatype).
    virtual Ticket receive(int source, Tag tag, const std::vector<Span> &spans, const char *what) = 0;
    // Complete the operations that have completed (of every channel sharing this one's queue);
    // whether any did. Never blocks. Throws on a failed operation, naming it.
    virtual bool progress() = 0;
    virtual bool done(Ticket t) const = 0;
    // Give up the receives among `tickets` that are not done (a wait for them failed): each is
    // cancelled, and counts as done. One that MPI had already begun to fill completes into its
    // buffer later, so the caller must keep that buffer allocated (and never read it).
    virtual void cancel(const std::vector<Ticket> &tickets) = 0;
    bool done(const std::vector<Ticket> &tickets) const {
        for (Ticket t : tickets)
            if (!done(t)) return false;
        return true;
    }
    // Bytes of the operations among `tickets` that are not done yet (for "waited for" messages).
    virtual size_t pending_bytes(const std::vector<Ticket> &tickets) const = 0;
};

// An in-process network for unit tests: groups of ranks, every rank an endpoint; a channel joins
// one endpoint to every rank of a group (its own or another). A send is copied into the
// destination's queue at once; a receive completes in progress() once a matching message is there.
// Each rank may run in its own thread: the net has one lock.
class Group;
class LoopbackNet {
public:
    // A new group of `size` ranks; returns its id.
    int add_group(int size);
    // The channel of rank `rank` of group `group` to the ranks of `remote_group`.
    std::unique_ptr<Channel> channel(int group, int rank, int remote_group);
    // Rank `rank`'s member of a transport::Group of all ranks of `group` (group.hpp), like a
    // duplicate of its communicator: each rank's n-th call joins the n-th such group, a new group of
    // the net (its own channels and collectives).
    std::unique_ptr<Group> dup_group(int group, int rank);
    // Messages sent and not yet received by anyone (a test can require none are left).
    size_t undelivered() const;

    // Internals shared with the channels and groups (under lock()).
    struct Message {
        int source;
        std::vector<char> bytes;
    };
    struct Endpoint {
        // (sender's group, tag) -> messages in arrival order.
        std::map<std::pair<int, int>, std::deque<Message>> inbox;
    };
    // One collective of a duplicated group: the contributions so far.
    struct Round {
        int arrived = 0;
        std::vector<int64_t> max;
        std::vector<char> bytes; // broadcast: the root's
        int kind = 0;  // which collective (all ranks must agree)
        int taken = 0; // ranks that saw it complete (then it goes)
    };
    Endpoint &endpoint(int group, int rank);
    std::map<int, Round> &rounds(int group) { return rounds_[group]; }
    int size(int group) const { return static_cast<int>(groups_.at(static_cast<size_t>(group)).size()); }
    std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mutex_); }

private:
    mutable std::mutex mutex_;
    std::vector<std::vector<Endpoint>> groups_;
    std::map<int, std::vector<int>> dups_;               // group -> the groups duplicated from it, in order
    std::map<std::pair<int, int>, size_t> dups_taken_;   // (group, rank) -> how many of them it joined
    std::map<int, std::map<int, Round>> rounds_;         // duplicated group -> its collectives by number
};

} // namespace dtf::transport
