// The DTF configuration: INI parser, file-name patterns, environment settings and describe().
//
// Parsing runs in two passes: split() turns the text into sections of (key, value, line) entries
// and reports the purely syntactic errors (comments, quotes, headers, lines without '='); Parser
// then interprets each section and finally checks what spans sections (components named by [FILE]
// rules must exist, ncomp must agree with the comp_name= entries). Every error names file and line.
#include "config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <set>
#include <tuple>
#include <unistd.h>

#include "common/error.hpp"

extern char **environ;

namespace dtf::config {

namespace {

// ---------------------------------------------------------------------------------------------
// Small string helpers

constexpr const char *kSpace = " \t\r\f\v";
constexpr const char *kCommentChars = "#;!";

std::string_view trim(std::string_view s) {
    size_t b = s.find_first_not_of(kSpace);
    if (b == std::string_view::npos) return {};
    size_t e = s.find_last_not_of(kSpace);
    return s.substr(b, e - b + 1);
}

std::string to_lower(std::string_view s) {
    std::string out(s);
    for (char &c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string to_upper(std::string_view s) {
    std::string out(s);
    for (char &c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}

bool is_comment_start(std::string_view s) {
    return !s.empty() && std::strchr(kCommentChars, s[0]) != nullptr;
}

std::string join(const std::vector<std::string> &items, const char *sep) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
    return out;
}

// Edit distance with adjacent transpositions (for "did you mean" hints: "mdoe" is one edit from "mode").
size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The candidate closest to `word` when it is close enough to be a likely typo, else "".
std::string nearest(std::string_view word, const std::vector<std::string> &candidates) {
    size_t limit = word.size() <= 4 ? 1 : 2;
    std::string best;
    size_t best_distance = limit + 1;
    for (const auto &c : candidates) {
        size_t d = edit_distance(word, c);
        if (d < best_distance) best = c, best_distance = d;
    }
    return best;
}

// Strict integer: optional sign and digits only, within int range.
bool parse_int(std::string_view s, long long &out) {
    std::string str(trim(s));
    if (str.empty() || str.size() > 18) return false;
    size_t i = (str[0] == '-' || str[0] == '+') ? 1 : 0;
    if (i == str.size() || str.find_first_not_of("0123456789", i) != std::string::npos)
        return false;
    out = std::strtoll(str.c_str(), nullptr, 10);
    return true;
}

// Strict finite floating-point number (no "inf"/"nan", no trailing text).
bool parse_double(std::string_view s, double &out) {
    std::string str(trim(s));
    if (str.empty()) return false;
    char *end = nullptr;
    errno = 0;
    out = std::strtod(str.c_str(), &end);
    return errno == 0 && *end == '\0' && std::isfinite(out) &&
           str.find_first_of("nNiIxX") == std::string::npos; // reject inf, nan, hex floats
}

// ---------------------------------------------------------------------------------------------
// Pass 1: lines -> sections

struct RawEntry {
    std::string key; // lower case
    std::string value;
    int line;
};

struct RawSection {
    std::string name; // "INFO" or "FILE"
    int line;
    std::vector<RawEntry> entries;
};

struct KeySpec {
    const char *name;
    const char *expected; // what a value must be, for messages
    bool repeatable;
};

const std::vector<KeySpec> kInfoKeys = {
    {"ncomp", "the number of components (an integer >= 1)", false},
    {"comp_name", "a component name", true},
    {"buffer_data", "0 or 1", false},
    {"iodb_build_mode", "an integer >= 0", false},
    {"do_checksum", "0 or 1", false},
    {"log_ioreqs", "0 or 1", false},
};

const std::vector<KeySpec> kFileKeys = {
    {"filename", "a file name pattern", false},
    {"exclude_name", "a text that the excluded paths contain", true},
    {"comp1", "a component name", false},
    {"comp2", "a component name", false},
    {"writer", "a component name", false},
    {"readers", "component names separated by spaces or commas", false},
    {"mode", "\"transfer\" or \"file\"", false},
    {"replay_io", "0 or 1", false},
    {"num_sessions", "an integer >= 1", false},
    {"writer_closes", "an integer >= 1", false},
    {"write_only", "0 or 1", false},
    {"serial_readers", "an integer >= 1", false},
    {"mirror_io_root", "0 or 1", false},
    {"persist", "0 or 1", false},
    {"aggregators", "an integer >= 0", false},
    {"subfiles", "0 or 1", false},
    {"aggregate_steps", "an integer >= 1", false},
    {"ioserver", "a component name", false},
    {"fallback", "\"fail\", \"wait\" or a number of seconds >= 0", false},
};

class Parser {
public:
    explicit Parser(std::string_view filename) : filename_(filename) { config_.path = filename_; }
    Config run(std::string_view text);

private:
    [[noreturn]] void fail_at(int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
    // A key of the original DTF that dtf accepts and ignores: one warning saying why.
    void ignored(const RawEntry &e, const char *why) {
        config_.warnings.push_back(
            format("%s:%d: %s is accepted for compatibility with the original DTF and ignored: %s", filename_.c_str(),
                   e.line, e.key.c_str(), why));
    }

    std::vector<RawSection> split(std::string_view text);
    void lex_line(std::string_view line, int n, std::vector<RawSection> &sections);
    std::string lex_value(std::string_view raw, const std::string &key, int n);

    void check_keys(const RawSection &section, const std::vector<KeySpec> &specs);
    void apply_info(const RawSection &section);
    void apply_file(const RawSection &section);
    struct RuleLines;
    void read_file_keys(const RawSection &section, FileRule *rule, RuleLines *lines);
    void check_roles(const RawSection &section, const FileRule &rule, const RuleLines &lines);
    void check_writing(const FileRule &rule, const RuleLines &lines, bool fan);
    void check_components();

    int to_int(const RawEntry &e, int min);
    std::string pattern_of(const RawEntry &e);
    double to_fallback(const RawEntry &e);
    bool to_bool(const RawEntry &e);
    Mode to_mode(const RawEntry &e);
    std::vector<std::string> to_names(const RawEntry &e);

    std::string filename_;
    Config config_;
    // [INFO] bookkeeping for messages.
    int info_line_ = 0, ncomp_ = -1, ncomp_line_ = 0;
    // Lines of comp1=/comp2=/filename= of each rule, parallel to config_.files.
    struct RuleLines {
        int comp1 = 0, comp2 = 0, writer = 0, readers = 0, replay_io = 0, filename = 0;
        int aggregators = 0, subfiles = 0, aggregate_steps = 0, ioserver = 0, fallback = 0;
    };
    std::vector<RuleLines> rule_lines_;
};

void Parser::fail_at(int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string message = vformat(fmt, ap);
    va_end(ap);
    throw Error(DTF_ERR_CONFIG, format("%s:%d: %s", filename_.c_str(), line, message.c_str()));
}

std::vector<RawSection> Parser::split(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3); // UTF-8 byte order mark
    std::vector<RawSection> sections;
    int n = 0;
    for (size_t pos = 0; pos <= text.size();) {
        size_t nl = text.find('\n', pos);
        size_t len = (nl == std::string_view::npos ? text.size() : nl) - pos;
        lex_line(text.substr(pos, len), ++n, sections); // trim() also drops the '\r' of CRLF
        if (nl == std::string_view::npos) break;
        pos = nl + 1;
    }
    return sections;
}

void Parser::lex_line(std::string_view raw, int n, std::vector<RawSection> &sections) {
    std::string_view s = trim(raw);
    if (s.empty() || is_comment_start(s)) return;

    if (s[0] == '[') {
        size_t close = s.find(']');
        if (close == std::string_view::npos)
            fail_at(n, "unterminated section header '%.*s'; expected ']'", int(s.size()), s.data());
        std::string name = to_upper(trim(s.substr(1, close - 1)));
        std::string_view rest = trim(s.substr(close + 1));
        if (!rest.empty() && !is_comment_start(rest))
            fail_at(n, "unexpected text '%.*s' after the section header; expected a comment",
                    int(rest.size()), rest.data());
        if (name != "INFO" && name != "FILE")
            fail_at(n, "unknown section [%s]; expected [INFO] or [FILE]", name.c_str());
        sections.push_back({name, n, {}});
        return;
    }

    size_t eq = s.find('=');
    size_t comment = s.find_first_of(kCommentChars);
    if (eq == std::string_view::npos || comment < eq) {
        std::string_view text = trim(s.substr(0, comment));
        fail_at(n, "expected 'key=value' or a [SECTION] header, got '%.*s'", int(text.size()),
                text.data());
    }
    std::string key = to_lower(trim(s.substr(0, eq)));
    if (key.empty()) fail_at(n, "missing key before '='; expected 'key=value'");
    if (sections.empty())
        fail_at(n, "key '%s' outside any section; expected an [INFO] or [FILE] header before it",
                key.c_str());
    std::string value = lex_value(s.substr(eq + 1), key, n);
    sections.back().entries.push_back({key, std::move(value), n});
}

// The value after '=': quoted ("..." or '...', taken verbatim) or bare (up to a comment, trimmed).
std::string Parser::lex_value(std::string_view raw, const std::string &key, int n) {
    std::string_view v = trim(raw);
    if (v.empty() || (v[0] != '"' && v[0] != '\''))
        return std::string(trim(v.substr(0, v.find_first_of(kCommentChars))));
    char quote = v[0];
    size_t close = v.find(quote, 1);
    if (close == std::string_view::npos)
        fail_at(n, "unterminated quote in the value of '%s'; expected a closing %c", key.c_str(),
                quote);
    std::string_view rest = trim(v.substr(close + 1));
    if (!rest.empty() && !is_comment_start(rest))
        fail_at(n, "unexpected text '%.*s' after the quoted value of '%s'; expected a comment",
                int(rest.size()), rest.data(), key.c_str());
    return std::string(v.substr(1, close - 1));
}

// ---------------------------------------------------------------------------------------------
// Pass 2: sections -> Config

// Unknown keys, keys repeated within the section, empty values.
void Parser::check_keys(const RawSection &section, const std::vector<KeySpec> &specs) {
    std::map<std::string, int> first_line;
    for (const auto &e : section.entries) {
        const KeySpec *spec = nullptr;
        for (const auto &s : specs)
            if (e.key == s.name) spec = &s;
        if (!spec) {
            std::vector<std::string> names;
            for (const auto &s : specs) names.push_back(s.name);
            std::string hint = nearest(e.key, names);
            if (!hint.empty())
                fail_at(e.line, "unknown key '%s' in [%s]; did you mean '%s'?", e.key.c_str(),
                        section.name.c_str(), hint.c_str());
            fail_at(e.line, "unknown key '%s' in [%s]; expected one of: %s", e.key.c_str(),
                    section.name.c_str(), join(names, ", ").c_str());
        }
        auto [it, inserted] = first_line.emplace(e.key, e.line);
        if (!inserted && !spec->repeatable)
            fail_at(e.line, "key '%s' repeated in this [%s] section (first given on line %d)",
                    e.key.c_str(), section.name.c_str(), it->second);
        if (e.value.empty())
            fail_at(e.line, "empty value for '%s'; expected %s", e.key.c_str(), spec->expected);
    }
}

int Parser::to_int(const RawEntry &e, int min) {
    long long v = 0;
    if (!parse_int(e.value, v) || v < min || v > 1000000000)
        fail_at(e.line, "bad value '%s' for '%s'; expected an integer >= %d", e.value.c_str(),
                e.key.c_str(), min);
    return static_cast<int>(v);
}

double Parser::to_fallback(const RawEntry &e) {
    const std::string_view v = trim(e.value);
    if (v == "fail") return kFallbackFail;
    if (v == "wait") return kFallbackWait;
    double seconds = 0;
    if (!parse_double(v, seconds) || !(seconds >= 0) || seconds > 1e9)
        fail_at(e.line, "bad value '%s' for 'fallback'; expected \"fail\", \"wait\" or a number of seconds >= 0",
                e.value.c_str());
    return seconds;
}

bool Parser::to_bool(const RawEntry &e) {
    std::string_view v = trim(e.value);
    if (v != "0" && v != "1")
        fail_at(e.line, "bad value '%s' for '%s'; expected 0 or 1", e.value.c_str(), e.key.c_str());
    return v == "1";
}

Mode Parser::to_mode(const RawEntry &e) {
    std::string v = to_lower(trim(e.value));
    if (v == "transfer") return Mode::Transfer;
    if (v == "file") return Mode::File;
    fail_at(e.line, "bad value '%s' for 'mode'; expected \"transfer\" or \"file\"",
            e.value.c_str());
}

void Parser::apply_info(const RawSection &section) {
    if (info_line_)
        fail_at(section.line, "duplicate [INFO] section (the first one is on line %d)", info_line_);
    info_line_ = section.line;
    check_keys(section, kInfoKeys);
    std::map<std::string, int> name_lines;
    for (const auto &e : section.entries) {
        if (e.key == "ncomp") {
            ncomp_ = to_int(e, 1);
            ncomp_line_ = e.line;
        } else if (e.key == "comp_name") {
            auto [it, inserted] = name_lines.emplace(e.value, e.line);
            if (!inserted)
                fail_at(e.line, "duplicate component name '%s' (first given on line %d)",
                        e.value.c_str(), it->second);
            config_.components.push_back(e.value);
        } else if (e.key == "buffer_data") {
            config_.buffer_data = to_bool(e);
        } else if (e.key == "iodb_build_mode") {
            config_.iodb_build_mode = to_int(e, 0);
            ignored(e, "dtf matches every request against an index of the writes' exact boxes, built one way");
        } else if (e.key == "do_checksum") {
            config_.do_checksum = to_bool(e);
            ignored(e, "dtf computes no checksums (every message's size is checked; the values are MPI's)");
        } else if (e.key == "log_ioreqs") {
            config_.log_ioreqs = to_bool(e);
            ignored(e, "dtf keeps no log of I/O requests (DTF_VERBOSE_LEVEL=2 traces its messages)");
        }
    }
}

// A filename pattern in the form used for matching and for detecting duplicates.
std::string canonical_pattern(std::string_view pattern);

// filename=: '%' is the wildcard; a shell's '*' or '?' (legal in a file name, but never meant so
// here) would match nothing the programs open, silently.
std::string Parser::pattern_of(const RawEntry &e) {
    if (const size_t at = e.value.find_first_of("*?"); at != std::string::npos) {
        std::string fixed = e.value;
        for (char &c : fixed)
            if (c == '*' || c == '?') c = '%';
        fail_at(e.line, "filename=\"%s\": '%c' is not a wildcard here, and no file would match; dtf's "
                "wildcard is '%%' (any run of characters): filename=\"%s\"", e.value.c_str(), e.value[at],
                fixed.c_str());
    }
    return e.value;
}

// The keys of a [FILE] section into `rule`, and the lines of those whose messages name them.
void Parser::read_file_keys(const RawSection &section, FileRule *rule, RuleLines *lines) {
    for (const auto &e : section.entries) {
        if (e.key == "filename") rule->pattern = pattern_of(e), lines->filename = e.line;
        else if (e.key == "exclude_name") rule->excludes.push_back(e.value);
        else if (e.key == "comp1") rule->comp1 = e.value, lines->comp1 = e.line;
        else if (e.key == "comp2") rule->comp2 = e.value, lines->comp2 = e.line;
        else if (e.key == "writer") rule->writer = e.value, lines->writer = e.line;
        else if (e.key == "readers") rule->readers = to_names(e), lines->readers = e.line;
        else if (e.key == "mode") rule->mode = to_mode(e);
        else if (e.key == "replay_io") rule->replay_io = to_bool(e), lines->replay_io = e.line;
        else if (e.key == "num_sessions") rule->num_sessions = to_int(e, 1);
        else if (e.key == "writer_closes") rule->writer_closes = to_int(e, 1);
        else if (e.key == "write_only") rule->write_only = to_bool(e);
        else if (e.key == "serial_readers") rule->serial_readers = to_int(e, 1);
        else if (e.key == "persist") rule->persist = to_bool(e);
        else if (e.key == "aggregators") rule->aggregators = to_int(e, 0), lines->aggregators = e.line;
        else if (e.key == "subfiles") rule->subfiles = to_bool(e), lines->subfiles = e.line;
        else if (e.key == "aggregate_steps") rule->aggregate_steps = to_int(e, 1), lines->aggregate_steps = e.line;
        else if (e.key == "ioserver") rule->ioserver = e.value, lines->ioserver = e.line;
        else if (e.key == "fallback") rule->fallback_s = to_fallback(e), lines->fallback = e.line;
        else if (e.key == "mirror_io_root") {
            rule->mirror_io_root = to_bool(e);
            ignored(e, "dtf's matchers are the writer ranks MAX_WORKGROUP_SIZE chooses, whatever the readers' ranks");
        }
    }
}

// A [FILE] section names its components either as comp1=/comp2= or as writer=/readers=, whole.
void Parser::check_roles(const RawSection &section, const FileRule &rule, const RuleLines &lines) {
    if (rule.pattern.empty())
        fail_at(section.line, "[FILE] section without 'filename='; expected a file name pattern");
    const bool pair = lines.comp1 || lines.comp2, fan = lines.writer || lines.readers;
    if (pair && fan)
        fail_at(std::max(lines.writer, lines.readers),
                "%s= in a [FILE] section with comp%d= (line %d); expected either comp1=/comp2= (two components "
                "sharing the file) or writer=/readers= (one writer, one or more readers)",
                lines.writer ? "writer" : "readers", lines.comp1 ? 1 : 2, lines.comp1 ? lines.comp1 : lines.comp2);
    if (fan) {
        if (!lines.writer)
            fail_at(section.line, "[FILE] section with readers= but without 'writer='; expected the component that "
                    "writes the file");
        // (without readers: an output file, which dtf writes, persist=1; checked below)
        if (!lines.readers && !(rule.persist && rule.mode == Mode::Transfer))
            fail_at(section.line, "[FILE] section with writer= but without 'readers='; expected the components that "
                    "read the file (or persist=1 in transfer mode: an output file that dtf writes)");
        if (!lines.readers && rule.replay_io)
            fail_at(lines.replay_io, "replay_io=1 in a [FILE] section without readers (line %d); expected replay_io=0: "
                    "nothing is transferred", section.line);
        if (rule.replay_io && rule.readers.size() > 1)
            fail_at(lines.replay_io, "replay_io=1 with %zu readers (line %d) is not supported yet; expected "
                    "replay_io=0, or one reader", rule.readers.size(), lines.readers);
    } else if (rule.comp1.empty() || rule.comp2.empty()) {
        fail_at(section.line, "[FILE] section without '%s='; expected a component name (comp1= and comp2=, or "
                "writer= and readers=)", rule.comp1.empty() ? "comp1" : "comp2");
    }
}

// The keys that say how dtf writes the files it writes itself (persist=1, fallback=) fit together.
void Parser::check_writing(const FileRule &rule, const RuleLines &lines, bool fan) {
    // Aggregated output shapes how dtf writes a file itself: persist=1 in transfer mode, or fallback=
    // (aggregators= and ioserver= only: a reader that comes late reads the one file, once written).
    const bool written_by_dtf = (rule.persist || rule.falls_back()) && rule.mode == Mode::Transfer;
    for (auto [line, key] :
         {std::pair{lines.aggregators, "aggregators"}, std::pair{lines.subfiles, "subfiles"},
          std::pair{lines.aggregate_steps, "aggregate_steps"}, std::pair{lines.ioserver, "ioserver"}})
        if (line && !written_by_dtf)
            fail_at(line, "%s= in a [FILE] section without persist=1 or fallback= in transfer mode; expected persist=1 "
                    "or fallback=, and mode=\"transfer\" (it says how dtf writes the files it writes itself)", key);
    if (rule.falls_back() && (rule.subfiles || rule.aggregate_steps > 1))
        fail_at(rule.subfiles ? lines.subfiles : lines.aggregate_steps, "%s with fallback= (line %d); expected it with "
                "persist=1 only (a reader that comes late reads the session's one file, as soon as it is written)",
                rule.subfiles ? "subfiles=1" : "aggregate_steps > 1", lines.fallback);
    if (rule.falls_back() && (rule.mode != Mode::Transfer || rule.persist || rule.replay_io || (fan && !lines.readers)))
        fail_at(lines.fallback, "fallback= in a [FILE] section %s; expected it in transfer mode with readers, "
                "persist=0 and replay_io=0 (the file it writes when the readers are lost is the one persist=1 writes "
                "anyway)", rule.mode != Mode::Transfer ? "in file mode" : rule.persist ? "with persist=1"
                : rule.replay_io ? "with replay_io=1" : "without readers");
    if (rule.subfiles && rule.aggregators < 1)
        fail_at(lines.subfiles, "subfiles=1 without aggregators=; expected aggregators=A (A >= 1: one subfile per "
                "aggregator)");
    if (lines.ioserver && (rule.aggregators > 0 || rule.subfiles))
        fail_at(lines.ioserver, "ioserver= with %s= (line %d); expected one of them: the I/O server's ranks are the "
                "writers of its files", rule.aggregators > 0 ? "aggregators" : "subfiles",
                rule.aggregators > 0 ? lines.aggregators : lines.subfiles);
    if (rule.subfiles && !fan)
        fail_at(lines.subfiles, "subfiles=1 in a [FILE] section with comp1=/comp2=; expected writer= and readers= (a "
                "subfile holds what one group of the writer's ranks wrote, which only one writer can continue)");
}

void Parser::apply_file(const RawSection &section) {
    check_keys(section, kFileKeys);
    FileRule rule;
    RuleLines lines;
    rule.line = section.line;
    read_file_keys(section, &rule, &lines);
    check_roles(section, rule, lines);
    check_writing(rule, lines, lines.writer || lines.readers);
    for (size_t i = 0; i < config_.files.size(); ++i)
        if (canonical_pattern(config_.files[i].pattern) == canonical_pattern(rule.pattern))
            fail_at(lines.filename, "duplicate filename pattern '%s' (the first one is on line %d)",
                    rule.pattern.c_str(), rule_lines_[i].filename);
    config_.files.push_back(std::move(rule));
    rule_lines_.push_back(lines);
}

// Checks that need both [INFO] and all [FILE] sections (they may come in any order).
void Parser::check_components() {
    if (!info_line_)
        fail_at(1, "no [INFO] section; expected one with ncomp= and comp_name= entries");
    size_t given = config_.components.size();
    if (ncomp_ < 0)
        fail_at(info_line_,
                "[INFO] section without 'ncomp='; expected the number of components "
                "(%zu comp_name= given)",
                given);
    if (given != static_cast<size_t>(ncomp_))
        fail_at(ncomp_line_,
                "ncomp=%d but %zu comp_name= given; expected one comp_name= per component", ncomp_,
                given);
    std::string known = join(config_.components, ", ");
    for (size_t i = 0; i < config_.files.size(); ++i) {
        const FileRule &r = config_.files[i];
        const RuleLines &l = rule_lines_[i];
        if (!r.ioserver.empty() && config_.component_index(r.ioserver) < 0)
            fail_at(l.ioserver, "unknown component '%s' in ioserver=; expected one of: %s", r.ioserver.c_str(),
                    known.c_str());
        if (!r.ioserver.empty() && r.involves(r.ioserver))
            fail_at(l.ioserver, "'%s' is the I/O server of the file and also writes or reads it; expected a component "
                    "that runs dtf-ioserver", r.ioserver.c_str());
        if (r.fixed_roles()) {
            if (config_.component_index(r.writer) < 0)
                fail_at(l.writer, "unknown component '%s' in writer=; expected one of: %s", r.writer.c_str(),
                        known.c_str());
            for (size_t k = 0; k < r.readers.size(); ++k) {
                const std::string &name = r.readers[k];
                if (config_.component_index(name) < 0)
                    fail_at(l.readers, "unknown component '%s' in readers=; expected one of: %s", name.c_str(),
                            known.c_str());
                if (name == r.writer)
                    fail_at(l.readers, "'%s' is the writer (line %d) and in readers=; expected the components that "
                            "read what it writes", name.c_str(), l.writer);
                if (std::find(r.readers.begin(), r.readers.begin() + static_cast<long>(k), name) !=
                    r.readers.begin() + static_cast<long>(k))
                    fail_at(l.readers, "'%s' is listed twice in readers=", name.c_str());
            }
            continue;
        }
        if (config_.component_index(r.comp1) < 0)
            fail_at(l.comp1, "unknown component '%s' in comp1=; expected one of: %s",
                    r.comp1.c_str(), known.c_str());
        if (config_.component_index(r.comp2) < 0)
            fail_at(l.comp2, "unknown component '%s' in comp2=; expected one of: %s",
                    r.comp2.c_str(), known.c_str());
        if (r.comp1 == r.comp2)
            fail_at(l.comp2, "comp1 and comp2 are both '%s'; expected two different components",
                    r.comp1.c_str());
    }
}

// readers=: names separated by spaces or commas (or both).
std::vector<std::string> Parser::to_names(const RawEntry &e) {
    std::vector<std::string> names;
    std::string word;
    for (char c : e.value + " ") {
        if (c == ',' || std::strchr(kSpace, c)) {
            if (!word.empty()) names.push_back(word);
            word.clear();
        } else {
            word += c;
        }
    }
    if (names.empty())
        fail_at(e.line, "bad value '%s' for 'readers'; expected component names separated by spaces or commas",
                e.value.c_str());
    return names;
}

Config Parser::run(std::string_view text) {
    for (const auto &section : split(text)) {
        if (section.name == "INFO") apply_info(section);
        else apply_file(section);
    }
    check_components();
    return std::move(config_);
}

// ---------------------------------------------------------------------------------------------
// Paths and patterns

// The components of `path` after lexical normalization: empty and "." components are dropped and
// ".." removes the component before it; a ".." with nothing before it is dropped (at the root of an
// absolute path it has no effect; at the start of a relative pattern it cannot be resolved without
// knowing the writer's working directory, so the rest of the pattern is matched as a suffix).
std::vector<std::string_view> components(std::string_view path) {
    std::vector<std::string_view> out;
    for (size_t pos = 0; pos <= path.size();) {
        size_t slash = path.find('/', pos);
        if (slash == std::string_view::npos) slash = path.size();
        std::string_view c = path.substr(pos, slash - pos);
        if (c == "..") {
            if (!out.empty()) out.pop_back();
        } else if (!c.empty() && c != ".") {
            out.push_back(c);
        }
        pos = slash + 1;
    }
    return out;
}

std::string canonical_pattern(std::string_view pattern) {
    std::string out = (!pattern.empty() && pattern[0] == '/') ? "/" : "";
    auto parts = components(pattern);
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? "/" : "") + std::string(parts[i]);
    return out;
}

// Whether one path component matches one pattern component; '%' matches any run of characters.
// Greedy with backtracking to the most recent '%' (linear in practice, no recursion).
bool component_matches(std::string_view pattern, std::string_view text) {
    size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '%') {
            star = p++;
            mark = t;
        } else if (p < pattern.size() && pattern[p] == text[t]) {
            ++p, ++t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++mark;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '%') ++p;
    return p == pattern.size();
}

// ---------------------------------------------------------------------------------------------
// Environment

struct EnvVar {
    const char *name;
    void (*apply)(Settings &, const std::string &name, const std::string &value);
};

[[noreturn]] void bad_env(const std::string &name, const std::string &value, const char *expected) {
    fail(DTF_ERR_CONFIG, "%s='%s': expected %s", name.c_str(), value.c_str(), expected);
}

int env_int(const std::string &name, const std::string &value, int min, const char *expected) {
    long long v = 0;
    if (!parse_int(value, v) || v < min || v > 1000000000) bad_env(name, value, expected);
    return static_cast<int>(v);
}

const EnvVar kEnvVars[] = {
    {"DTF_INI_FILE",
     [](Settings &s, const std::string &, const std::string &v) { s.ini_file = v; }},
    {"DTF_GLOBAL_PATH",
     [](Settings &s, const std::string &, const std::string &v) { s.global_path = v; }},
    {"DTF_TIMEOUT",
     [](Settings &s, const std::string &n, const std::string &v) {
         if (!parse_double(v, s.timeout_s) || s.timeout_s <= 0)
             bad_env(n, v, "a positive number of seconds");
     }},
    {"DTF_VERBOSE_LEVEL",
     [](Settings &s, const std::string &n, const std::string &v) {
         // (The original DTF's scripts set -1 for quiet: any negative level is 0, errors only.)
         s.verbose = std::max(0, env_int(n, v, -1000000000, "an integer"));
     }},
    {"DTF_PRINT_STATS",
     [](Settings &s, const std::string &n, const std::string &v) {
         std::string_view t = trim(v);
         if (t != "0" && t != "1" && t != "2") bad_env(n, v, "0, 1 or 2");
         s.print_stats = t[0] - '0';
     }},
    {"DTF_PRINT_ERRORS", // read where errors are printed (common/error.cpp); checked here
     [](Settings &, const std::string &n, const std::string &v) {
         std::string_view t = trim(v);
         if (t != "0" && t != "1") bad_env(n, v, "0 or 1");
     }},
    {"DTF_TRACE",
     [](Settings &s, const std::string &n, const std::string &v) {
         if (trim(v).empty()) bad_env(n, v, "a directory");
         s.trace_dir = std::string(trim(v));
     }},
    {"DTF_RENDEZVOUS",
     [](Settings &s, const std::string &n, const std::string &v) {
         s.rendezvous = to_lower(trim(v));
         if (s.rendezvous != "auto" && s.rendezvous != "file" && s.rendezvous != "name")
             bad_env(n, v, "auto, file or name");
     }},
    {"DTF_COMPONENT",
     [](Settings &s, const std::string &, const std::string &v) { s.component = std::string(trim(v)); }},
    {"DTF_MPMD", // read inside MPI_Init (mpi/mpmd.cpp); checked here to report a bad value
     [](Settings &, const std::string &n, const std::string &v) {
         std::string_view t = trim(v);
         if (t != "0" && t != "1") bad_env(n, v, "0 or 1");
     }},
    {"DTF_APPNUM", // read inside MPI_Init (mpi/mpmd.cpp), which reports a bad value
     [](Settings &, const std::string &, const std::string &) {}},
    {"DTF_LOST_DIR",
     [](Settings &s, const std::string &, const std::string &v) { s.lost_dir = v; }},
    {"DTF_PROGRESS_THREAD",
     [](Settings &s, const std::string &n, const std::string &v) {
         std::string_view t = trim(v);
         if (t != "0" && t != "1") bad_env(n, v, "0 or 1");
         s.progress_thread = s.progress_thread_asked = t == "1";
     }},
    {"MAX_WORKGROUP_SIZE",
     [](Settings &s, const std::string &n, const std::string &v) {
         s.max_workgroup_size = env_int(n, v, 1, "an integer >= 1");
     }},
};

std::string unknown_env_warning(const std::string &name) {
    std::vector<std::string> known;
    for (const auto &var : kEnvVars) known.push_back(var.name);
    std::string hint = nearest(name, known);
    // DTF_MAX_WORKGROUP_SIZE is far from MAX_WORKGROUP_SIZE in edit distance but an obvious slip.
    if (hint.empty()) hint = nearest(name.substr(4), known);
    if (hint.empty()) return format("unknown environment variable %s ignored", name.c_str());
    return format("unknown environment variable %s ignored; did you mean %s?", name.c_str(),
                  hint.c_str());
}

// Settings values end up in comment lines: keep them on one line.
std::string one_line(std::string s) {
    for (char &c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

// A value as INI text: quoted with a quote character it does not contain.
std::string quoted(const std::string &value) {
    if (value.find('"') == std::string::npos) return "\"" + value + "\"";
    if (value.find('\'') == std::string::npos) return "'" + value + "'";
    return value; // contains both quote characters: only a bare value can carry it
}

std::string format_seconds(double s) {
    for (int precision = 6; precision < 17; ++precision) {
        std::string text = format("%.*g", precision, s);
        if (std::strtod(text.c_str(), nullptr) == s) return text;
    }
    return format("%.17g", s);
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Public functions

int Config::component_index(std::string_view name) const {
    for (size_t i = 0; i < components.size(); ++i)
        if (components[i] == name) return static_cast<int>(i);
    return -1;
}

const FileRule *Config::match(std::string_view normalized_path) const {
    for (const auto &rule : files) {
        if (!pattern_matches(rule.pattern, normalized_path)) continue;
        bool excluded = false;
        for (const auto &ex : rule.excludes)
            if (normalized_path.find(ex) != std::string_view::npos) excluded = true;
        if (!excluded) return &rule;
    }
    return nullptr;
}

int aggregator_group(int rank, int size, int aggregators) {
    const int a = std::min(aggregators, size);
    return static_cast<int>(static_cast<int64_t>(rank) * a / size);
}

int aggregator_rank(int group, int size, int aggregators) {
    const int64_t a = std::min(aggregators, size);
    return static_cast<int>((group * static_cast<int64_t>(size) + a - 1) / a);
}

std::string subfile_path(const std::string &path, int group) { return path + ".subfile_" + std::to_string(group); }

std::vector<std::string> FileRule::parties() const {
    if (!fixed_roles()) return {comp1, comp2};
    std::vector<std::string> all = readers;
    all.insert(all.begin(), writer);
    return all;
}

bool FileRule::involves(std::string_view name) const {
    if (!fixed_roles()) return comp1 == name || comp2 == name;
    return writer == name || std::find(readers.begin(), readers.end(), name) != readers.end();
}

std::vector<std::string> FileRule::partners(std::string_view name) const {
    if (!fixed_roles()) {
        if (comp1 == name) return {comp2};
        if (comp2 == name) return {comp1};
        return {};
    }
    if (writer == name) return readers;
    if (std::find(readers.begin(), readers.end(), name) != readers.end()) return {writer};
    return {};
}

std::vector<int> Config::peers_of(int component) const {
    std::set<int> peers;
    if (component < 0 || static_cast<size_t>(component) >= components.size()) return {};
    const std::string &me = component_name(component);
    for (const auto &rule : files) {
        // an I/O server is connected to every component of its files, and they to it
        std::vector<std::string> names =
            !rule.ioserver.empty() && rule.ioserver == me ? rule.parties() : rule.partners(me);
        if (!rule.ioserver.empty() && rule.involves(me)) names.push_back(rule.ioserver);
        for (const auto &name : names) {
            const int p = component_index(name);
            if (p >= 0 && p != component) peers.insert(p);
        }
    }
    return {peers.begin(), peers.end()};
}

bool Config::may_go_without(int component, int peer) const {
    const int n = static_cast<int>(components.size());
    if (component < 0 || component >= n || peer < 0 || peer >= n || component == peer) return false;
    const std::string &me = component_name(component), &other = component_name(peer);
    bool shared = false;
    for (const auto &rule : files) {
        const auto partners = rule.partners(me);
        const bool reads = std::find(partners.begin(), partners.end(), other) != partners.end();
        const bool served =
            (rule.ioserver == me && rule.involves(other)) || (rule.ioserver == other && rule.involves(me));
        if (!reads && !served) continue;
        shared = true;
        // its writer, or its I/O server, and `peer` one of its readers
        const bool to_reader =
            other != rule.writer && other != rule.ioserver && (rule.writer == me || rule.ioserver == me);
        if (!to_reader || !rule.falls_back()) return false;
    }
    return shared;
}

namespace {
// Where the pair of components a and b stands in the global connect order (Config::connect_order).
std::tuple<bool, int, int> pair_rank(const Config &c, int a, int b) {
    return {c.may_go_without(a, b) || c.may_go_without(b, a), std::min(a, b), std::max(a, b)};
}
} // namespace

std::vector<int> Config::connect_order(int component) const {
    std::vector<int> peers = peers_of(component);
    std::stable_sort(peers.begin(), peers.end(),
                     [&](int p, int q) { return pair_rank(*this, component, p) < pair_rank(*this, component, q); });
    return peers;
}

int Config::optional_pairs_before(int peer, int component) const {
    const auto here = pair_rank(*this, peer, component);
    int n = 0;
    for (int q : peers_of(peer))
        if (q != component && std::get<0>(pair_rank(*this, peer, q)) && pair_rank(*this, peer, q) < here) ++n;
    return n;
}

Config parse(std::string_view text, std::string_view filename) {
    return Parser(filename).run(text);
}

[[noreturn]] static void unreadable(const std::string &path, int err) {
    fail(DTF_ERR_CONFIG, "cannot read dtf configuration file '%s': %s", path.c_str(),
         std::strerror(err));
}

Config load(const std::string &path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) unreadable(path, errno);
    std::string text;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int err = errno;
            ::close(fd);
            unreadable(path, err);
        }
        text.append(buf, static_cast<size_t>(n));
    }
    ::close(fd);
    return parse(text, path);
}

// Matching rule (both sides are split into '/'-separated components after lexical normalization,
// see components() above; a leading "./" or "../" of a relative pattern is thereby dropped):
//  - an absolute pattern ("/scratch/%/hist.nc") matches when it has as many components as the path
//    and each pattern component matches the path component at the same position;
//  - a relative pattern ("run/hist.%.nc") matches the last components of the path the same way, so
//    it matches whole components only: "hist.%.nc" matches "/d/run/hist.01.nc" but not
//    "/d/run/myhist.01.nc".
// Within a component '%' matches any run of characters, including none, but never a '/': in
// "data/%/hist.%.nc" the first '%' stands for exactly one directory.
bool pattern_matches(std::string_view pattern, std::string_view normalized_path) {
    if (part_of_name(pattern)) { // the original DTF's "part of the file name"
        const size_t slash = normalized_path.rfind('/');
        return normalized_path.substr(slash == std::string_view::npos ? 0 : slash + 1).find(pattern) !=
               std::string_view::npos;
    }
    auto want = components(pattern);
    auto have = components(normalized_path);
    if (want.empty()) return false;
    bool absolute = pattern[0] == '/';
    if (absolute ? want.size() != have.size() : want.size() > have.size()) return false;
    size_t offset = have.size() - want.size();
    for (size_t i = 0; i < want.size(); ++i)
        if (!component_matches(want[i], have[offset + i])) return false;
    return true;
}

bool part_of_name(std::string_view pattern) {
    return !pattern.empty() && pattern.find_first_of("%/") == std::string_view::npos;
}

std::string normalize_path(std::string_view path, std::string_view cwd) {
    bool absolute = !path.empty() && path[0] == '/';
    std::string joined = absolute ? std::string(path) : std::string(cwd) + "/" + std::string(path);
    std::string out;
    for (auto c : components(joined)) out += "/" + std::string(c);
    return out.empty() ? "/" : out;
}

Settings settings_from_env(const std::vector<std::string> &environment) {
    Settings settings;
    for (const auto &entry : environment) {
        size_t eq = entry.find('=');
        if (eq == std::string::npos) continue;
        std::string name = entry.substr(0, eq), value = entry.substr(eq + 1);
        const EnvVar *var = nullptr;
        for (const auto &v : kEnvVars)
            if (name == v.name) var = &v;
        if (var) {
            if (!value.empty()) var->apply(settings, name, value); // empty means unset
        } else if (name.compare(0, 4, "DTF_") == 0) {
            settings.warnings.push_back(unknown_env_warning(name));
        }
    }
    return settings;
}

Settings settings_from_process_env() {
    std::vector<std::string> environment;
    for (char **e = environ; e && *e; ++e) environment.emplace_back(*e);
    return settings_from_env(environment);
}

const char *mode_name(Mode mode) { return mode == Mode::File ? "file" : "transfer"; }

std::string describe(const Config &c, const Settings &s) {
    std::string out = "; dtf configuration";
    if (!c.path.empty()) out += " read from " + one_line(c.path);
    out += "\n";
    out += "[INFO]\n";
    out += format("ncomp=%zu\n", c.components.size());
    for (const auto &name : c.components) out += "comp_name=" + quoted(name) + "\n";
    out += format("buffer_data=%d\niodb_build_mode=%d\ndo_checksum=%d\nlog_ioreqs=%d\n",
                  c.buffer_data, c.iodb_build_mode, c.do_checksum, c.log_ioreqs);
    for (const auto &r : c.files) {
        out += "\n[FILE]\nfilename=" + quoted(r.pattern) + "\n";
        for (const auto &ex : r.excludes) out += "exclude_name=" + quoted(ex) + "\n";
        if (r.fixed_roles()) {
            out += "writer=" + quoted(r.writer) + "\n";
            if (!r.readers.empty()) out += "readers=" + quoted(join(r.readers, " ")) + "\n";
        }
        else
            out += "comp1=" + quoted(r.comp1) + "\ncomp2=" + quoted(r.comp2) + "\n";
        out += format("mode=\"%s\"\nreplay_io=%d\nnum_sessions=%d\nwriter_closes=%d\n", mode_name(r.mode),
                      r.replay_io, r.num_sessions, r.writer_closes);
        out += format("write_only=%d\nmirror_io_root=%d\npersist=%d\n", r.write_only, r.mirror_io_root, r.persist);
        if (r.serial_readers) out += format("serial_readers=%d\n", r.serial_readers);
        if (r.persist && r.mode == Mode::Transfer)
            out += format("aggregators=%d\nsubfiles=%d\naggregate_steps=%d\n", r.aggregators, r.subfiles,
                          r.aggregate_steps);
        if (!r.ioserver.empty()) out += "ioserver=" + quoted(r.ioserver) + "\n";
        if (r.falls_back())
            out += "fallback=" + (r.fallback_s == kFallbackWait ? quoted("wait") : format_seconds(r.fallback_s)) + "\n";
    }
    out += "\n; settings from the environment\n";
    out += "; DTF_INI_FILE=" + one_line(s.ini_file) + "\n";
    out += "; DTF_GLOBAL_PATH=" + one_line(s.global_path) + "\n";
    out += "; DTF_TIMEOUT=" + format_seconds(s.timeout_s) + "\n";
    out += format("; DTF_VERBOSE_LEVEL=%d\n; DTF_PRINT_STATS=%d\n", s.verbose, s.print_stats);
    out += "; DTF_TRACE=" + one_line(s.trace_dir) + "\n";
    out += "; DTF_RENDEZVOUS=" + one_line(s.rendezvous) + "\n";
    out += "; DTF_LOST_DIR=" + one_line(s.lost_dir) + "\n";
    out += format("; DTF_PROGRESS_THREAD=%d\n", s.progress_thread);
    out += format("; MAX_WORKGROUP_SIZE=%d\n", s.max_workgroup_size);
    return out;
}

} // namespace dtf::config
