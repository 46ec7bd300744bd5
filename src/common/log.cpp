#include "common/log.hpp"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/error.hpp"

namespace dtf::log {

namespace {
std::atomic<int> g_level{0};
std::mutex g_mutex;
std::string g_context = "[dtf]", g_component;

void emit(const char *tag, const char *fmt, va_list ap, bool timed = false) noexcept {
    try {
        std::string body = vformat(fmt, ap);
        // Debug lines carry the machine's monotonic clock (seconds), the same in every process on a
        // node, so that the lines of all ranks of both components merge into one timeline.
        char when[32] = "";
        if (timed) {
            timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            std::snprintf(when, sizeof when, "%.6f ",
                          static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec));
        }
        std::lock_guard<std::mutex> lock(g_mutex);
        std::fprintf(stderr, "%s %s%s%s\n", g_context.c_str(), when, tag, body.c_str());
        std::fflush(stderr);
    } catch (...) {
    }
}
} // namespace

void set_level(int lvl) noexcept { g_level.store(lvl, std::memory_order_relaxed); }
int level() noexcept { return g_level.load(std::memory_order_relaxed); }

void set_context(const std::string &component, int rank) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_context = format("[dtf %s:%d]", component.c_str(), rank);
    g_component = component;
}

std::string component() {
    std::lock_guard<std::mutex> lock(g_mutex);
    return g_component;
}

bool enabled(int lvl) noexcept { return level() >= lvl; }

#define DTF_LOG_FN_(fn, lvl, tag, timed)                                                          \
    void fn(const char *fmt, ...) noexcept {                                                       \
        if (!enabled(lvl)) return;                                                                 \
        va_list ap;                                                                                \
        va_start(ap, fmt);                                                                         \
        emit(tag, fmt, ap, timed);                                                                 \
        va_end(ap);                                                                                \
    }
DTF_LOG_FN_(error, kError, "error: ", false)
DTF_LOG_FN_(notice, kError, "notice: ", false)
DTF_LOG_FN_(warn, kWarn, "warning: ", false)
DTF_LOG_FN_(info, kInfo, "", false)
DTF_LOG_FN_(debug, kDebug, "debug: ", true)
#undef DTF_LOG_FN_

} // namespace dtf::log
