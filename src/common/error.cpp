#include "common/error.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string_view>
#include <vector>

#include "common/log.hpp"
#include "common/trace.hpp"

namespace dtf {

namespace {
struct ErrorRow {
    int code;
    const char *name;
    const char *message;
};
#define DTF_ROW_(name, value, message) {value, #name, message},
constexpr ErrorRow kErrors[] = {DTF_ERROR_TABLE(DTF_ROW_)};
#undef DTF_ROW_

const ErrorRow *find_row(int code) noexcept {
    for (const auto &row : kErrors)
        if (row.code == code) return &row;
    return nullptr;
}

thread_local std::string t_last_error;
} // namespace

std::string vformat(const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    if (n <= 0) return {};
    std::vector<char> buf(static_cast<size_t>(n) + 1);
    std::vsnprintf(buf.data(), buf.size(), fmt, ap);
    return std::string(buf.data(), static_cast<size_t>(n));
}

std::string format(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

void fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    throw Error(code, std::move(s));
}

const char *error_name(int code) noexcept {
    const ErrorRow *row = find_row(code);
    return row ? row->name : nullptr;
}

const char *error_message(int code) noexcept {
    const ErrorRow *row = find_row(code);
    return row ? row->message : nullptr;
}

void set_last_error(const std::string &message) {
    try {
        t_last_error = message;
    } catch (...) {
    }
}

const char *last_error() noexcept { return t_last_error.c_str(); }

namespace {
// Under dtfrun (DTF_LOST_DIR, a directory of the run), an error another rank of this component printed
// already, but for the rank numbers in it (a lost peer fails every rank's wait for it), is not printed
// again: the first rank to print it makes a mark there.
bool printed_by_another_rank(std::string_view message) {
    const char *dir = std::getenv("DTF_LOST_DIR");
    const std::string component = log::component();
    if (!dir || !*dir || component.empty() || component.find('/') != std::string::npos) return false;
    std::string key; // (the message with "rank <n>" as "rank ")
    for (size_t i = 0; i < message.size();) {
        if (message.substr(i, 5) != "rank ") {
            key += message[i++];
            continue;
        }
        key += "rank ";
        for (i += 5; i < message.size() && message[i] >= '0' && message[i] <= '9';) ++i;
    }
    const std::string mark = format("%s/.printed.%s.%016zx", dir, component.c_str(), std::hash<std::string>{}(key));
    const int fd = open(mark.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
    return fd < 0 && errno == EEXIST;
}
} // namespace

// An error is printed once (DTF_PRINT_ERRORS=0: never, for programs that print their own from
// dtf_errmsg()): a later call that fails for a reason already printed, whose message then repeats it
// (nested in its own), prints nothing more; nor, under dtfrun, another rank's of the same error.
void report_error(int code, const char *message) noexcept {
    set_last_error(message);
    static const bool print = [] {
        const char *v = std::getenv("DTF_PRINT_ERRORS");
        std::string_view t(v ? v : "");
        while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
        return t.substr(0, t.find_first_of(" \t")) != "0";
    }();
    static std::mutex lock;
    static std::vector<std::string> printed;
    try {
        std::lock_guard<std::mutex> hold(lock);
        const std::string_view text(message);
        if (!print || std::any_of(printed.begin(), printed.end(), [&](const std::string &p) {
                return text.find(p) != std::string_view::npos;
            }) || printed_by_another_rank(text))
            return;
        printed.emplace_back(message);
    } catch (...) { // (out of memory: printed all the same)
    }
    const char *name = error_name(code);
    log::error("%s: %s", name ? name : "error", message);
    trace::flush();
}

} // namespace dtf
