// The CHECK of the small unit tests that need no more: a failed condition is printed with its file
// and line and counted; main() returns check_result(), which says how many failed.
#pragma once

#include <cstdio>

namespace dtf::unit {

inline int failures = 0;

inline void check(bool ok, const char *what, const char *file, int line) {
    if (ok) return;
    std::fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, what);
    ++failures;
}

// The exit status of a test named `name`: 0, or 1 after saying how many checks failed.
inline int check_result(const char *name) {
    if (failures) std::fprintf(stderr, "%s: %d check(s) failed\n", name, failures);
    else std::printf("%s: ok\n", name);
    return failures ? 1 : 0;
}

} // namespace dtf::unit

#define CHECK(cond) ::dtf::unit::check((cond), #cond, __FILE__, __LINE__)
