// The runtime: the one object that holds dtf's state for this process between dtf_init and
// dtf_finalize (configuration, this component, the links to peer components, the files dtf handles).
// Everything reaches it through Runtime::instance(), inside an Entry (the runtime lock).
#pragma once

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/buffers.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "model/header.hpp"
#include "runtime/message.hpp"
#include "runtime/stats.hpp"
#include "transport/channel.hpp"
#include "transport/data_plane.hpp"
#include "transport/group.hpp"
#include "transport/mpi_channel.hpp"
#include "transport/mpi_util.hpp"
#include "transport/rendezvous.hpp"

namespace dtf::runtime {

class Runtime;

// What a reader's dtf_init error says when its writer went on without it (Runtime::connect_peers).
constexpr const char *kWentOnWithout = "went on without this component earlier in this run";

// The runtime lock, taken by every entry point (the dtf_* API and the PnetCDF dispatch) for the whole call,
// and released while the call waits (Runtime::wait_until), runs a collective or real PnetCDF
// (transport::Blocking scopes, whose hooks the runtime points at this lock), so that no thread ever blocks
// another for longer than a step that does not wait. It is not recursive: PnetCDF calls some of its own
// exported functions from inside others (ncmpi_open calls ncmpi_inq_file_format), and a dispatcher that sees
// such a nested call (Entry::nested()) passes it through to the real PnetCDF.
class Entry {
public:
    Entry();
    ~Entry();
    Entry(const Entry &) = delete;
    Entry &operator=(const Entry &) = delete;
    // True when the calling thread is already inside a dtf entry point, or is dtf's progress thread.
    static bool nested();
    // The runtime lock if the calling thread holds it through an Entry, else nullptr.
    static std::unique_lock<std::mutex> *held();
    // The lock itself, for the progress thread (which runs outside any entry point).
    static std::mutex &mutex();
    // How many entries application threads have made so far (the progress thread stands aside while
    // this grows: the program's own calls progress, and the lock is theirs).
    static uint64_t count();

private:
    std::unique_lock<std::mutex> lock_;
    Entry *outer_;
};


struct PeerLink {
    int component = -1;
    std::string name;
    MPI_Comm inter = MPI_COMM_NULL; // local group: this component; remote group: the peer component
    int remote_size = 0;
    std::unique_ptr<transport::Channel> channel; // over `inter`
    std::unique_ptr<transport::DataPlane> data;  // the data messages, over `channel`
    bool in_launch = false; // both components started by one MPMD launch (else connected by port)
};

// What this rank knows about one path: its own closed sessions and (file mode) the peers'.
// Transfer mode numbers a path's sessions from 1 in the order the components take part in them
// (each session has one writer and its readers): session = my_writes + my_reads + 1.
struct PathCounters {
    int my_writes = 0, my_reads = 0; // sessions this rank closed
    int peer_writes = 0;             // write sessions the other component (the writer) closed (from notices)
    std::map<int, int> peer_reads;   // read sessions each reader component closed (from notices)
    // Serial files: how many processes of each reader component closed each read session (the
    // notices of sessions read by one process, ClosedRead with epoch 1).
    std::map<int, std::map<int, int>> serial_reads;
    // Transfer mode: the header of the last session this rank closed (with its final record count),
    // which an ncmpi_open with NC_WRITE continues (vfile.cpp), and the component ranks that session was
    // read or written by (each of them closed it, and keeps the same header).
    std::shared_ptr<const model::Header> header;
    std::vector<int> header_ranks;
    // persist=1: the stamp of the session this rank read last (0: it wrote the last one), and the
    // sessions of the path their writer has written to the file (MessageKind::Persisted).
    int64_t read_stamp = 0;
    std::vector<int64_t> persisted;
    int64_t last_read = 0; // the stamp of the session this rank read last (a late HeaderFinal of it has no use)
    int closed() const { return my_writes + my_reads; }
};

// A layer above the core that keeps its state in the runtime (the front end's files, the writer
// sessions being served and the replay plans, the persist queue). Each such layer registers one kind
// (Runtime::register_part, at static initialization, in its slot: top first); every runtime makes one
// of each and drives them through these hooks, so that the core includes nothing above it.
class Part {
public:
    virtual ~Part() = default;
    // progress(): advance what goes on without a caller, without blocking; whether anything happened.
    virtual bool step(Runtime &) { return false; }
    // Whether step() has work now (the waits then look again sooner).
    virtual bool busy() const { return false; }
    // Whether a file of `path` is open here (then its record is kept: forget_finished, Persisted).
    virtual bool has_open(const std::string &) const { return false; }
    // Whether session `session` (0: any) of `path` is still being served here.
    virtual bool serves(const std::string &, int) const { return false; }
    // Whether this rank writes session `session` of `path` here: -1 not here, else whether no reader
    // component said yet that it opened it (1) or one did (0).
    virtual int writes_unopened(const std::string &, int) const { return -1; }
    // The session stamped `stamp` is in its file (MessageKind::Persisted).
    virtual void persisted(int64_t) {}
    // dtf_finalize, before anything else: what must end while the program's state is whole.
    virtual void finalizing(Runtime &) {}
    // Teardown, top first: the files still open are forgotten.
    virtual void forget_open(Runtime &) {}
    // The end of the run (dtf_finalize, finish_background), bottom first: the work left is done.
    virtual void finish(Runtime &, const char * /*who*/) {}
};

class Runtime {
public:
    Runtime(const Runtime &) = delete;
    Runtime &operator=(const Runtime &) = delete;
    // Collective over the component (MPI_COMM_WORLD: the program's own, or in an MPMD launch its
    // component's part, mpi/mpmd.hpp). Throws dtf::Error (agreed on all ranks).
    // `in_mpi_init`: the zero-change mode (mpi_init.cpp); a dtf_init of the same component later is
    // then a no-op.
    static void init(const char *config_path, const char *component_name, bool in_mpi_init = false);
    // A runtime of rank `rank` of the `size` ranks of component `self`, connected to the peer
    // components by `peers` (their channel and data plane set), without MPI: for unit tests of the
    // protocol over in-process channels (transport::LoopbackNet). Not the instance(); no progress
    // thread; every rank may run in its own thread (calls into it inside an Entry, as the dispatcher's).
    static std::unique_ptr<Runtime> in_process(config::Config config, config::Settings settings, int self, int rank,
                                               int size, std::map<int, PeerLink> peers);
    // Collective over the component. `in_mpi_finalize`: called from MPI_Finalize (the program did
    // not call dtf_finalize).
    static void finalize(bool in_mpi_finalize = false);
    // nullptr outside dtf_init .. dtf_finalize.
    static Runtime *instance();

