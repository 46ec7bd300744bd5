// Logging: silent by default. DTF_VERBOSE_LEVEL=1 prints warnings and progress, 2 adds debug detail.
// Errors are printed once, where dtf::guard() catches them (report_error: once per component under
// dtfrun, else per rank; DTF_PRINT_ERRORS=0: not at all). Every line carries the context
// "[dtf <component>:<world rank>]" so that interleaved output of coupled jobs can be read.
#pragma once

#include <string>

namespace dtf::log {

enum Level { kError = -1, kWarn = 1, kInfo = 1, kDebug = 2 };

void set_level(int level) noexcept;
int level() noexcept;
// Set the prefix context once the component and rank are known.
void set_context(const std::string &component, int rank);
// The component of the context ("" before set_context).
std::string component();

bool enabled(int lvl) noexcept;
void error(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
// Something the user must know that is not an error (printed at every verbosity, like errors).
void notice(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void warn(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void info(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));
void debug(const char *fmt, ...) noexcept __attribute__((format(printf, 1, 2)));

} // namespace dtf::log
