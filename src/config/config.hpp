// The DTF configuration: the INI file that names the components and the files they share, and the
// DTF_* environment variables. Pure C++ (no MPI): parsed identically on every rank, unit-tested alone.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtf::config {

enum class Mode { Transfer, File };

// FileRule::fallback_s: the writer's calls fail; or it waits DTF_TIMEOUT (no bound of its own).
constexpr double kFallbackFail = -1;
constexpr double kFallbackWait = 1e300;

// One [FILE] section.
struct FileRule {
    std::string pattern;               // filename= as written ('%' matches any run of characters)
    std::vector<std::string> excludes; // exclude_name=: paths containing any of these are not handled
    // Who shares the file: either comp1=/comp2= (two components; each session is written by one and
    // read by the other, so the roles may reverse), or writer=/readers= (one component writes every
    // session and each of the readers reads it; the readers get the same data, each what it asks for).
    std::string comp1, comp2;
    std::string writer;               // writer=: empty for a comp1/comp2 rule
    std::vector<std::string> readers; // readers=: in the order given (none: an output file, persist=1)
    Mode mode = Mode::Transfer;
    bool replay_io = false;
    int num_sessions = 1; // open/close sessions before dtf forgets the file
    // The writer's turn on a version of the file ends at its writer_closes-th close of it (or at
    // dtf_finalize): until then it may open the file again, read-only or with NC_WRITE, as its own.
    int writer_closes = 1;
    bool write_only = false;
    bool mirror_io_root = false;
    // Serial files (opened by one process, without a communicator; both modes): how many processes of
    // each reading component read each version (0: every rank of it). A writer's next version of the
    // path waits until that many have closed the last one.
    int serial_readers = 0;
    // persist=1, transfer mode: the readers get the data over MPI and the writer also writes the file
    // (as file mode would; output/persist.cpp). File mode writes it anyway.
    bool persist = false;
    // How dtf writes a persist=1 file (GRAPES's aggregated output; output/persist.cpp):
    int aggregators = 0;     // 0: every writer rank writes its own values; A: A of them write everyone's
    bool subfiles = false;   // each aggregator writes a file of its own (subfile_path())
    int aggregate_steps = 1; // the files of k sessions are written together, once the k-th is closed
    std::string ioserver;    // a component running dtf-ioserver that writes the files instead (empty: none)
    // fallback= (transfer mode, persist=0): what the writer does when its readers are lost or late.
    // kFallbackFail: its calls fail (DTF_ERR_PEER / DTF_ERR_TIMEOUT); kFallbackWait: it waits for them
    // up to DTF_TIMEOUT, and when one is lost or that wait ends, its ranks write the file instead
    // (frontend/vfile.cpp); N >= 0: the same with N seconds.
    double fallback_s = kFallbackFail;
    int line = 0; // line of the [FILE] header, for messages

    bool fixed_roles() const { return !writer.empty(); }
    bool falls_back() const { return fallback_s >= 0; }
    // Whether component `name` shares the file.
    bool involves(std::string_view name) const;
    // The components `name` exchanges the file with: for a writer= rule the readers (of the writer)
    // or the writer (of a reader); else the other of comp1/comp2. Empty if `name` is not in the rule.
    std::vector<std::string> partners(std::string_view name) const;
    // Every component that writes or reads the file.
    std::vector<std::string> parties() const;
};

// The aggregator group of rank `rank` of `size` writer ranks with `aggregators` aggregators (A >= 1,
// at most `size` groups): consecutive ranks, group g = floor(rank * A / size); the group's first rank
// (aggregator_rank) writes what the group wrote. Pure arithmetic, shared by the runtime and the docs.
int aggregator_group(int rank, int size, int aggregators);
int aggregator_rank(int group, int size, int aggregators);
// subfiles=1: the file aggregator group `group` writes instead of `path`: "<path>.subfile_<group>".
std::string subfile_path(const std::string &path, int group);

struct Config {
    std::string path;                    // file it was read from (for messages)
    std::vector<std::string> components; // comp_name= in order; index = component id
    bool buffer_data = true; // put values are copied; 0: writes refer to the user's buffers until close
    int iodb_build_mode = 0; // accepted for compatibility, ignored (a warning)
    bool do_checksum = false; // likewise
    bool log_ioreqs = false;  // likewise
    std::vector<FileRule> files;
    // Keys of the original DTF that are accepted and ignored: "file:line: key ... ignored: why".
    std::vector<std::string> warnings;