    const config::Config &config() const { return config_; }
    const config::Settings &settings() const { return settings_; }
    int self() const { return self_; }
    const std::string &self_name() const { return config_.components[self_]; }
    int component_rank() const { return rank_; }
    // This component's communicator (a dup of MPI_COMM_WORLD, which in a single MPMD launch stands
    // for the component's part of it). Ranks "in the component" are ranks in it.
    MPI_Comm component_comm() const { return world_; }

    // Files (implemented in files.cpp).
    // What this rank knows about `path` (made on first use), or nullptr if nothing yet.
    PathCounters &counters(const std::string &path) { return counters_[path]; }
    const PathCounters *find_counters(const std::string &path) const {
        const auto it = counters_.find(path);
        return it == counters_.end() ? nullptr : &it->second;
    }
    size_t path_records() const { return counters_.size(); } // (see forget_finished)
    // Transfer mode: forget what this rank knows of `path` once its sessions there reach the rule's
    // num_sessions and none of them is open or still being served. By then no message about them can
    // come any more (each kind's last one was taken: see the reader's close), so the next session of
    // the path starts again at 1 on both sides, with nothing left over.
    void forget_finished(const std::string &path);
    // A number no other writer session of the run has (WriterSession::stamp).
    int64_t new_stamp() { return (int64_t{self_} << 48) | (int64_t{rank_} << 32) | ++stamps_; }
    // The tag of the data messages of the writer session stamped `stamp` (transport::data_tag);
    // `writer` is its writer component.
    transport::Tag data_tag(int writer, int64_t stamp) const;
    Stats &stats() { return stats_; }
    BufferPool &buffers() { return buffers_; }
    // Keep a receive buffer whose receive was cancelled (Channel::cancel) until dtf_finalize.
    void keep_until_finalize(std::vector<char> buffer) { orphans_.push_back(std::move(buffer)); }

