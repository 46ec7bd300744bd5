// Errors inside dtf: one exception type carrying a dtf or PnetCDF code and a message with context.
// Exceptions never cross the C boundary: every exported function runs its body through dtf::guard(),
// which turns an Error into its code, remembers the message for dtf_errmsg() and reports it once.
#pragma once

#include <cstdarg>
#include <stdexcept>
#include <string>

#include "dtf.h"

namespace dtf {

class Error : public std::runtime_error {
public:
    // `quiet`: the same error was agreed on by all ranks of a communicator and is reported by one
    // of them; the others only remember it (dtf_errmsg) instead of printing it again.
    Error(int code, std::string message, bool quiet = false)
        : std::runtime_error(std::move(message)), code_(code), quiet_(quiet) {}
    int code() const noexcept { return code_; }
    bool quiet() const noexcept { return quiet_; }

private:
    int code_;
    bool quiet_;
};

// printf-style formatting into a std::string.
std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string vformat(const char *fmt, va_list ap);

// Throw Error(code, formatted message).
[[noreturn]] void fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// Name ("DTF_ERR_TIMEOUT") and generic message of a DTF_ERR_* code; nullptr when not a dtf code.
const char *error_name(int code) noexcept;
const char *error_message(int code) noexcept;

// Record `message` as the calling thread's last error (read back by dtf_errmsg()).
void set_last_error(const std::string &message);
const char *last_error() noexcept;

// Run f() and convert any exception into an error code. The message is recorded as the thread's
// last error and printed to stderr once with the process context prefix.
template <class F> int guard(F &&f) noexcept;

void report_error(int code, const char *message) noexcept;

template <class F> int guard(F &&f) noexcept {
    try {
        return f();
    } catch (const Error &e) {
        if (e.quiet())
            set_last_error(e.what());
        else
            report_error(e.code(), e.what());
        return e.code();
    } catch (const std::bad_alloc &) {
        report_error(DTF_ERR_NOMEM, "out of memory");
        return DTF_ERR_NOMEM;
    } catch (const std::exception &e) {
        report_error(DTF_ERR_INTERNAL, e.what());
        return DTF_ERR_INTERNAL;
    } catch (...) {
        report_error(DTF_ERR_INTERNAL, "unknown exception");
        return DTF_ERR_INTERNAL;
    }
}

} // namespace dtf
