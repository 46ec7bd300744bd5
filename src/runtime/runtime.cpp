#include "runtime/runtime.hpp"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/clock.hpp"
#include "common/cwd.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "common/trace.hpp"
#include "mpi/mpmd.hpp"
#include "pnc/hook.h"
#include "transport/connect.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::runtime {

using transport::check_mpi;

namespace {
Runtime *g_runtime = nullptr; // the one instance, guarded by the runtime lock (Entry)
// Why dtf could not part from a peer component at finalize, if it could not, and DTF_TIMEOUT then
// (on_mpi_finalize).
std::string g_parted;
double g_parted_timeout = 0;
std::mutex g_lock;
thread_local Entry *t_entry = nullptr; // the calling thread's entry, if it is inside dtf
thread_local bool t_progress_thread = false; // the calling thread is dtf's progress thread

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(DTF_ERR_CONFIG, "cannot read config file '%s'", path.c_str());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string directory_of(const std::string &path) {
    std::string abs = config::normalize_path(path, current_dir());
    std::string dir = abs.substr(0, abs.rfind('/'));
    return dir.empty() ? "/" : dir;
}

std::string mpi_library() {
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    return std::string(version, static_cast<size_t>(len));
}

bool is_open_mpi() { return mpi_library().find("Open MPI") != std::string::npos; }

// Who started this process, as far as its environment tells (said once by dtf_init at
// DTF_VERBOSE_LEVEL=1): the launchers set these variables for the processes they start.
std::string launcher() {
    const char *ns = std::getenv("PMIX_NAMESPACE");
    if (ns && std::strncmp(ns, "slurm.pmix.", 11) == 0) return "srun (Slurm's PMIx)";
    if (ns && std::strncmp(ns, "prterun-", 8) == 0) return "mpirun (Open MPI 5)";
    if (std::getenv("OMPI_MCA_orte_hnp_uri") || std::getenv("OMPI_MCA_orte_local_daemon_uri")) {
        const char *job = std::getenv("SLURM_JOB_ID");
        return job ? format("mpirun (Open MPI), inside Slurm job %s", job) : "mpirun (Open MPI)";
    }
    if (std::getenv("HYDI_CONTROL_FD")) return "mpiexec (MPICH's Hydra)";
    if (std::getenv("SLURM_STEP_ID") && std::getenv("PMI_FD")) return "srun (Slurm's PMI)";
    if (std::getenv("PMI_RANK") || std::getenv("PMI_FD")) return "mpiexec (PMI)";
    return "unknown (no launcher's variables: a singleton?)";
}

// Open MPI up to 4.x (ORTE) tells every rank which daemon started it: "<job family>.<vpid>;<uri>",
// vpid 0 being mpirun itself, the others the daemons it started on other nodes.
bool started_away_from_mpirun() {
    const char *daemon = std::getenv("OMPI_MCA_orte_local_daemon_uri");
    const char *dot = daemon ? std::strchr(daemon, '.') : nullptr;
    return dot && std::strtol(dot + 1, nullptr, 10) != 0;
}

// Whether the job was started with a name server (mpirun --ompi-server: dtfrun does that).
bool name_server_given() {
    const char *server = std::getenv("OMPI_MCA_pmix_server_uri");
    return server && *server;
}

std::string without_comments(const std::string &ini) {
    std::istringstream in(ini);
    std::string line, out;
    while (std::getline(in, line))
        if (!line.empty() && line[0] != ';') out += line + "\n";
    return out;
}

// First line where two texts differ, for "started with a different configuration" messages.
std::string first_difference(const std::string &a, const std::string &b) {
    std::istringstream ia(a), ib(b);
    std::string la, lb;
    for (int line = 1;; ++line) {
        bool ga = static_cast<bool>(std::getline(ia, la)), gb = static_cast<bool>(std::getline(ib, lb));
        if (!ga && !gb) return "(no difference found)";
        if (!ga) la = "(end)";
        if (!gb) lb = "(end)";
        if (la != lb) return format("here '%s', there '%s'", la.c_str(), lb.c_str());
    }
}
} // namespace

namespace {
std::atomic<uint64_t> g_entries{0};
}

Entry::Entry() : lock_(g_lock), outer_(t_entry) {
    t_entry = this;
    g_entries.fetch_add(1, std::memory_order_relaxed);
}

uint64_t Entry::count() { return g_entries.load(std::memory_order_relaxed); }

Entry::~Entry() { t_entry = outer_; }

bool Entry::nested() { return t_entry != nullptr || t_progress_thread; }

std::unique_lock<std::mutex> *Entry::held() {
    return t_entry && t_entry->lock_.owns_lock() ? &t_entry->lock_ : nullptr;
}

std::mutex &Entry::mutex() { return g_lock; }

namespace {
// The transport's blocking helpers (collectives, bounded waits) release the runtime lock.
thread_local std::unique_lock<std::mutex> *t_released = nullptr;
bool release_entry() {
    std::unique_lock<std::mutex> *lock = Entry::held();
    if (!lock) return false; // not in an entry, or already released by an enclosing scope
    lock->unlock();
    t_released = lock;
    return true;
}
void reacquire_entry() { t_released->lock(); }
const bool g_hooks_set = (transport::set_blocking_hooks({release_entry, reacquire_entry}), true);
} // namespace

namespace {
std::unique_ptr<Part> (*g_makers[Runtime::kParts])() = {};
std::shared_ptr<const Runtime::Published> g_published; // (std::atomic_load/atomic_store)

void publish(const Runtime *rt) {
    std::shared_ptr<const Runtime::Published> p;
    if (rt) p = std::make_shared<const Runtime::Published>(Runtime::Published{rt->config(), rt->self_name()});
    std::atomic_store(&g_published, std::move(p));
}
} // namespace

bool Runtime::register_part(int slot, std::unique_ptr<Part> (*make)()) {
    g_makers[slot] = make;
    return true;
}

std::shared_ptr<const Runtime::Published> Runtime::published() { return std::atomic_load(&g_published); }

Runtime::Runtime() {
    // part<P>() relies on each slot holding its layer's part (libdtf links all three layers).
    for (int i = 0; i < kParts; ++i) {
        if (!g_makers[i]) fail(DTF_ERR_INTERNAL, "libdtf: no layer registered the runtime's part %d", i);
        parts_[i] = g_makers[i]();
    }
}

void Runtime::drop_parts() {
    for (auto &p : parts_) p.reset(); // (top first: a file's writer session goes with it)
}

Runtime::~Runtime() { drop_parts(); }

Runtime *Runtime::instance() { return g_runtime; }

void Runtime::init(const char *config_path, const char *component_name, bool in_mpi_init) {
    if (g_runtime && g_runtime->in_mpi_init_ && component_name && g_runtime->self_name() == component_name)
        return; // zero-change mode: dtf started in MPI_Init as this component already
    if (g_runtime)
        fail(DTF_ERR_ALREADY_INIT, "dtf_init: dtf is already initialized%s",
             g_runtime->in_mpi_init_ ? format(" (in MPI_Init, as component '%s' of DTF_COMPONENT)",
                                             g_runtime->self_name().c_str()).c_str() : "");
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) fail(DTF_ERR_MPI, "dtf_init must be called after MPI_Init and before MPI_Finalize");
    std::unique_ptr<Runtime> rt(new Runtime);
    double t0 = now_s();
    try {
        rt->setup(config_path, component_name);
    } catch (const std::exception &e) {
        rt->leave_launch(e.what());
        rt->teardown(false);
        throw;
    } catch (...) {
        rt->teardown(false);
        throw;
    }
    rt->stats_.init_s = now_s() - t0;
    rt->in_mpi_init_ = in_mpi_init;
    g_runtime = rt.release();
    publish(g_runtime);
    for (const auto &rule : g_runtime->config_.files)
        if (rule.involves(g_runtime->self_name()))
            __atomic_store_n(&dtf_pnc_active_, 1, __ATOMIC_RELEASE);
    g_runtime->watch_mpi_finalize();
}