    // Send a message to every rank of component `peer`, or to one of its ranks (non-blocking;
    // completed in progress()). `from_component` is filled in.
    void notify(int peer, Message message);
    void send(int peer, int remote_rank, Message message);
    // Withdrawals: a writer root's sessions whose FileDefined some ranks of reader component `peer`
    // (outside the reader group) will never use. They travel with the next FileDefined this rank
    // sends to that component (take_withdrawals); what is left then is dropped at dtf_finalize.
    void withdraw(int peer, const std::string &path, int session) { withdrawals_[peer].emplace_back(path, session); }
    std::vector<std::pair<std::string, int>> take_withdrawals(int peer);
    // Receive pending messages (file-mode notices update the path counters; the others are queued for
    // take()) and complete finished sends. Cheap when nothing is pending.
    // Returns whether anything happened (a message arrived, an operation or a session completed).
    bool progress();
    // Drop queued messages about sessions this rank has closed (call after closing one).
    void discard_closed_sessions();
    // Remove and return the first queued message for which match() holds, if any.
    std::optional<Message> take(const std::function<bool(const Message &)> &match);
    // The same message left in the queue (a look that takes nothing: probe.cpp); nullptr if none.
    const Message *peek(const std::function<bool(const Message &)> &match) const;
    // Control messages received and not taken yet (at dtf_finalize, each is a protocol leak).
    size_t unused_messages() const { return inbox_.size(); }
    // Wait (progress, backoff, DTF_TIMEOUT) for such a message from component `peer`.
    Message wait_message(const std::function<bool(const Message &)> &match, const std::function<std::string()> &what,
                         int peer);
    // A rank's newly registered file writes session `session` of `path`: if the other component
    // announced that it writes it too, the session is contested; then every wait of the writer for it
    // fails at once (check_contested throws DTF_ERR_PEER with what() and the reason) instead of timing out.
    void claim_session(const std::string &path, int session);
    void check_contested(const std::string &path, int session, const std::function<std::string()> &what) const;
    // fallback=: whether the writer session stamped `stamp` went to the file system instead of serving
    // this rank, and its file is written (MessageKind::FileWritten); the reader's waits look (session/reader.cpp).
    bool written(int64_t stamp) const { return written_.count(stamp) != 0; }
    // Why the writers failed the session stamped `stamp` (MessageKind::SessionFailed), or nullptr;
    // the reader's waits look too.
    const std::string *failed(int64_t stamp) const {
        const auto it = failed_.find(stamp);
        return it == failed_.end() ? nullptr : &it->second;
    }
    // The reader is done with the session stamped `stamp`: what written() and failed() said of it goes.
    void forget_outcome(int64_t stamp) {
        written_.erase(stamp);
        failed_.erase(stamp);
    }
    // Whether component `component` was lost (a call of this rank said so), failed to answer for
    // DTF_TIMEOUT or came to dtf_finalize: then no wait for it succeeds any more.
    bool lost(int component) const {
        return unanswered_.count(component) || absent_.count(component) || finalized_.count(component) ||
               told_lost_.count(config_.component_name(component));
    }
    // Whether this component went on without `component`, which did not connect (dtf_init): a reader
    // of its fallback= files, or (a reader that started late) their writer, which went on without it.
    bool absent(int component) const { return absent_.count(component) != 0; }
    // What identifies this run of the components (dtfrun's DTF_LOST_DIR; empty without dtfrun): marks
    // on the board from other runs are not this run's.
    const std::string &run_id() const { return settings_.lost_dir; }
    // The rendezvous board (made on first use, on any rank): DTF_GLOBAL_PATH's files or MPI's name service.
    transport::Board &board();
    // The board entry saying that the n-th session of `path` that component `writer` wrote for
    // `reader`, which it went on without, is in the file (its value: the run id).
    std::string disk_key(int writer, int reader, const std::string &path, int n) const;
    // Count one more session of (writer, reader, path) that went to the file system for an absent
    // reader (the writer's or I/O server's root), or was read there by one (the reader's ranks): its n.
    int next_disk_session(int writer, int reader, const std::string &path) {
        return ++disk_sessions_[{writer, reader, path}];
    }
    // Whether dtfrun reports component `component` lost (DTF_LOST_DIR); from then on it counts as
    // known lost (lost(), dtf_finalize does not wait for it). For a caller that goes on without it.
    bool gone(int component) const;
    const PeerLink &peer(int component) const;
    PeerLink &peer_link(int component);
    // The reader processes that read each version of a serial file (nc_create by one process), each
    // opening it alone: `configured` (FileRule::serial_readers), or, 0, every rank of `component`.
    int serial_readers(int configured, int component) const {
        return configured > 0 ? configured : peer(component).remote_size;
    }
    bool connected_to(int component) const { return peers_.count(component) != 0; }
    // Poll progress() with backoff until done() holds; throws DTF_ERR_TIMEOUT with what() after
    // DTF_TIMEOUT seconds. The runtime lock is released while it sleeps. `peer`: the component it
    // waits for, if it waits for one. Once a wait for a peer timed out, every later wait for it fails
    // at once (DTF_ERR_PEER, saying so), so that a lost peer costs one DTF_TIMEOUT, not one per call.
    void wait_until(const std::function<bool()> &done, const std::function<std::string()> &what, int peer = -1) {
        wait_until(done, what, [peer] { return peer; });
    }
    // The same, when which peer it waits for changes as it waits (e.g. the readers of a file: the one
    // not done yet): `peer()` is asked before and when the wait times out.
    // `timeout_s` > 0: a bound of its own instead of DTF_TIMEOUT (fallback=N: the peer is not marked
    // as one that failed to answer when it expires).
    void wait_until(const std::function<bool()> &done, const std::function<std::string()> &what,
                    const std::function<int()> &peer, double timeout_s = 0);
    // A wait with no deadline (the I/O server's for its next file): sleep about `seconds` without the
    // runtime lock (the caller looks for lost peers itself: gone()).
    void idle(double seconds) { pause(seconds); }
    // The group of an open by this component's ranks of `comm` (a communicator the program gave
    // PnetCDF; collective over it): a session on the communicator these ranks keep
    // (transport::KeptGroups), duplicated from `comm` at their first open (completed like the
    // collectives below).
    std::shared_ptr<transport::Group> group_of(MPI_Comm comm, const std::string &context);
    // dtf's own collectives over a group: they complete like any wait above (the progress thread
    // serves meanwhile, nothing spins in MPI), and a rank that never joins ends in DTF_ERR_TIMEOUT
    // "<context>: <call> over N ranks waited for the others" instead of a hang.
    void allreduce_max(transport::Group &group, int64_t *values, int n, const std::string &context); // in place
    void broadcast(transport::Group &group, int root, std::vector<char> *bytes, const std::string &context);
    void barrier(transport::Group &group, const std::string &context);
    // Run `fn` on every rank of `group`, then agree: if any rank failed, every rank throws the error
    // of the lowest failing rank (those that failed throw their own).
    void on_all(transport::Group &group, const std::function<void()> &fn, const std::string &context);

