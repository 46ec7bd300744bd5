#include "common/counters.hpp"

namespace dtf::counters {

namespace detail {
std::atomic<int64_t> messages[Count], bytes[Count];
} // namespace detail

const char *name(int kind) {
    static const char *const names[Count] = {"control sent", "control received", "data sent", "data received",
                                             "collectives", "collective sent", "collective received",
                                             "copied writing", "copied reading"};
    return kind >= 0 && kind < Count ? names[kind] : nullptr;
}

Totals read(bool reset) {
    Totals t{};
    for (int k = 0; k < Count; ++k) {
        t.messages[k] = reset ? detail::messages[k].exchange(0) : detail::messages[k].load();
        t.bytes[k] = reset ? detail::bytes[k].exchange(0) : detail::bytes[k].load();
    }
    return t;
}

} // namespace dtf::counters
