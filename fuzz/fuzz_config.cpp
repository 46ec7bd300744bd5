// libFuzzer target: the config parser and the environment settings (src/config).
// Any input must give a Config or a dtf::Error(DTF_ERR_CONFIG) naming a line, never a crash, a hang or
// undefined behaviour. Property: a parsed config, described and parsed again, describes the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"

using namespace dtf;

namespace {
// describe() without its comment lines (they name the file it was read from).
std::string settings_of(const config::Config &c) {
    std::string out, all = config::describe(c, config::Settings{});
    for (size_t start = 0; start < all.size();) {
        size_t end = all.find('\n', start);
        if (end == std::string::npos) end = all.size();
        if (all[start] != ';') out.append(all, start, end + 1 - start);
        start = end + 1;
    }
    return out;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const std::string text(reinterpret_cast<const char *>(data), size);
    try {
        config::Config c = config::parse(text, "fuzz.ini");
        const std::string described = settings_of(c);
        if (settings_of(config::parse(described, "described.ini")) != described) __builtin_trap();
        // Every pattern must be usable for matching, whatever it is, also against a path made of it.
        (void)c.match("/data/run/hist.0001.nc");
        for (const auto &rule : c.files)
            (void)config::pattern_matches(rule.pattern, config::normalize_path(rule.pattern, "/data/run"));
    } catch (const Error &e) {
        if (e.code() != DTF_ERR_CONFIG) __builtin_trap();
    }
    // The same bytes as an environment: one NAME=value entry per line.
    std::vector<std::string> env;
    for (size_t start = 0; start <= text.size();) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        env.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    try {
        (void)config::settings_from_env(env);
    } catch (const Error &e) {
        if (e.code() != DTF_ERR_CONFIG) __builtin_trap();
    }
    return 0;
}
