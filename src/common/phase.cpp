#include "common/phase.hpp"

#include <chrono>

namespace dtf::phase {

namespace {
std::atomic<int64_t> g_ns[Count], g_bytes[Count], g_calls[Count];

struct Current {
    int phase = -1;     // innermost open scope on this thread (-1: none)
    int64_t since = 0;  // when it was entered or last resumed (ns)
};
thread_local Current t_current;

int64_t now_ns() {
    using namespace std::chrono;
    return duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count();
}

void charge(int64_t t) {
    if (t_current.phase >= 0) g_ns[t_current.phase].fetch_add(t - t_current.since, std::memory_order_relaxed);
    t_current.since = t;
}
} // namespace

namespace detail {
std::atomic<bool> enabled{false};

void enter(Phase p, int *saved) {
    charge(now_ns());
    *saved = t_current.phase;
    t_current.phase = p;
    g_calls[p].fetch_add(1, std::memory_order_relaxed);
}

void leave(int saved) {
    charge(now_ns());
    t_current.phase = saved;
}

void add_bytes(Phase p, uint64_t n) { g_bytes[p].fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed); }
} // namespace detail

const char *name(int phase) {
    static const char *const names[Count] = {"open", "match", "pack", "transfer", "wait", "close"};
    return phase >= 0 && phase < Count ? names[phase] : nullptr;
}

void enable(bool on) { detail::enabled.store(on, std::memory_order_relaxed); }

Totals read(bool reset) {
    Totals t{};
    for (int p = 0; p < Count; ++p) {
        t.seconds[p] = 1e-9 * static_cast<double>(reset ? g_ns[p].exchange(0) : g_ns[p].load());
        t.bytes[p] = reset ? g_bytes[p].exchange(0) : g_bytes[p].load();
        t.calls[p] = reset ? g_calls[p].exchange(0) : g_calls[p].load();
    }
    return t;
}

} // namespace dtf::phase