namespace {
int g_finalize_key = MPI_KEYVAL_INVALID;

// A watchdog for a blocking MPI call that waits for another process that may never make its part
// of it (MPI cannot cancel it): unless done() holds `grace` seconds from now, the process ends with
// status 1, saying `why` and how long it waited.
void end_unless(double grace, std::function<bool()> done, std::string why) {
    std::thread([grace, done = std::move(done), why = std::move(why)] {
        const Deadline deadline(grace);
        while (!done()) {
            if (deadline.expired()) {
                std::fprintf(stderr, "[dtf] %s after %.0f s: this process ends now with status 1\n", why.c_str(),
                             grace);
                std::fflush(nullptr);
                std::_Exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }).detach();
}

// MPI_Finalize deletes the attributes of MPI_COMM_SELF first, while MPI still works. A program that
// did not call dtf_finalize is finalized here (bounded by DTF_TIMEOUT, as dtf_finalize): the files
// it closed are served to their readers, and the peers' dtf_finalize meet it. When dtf could not part
// from a peer (here or in dtf_finalize: it never came, or was lost), the connection to it is still
// open, and MPI_Finalize may wait for that job forever (Open MPI waits for the jobs this one
// connected to): a watchdog ends the process, with status 1 and the reason, if MPI_Finalize has not
// completed min(DTF_TIMEOUT, 10 s) later.
int on_mpi_finalize(MPI_Comm, int, void *, void *) {
    if (Entry::nested()) return MPI_SUCCESS; // dtf_finalize removing the attribute
    {
        Entry entry;
        if (Runtime::instance()) {
            log::warn("MPI_Finalize was called without dtf_finalize: dtf finalizes now");
            guard([&] {
                Runtime::finalize(true);
                return 0;
            });
        }
    }
    if (!g_parted.empty())
        end_unless(std::min(g_parted_timeout, 10.0), [] {
            int done = 0;
            MPI_Finalized(&done); // callable from any thread at any time
            return done != 0;
        }, g_parted + ", and MPI_Finalize still waits for it");
    return MPI_SUCCESS;
}
} // namespace

void Runtime::watch_mpi_finalize() {
    if (g_finalize_key == MPI_KEYVAL_INVALID)
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_mpi_finalize, &g_finalize_key, nullptr);
    MPI_Comm_set_attr(MPI_COMM_SELF, g_finalize_key, nullptr);
}

// Stop the progress thread; the parts finish their work, bottom first: the files still to write are
// written, the closed files' readers served to the end (dtf_finalize does the same, part by part,
// before it meets the other components).
void Runtime::finish_background(const char *who) {
    stop_progress_thread();
    for (int i = kParts - 1; i >= 0; --i) parts_[i]->finish(*this, who);
}

void Runtime::report_detached(const Error &e) {
    report_error(e.code(), e.what());
    if (!detached_error_) detached_error_ = std::make_unique<Error>(e.code(), e.what(), true);
}

std::unique_ptr<Runtime> Runtime::in_process(config::Config config, config::Settings settings, int self, int rank,
                                             int size, std::map<int, PeerLink> peers) {
    std::unique_ptr<Runtime> rt(new Runtime);
    rt->config_ = std::move(config);
    rt->settings_ = std::move(settings);
    rt->self_ = self;
    rt->rank_ = rank;
    rt->size_ = size;
    rt->peers_ = std::move(peers);
    return rt;
}

// More ranks of this component on this node than cores (the other components' are not known here):
// waits back off from the start (wait_until), and there is no core for a progress thread
// (start_progress_thread).
void Runtime::learn_node() {
    MPI_Comm node;
    int local = 1;
    if (MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Comm_size(node, &local);
        MPI_Comm_free(&node);
    }
    cores_ = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    crowded_ = local > cores_;
    node_ranks_ = local; // the peers' ranks on this node are added as they connect
}

// The settings of the environment (agreed over the component), the config file (read by rank 0 and
// given to the others) and which component this one is. Throws DTF_ERR_ARG or DTF_ERR_CONFIG.
void Runtime::load_config(const char *config_path, const char *component_name) {
    transport::on_all(world_, [&] { settings_ = config::settings_from_process_env(); });
    log::set_level(settings_.verbose);
    if (settings_.print_stats) phase::enable(true);
    if (rank_ == 0)
        for (const auto &w : settings_.warnings) std::fprintf(stderr, "[dtf] warning: %s\n", w.c_str());

    config_path_ = !settings_.ini_file.empty() ? settings_.ini_file : (config_path ? config_path : "");
    if (config_path_.empty())
        fail(DTF_ERR_ARG, "dtf_init: no configuration file (pass its path or set DTF_INI_FILE)");
    if (!component_name || !*component_name) fail(DTF_ERR_ARG, "dtf_init: no component name given");
    std::string text;
    transport::on_root(world_, 0, [&] {
        text = read_file(config_path_);
        config_ = config::parse(text, config_path_);
    });
    int len = static_cast<int>(text.size());
    check_mpi(MPI_Bcast(&len, 1, MPI_INT, 0, world_), "MPI_Bcast");
    text.resize(static_cast<size_t>(len));
    check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, 0, world_), "MPI_Bcast");
    if (rank_ != 0) config_ = config::parse(text, config_path_);
    if (rank_ == 0)
        for (const auto &w : config_.warnings) std::fprintf(stderr, "[dtf] warning: %s\n", w.c_str());

    self_ = config_.component_index(component_name);
    if (self_ < 0) {
        std::string known;
        for (const auto &c : config_.components) known += (known.empty() ? "'" : ", '") + c + "'";
        throw Error(DTF_ERR_CONFIG,
                    format("dtf_init: component '%s' is not listed in %s (comp_name= gives %s)", component_name,
                           config_path_.c_str(), known.c_str()),
                    rank_ != 0);
    }
}

void Runtime::setup(const char *config_path, const char *component_name) {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup(MPI_COMM_WORLD)");
    MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    {
        int *ub = nullptr, found = 0;
        MPI_Comm_get_attr(world_, MPI_TAG_UB, &ub, &found);
        if (found && ub) tag_ub_ = *ub;
    }
    learn_node();
    load_config(config_path, component_name);
    log::set_context(self_name(), rank_);
    tell_launcher_name(); // (before connecting: a peer may be lost while this rank waits for it)
    if (rank_ == 0 && log::enabled(log::kInfo)) {
        std::string mpi = mpi_library(); // "Open MPI v4.1.4, package: ...", "MPICH Version:\t4.0.2\n..."
        mpi = mpi.substr(0, mpi.find_first_of(",\n"));
        if (size_t at = mpi.find(" Version:"); at != std::string::npos)
            mpi = mpi.substr(0, at) + " " + mpi.substr(mpi.find_first_not_of(" \t", at + 9));
        log::info("MPI: %s; started by %s%s", mpi.c_str(), launcher().c_str(),
                  mpmd::active() ? format("; one launch, this program number %d (%s)", mpmd::context(),
                                          mpmd::context_source()).c_str()
                                 : "");
    }
    if (!settings_.trace_dir.empty())
        transport::on_all(world_, [&] { trace::start(settings_.trace_dir, self_name(), self_, rank_); });
    if (rank_ == 0 && log::enabled(log::kInfo))
        log::info("effective configuration:\n%s", config::describe(config_, settings_).c_str());
    double t0 = now_s();
    connect_peers();
    stats_.connect_s = now_s() - t0;
    for (const auto &[index, link] : peers_) // a data tag for each rank of either side
        for (int c : {self_, index}) data_tag(c, int64_t{(c == self_ ? size_ : link.remote_size) - 1} << 32);
    if (!peers_.empty()) start_progress_thread();
}

