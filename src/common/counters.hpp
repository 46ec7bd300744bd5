// Message counters: how many messages and bytes dtf's protocol costs (dtf_counters_read in dtf.h).
//
// Always on: one relaxed atomic add per message. Counted where every point-to-point message of dtf
// passes (transport::MpiQueue and the MPI channels), so
// that control traffic (headers, requests, plans, orders, notices: every tag but the data tags) and
// data (the packed values of a writer session, transport::data_tag) are told apart. Collectives are
// counted as calls (their messages, dtf's own on a group's collective tag, are not counted as messages).
// Process-wide, safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace dtf::counters {

// Same order and values as DTF_COUNT_* in dtf.h.
enum Kind : int { ControlSent, ControlReceived, DataSent, DataReceived, Collectives, Count };

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

struct Totals {
    long long messages[Count];
    long long bytes[Count];
};
Totals read(bool reset);

} // namespace dtf::counters
