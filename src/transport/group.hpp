// The ranks of this component that opened one file together (over the communicator the program gave
// PnetCDF): dtf's own collectives over them, and a channel among them for the protocol's messages
// inside the component (write metadata, orders). Two implementations: MPI (KeptGroups: a session on
// the communicator these ranks keep, mpi_channel.hpp) and in process (LoopbackNet::dup_group()), so
// that the protocol runs in unit tests without MPI.
//
// Collectives are nonblocking: an operation starts, and its Pending is tested until done (the runtime
// waits for it like for any message: progress meanwhile, DTF_TIMEOUT). As in MPI, every rank of the
// group starts the same collectives in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/channel.hpp"

namespace dtf::transport {

class Pending {
public:
    virtual ~Pending() = default;
    // Whether the operation has completed (then its results are in place). Never blocks; throws on failure.
    virtual bool test() = 0;
};

class Group {
public:
    virtual ~Group() = default;
    virtual int rank() const = 0;
    virtual int size() const = 0;
    // The component rank of each rank of the group.
    virtual const std::vector<int> &component_ranks() const = 0;
    // A channel among the group's ranks (remote group: the group itself), on the process's queue.
    virtual std::unique_ptr<Channel> channel() = 0;
    // out[i] = the largest in[i] over the ranks (`in` is read at once; `out` is written by then).
    virtual std::unique_ptr<Pending> allreduce_max(const int64_t *in, int64_t *out, int n) = 0;
    virtual std::unique_ptr<Pending> barrier() = 0;
    // `bytes` of rank `root` to every rank (resized to fit).
    virtual std::unique_ptr<Pending> broadcast(int root, std::vector<char> *bytes) = 0;
};

} // namespace dtf::transport
