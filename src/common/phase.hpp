// Per-phase timers of dtf's own work (dtf_timers / dtf_timers_read in dtf.h).
//
// Off by default: a Scope then costs one relaxed atomic load and a branch. When on, phases are
// exclusive: entering a phase pauses the enclosing one, so a rank's phases add up to the time it
// spent inside dtf (a Match inside a Wait counts as Match, not twice). Totals are process-wide and
// safe to update from any thread; the stack of open scopes is per thread.
#pragma once

#include <atomic>
#include <cstdint>

namespace dtf::phase {

// Same order and values as DTF_PHASE_* in dtf.h.
enum Phase : int { Open, Match, Pack, Transfer, Wait, Close, Count };

const char *name(int phase); // nullptr when out of range

namespace detail {
extern std::atomic<bool> enabled;
void enter(Phase p, int *saved);
void leave(int saved);
void add_bytes(Phase p, uint64_t n);
} // namespace detail

inline bool on() { return detail::enabled.load(std::memory_order_relaxed); }
void enable(bool on);

class Scope {
public:
    explicit Scope(Phase p) {
        if (on()) {
            active_ = true;
            detail::enter(p, &saved_);
        }
    }
    ~Scope() {
        if (active_) detail::leave(saved_);
    }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

private:
    bool active_ = false;
    int saved_ = -1;
};

// Bytes a phase moved (packed, sent or received); counted only when the timers are on.
inline void add_bytes(Phase p, uint64_t n) {
    if (on()) detail::add_bytes(p, n);
}

struct Totals {
    double seconds[Count];
    long long bytes[Count];
    long long calls[Count];
};
Totals read(bool reset);

} // namespace dtf::phase
