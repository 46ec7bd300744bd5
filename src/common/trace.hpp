// Event trace of one process (DTF_TRACE=DIR): what dtf did and waited for, when, in the Chrome
// trace-event JSON format that Perfetto (ui.perfetto.dev) and chrome://tracing open.
//
// Each process writes DIR/<component>.<rank>.json: a JSON array of events (the closing bracket is
// written at dtf_finalize; both viewers read a file without it, as after a crash). tools/dtf-trace
// merges the files of a run into one and prints where each rank's time went. Events:
//   spans ("ph":"X")     the PnetCDF calls and dtf_* calls on files dtf handles, and every wait
//                        inside them: for what, from which component, how long (Runtime::wait)
//   instants ("ph":"i")  each control message sent and received (kind, session, peer, bytes), and
//                        a wait that has lasted a second (written at once: see flush())
// Timestamps are microseconds of CLOCK_MONOTONIC (std::chrono::steady_clock), the same clock for
// every process of one node, so that the files of one node line up when merged.
//
// Off by default: then a Span costs one relaxed atomic load and a branch. Safe from any thread
// (the progress thread's events carry its own thread id).
#pragma once

#include <atomic>
#include <string>

namespace dtf::trace {

namespace detail {
extern std::atomic<bool> enabled;
void emit(char ph, const char *cat, const std::string &name, double start_us, double dur_us, const std::string &args);
double now_us();
} // namespace detail

inline bool on() { return detail::enabled.load(std::memory_order_relaxed); }

// Start tracing into DIR/<component>.<rank>.json (the directory is created if missing). Throws
// dtf::Error (DTF_ERR_IO) naming the file when it cannot be written.
void start(const std::string &dir, const std::string &component, int component_index, int rank);
// Write what is buffered and close the file (dtf_finalize). No effect when not tracing.
void stop();
// Write what is buffered (an error is returned to the program: it often ends in MPI_Abort before
// dtf_finalize, and the trace up to the error is the one wanted). No effect when not tracing.
void flush();

// A JSON string literal of `s` (quoted and escaped).
std::string quote(const std::string &s);

// One event at this moment.
inline void instant(const char *cat, const std::string &name, const std::string &args = {}) {
    if (on()) detail::emit('i', cat, name, detail::now_us(), 0, args);
}

// A span from its construction to its destruction; args (a JSON object's members, without braces,
// e.g. "\"peer\":\"assim\"") may be set until then.
class Span {
public:
    // (no span when `name` is null)
    Span(const char *cat, const char *name) : cat_(cat), name_(name) {
        if (name && on()) start_ = detail::now_us();
    }
    ~Span() {
        if (start_ >= 0 && on()) detail::emit('X', cat_, name_, start_, detail::now_us() - start_, args_);
    }
    Span(const Span &) = delete;
    Span &operator=(const Span &) = delete;
    bool active() const { return start_ >= 0; }
    void args(std::string a) { args_ = std::move(a); }

private:
    const char *cat_;
    const char *name_;
    double start_ = -1;
    std::string args_;
};

} // namespace dtf::trace