void Runtime::connect_peers() {
    std::vector<int> peers = config_.connect_order(self_);
    if (peers.empty()) return;
    if (mpmd::active()) return connect_in_launch(peers);
    int away = started_away_from_mpirun() ? 1 : 0, ranks_away = 0;
    check_mpi(MPI_Reduce(&away, &ranks_away, 1, MPI_INT, MPI_SUM, 0, world_), "MPI_Reduce");
    transport::Board *board = nullptr;
    transport::on_root(world_, 0, [&] {
        check_separate_launch(ranks_away);
        if (settings_.rendezvous == "auto" && !name_server_given() && is_open_mpi())
            fail(DTF_ERR_CONNECT,
                 "component '%s' must connect to other components, but separately launched Open MPI jobs can "
                 "only connect through a name server: launch the components with `dtfrun`, or start "
                 "`ompi-server --no-daemonize --report-uri FILE` and give every mpirun `--ompi-server file:FILE`",
                 self_name().c_str());
        board = &this->board();
        log::info("meeting the other components through %s (DTF_RENDEZVOUS=%s)", board->where().c_str(),
                  settings_.rendezvous.c_str());
    });
    // While this component connects, its mark on the board tells peers that wait for it that it may be
    // waiting for a component that never comes (transport::PairSpec::peer_waits_before).
    struct Mark {
        transport::Board *board;
        std::string key;
        ~Mark() {
            if (board) board->remove(key);
        }
    } mark{board, transport::connecting_key(self_name())};
    if (board) board->put(mark.key, format("%d", static_cast<int>(getpid())));
    // Pairs in one global order (Config::connect_order; the lower component index accepts), so no two
    // components wait on each other in opposite orders.
    for (int p : peers) {
        const std::string &peer = config_.components[p];
        log::debug("connecting to component '%s'", peer.c_str());
        transport::PairSpec spec{self_name(), peer, self_ < p,
                                 [&] {
                                     auto what = [&] {
                                         return format("dtf_init waited for component '%s' to connect", peer.c_str());
                                     };
                                     check_peer_alive(peer, what);
                                     if (!config_.may_go_without(p, self_)) check_unidentified_lost(peer, what);
                                     const auto run = run_id().empty()
                                                          ? std::nullopt
                                                          : board->get(transport::went_on_key(peer, self_name()));
                                     if (run && *run == run_id())
                                         fail(DTF_ERR_PEER, "component '%s' %s (it did not connect within DTF_TIMEOUT)",
                                              peer.c_str(), kWentOnWithout);
                                 },
                                 config_.optional_pairs_before(p, self_)};
        MPI_Comm inter;
        try {
            inter = transport::connect_pair(world_, board, spec, settings_.timeout_s);
        } catch (const Error &e) { // (agreed by the component's ranks)
            // A reader whose writer went on without it earlier in this run: it reads that writer's files
            // from the file system once written (files.cpp: wait_on_disk).
            if (std::strstr(e.what(), kWentOnWithout) && config_.may_go_without(p, self_)) {
                absent_.emplace(p, e.what());
                if (rank_ == 0)
                    log::notice("going on without component '%s': %s; this component reads the files it writes from "
                                "the file system once they are written", peer.c_str(), e.what());
                continue;
            }
            if ((e.code() != DTF_ERR_TIMEOUT && e.code() != DTF_ERR_PEER) || !config_.may_go_without(self_, p)) throw;
            absent_.emplace(p, e.what());
            if (rank_ == 0) {
                log::notice("going on without component '%s', which did not connect: every session of the files it "
                            "would read that '%s' writes or serves goes to the file system (fallback=); %s",
                            peer.c_str(), self_name().c_str(), e.what());
                // (a reader that starts later in this run finds it, and reads those files there)
                if (!run_id().empty()) board->put(transport::went_on_key(self_name(), peer), run_id());
            }
            continue;
        }
        add_peer(p, inter, spec.acceptor, false);
    }
}

// Separately launched jobs that the MPI or its launcher cannot connect: fail at once, saying why,
// instead of crashing or hanging in MPI_Comm_connect. `ranks_away`: ranks of this job started by a daemon on
// another node than its mpirun's (Open MPI 4).
void Runtime::check_separate_launch(int ranks_away) const {
    // Open MPI 4.1's mpirun keeps no contact address for the daemons it started on other nodes, yet
    // sends them to a connecting job, whose mpirun then crashes (NULL in orte_rml_base_parse_uris).
    if (ranks_away > 0)
        fail(DTF_ERR_CONNECT,
             "component '%s' has %d of its %d ranks on nodes other than the one its mpirun runs on, and "
             "separately launched Open MPI 4 jobs cannot connect then (the other job's mpirun crashes in "
             "MPI_Comm_connect: it gets no contact address for the daemons on those nodes); run each "
             "component on one node, started by an mpirun on that node, or start all components with one "
             "mpirun (`dtfrun --mpmd`), which works across nodes",
             self_name().c_str(), ranks_away, size_);
    // Open MPI 5 (PRRTE): every mpirun starts a runtime of its own, named in PMIX_NAMESPACE
    // ("prterun-<host>-<pid>@<job>"), and jobs of two of them never connect: MPI_Comm_connect waits
    // forever (5.0.11).
    if (const char *ns = std::getenv("PMIX_NAMESPACE"); ns && std::strncmp(ns, "prterun-", 8) == 0)
        fail(DTF_ERR_CONNECT,
             "component '%s' was started by an Open MPI 5 mpirun of its own (PMIX_NAMESPACE=%s), and jobs of "
             "separate Open MPI 5 mpiruns cannot connect (there is no name server; MPI_Comm_connect would "
             "wait forever): start all components with one mpirun (`mpirun -n 4 ./model : -n 8 ./assim`), "
             "which dtfrun does by itself with Open MPI 5",
             self_name().c_str(), ns);
    // Slurm's PMIx plugin implements neither publish/lookup nor connect (22.05: "not supported"), so
    // the ranks of separate srun steps never connect to each other.
    if (const char *ns = std::getenv("PMIX_NAMESPACE"); ns && std::strncmp(ns, "slurm.pmix.", 11) == 0)
        fail(DTF_ERR_CONNECT,
             "component '%s' was started by an srun of its own (PMIX_NAMESPACE=%s), and the ranks of separate "
             "srun steps cannot connect (Slurm's PMIx does not implement MPI_Comm_connect): start all "
             "components with one srun, `srun --multi-prog` with DTF_APPNUM set per program, which `dtfrun` "
             "does inside an allocation (or with --launcher srun)",
             self_name().c_str(), ns);
    // An MPI that cannot open a port cannot connect separately launched jobs at all (MPICH 4.0's
    // ch4:ucx: "not supported with ucx netmod"): said before the other component waits for a port.
    {
        transport::ScopedErrorsReturn errors_return;
        char port[MPI_MAX_PORT_NAME] = {0};
        if (int rc = MPI_Open_port(MPI_INFO_NULL, port); rc != MPI_SUCCESS) {
            char text[MPI_MAX_ERROR_STRING] = "";
            int len = 0;
            MPI_Error_string(rc, text, &len);
            std::string why(text, static_cast<size_t>(len)); // (MPICH: a stack, the cause on its last line)
            while (!why.empty() && std::isspace(static_cast<unsigned char>(why.back()))) why.pop_back();
            why = why.substr(why.rfind('\n') + 1);
            fail(DTF_ERR_CONNECT,
                 "component '%s' runs as a job of its own, but this MPI cannot connect separately launched jobs "
                 "(MPI_Open_port fails: %s): start all components in one launch, `dtfrun --mpmd` (or by hand "
                 "`mpiexec -n 4 ./model : -n 8 ./assim`; under Slurm one srun, which dtfrun starts inside an "
                 "allocation)",
                 self_name().c_str(), why.c_str());
        }
        MPI_Close_port(port);
    }
}

// One MPMD launch: the inter-communicators to the other programs exist since MPI_Init (mpi/mpmd.hpp);
// their roots tell each other which component they run (every program of the launch calls dtf_init,
// or runs in the zero-change mode), in ascending order of application context on every process.
void Runtime::connect_in_launch(const std::vector<int> &peers) {
    std::map<std::string, std::pair<int, MPI_Comm>> running; // component -> its context and link
    std::string seen;
    for (const auto &[context, inter] : mpmd::links()) {
        const std::string what = format("program %d of this launch (%s)", context, mpmd::context_source());
        met_in_launch_.insert(context);
        const std::string name = transport::exchange_with_peer(inter, world_, self_name(), settings_.timeout_s, what);
        running[name] = {context, inter};
        seen += format("%s%d '%s'", seen.empty() ? "" : ", ", context, name.c_str());
    }
    for (int p : peers) {
        auto it = running.find(config_.components[p]);
        if (it == running.end())
            fail(DTF_ERR_CONNECT, "component '%s' (%s) must connect to component '%s', which is not among the "
                 "programs of this MPMD launch (this is program %d; the others: %s)", self_name().c_str(),
                 config_.path.c_str(), config_.components[p].c_str(), mpmd::context(),
                 seen.empty() ? "none" : seen.c_str());
        MPI_Comm inter;
        check_mpi(MPI_Comm_dup(it->second.second, &inter), "MPI_Comm_dup of the launch's inter-communicator");
        add_peer(p, inter, mpmd::context() < it->second.first, true);
    }
}

