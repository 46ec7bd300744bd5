// Message counters: how many messages and bytes dtf's protocol costs, and how often it copies the values
// it moves (dtf_counters_read in dtf.h).
//
// Always on: one relaxed atomic add per message. Counted where every point-to-point message of dtf
// passes (transport::MpiQueue and the MPI channels), so that control traffic (headers, requests,
// plans, orders, notices: every tag but the data tags) and data (the packed values of a writer
// session, transport::data_tag) are told apart; the messages of dtf's collectives (point to point on a
// group's collective tag, transport/mpi_group.cpp) are counted apart, and the collectives as calls.
// Copies: the bytes of values dtf writes into memory itself (not MPI) on a writer's side (kept at a
// put, packed into a message) and on a reader's (unpacked, converted, scattered, filled).
// Process-wide, safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace dtf::counters {

// Same order and values as DTF_COUNT_* in dtf.h.
enum Kind : int {
    ControlSent,
    ControlReceived,
    DataSent,
    DataReceived,
    Collectives,
    CollectiveSent,
    CollectiveReceived,
    CopiedWriting,
    CopiedReading,
    Count
};

const char *name(int kind); // nullptr when out of range

namespace detail {
extern std::atomic<int64_t> messages[Count], bytes[Count];
}

inline void add(Kind k, uint64_t nbytes) {
    detail::messages[k].fetch_add(1, std::memory_order_relaxed);
    detail::bytes[k].fetch_add(static_cast<int64_t>(nbytes), std::memory_order_relaxed);
}

// One message sent or received; `data`: its tag is a data tag (transport::kDataTagFirst and up).
inline void message(bool sent, bool data, uint64_t nbytes) {
    add(data ? (sent ? DataSent : DataReceived) : (sent ? ControlSent : ControlReceived), nbytes);
}

// `nbytes` of values copied by dtf (no message): writing (a writer's put and packing) or reading.
inline void copied(bool writing, uint64_t nbytes) {
    detail::bytes[writing ? CopiedWriting : CopiedReading].fetch_add(static_cast<int64_t>(nbytes),
                                                                     std::memory_order_relaxed);
}

struct Totals {
    long long messages[Count];
    long long bytes[Count];
};
Totals read(bool reset);

} // namespace dtf::counters
