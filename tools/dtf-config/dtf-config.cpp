// dtf-config: check a dtf configuration file and show how dtf reads it.
//
//   dtf-config [--check] [--match PATH]... [CONFIG]
//
// CONFIG defaults to $DTF_INI_FILE. Without options it prints the effective configuration (every
// default filled in, plus the DTF_* settings of the environment). --check only validates it.
// --match PATH tells which [FILE] section handles PATH (relative paths are taken against the
// current directory, as dtf does). Exit status: 0 ok, 1 bad configuration or environment,
// 2 bad usage.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "common/error.hpp"
#include "config/config.hpp"

namespace {

namespace cfg = dtf::config;

struct Options {
    bool check = false;
    std::vector<std::string> match;
    std::string config;
};

const char kUsage[] =
    "usage: dtf-config [--check] [--match PATH]... [CONFIG]\n"
    "  Print the effective dtf configuration of CONFIG (default: $DTF_INI_FILE).\n"
    "  --check       only validate the configuration and the DTF_* environment\n"
    "  --match PATH  print which [FILE] section handles PATH (repeatable)\n";

[[noreturn]] void usage_error(const char *fmt, const char *arg) {
    std::fprintf(stderr, "dtf-config: ");
    std::fprintf(stderr, fmt, arg);
    std::fprintf(stderr, "\n%s", kUsage);
    std::exit(2);
}

Options parse_args(int argc, char **argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "-h" || a == "--help") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (a == "--check") {
            o.check = true;
        } else if (a == "--match") {
            if (i + 1 == argc) usage_error("%s needs a PATH", "--match");
            o.match.push_back(argv[++i]);
        } else if (a.size() > 1 && a[0] == '-') {
            usage_error("unknown option '%s'", a.c_str());
        } else if (o.config.empty()) {
            o.config = a;
        } else {
            usage_error("more than one CONFIG given ('%s')", a.c_str());
        }
    }
    return o;
}

std::string current_dir() {
    std::vector<char> buf(4096);
    while (!getcwd(buf.data(), buf.size())) {
        if (errno != ERANGE) dtf::fail(DTF_ERR_IO, "getcwd: %s", std::strerror(errno));
        buf.resize(buf.size() * 2);
    }
    return buf.data();
}

// "<path>: handled by [FILE] on line N (...)", or "not handled" with the reason when a rule's
// exclude_name= is what keeps the path out.
void print_match(const cfg::Config &config, const std::string &arg) {
    std::string path = cfg::normalize_path(arg, current_dir());
    if (const cfg::FileRule *r = config.match(path)) {
        std::printf("%s: handled by [FILE] on line %d (filename=\"%s\", %s <-> %s, mode=%s)\n",
                    path.c_str(), r->line, r->pattern.c_str(), r->comp1.c_str(), r->comp2.c_str(),
                    cfg::mode_name(r->mode));
        return;
    }
    for (const auto &r : config.files) {
        if (!cfg::pattern_matches(r.pattern, path)) continue;
        for (const auto &ex : r.excludes)
            if (path.find(ex) != std::string::npos) {
                std::printf("%s: not handled (excluded by exclude_name=\"%s\" of [FILE] on line "
                            "%d)\n",
                            path.c_str(), ex.c_str(), r.line);
                return;
            }
    }
    std::printf("%s: not handled\n", path.c_str());
}

int run(const Options &o) {
    cfg::Settings settings = cfg::settings_from_process_env();
    for (const auto &w : settings.warnings)
        std::fprintf(stderr, "dtf-config: warning: %s\n", w.c_str());
    std::string path = o.config.empty() ? settings.ini_file : o.config;
    if (path.empty()) usage_error("%s", "no CONFIG given and DTF_INI_FILE is not set");

    cfg::Config config = cfg::load(path);
    for (const auto &w : config.warnings) std::fprintf(stderr, "dtf-config: warning: %s\n", w.c_str());
    if (o.check) std::printf("%s: ok\n", path.c_str());
    for (const auto &m : o.match) print_match(config, m);
    if (!o.check && o.match.empty()) std::fputs(cfg::describe(config, settings).c_str(), stdout);
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    Options options = parse_args(argc, argv);
    try {
        return run(options);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "dtf-config: %s\n", e.what());
        return 1;
    }
}