void Runtime::leave_launch(const std::string &why) {
    if (!mpmd::active() || world_ == MPI_COMM_NULL || rank_ != 0) return;
    for (const auto &[context, inter] : mpmd::links())
        if (!met_in_launch_.count(context))
            transport::tell_exchange_failed(inter, why);
}

void Runtime::add_peer(int p, MPI_Comm inter, bool acceptor, bool in_launch) {
    PeerLink link;
    link.component = p;
    link.in_launch = in_launch;
    link.name = config_.components[p];
    link.inter = inter;
    MPI_Comm_remote_size(link.inter, &link.remote_size);
    link.channel = transport::mpi_channel(link.inter, *queue_);
    link.data = transport::point_to_point(*link.channel);
    PeerLink &added = peers_[p] = std::move(link);
    handshake(added, settings_.timeout_s);
    node_ranks_ += transport::open_all_routes(added.inter, acceptor, settings_.timeout_s, added.name);
    log::info("connected to component '%s' (%d ranks)", added.name.c_str(), added.remote_size);
}

// Both sides must run compatible dtf versions with the same configuration.
void Runtime::handshake(PeerLink &link, double timeout_s) {
    // Control messages are little-endian everywhere; data messages carry values in the writer's byte
    // order, so both sides must share it.
    const uint16_t one = 1;
    const bool little = *reinterpret_cast<const unsigned char *>(&one) == 1;
    // (the config's absolute path: two components started in different directories may both say "dtf.ini")
    const std::string config_file = config::normalize_path(config_path_, current_dir());
    std::string mine = format("dtf %s wire %08x values %s-endian component %s config %s\n", DTF_VERSION, kMessageMagic,
                              little ? "little" : "big", self_name().c_str(), config_file.c_str()) +
                       config::describe(config_, config::Settings{});
    std::string theirs = transport::exchange_with_peer(link.inter, world_, mine, timeout_s, link.name);
    std::string my_head = mine.substr(0, mine.find('\n')), their_head = theirs.substr(0, theirs.find('\n'));
    std::string my_body = without_comments(mine.substr(mine.find('\n') + 1));
    std::string their_body = without_comments(theirs.substr(theirs.find('\n') + 1));
    bool quiet = rank_ != 0;
    std::string expect = format("component %s ", link.name.c_str());
    if (my_head.substr(0, my_head.find(" component")) != their_head.substr(0, their_head.find(" component")))
        throw Error(DTF_ERR_PEER, format("component '%s' runs an incompatible dtf: here '%s', there '%s'",
                                         link.name.c_str(), my_head.c_str(), their_head.c_str()), quiet);
    if (their_head.find(expect) == std::string::npos)
        throw Error(DTF_ERR_PEER, format("expected component '%s' but '%s' answered", link.name.c_str(),
                                         their_head.c_str()), quiet);
    if (fnv1a(my_body) != fnv1a(their_body))
        throw Error(DTF_ERR_CONFIG,
                    format("component '%s' was started with a different configuration (%s) than '%s' (%s); "
                           "first difference: %s",
                           link.name.c_str(), their_head.substr(their_head.find(" config ") + 8).c_str(),
                           self_name().c_str(), config_file.c_str(), first_difference(my_body, their_body).c_str()),
                    quiet);
}

const PeerLink &Runtime::peer(int component) const {
    auto it = peers_.find(component);
    if (it == peers_.end()) fail(DTF_ERR_INTERNAL, "component %d is not connected", component);
    return it->second;
}

PeerLink &Runtime::peer_link(int component) { return const_cast<PeerLink &>(peer(component)); }

void Runtime::post(int peer, const std::vector<int> &ranks, Message &&message) {
    if (absent_.count(peer)) return; // (it never connected: nobody to tell)
    message.from_component = self_;
    if (log::enabled(log::kDebug))
        log::debug("sending %s session %d epoch %d of '%s' to %zu rank(s) of '%s' (first %d)", kind_name(message.kind),
                   message.session, message.epoch, message.path.c_str(), ranks.size(),
                   config_.component_name(peer).c_str(), ranks.empty() ? -1 : ranks[0]);
    if (trace::on())
        trace::instant("control", format("send %s", kind_name(message.kind)),
                       format("\"to\":%s,\"ranks\":%zu,\"first\":%d,\"session\":%d,\"epoch\":%d,\"path\":%s",
                              trace::quote(config_.component_name(peer)).c_str(), ranks.size(),
                              ranks.empty() ? -1 : ranks[0], message.session, message.epoch,
                              trace::quote(message.path).c_str()));
    stats_.notices_sent += static_cast<long>(ranks.size());
    stats_.sent_by_kind[static_cast<size_t>(message.kind)] += static_cast<long>(ranks.size());
    peer_link(peer).channel->send(ranks, transport::Tag::Control, encode(std::move(message)),
                                  "sending a control message");
}

void Runtime::notify(int peer, Message message) {
    if (absent_.count(peer)) return;
    std::vector<int> all(static_cast<size_t>(this->peer(peer).remote_size));
    for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int>(r);
    post(peer, all, std::move(message));
}

void Runtime::send(int peer, int remote_rank, Message message) { post(peer, {remote_rank}, std::move(message)); }

std::vector<std::pair<std::string, int>> Runtime::take_withdrawals(int peer) {
    auto it = withdrawals_.find(peer);
    if (it == withdrawals_.end()) return {};
    auto out = std::move(it->second);
    withdrawals_.erase(it);
    return out;
}

// The withdrawals a FileDefined brings (its payload's first part, withdrawn_sessions()): the FileDefined
// of those sessions from the same writer root that are still here will never be used. (The ranks of
// a session's reader group took theirs before their root's ReaderOpened, after which the writer root
// withdrew it: so every rank may drop what it has.)
void Runtime::apply_withdrawals(const Message &defined) {
    std::vector<std::pair<std::string, int>> sessions;
    try {
        PayloadReader r(defined.payload, "file-defined");
        sessions = withdrawn_sessions(r);
    } catch (const Error &) { // malformed: the open that takes it says so
        return;
    }
    for (const auto &[path, session] : sessions)
        for (auto it = inbox_.begin(); it != inbox_.end(); ++it)
            if (it->kind == MessageKind::FileDefined && it->path == path && it->session == session &&
                it->from_component == defined.from_component && it->source == defined.source) {
                inbox_.erase(it);
                break;
            }
}

transport::Tag Runtime::data_tag(int writer, int64_t stamp) const {
    const int writer_size = writer == self_ ? size_ : peer(writer).remote_size;
    const int root = static_cast<int>((stamp >> 32) & 0xffff);
    auto tag = transport::data_tag(root, static_cast<uint32_t>(stamp), writer_size, tag_ub_);
    if (!tag)
        fail(DTF_ERR_MPI, "MPI_TAG_UB (%d) leaves no data message tag for rank %d of the %d ranks of component '%s'",
             tag_ub_, root, writer_size, config_.component_name(writer).c_str());
    return *tag;
}

bool Runtime::progress() {
    bool happened = false;
    for (auto &[comp, link] : peers_) {
        while (auto in = link.channel->poll(transport::Tag::Control, "receiving a control message")) {
            std::string why;
            auto message = decode(in->bytes.data(), in->bytes.size(), &why);
            if (!message || message->from_component != comp)
                fail(DTF_ERR_PEER, "malformed message from component '%s' rank %d: %s", link.name.c_str(), in->source,
                     message ? "wrong sender component" : why.c_str());
            message->source = in->source;
            apply(std::move(*message));
            happened = true;
        }
    }
    // Sends and receives complete: on MPI those of every channel, the peers' and the file groups' (they
    // share the queue, which has work even with no peer connected: Config::may_go_without); the
    // in-process channels of the protocol's unit tests have their own.
    happened |= queue_->progress();
    for (auto &[comp, link] : peers_)
        if (link.inter == MPI_COMM_NULL) happened |= link.channel->progress();
    // Then the layers above: writer sessions send and serve, without a caller (Part::step).
    for (auto &p : parts_) happened |= p->step(*this);
    return happened;
}