    // The progress thread: started by init when MPI provides MPI_THREAD_MULTIPLE (and
    // DTF_PROGRESS_THREAD is not 0); it calls progress() while the application computes.
    bool progress_thread_running() const { return thread_.joinable(); }
    // The end of the run: stop the progress thread, and let every part finish its work (Part::finish:
    // the files left to write are written, the writer sessions of closed files served to the end).
    void finish_background(const char *why);
    // A failure of the work of a closed file (a writer session served in the background): reported
    // now, and again by dtf_finalize.
    void report_detached(const Error &e);
    // The part of the layer P (P::kSlot).
    template <class P> P &part() { return static_cast<P &>(*parts_[P::kSlot]); }
    template <class P> const P &part() const { return static_cast<const P &>(*parts_[P::kSlot]); }
    static constexpr int kParts = 3;
    // A layer's part, made by `make` for every runtime; at static initialization (returns true).
    static bool register_part(int slot, std::unique_ptr<Part> (*make)());
    // The configuration and this component's name, for readers without the runtime lock (a thread of
    // MPI's own that looks at a file must never wait for dtf): published by init, withdrawn by
    // finalize (nullptr outside them).
    struct Published {
        config::Config config;
        std::string self;
    };
    static std::shared_ptr<const Published> published();

    ~Runtime();

private:
    Runtime();
    // The parts of the layers, top first (a file's writer session goes with the file).
    void drop_parts();
    void setup(const char *config_path, const char *component_name);
    void learn_node();
    void load_config(const char *config_path, const char *component_name);
    void connect_peers();
    void connect_in_launch(const std::vector<int> &peers);
    // dtf_init failed in one launch: the programs not met yet are told why (they wait for this one).
    void leave_launch(const std::string &why);
    // A connected peer component: its link over `inter` (owned from now on), checked by handshake().
    void add_peer(int component, MPI_Comm inter, bool acceptor, bool in_launch);
    void handshake(PeerLink &link, double timeout_s);
    void teardown(bool orderly);
    // Whether a part serves session `session` (0: any) of `path` / has work for progress() now.
    bool serves(const std::string &path, int session) const;
    bool busy() const;
    // Parts of an orderly teardown (dtf_finalize).
    void deliver_sends();
    void parted(const std::string &why);
    void meet(int component, PeerLink &link);
    void disconnect(PeerLink &link);
    void count_leftovers();
    void apply(Message &&m);
    bool session_closed(const Message &m) const;
    bool writes_unread_session(const std::string &path, int session) const;
    void contest(const Message &m);
    void apply_withdrawals(const Message &defined);
    void check_separate_launch(int ranks_away) const;
    void check_peer_alive(const std::string &peer, const std::function<std::string()> &what) const;
    // dtf_init waiting for `peer` to connect: a program of dtfrun's launch that ended before its dtf
    // said which component it runs (DTF_LOST_DIR/.unidentified.*) may have been it.
    void check_unidentified_lost(const std::string &peer, const std::function<std::string()> &what) const;
    // How dtfrun says component `peer` died (DTF_LOST_DIR), or nothing while it has not.
    std::string lost_report(const std::string &peer) const;
    void tell_finalizing();
    void check_peer_finalized(int peer, const std::function<std::string()> &what) const;
    void tell_launcher_name() const;
    void post(int peer, const std::vector<int> &ranks, Message &&message);
    void watch_mpi_finalize();
    void start_progress_thread();
    void stop_progress_thread();
    void progress_loop();
    // Sleep about `seconds` without the runtime lock (0: yield the core once).
    void pause(double seconds);
    static constexpr double kYieldWindow = 5e-3; // how long a wait looks again without sleeping (wait())
    // How long a wait for a peer that came to dtf_finalize goes on (messages its other ranks sent before
    // its rank 0 said so may still be on their way).
    static constexpr double kFinalizedGrace = 0.5;
    void complete(transport::Pending &op, const char *call, const transport::Group &group, const std::string &context);
    // wait_until; `collective`: a collective over this component's ranks (complete), paced for it.
    void wait(const std::function<bool()> &done, const std::function<std::string()> &what,
              const std::function<int()> &peer, double timeout_s, bool collective);

