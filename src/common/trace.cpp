#include "common/trace.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/error.hpp"

namespace dtf::trace {

namespace {
std::mutex g_mutex;
std::FILE *g_file = nullptr;
std::string g_buffer; // events not written yet (written when large, and at stop)
int g_pid = 0;
int g_next_tid = 1; // (under g_mutex)
thread_local int t_tid = 0;

constexpr size_t kFlushBytes = 1 << 20;

void flush_locked() {
    if (g_file && !g_buffer.empty()) {
        std::fwrite(g_buffer.data(), 1, g_buffer.size(), g_file);
        std::fflush(g_file); // (what a rank that dies later leaves is whole events)
    }
    g_buffer.clear();
}

void append_event_locked(const std::string &event) {
    g_buffer += ",\n";
    g_buffer += event;
    if (g_buffer.size() >= kFlushBytes) flush_locked();
}
} // namespace

namespace detail {
std::atomic<bool> enabled{false};

double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

void emit(char ph, const char *cat, const std::string &name, double start_us, double dur_us, const std::string &args) {
    std::string e = ",\"name\":" + quote(name);
    char num[64];
    std::snprintf(num, sizeof num, ",\"ts\":%.3f", start_us);
    e += num;
    if (ph == 'X') {
        std::snprintf(num, sizeof num, ",\"dur\":%.3f", dur_us);
        e += num;
    } else {
        e += ",\"s\":\"t\"";
    }
    if (!args.empty()) e += ",\"args\":{" + args + "}";
    e += "}";
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_file) return;
    const std::string ids = ",\"pid\":" + std::to_string(g_pid) + ",\"tid\":";
    if (t_tid == 0) { // a thread's first event: name it (the first thread is the program's, the others dtf's)
        t_tid = g_next_tid++;
        append_event_locked("{\"ph\":\"M\",\"name\":\"thread_name\"" + ids + std::to_string(t_tid) +
                            ",\"args\":{\"name\":\"dtf progress thread\"}}");
    }
    append_event_locked(std::string("{\"ph\":\"") + ph + "\",\"cat\":\"" + cat + "\"" + ids + std::to_string(t_tid) +
                        e);
}
} // namespace detail

std::string quote(const std::string &s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\u%04x", c);
            out += esc;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void start(const std::string &dir, const std::string &component, int component_index, int rank) {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_file) return;
    if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
        fail(DTF_ERR_IO, "DTF_TRACE=%s: cannot create the directory: %s", dir.c_str(), std::strerror(errno));
    const std::string path = dir + "/" + component + "." + std::to_string(rank) + ".json";
    g_file = std::fopen(path.c_str(), "w");
    if (!g_file) fail(DTF_ERR_IO, "DTF_TRACE: cannot write '%s': %s", path.c_str(), std::strerror(errno));
    g_pid = static_cast<int>(::getpid());
    if (t_tid == 0) t_tid = g_next_tid++; // the thread that starts dtf (the program's)
    const std::string who = component + " rank " + std::to_string(rank);
    g_buffer = "[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(g_pid) +
               ",\"args\":{\"name\":" + quote(who) + "}}";
    append_event_locked("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + std::to_string(g_pid) +
                        ",\"args\":{\"sort_index\":" + std::to_string(component_index * 1000000 + rank) + "}}");
    append_event_locked("{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":" + std::to_string(g_pid) +
                        ",\"args\":{\"labels\":" + quote(component + "," + std::to_string(rank)) + "}}");
    append_event_locked("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(g_pid) + ",\"tid\":" +
                        std::to_string(t_tid) + ",\"args\":{\"name\":\"program\"}}");
    flush_locked();
    detail::enabled.store(true, std::memory_order_relaxed);
}

void flush() {
    std::lock_guard<std::mutex> lock(g_mutex);
    flush_locked();
}

void stop() {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_file) return;
    detail::enabled.store(false, std::memory_order_relaxed);
    g_buffer += "\n]\n";
    flush_locked();
    std::fclose(g_file);
    g_file = nullptr;
}

} // namespace dtf::trace