bool Runtime::serves(const std::string &path, int session) const {
    return std::any_of(std::begin(parts_), std::end(parts_), [&](const auto &p) { return p->serves(path, session); });
}

bool Runtime::busy() const {
    return std::any_of(std::begin(parts_), std::end(parts_), [](const auto &p) { return p->busy(); });
}

transport::Board &Runtime::board() {
    if (!board_) {
        const bool names = settings_.rendezvous == "name" || (settings_.rendezvous == "auto" && name_server_given());
        const std::string dir = settings_.global_path.empty() ? directory_of(config_path_) : settings_.global_path;
        board_ = names ? transport::make_name_board() : transport::make_file_board(dir);
    }
    return *board_;
}

std::string Runtime::disk_key(int writer, int reader, const std::string &path, int n) const {
    return format("%s--%s.file.%016llx.%d", config_.component_name(writer).c_str(),
                  config_.component_name(reader).c_str(),
                  static_cast<unsigned long long>(fnv1a(path)), n);
}

void Runtime::apply(Message &&m) {
    ++stats_.notices_received;
    if (trace::on())
        trace::instant("control", format("received %s", kind_name(m.kind)),
                       format("\"from\":%s,\"rank\":%d,\"session\":%d,\"epoch\":%d,\"bytes\":%zu,\"path\":%s",
                              trace::quote(config_.component_name(m.from_component)).c_str(), m.source,
                              m.session, m.epoch, m.payload.size(), trace::quote(m.path).c_str()));
    log::debug("message %s from '%s' session %d epoch %d: '%s' (%zu payload bytes)", kind_name(m.kind),
               config_.component_name(m.from_component).c_str(), m.session, m.epoch, m.path.c_str(),
               m.payload.size());
    if (m.kind == MessageKind::ClosedWrite || m.kind == MessageKind::ClosedRead) {
        PathCounters &c = counters_[m.path];
        if (m.kind == MessageKind::ClosedRead && m.epoch == kSerialSession) {
            ++c.serial_reads[m.from_component][m.session];
            return;
        }
        int &count = m.kind == MessageKind::ClosedWrite ? c.peer_writes : c.peer_reads[m.from_component];
        count = std::max(count, m.session);
        return;
    }
    if (m.kind == MessageKind::Finalizing) {
        finalized_[m.from_component] = Finalized{std::string(m.payload.begin(), m.payload.end()), now_s()};
        return;
    }
    if (m.kind == MessageKind::Persisted) { // a continuing writer may wait for it (persist.cpp)
        const int64_t stamp = PayloadReader(m.payload, "persisted").i64();
        for (auto &p : parts_) p->persisted(stamp);
        // Kept while the path is known here: the next session may continue it. That includes a path
        // whose first session this rank still reads: its record is made at the close, and the writer,
        // whose readers were done at their dtf_transfer, may have written the file before (the
        // Persisted dropped then left the continuing session waiting for it until DTF_TIMEOUT).
        auto it = counters_.find(m.path);
        if (it == counters_.end() && std::any_of(std::begin(parts_), std::end(parts_),
                                                 [&](const auto &p) { return p->has_open(m.path); }))
            it = counters_.emplace(m.path, PathCounters{}).first;
        if (it != counters_.end()) it->second.persisted.push_back(stamp);
        return;
    }
    // The session's waits end (session/reader.cpp); a closed one has no use for it.
    if (m.kind == MessageKind::FileWritten || m.kind == MessageKind::SessionFailed) {
        if (auto c = counters_.find(m.path); c != counters_.end() && c->second.closed() >= m.session) return;
        PayloadReader r(m.payload, kind_name(m.kind));
        const int64_t stamp = r.i64();
        if (m.kind == MessageKind::FileWritten) written_.insert(stamp); // (from the writer, or its I/O server)
        else failed_[stamp] = r.str();
        return;
    }
    if (m.kind == MessageKind::FileDefined) apply_withdrawals(m); // (sent after those it withdraws)
    if (session_closed(m)) return; // e.g. the final header of a file read without needing the record count
    if (m.kind == MessageKind::FileDefined && writes_unread_session(m.path, m.session)) return contest(m);
    inbox_.push_back(std::move(m));
}

// Whether this rank writes session `session` of `path` and no reader has opened it yet. (A session
// the other component has opened may still be served when it writes a session of the same number:
// after num_sessions, the numbers of a path start again from 1.)
bool Runtime::writes_unread_session(const std::string &path, int session) const {
    for (const auto &p : parts_) {
        const int unopened = p->writes_unopened(path, session);
        if (unopened < 0) continue;
        if (!unopened) return false;
        for (const Message &m : inbox_)
            if (m.kind == MessageKind::ReaderOpened && m.path == path && m.session == session) return false;
        return true;
    }
    return false;
}

// Both components create (or open with NC_WRITE) the same session, and each would wait for the other
// to read it: `m` is the other's FileDefined, received while (apply) or before (claim_session) this
// rank began to write the session. The writer's waits for the session fail at once (check_contested).
void Runtime::contest(const Message &m) {
    contested_.emplace(std::make_pair(m.path, m.session),
                       format("component '%s' writes session %d of '%s' too, as this component does (one component "
                              "writes a session of a transfer-mode file, the other reads it: did both create it, or "
                              "open it with NC_WRITE?)",
                              config_.component_name(m.from_component).c_str(), m.session,
                              m.path.c_str()));
}

void Runtime::claim_session(const std::string &path, int session) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it)
        if (it->kind == MessageKind::FileDefined && it->path == path && it->session == session) {
            contest(*it);
            inbox_.erase(it);
            return;
        }
}

void Runtime::check_contested(const std::string &path, int session, const std::function<std::string()> &what) const {
    if (contested_.empty()) return;
    if (auto it = contested_.find(std::make_pair(path, session)); it != contested_.end())
        fail(DTF_ERR_PEER, "rank %d (%s): %s; but %s", rank_, self_name().c_str(), what().c_str(), it->second.c_str());
}

// Whether `m` is about a transfer-mode session this rank has already closed (as the reader: final
// header, plans; as the writer and served it: reader group, requests, done): then it has no use.
bool Runtime::session_closed(const Message &m) const {
    auto it = counters_.find(m.path);
    if (it == counters_.end()) return false;
    switch (m.kind) {
    case MessageKind::HeaderFinal: // (the next session's may come before this rank forgot the last one)
        return it->second.closed() >= m.session && header_final_stamp(m) == it->second.last_read;
    case MessageKind::ReadPlan: return it->second.closed() >= m.session;
    case MessageKind::ReaderOpened: case MessageKind::ReadRequest: case MessageKind::ReaderDone:
        return it->second.closed() >= m.session && !serves(m.path, m.session);
    default: return false;
    }
}

void Runtime::forget_finished(const std::string &path) {
    auto it = counters_.find(path);
    if (it == counters_.end()) return;
    const config::FileRule *rule = config_.match(path);
    if (!rule || rule->mode != config::Mode::Transfer ||
        it->second.closed() < rule->num_sessions)
        return;
    for (const auto &p : parts_)
        if (p->has_open(path)) return;
    if (serves(path, 0)) return;
    counters_.erase(it);
}

void Runtime::discard_closed_sessions() {
    for (auto it = inbox_.begin(); it != inbox_.end();)
        it = session_closed(*it) ? inbox_.erase(it) : it + 1;
}

std::optional<Message> Runtime::take(const std::function<bool(const Message &)> &match) {
    for (auto it = inbox_.begin(); it != inbox_.end(); ++it)
        if (match(*it)) {
            Message m = std::move(*it);
            inbox_.erase(it);
            return m;
        }
    return std::nullopt;
}

const Message *Runtime::peek(const std::function<bool(const Message &)> &match) const {
    for (const Message &m : inbox_)
        if (match(m)) return &m;
    return nullptr;
}