    config::Config config_;
    config::Settings settings_;
    std::string config_path_;
    int self_ = -1;
    int rank_ = 0, size_ = 1;
    MPI_Comm world_ = MPI_COMM_NULL;
    std::set<int> met_in_launch_; // (the application contexts whose handshake was made)
    std::map<int, PeerLink> peers_;
    std::map<std::string, PathCounters> counters_;
    uint32_t stamps_ = 0;
    int tag_ub_ = 32767; // MPI_TAG_UB
    bool crowded_ = false; // more ranks of this component on this node than cores (wait_until)
    int cores_ = 1;        // of this node
    int node_ranks_ = 1;   // ranks of this component and of the connected ones on this node
    std::deque<Message> inbox_;
    Stats stats_;
    BufferPool buffers_;
    std::vector<std::vector<char>> orphans_; // keep_until_finalize (destroyed after the queue below)
    // Every nonblocking MPI operation of this process (declared after the pool its sends return to).
    std::unique_ptr<transport::MpiQueue> queue_ = std::make_unique<transport::MpiQueue>(&buffers_);
    transport::KeptGroups groups_; // the communicators of the files' groups (group_of)
    std::unique_ptr<Part> parts_[kParts]; // by slot (part())
    std::thread thread_;
    std::condition_variable wake_;       // wakes the progress thread: stop, or no wait_until left
    int waiting_ = 0;                    // application threads in wait_until (the thread stands aside)
    std::atomic<bool> stop_{false};      // tells the progress thread to end
    std::string thread_note_ = "off";    // whether the progress thread runs, and why not (statistics)
    bool in_mpi_init_ = false;           // initialized inside MPI_Init (zero-change mode)
    std::unique_ptr<Error> background_error_; // a failure of progress() in the progress thread
    std::unique_ptr<Error> detached_error_;   // the first failure of a closed file's session
    std::map<int, std::string> unanswered_;   // peers a wait timed out for, and that wait (wait_until)
    // Peers all of whose ranks came to dtf_finalize (MessageKind::Finalizing): what they closed, and
    // when that was learned. A wait for one of them ends soon after (wait()), except dtf_finalize's own.
    struct Finalized {
        std::string what;
        double at;
    };
    std::map<int, Finalized> finalized_;
    bool meeting_ = false; // dtf_finalize is meeting a peer (meet)
    // Peers that never connected, which this component goes on without (Config::may_go_without):
    // why. Messages to them are dropped, and every wait for them fails at once.
    std::map<int, std::string> absent_;
    std::map<int, std::vector<std::pair<std::string, int>>> withdrawals_; // by reader component (withdraw())
    std::unique_ptr<transport::Board> board_; // board()
    std::map<std::tuple<int, int, std::string>, int> disk_sessions_;
    // Peers whose loss (DTF_LOST_DIR) a call of this rank has reported: dtf_finalize does not wait for
    // them, and does not fail for them again (an ensemble that goes on without a member).
    mutable std::set<std::string> told_lost_;
    // (path, session) -> why: sessions the other component writes too (contest)
    std::map<std::pair<std::string, int>, std::string> contested_;
    std::set<int64_t> written_; // session stamps: written()
    std::map<int64_t, std::string> failed_; // session stamps: failed()
};

} // namespace dtf::runtime