    // Index of a component name, or -1.
    int component_index(std::string_view name) const;
    // comp_name= of component `index` (0 <= index < components.size()).
    const std::string &component_name(int index) const { return components[static_cast<size_t>(index)]; }
    // The first rule whose pattern matches the normalized absolute path and whose excludes do not;
    // nullptr when dtf does not handle the path.
    const FileRule *match(std::string_view normalized_path) const;
    // Components that share at least one [FILE] section with `component`, or serve it as its
    // ioserver= or are served by it (indices, ascending).
    std::vector<int> peers_of(int component) const;
    // Whether `component` may go on without `peer` when that never connects (dtf_init): every file
    // they share is written by `component` (or by it as the file's I/O server), read by `peer`, and
    // falls back to the file system (fallback=), so that those sessions are written instead. False
    // when they share nothing.
    bool may_go_without(int component, int peer) const;
    // The order in which `component` connects to its peers (dtf_init): one global order of the pairs,
    // so that no two components wait for each other in opposite orders. The pairs whose sides must
    // both be there come first, then those one side may go on without (may_go_without), each by
    // component index: a peer that never comes delays no pair that must connect.
    std::vector<int> connect_order(int component) const;
    // How many of `peer`'s pairs before its pair with `component` (connect_order) one side may go on
    // without: each may keep `peer` waiting DTF_TIMEOUT before it comes to this pair.
    int optional_pairs_before(int peer, int component) const;
};

// Parse the INI text. `filename` is used in messages only. Throws dtf::Error(DTF_ERR_CONFIG, ...)
// whose message is "<filename>:<line>: <what is wrong and what was expected>".
Config parse(std::string_view text, std::string_view filename);

// Read and parse a file (throws DTF_ERR_CONFIG when it cannot be read, naming the path and errno).
Config load(const std::string &path);

// True when `pattern` matches the whole normalized path, or a whole trailing run of its components:
// "hist.%.nc" matches "/d/run/hist.01.nc" but not "/d/run/myhist.01.nc". A pattern with neither '%'
// nor '/' is a part of the file name, as the original DTF documents it: "pressure_wave_test" matches
// "/d/pressure_wave_test.0001.field.nc" (and "out.nc" matches "/d/out.nc", and "/d/my_out.nc").
bool pattern_matches(std::string_view pattern, std::string_view normalized_path);
// Whether `pattern` is such a part of the file name (it has neither '%' nor '/').
bool part_of_name(std::string_view pattern);

// Make `path` absolute against `cwd` and collapse "//", "/./" and "/../" (purely lexical).
std::string normalize_path(std::string_view path, std::string_view cwd);

// Settings from the environment.
struct Settings {
    std::string ini_file;        // DTF_INI_FILE (overrides the path given to dtf_init)
    std::string global_path;     // DTF_GLOBAL_PATH (rendezvous directory; default: config's dir)
    double timeout_s = 120.0;    // DTF_TIMEOUT
    int verbose = 0;             // DTF_VERBOSE_LEVEL
    int print_stats = 0;         // DTF_PRINT_STATS: 0, 1 (a table) or 2 (and every count)
    std::string trace_dir;       // DTF_TRACE: write an event trace per rank there (common/trace.hpp)
    int max_workgroup_size = 64; // MAX_WORKGROUP_SIZE (ranks per matcher)
    std::string rendezvous = "auto"; // DTF_RENDEZVOUS: auto | file | name
    std::string lost_dir;            // DTF_LOST_DIR: where dtfrun reports components that died
    std::string component;           // DTF_COMPONENT: zero-change mode, dtf starts in MPI_Init as this
    bool progress_thread = true;     // DTF_PROGRESS_THREAD (0: off): a thread progresses dtf while the
                                     // program computes, when MPI provides MPI_THREAD_MULTIPLE
    bool progress_thread_asked = false; // DTF_PROGRESS_THREAD=1 given (a warning if it cannot run)
    std::vector<std::string> warnings; // e.g. unknown DTF_* variables
};

// Read settings from "NAME=value" entries (normally `environ`). Throws DTF_ERR_CONFIG naming the
// variable when a value is malformed (e.g. "DTF_TIMEOUT='abc': expected a positive number of seconds").
Settings settings_from_env(const std::vector<std::string> &environment);
Settings settings_from_process_env();

// The effective configuration with every default filled in, as INI text plus the settings as
// comments; used by `dtf-config` and by DTF_VERBOSE_LEVEL>=1.
std::string describe(const Config &config, const Settings &settings);

const char *mode_name(Mode mode);

} // namespace dtf::config