Message Runtime::wait_message(const std::function<bool(const Message &)> &match,
                              const std::function<std::string()> &what, int peer) {
    std::optional<Message> found;
    wait_until([&] { return (found = take(match)).has_value(); }, what, peer);
    return std::move(*found);
}

bool Runtime::gone(int component) const {
    const std::string &name = config_.component_name(component);
    if (told_lost_.count(name)) return true;
    if (lost_report(name).empty()) return false;
    told_lost_.insert(name);
    return true;
}

// dtfrun names the file of a lost component (lost_report) after the component's label (its --name, or
// the executable's name, where it cannot know the config): rank 0 tells it the component's comp_name,
// by the component's index on dtfrun's command line (DTFRUN_MARK, "<dtfrun's directory>:<index>"), so
// that it names the file after that too. (In one launch the loss of a rank ends the whole launch.)
void Runtime::tell_launcher_name() const {
    const char *mark = std::getenv("DTFRUN_MARK");
    if (rank_ != 0 || settings_.lost_dir.empty() || !mark || mpmd::active()) return;
    const char *index = std::strrchr(mark, ':');
    std::ofstream out(settings_.lost_dir + "/.component." + (index ? index + 1 : mark));
    out << self_name() << "\n";
}

// dtfrun (DTF_LOST_DIR) writes a file named after a component that died, saying how; waiting on
// it any longer would only end in a timeout.
std::string Runtime::lost_report(const std::string &peer) const {
    if (settings_.lost_dir.empty()) return {};
    std::ifstream in(settings_.lost_dir + "/" + peer);
    std::string how;
    if (in) std::getline(in, how);
    return in ? (how.empty() ? "lost" : how) : std::string();
}

// A peer all of whose ranks came to dtf_finalize after serving every session they closed: what a wait
// needs from it will not come (after a short grace for messages its other ranks sent before), unless
// the wait is dtf_finalize's own meeting with it.
void Runtime::check_peer_finalized(int peer, const std::function<std::string()> &what) const {
    if (peer < 0 || meeting_) return;
    if (auto it = finalized_.find(peer); it != finalized_.end() && now_s() - it->second.at > kFinalizedGrace)
        fail(DTF_ERR_PEER, "rank %d (%s): %s; but component '%s' called dtf_finalize (%s) and will define, open or "
             "send nothing more", rank_, self_name().c_str(), what().c_str(), config_.component_name(peer).c_str(),
             it->second.what.c_str());
}

void Runtime::check_peer_alive(const std::string &peer, const std::function<std::string()> &what) const {
    const std::string how = lost_report(peer);
    if (how.empty()) return;
    told_lost_.insert(peer);
    fail(DTF_ERR_PEER, "rank %d (%s): %s; but component '%s' was lost (dtfrun: %s)", rank_, self_name().c_str(),
         what().c_str(), peer.c_str(), how.c_str());
}

void Runtime::check_unidentified_lost(const std::string &peer, const std::function<std::string()> &what) const {
    if (settings_.lost_dir.empty()) return;
    DIR *dir = opendir(settings_.lost_dir.c_str());
    if (!dir) return;
    std::string how;
    for (const dirent *e; how.empty() && (e = readdir(dir));)
        if (std::strncmp(e->d_name, ".unidentified.", 14) == 0) {
            std::ifstream in(settings_.lost_dir + "/" + e->d_name);
            std::getline(in, how);
        }
    closedir(dir);
    if (!how.empty())
        fail(DTF_ERR_PEER, "rank %d (%s): %s; but a program of this launch ended before its dtf said which component "
             "it runs (dtfrun: %s): if it was '%s', its output says why", rank_, self_name().c_str(), what().c_str(),
             how.c_str(), peer.c_str());
}

void Runtime::wait_until(const std::function<bool()> &done, const std::function<std::string()> &what,
                         const std::function<int()> &peer, double timeout_s) {
    wait(done, what, peer, timeout_s, false);
}

void Runtime::wait(const std::function<bool()> &done, const std::function<std::string()> &what,
                   const std::function<int()> &peer, double timeout_s, bool collective) {
    phase::Scope timer(phase::Wait);
    if (auto it = unanswered_.find(peer()); it != unanswered_.end() && !done())
        fail(DTF_ERR_PEER, "rank %d (%s): %s; but component '%s' already failed to answer for DTF_TIMEOUT=%g s (%s), "
             "so this rank does not wait for it again", rank_, self_name().c_str(), what().c_str(),
             config_.component_name(it->first).c_str(), settings_.timeout_s, it->second.c_str());
    if (auto it = absent_.find(peer()); it != absent_.end() && !done())
        fail(DTF_ERR_PEER, "rank %d (%s): %s; but component '%s' never connected (%s)", rank_, self_name().c_str(),
             what().c_str(), config_.component_name(it->first).c_str(), it->second.c_str());
    const bool own_bound = timeout_s > 0 && timeout_s < settings_.timeout_s;
    Deadline deadline(own_bound ? timeout_s : settings_.timeout_s);
    Backoff backoff(20e-6, 2e-3);
    double next_check = 0.1;
    // While an application thread waits here it progresses by itself: the progress thread stands
    // aside (progress_loop), so that the two do not contend for the lock, MPI and the cores.
    struct Waiting {
        Runtime &rt;
        explicit Waiting(Runtime &r) : rt(r) { ++rt.waiting_; }
        ~Waiting() {
            if (--rt.waiting_ == 0) rt.wake_.notify_all();
        }
    } waiting(*this);
    std::optional<trace::Span> span; // a wait that did not end at the first look, with what for and from whom
    std::string span_args;
    bool noted = false; // a wait of a second: said in the trace at once (a rank killed while it waits leaves that)
    for (;;) {
        progress();
        if (done()) break;
        if (!span && trace::on()) {
            const int p = peer();
            span.emplace("wait", collective ? "wait: collective" : "wait: peer");
            span_args = "\"for\":" + trace::quote(what()) + ",\"peer\":" +
                        trace::quote(p >= 0 ? config_.component_name(p) : std::string("-"));
            span->args(span_args);
        }
        if (span && !noted && deadline.elapsed() >= 1.0) {
            noted = true;
            trace::instant("wait", "still waiting after 1 s", span_args);
            trace::flush();
        }
        check_peer_finalized(peer(), what);
        if (deadline.elapsed() >= next_check) { // (only its peer's loss: the others may have lost a member)
            if (const int p = peer(); p >= 0) check_peer_alive(config_.component_name(p), what);
            next_check = deadline.elapsed() + 0.1;
        }
        if (deadline.expired()) {
            const std::string waited = what();
            if (own_bound)
                fail(DTF_ERR_TIMEOUT, "rank %d (%s): %s; gave up after %.1f s (the bound of %g s it was given)", rank_,
                     self_name().c_str(), waited.c_str(), deadline.elapsed(), timeout_s);
            if (const int p = peer(); p >= 0) unanswered_.emplace(p, waited);
            fail(DTF_ERR_TIMEOUT, "rank %d (%s): %s; gave up after %.1f s (DTF_TIMEOUT=%g)", rank_, self_name().c_str(),
                 waited.c_str(), deadline.elapsed(), settings_.timeout_s);
        }
        // The first kYieldWindow of a wait looks again at once, yielding the core in between: an answer
        // that comes then (most do: the peer is a message or a round of a collective away) is seen
        // within microseconds, and a rank with work takes the core meanwhile (sched_yield returns at
        // once when nobody wants it). Sleeping there put the backoff on the critical path of every
        // small cycle, on crowded nodes as on others (docs/RELIABILITY.md, "Waiting ranks"). Longer
        // waits sleep, so that a rank waiting for a peer that computes leaves the core to the ranks
        // that compute.
        if (deadline.elapsed() < kYieldWindow) {
            pause(0);
            continue;
        }
        // Then look again after 2% of the time waited so far (up to 200 us): the answer is seen at most
        // that late, and a long wait costs little CPU. A crowded node backs off instead, except in a
        // collective over this component's ranks: they are all in the same call, and each round of the
        // collective advances only when every rank looks again, so a pause grown to milliseconds made
        // each round cost that much (a set's MPI_Comm_idup, the agreements of a close).
        pause(!crowded_ ? std::clamp(0.02 * deadline.elapsed(), 20e-6, 200e-6)
                        : collective ? std::clamp(0.02 * deadline.elapsed(), 20e-6, 2e-3) : backoff.next());
    }
}

