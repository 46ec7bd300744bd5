// The data plane: how the values of a transfer move. Each data message holds the packed values one
// writer rank sends one reader rank in one writer session (whose tag is data_tag()); the writer
// offers its bytes, the reader fetches them into spans of its memory. Control messages, requests
// and plans stay on the Channel; only this part would change for another way of moving bytes.
//
// Point-to-point (point_to_point()): an offer is a send on the channel, a fetch a receive into the
// spans (on MPI: one span in place, several through one receive buffer; MpiQueue::receive). An MPI
// one-sided implementation (CFIO2's RDMA read) fills the same two calls: the offer exposes the
// bytes in a window and tells the reader where, the fetch gets them once told. Either
// way the tickets are operations of the channel's queue: Channel::progress() completes them, and
// done(), cancel() and pending_bytes() apply to them. Pure C++ (no MPI); unit-tested over the
// loopback channel in tests/unit/test_channel.cpp.
#pragma once

#include <memory>
#include <vector>

#include "transport/channel.hpp"

namespace dtf::transport {

class DataPlane {
public:
    virtual ~DataPlane() = default;
    // Offer `bytes` to reader rank `reader` under the session's tag; the ticket is done once the
    // bytes are no longer needed (sent, or fetched). `what` names the message in errors.
    virtual Ticket offer(int reader, Tag tag, std::vector<char> bytes, const char *what) = 0;
    // Fetch the message of writer rank `writer` under `tag` into `spans` (kept valid until done),
    // whose sizes add up to the message's; a message of another size is an error (DTF_ERR_PEER).
    virtual Ticket fetch(int writer, Tag tag, const std::vector<Span> &spans, const char *what) = 0;
};

// Over the channel to the peer group: offer = send, fetch = receive (through the spans, so straight
// into place; one contiguous span is a plain receive).
std::unique_ptr<DataPlane> point_to_point(Channel &channel);

} // namespace dtf::transport