void Runtime::complete(transport::Pending &op, const char *call, const transport::Group &group,
                       const std::string &context) {
    wait([&] { return op.test(); },
         [&] { return format("%s: %s over %d ranks waited for the others", context.c_str(), call, group.size()); },
         [] { return -1; }, 0, true);
}

std::shared_ptr<transport::Group> Runtime::group_of(MPI_Comm comm, const std::string &context) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    return groups_.take(comm, world_, self_name(), *queue_, tag_ub_, [&](transport::Pending &dup) {
        wait([&] { return dup.test(); },
             [&] { return format("%s: MPI_Comm_idup over %d ranks waited for the others", context.c_str(), size); },
             [] { return -1; }, 0, true);
    });
}

void Runtime::allreduce_max(transport::Group &group, int64_t *values, int n, const std::string &context) {
    if (group.size() == 1) return; // (one rank: nothing to agree on, nobody to wait for)
    std::vector<int64_t> out(static_cast<size_t>(n));
    auto op = group.allreduce_max(values, out.data(), n);
    complete(*op, "an allreduce", group, context);
    std::copy(out.begin(), out.end(), values);
}

void Runtime::broadcast(transport::Group &group, int root, std::vector<char> *bytes, const std::string &context) {
    if (group.size() == 1) return;
    auto op = group.broadcast(root, bytes);
    complete(*op, "a broadcast", group, context);
}

void Runtime::barrier(transport::Group &group, const std::string &context) {
    if (group.size() == 1) return;
    auto op = group.barrier();
    complete(*op, "a barrier", group, context);
}

void Runtime::on_all(transport::Group &group, const std::function<void()> &fn, const std::string &context) {
    int code = 0;
    std::string message;
    try {
        fn();
    } catch (const Error &e) {
        code = e.code();
        message = e.what();
    }
    int64_t first = code ? group.size() - group.rank() : 0; // the largest: the lowest failing rank
    allreduce_max(group, &first, 1, context + " (error agreement)");
    if (first == 0) return;
    const int root = group.size() - static_cast<int>(first);
    PayloadWriter w;
    w.i32(code);
    w.str(message);
    std::vector<char> bytes = w.take();
    auto op = group.broadcast(root, &bytes);
    complete(*op, "a broadcast", group, context + " (error agreement)");
    if (code != 0) throw Error(code, message); // each failing rank reports its own failure
    PayloadReader r(bytes, "error agreement");
    code = r.i32();
    message = r.str();
    throw Error(code, format("rank %d: %s", root, message.c_str()), true);
}

void Runtime::pause(double seconds) {
    if (background_error_) {
        Error e = *background_error_;
        background_error_.reset();
        throw e;
    }
    transport::Blocking unlocked;
    if (seconds <= 0)
        sched_yield(); // (returns at once when no other thread wants the core)
    else
        std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

// The progress thread: progress() under the runtime lock, then a sleep without it. It polls
// quickly while data is in flight (each poll lets MPI move the next part of a large message) and
// backs off to 1 ms when nothing is pending, so that a waiting rank does not take the CPU from
// the application (this machine runs more ranks than cores). It works only while the application
// is not in dtf: while an application thread waits there (wait_until) it progresses by itself,
// and while the program makes one dtf call after another (its puts and gets) the thread looks
// again only every kBusyNap, and takes the lock only if it is free, so that neither waits for the
// other (contending for the lock at every call cost a 16x16x20 LETKF cycle 0.3 ms, 0.7 instead of
// 0.4 ms).
void Runtime::progress_loop() {
    t_progress_thread = true; // (its calls into wrapped functions are dtf's own: Entry::nested)
    constexpr double kBusyNap = 200e-6;
    double delay = 20e-6;
    uint64_t seen = Entry::count();
    double idle_since = now_s(); // the last time the thread found the application out of dtf
    while (!stop_) {
        std::this_thread::sleep_for(std::chrono::duration<double>(delay));
        const uint64_t entries = Entry::count();
        const bool in_use = entries != seen;
        seen = entries;
        // (A program that calls dtf without pause for long still gets a look every millisecond.)
        if (in_use && now_s() - idle_since < 1e-3) {
            delay = kBusyNap;
            continue;
        }
        idle_since = now_s();
        std::unique_lock<std::mutex> lock(Entry::mutex(), std::defer_lock);
        if (in_use ? !lock.try_lock() : (lock.lock(), false)) {
            delay = kBusyNap;
            continue;
        }
        while (waiting_ > 0 && !stop_) wake_.wait(lock); // until that wait ends (or stop)
        if (stop_) break;
        bool happened = false;
        try {
            happened = progress();
        } catch (const Error &e) {
            if (!background_error_) background_error_ = std::make_unique<Error>(e);
        }
        // (On a node with more ranks than cores, started by DTF_PROGRESS_THREAD=1, it looks less often.)
        const double cap = (queue_->pending() > 0 || busy() ? 200e-6 : 1e-3) *
                           (node_ranks_ > cores_ ? 10 : 1);
        delay = happened ? 20e-6 : std::min(delay * 1.5, cap);
    }
}

// On when MPI provides MPI_THREAD_MULTIPLE, unless DTF_PROGRESS_THREAD=0 or (unless it is 1) the
// components have more ranks on this node than it has cores: there the thread can only take the
// cores from the ranks, and a rank that spins in a blocking MPI call of the program starves the
// thread that should serve its readers (4 ranks on 2 cores: cycles of 10 s instead of 70 ms).
// Otherwise every wait runs inside the application's calls, and dtf says once why (a warning if
// DTF_PROGRESS_THREAD=1 asked for it).
void Runtime::start_progress_thread() {
    if (!settings_.progress_thread) {
        thread_note_ = "off (DTF_PROGRESS_THREAD=0)";
        return;
    }
    if (node_ranks_ > cores_ && !settings_.progress_thread_asked) {
        thread_note_ = "off (more ranks on the node than cores)";
        if (rank_ == 0)
            log::info("no progress thread: the components have %d ranks on this node, which has %d cores "
                      "(DTF_PROGRESS_THREAD=1 starts it anyway)", node_ranks_, cores_);
        return;
    }
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_MULTIPLE) {
        thread_note_ = "off (MPI not initialized with MPI_THREAD_MULTIPLE)";
        const char *why = "MPI was initialized without MPI_THREAD_MULTIPLE, so dtf has no progress thread: data moves "
                          "only inside dtf and PnetCDF calls (initialize MPI with MPI_Init_thread(..., "
                          "MPI_THREAD_MULTIPLE, ...) to let it move while the program computes)";
        if (rank_ == 0 && settings_.progress_thread_asked)
            log::warn("DTF_PROGRESS_THREAD=1, but %s", why);
        else if (rank_ == 0)
            log::info("%s", why);
        return;
    }
    thread_note_ = "on";
    thread_ = std::thread([this] { progress_loop(); });
}

// Called inside an entry point (the caller holds the runtime lock).
void Runtime::stop_progress_thread() {
    if (!thread_.joinable()) return;
    stop_ = true;
    wake_.notify_all();
    transport::Blocking unlocked;
    thread_.join();
}

void Runtime::finalize(bool in_mpi_finalize) {
    Runtime *rt = g_runtime;
    if (!rt) fail(DTF_ERR_NOT_INIT, "dtf_finalize: dtf is not initialized");
    // Writer turns not over (writer_closes) end first, as at their last close: the readers get them.
    std::exception_ptr unended;
    try {
        for (auto &p : rt->parts_) p->finalizing(*rt);
    } catch (...) {
        unended = std::current_exception();
    }
    g_runtime = nullptr;
    publish(nullptr);
    __atomic_store_n(&dtf_pnc_active_, 0, __ATOMIC_RELEASE);
    std::unique_ptr<Runtime> owner(rt);
    // Then nothing is left for MPI_Finalize to do, unless dtf could not part from a peer.
    auto unwatch = [&] {
        if (!in_mpi_finalize && g_parted.empty()) MPI_Comm_delete_attr(MPI_COMM_SELF, g_finalize_key);
    };
    try {
        rt->teardown(true);
    } catch (...) {
        unwatch();
        throw;
    }
    unwatch();
    if (unended) std::rethrow_exception(unended);
}

// dtf_finalize: every message this rank sent is delivered, but to a lost peer, which takes none any
// more (looked for every 0.1 s: it may die meanwhile).
void Runtime::deliver_sends() {
    double next_look = 0;
    wait_until([&] {
        if (now_s() >= next_look) {
            next_look = now_s() + 0.1;
            for (auto &[comp, link] : peers_)
                if (told_lost_.count(link.name) || !lost_report(link.name).empty()) queue_->abandon(link.inter);
        }
        return queue_->pending() == 0;
    }, [&] { return format("delivering %zu messages (%s)", queue_->pending(), queue_->describe_pending().c_str()); },
               unanswered_.empty() ? -1 : unanswered_.begin()->first);
}

// The first peer dtf_finalize parted from without meeting it: MPI_Finalize may then block, and
// on_mpi_finalize ends the process after DTF_TIMEOUT, saying this.
void Runtime::parted(const std::string &why) {
    if (!g_parted.empty()) return;
    g_parted = why;
    g_parted_timeout = settings_.timeout_s;
}

// dtf_finalize, once every rank of this component has served every session it closed (finish): rank 0
// tells every rank of each peer (MessageKind::Finalizing), so that a peer still waiting for a file this
// component will never define or open, or for an answer it will never send, fails at once instead of
// after DTF_TIMEOUT (a reader reading one file more than its writer writes).
void Runtime::tell_finalizing() {
    MPI_Request req;
    check_mpi(MPI_Ibarrier(world_, &req), "MPI_Ibarrier");
    int done = 0;
    wait([&] {
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test of dtf_finalize's barrier");
        return done != 0;
    }, [&] { return format("dtf_finalize: a barrier over %d ranks waited for the others", size_); },
         [] { return -1; }, 0, true);
    if (rank_ != 0) return;
    const std::string what = format("having closed %ld write and %ld read sessions on its rank 0",
                                    stats_.sessions_written, stats_.sessions_read);
    for (const auto &[comp, link] : peers_)
        if (!absent_.count(comp) && !told_lost_.count(link.name))
            notify(comp, Message{MessageKind::Finalizing, 0, 0, 0, self_name(),
                                 std::vector<char>(what.begin(), what.end())});
}

// dtf_finalize meets peer component `comp` (a barrier over the link), then drops the definitions of
// files other ranks read that it left here. Throws when it does not come.
void Runtime::meet(int comp, PeerLink &link) {
    if (auto it = unanswered_.find(comp); it != unanswered_.end())
        fail(DTF_ERR_PEER,
             "rank %d (%s): dtf_finalize did not wait for component '%s', which already failed "
             "to answer for DTF_TIMEOUT=%g s (%s)",
             rank_, self_name().c_str(), link.name.c_str(), settings_.timeout_s, it->second.c_str());
    // Progressing meanwhile: a peer may still be sending control messages that this rank has no use
    // for (e.g. FileDefined of a file it does not read), and a message above MPI's eager limit (4 KiB in
    // shared memory) is not delivered until it is received.
    MPI_Request req;
    check_mpi(MPI_Ibarrier(link.inter, &req), "MPI_Ibarrier");
    int done = 0;
    meeting_ = true;
    struct Unmeeting {
        bool &on;
        ~Unmeeting() { on = false; }
    } unmeeting{meeting_};
    wait_until([&] {
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test of dtf_finalize's barrier");
        return done != 0;
    }, [&] { return format("dtf_finalize waited for component '%s' to call dtf_finalize", link.name.c_str()); }, comp);
    progress();
    // The peer served every session it wrote before it came here, so every reader rank took its
    // FileDefined: those left are of sessions other ranks read, whose withdrawal no later FileDefined
    // brought.
    const size_t before = inbox_.size();
    inbox_.erase(std::remove_if(inbox_.begin(), inbox_.end(), [&](const Message &m) {
        return m.kind == MessageKind::FileDefined && m.from_component == comp;
    }), inbox_.end());
    stats_.definitions_dropped += static_cast<long>(before - inbox_.size());
}

// Collective over both components: a rank of either that gave up on the other (a timeout just before
// the barrier completed) does not come, and MPI cannot time out: the process ends after DTF_TIMEOUT.
void Runtime::disconnect(PeerLink &link) {
    auto disconnected = std::make_shared<std::atomic<bool>>(false);
    end_unless(settings_.timeout_s, [disconnected] { return disconnected->load(); },
               format("rank %d (%s): dtf_finalize: MPI_Comm_disconnect from component '%s' has not returned "
                      "(a rank of either component gave up waiting for the other earlier in dtf_finalize)",
                      rank_, self_name().c_str(), link.name.c_str()));
    MPI_Comm_disconnect(&link.inter);
    disconnected->store(true);
}

// Every control message has a use; one left over is a protocol leak (memory that grows per cycle).
void Runtime::count_leftovers() {
    stats_.unused_messages = static_cast<long>(unused_messages());
    stats_.path_records = static_cast<long>(path_records());
    for (const auto &m : inbox_)
        log::warn("dtf_finalize: a %s message about '%s' (session %d) from component '%s' was never used",
                  kind_name(m.kind), m.path.c_str(), m.session, config_.component_name(m.from_component).c_str());
}

// Best effort: every step runs even if an earlier one failed; the first error is thrown at the end.
// `orderly` (dtf_finalize): meet every peer in a bounded barrier, then disconnect. Otherwise (dtf_init
// failed half-way) only release local resources: the peers may be anywhere.
void Runtime::teardown(bool orderly) {
    std::unique_ptr<Error> first;
    auto attempt = [&](const std::function<void()> &step) {
        try {
            step();
        } catch (const Error &e) {
            if (!first) first = std::make_unique<Error>(e);
        }
    };
    stop_progress_thread();
    for (auto &p : parts_) attempt([&] { p->forget_open(*this); }); // dtf_finalize with files still open

    if (orderly) {
        // The files of persist=1 sessions not written yet; closed files whose readers are still being
        // served (progress thread) are served to the end.
        for (int i = kParts - 1; i >= 0; --i) attempt([&] { parts_[i]->finish(*this, "dtf_finalize"); });
        if (detached_error_ && !first) first = std::move(detached_error_);
        attempt([&] { deliver_sends(); });
        attempt([&] { tell_finalizing(); });
        // Disconnected only once every peer is met: progress() polls every link until then.
        std::vector<PeerLink *> synced_links;
        for (auto &[comp, link] : peers_) {
            bool synced = false;
            if (told_lost_.count(link.name)) { // the program was told, and went on without it
                log::warn("dtf_finalize: not meeting component '%s', which was lost (a call of this rank said so)",
                          link.name.c_str());
                parted(format("rank %d (%s): component '%s' was lost", rank_, self_name().c_str(), link.name.c_str()));
                continue;
            }
            attempt([&] {
                meet(comp, link);
                synced = true;
            });
            // Disconnecting from a peer that never arrived would block; MPI_Finalize may, too
            // (on_mpi_finalize then ends the process).
            if (synced) synced_links.push_back(&link);
            else parted(format("rank %d (%s): component '%s' did not come to dtf_finalize (lost, or stopped before it)",
                               rank_, self_name().c_str(), link.name.c_str()));
        }
        for (PeerLink *link : synced_links) disconnect(*link);
        count_leftovers();
        if (settings_.print_stats)
            attempt([&] { print_statistics(world_, self_name(), stats_, thread_note_, settings_.print_stats); });
    }
    drop_parts();
    groups_.finish();
    for (auto &[comp, link] : peers_)
        if (link.inter != MPI_COMM_NULL && !orderly) MPI_Comm_free(&link.inter);
    peers_.clear();
    if (world_ != MPI_COMM_NULL) MPI_Comm_free(&world_);
    trace::stop();
    if (first) throw *first;
}

} // namespace dtf::runtime
