// The session layer: one session of a served file between its writer component and its readers, by
// role: the writer's (WriterSession, served by progress() while the program goes on) and the
// reader's (ReaderSession), with replay (the plans) and fallback (the file instead). Both roles'
// state on this rank is a FileSession, which the front end's virtual file extends. The protocol is
// described once, in docs/ARCHITECTURE.md ("Transfer mode", with replay); message.hpp
// lists the control messages.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/buffers.hpp"
#include "common/bytes.hpp"
#include "common/counters.hpp"
#include "common/error.hpp"
#include "config/config.hpp"
#include "match/match.hpp"
#include "model/header.hpp"
#include "model/write_record.hpp"
#include "runtime/message.hpp"
#include "runtime/runtime.hpp"
#include "transport/channel.hpp"
#include "transport/group.hpp"
#include "types/convert.hpp"
#include "types/layout.hpp"

namespace dtf::runtime {

using model::WriteRecord;

// How many digit runs differ between two paths that are equal once their digit runs are wildcarded
// (plan_key); INT_MAX when they are not (session.cpp).
int name_distance(const std::string &a, const std::string &b);

// The replay plans of one role (replay_io=1), by plan_key(): one per line of files (e.g. per ensemble
// member when the names carry the member and the cycle, or per writer process of files one per
// process); find() picks the plan recorded from the most similar name, among those with the given peer
// ranks if they are known (Plan::peers(): the other side's ranks), which are indexed: a reader rank
// that reads thousands of members' files of one pattern a cycle finds each plan among its line's few.
// At most kPerKey per key (the oldest goes).
template <class Plan> class PlanShelf {
public:
    using Ptr = std::shared_ptr<const Plan>;
    static constexpr size_t kPerKey = 16384;
    // The plan recorded from the name nearest to `path` (fewest differing digit runs, ties: the newest)
    // and that distance (0: the same path), or nullptr.
    Ptr find(const std::string &key, const std::string &path, const std::vector<int> *peers, int *distance) const {
        auto it = shelves_.find(key);
        if (it == shelves_.end()) return nullptr;
        const std::map<uint64_t, Ptr> *candidates = &it->second.all;
        if (peers) {
            auto line = it->second.by_peers.find(*peers);
            if (line == it->second.by_peers.end()) return nullptr;
            candidates = &line->second;
        }
        Ptr best;
        int best_d = 0;
        for (const auto &[age, p] : *candidates) {
            const int d = name_distance(path, p->path);
            if (!best || d <= best_d) best = p, best_d = d;
        }
        if (distance) *distance = best_d;
        return best;
    }
    // Record `fresh` in place of the plan of the same path, or of `old` (the plan the session found)
    // if it has the same peers (the next file of that line), else beside them, as the newest. (In
    // place: of the same age, so that a line keeps its rank among ties of name distance.)
    void keep(const std::string &key, const Ptr &old, Ptr fresh) {
        Shelf &s = shelves_[key];
        Ptr replaced;
        auto same = s.by_path.find(fresh->path);
        if (same != s.by_path.end()) replaced = s.all.at(same->second);
        else if (s.holds(old) && old->peers() == fresh->peers()) replaced = old;
        else if (s.all.size() == kPerKey) s.remove(Ptr(s.all.begin()->second));
        const uint64_t age = replaced ? s.by_path.at(replaced->path) : s.next_age++;
        s.remove(replaced);
        s.add(std::move(fresh), age);
    }
    size_t count(const std::string &key) const {
        auto it = shelves_.find(key);
        return it == shelves_.end() ? 0 : it->second.all.size();
    }
    void drop(const std::string &key, const Ptr &old) {
        auto it = shelves_.find(key);
        if (it == shelves_.end()) return;
        it->second.remove(old);
        if (it->second.all.empty()) shelves_.erase(it);
    }

private:
    struct Shelf {
        uint64_t next_age = 0;
        std::map<uint64_t, Ptr> all;                                  // by age, oldest first
        std::map<std::string, uint64_t> by_path;                      // (one plan per path)
        std::map<std::vector<int>, std::map<uint64_t, Ptr>> by_peers; // by Plan::peers(), by age
        void add(Ptr p, uint64_t age) {
            by_path[p->path] = age;
            by_peers[p->peers()].emplace(age, p);
            all.emplace(age, std::move(p));
        }
        bool holds(const Ptr &p) const {
            auto it = p ? by_path.find(p->path) : by_path.end();
            return it != by_path.end() && all.at(it->second) == p;
        }
        void remove(const Ptr &p) { // (`p` is not one of the maps' own)
            if (!holds(p)) return;
            const uint64_t age = by_path.at(p->path);
            by_path.erase(p->path);
            all.erase(age);
            auto line = by_peers.find(p->peers());
            line->second.erase(age);
            if (line->second.empty()) by_peers.erase(line);
        }
    };
    std::map<std::string, Shelf> shelves_;
};



// One get: its regions (one box, or several for varn), each matched as its own read request, and
// one staging array holding all of them in order (part i starts at element offsets[i]).
struct ReadRecord {
    std::vector<match::ReadReq> parts;
    std::vector<int64_t> offsets;
    nc_type xtype = NC_NAT;  // the variable's type
    types::MemLayout layout; // where and how the user wants the values
    void *user_buf = nullptr;
    int status = NC_NOERR;      // outcome, reported at completion (e.g. NC_ERANGE)
    int format = 0;             // the file's format (conversion rules differ for CDF-1/2 bytes)
    std::vector<char> staging; // the parts' elements in the variable's type, filled from the pieces
    // Where the parts' elements go: the user's buffer itself when it holds them densely in the
    // variable's representation (no staging, no conversion), else staging.data() (then converted and
    // scattered). Elements no piece covers are zeroed there (zero_part), nothing else is pre-filled.
    char *dest = nullptr;
    bool direct = false;
    // A buffer the user's layout walks with strides (an MPI subarray type, a varm imap) in the variable's
    // representation: where data pieces cover the whole get and no fill touches it (`placed`, decided per
    // batch), each piece goes from the writer's message straight to its places, with no staging at all.
    types::StridedMap strided;
    bool placed = false;
    // Take the staging buffer if it is needed and not taken yet (a strided get takes it only when it
    // cannot be placed).
    void stage(BufferPool &pool) {
        if (direct || !staging.empty()) return;
        staging = pool.take(static_cast<size_t>(layout.nelems) * types::type_size(xtype));
        dest = staging.data();
    }
    // What an element no write covered reads as, per part: zeros (empty), or one element's value (a
    // netCDF-4 file's fill value, model/netcdf4_mark.h).
    std::vector<std::vector<char>> unwritten;
    // Part i's elements in the destination set as no write covered them yet: zeros, or `unwritten`.
    void zero_part(size_t i) {
        const size_t es = types::type_size(xtype), n = static_cast<size_t>(parts[i].box.size()) * es;
        if (n == 0) return; // (an empty get may have no buffer)
        char *p = dest + static_cast<size_t>(offsets[i]) * es;
        if (i < unwritten.size() && unwritten[i].size() == es)
            for (size_t k = 0; k < n; k += es) std::memcpy(p + k, unwritten[i].data(), es);
        else
            std::memset(p, 0, n);
        counters::copied(false, n);
    }
};

// Replay (replay_io=1): what one session's transfer looked like on this rank, so that the next
// session of the same path with the same requests skips the matching. Recorded by sessions that ran
// without replay and had one transfer epoch; dropped by both sides when a replayed session's pattern
// changed (the session after that matches again and records anew).
// Replay plans are kept per file pattern and ranks (plan_key): the same pattern in the next cycle
// finds the plan even when the file's name changes every cycle. A plan is identified by the session
// it was recorded in (path and session number), which both sides compare before replaying it.
std::string plan_key(const std::string &path, const std::vector<int> &ranks);

// A session replaying a plan of known readers (ReaderSide::assumed; the reader's FileDefined came to
// its leader alone): each data message of at most kVerdictMax bytes leaves once the writers agreed at
// dtf_transfer and ends with their verdict (kVerdictBytes: the final record count, whether the header
// changed since FileDefined), so that a reader that has one in the plan's first batch needs no final
// header: the data itself says the session was replayed. Larger messages leave as soon as their puts
// complete them (the readers receive them while the writers compute), and their readers, and those
// that get no data, get the final header from their own writer rank (WriterPlan::own_writers). 64 KiB
// move in about the time a control message takes (held back, 256 KiB cost a 16x16x20 LETKF cycle
// with a core per rank 0.42 -> 0.49-0.55 ms).
constexpr size_t kVerdictMax = 64 * 1024;
constexpr size_t kVerdictBytes = 16; // the record count (i64), whether the header changed, plan_check
inline bool carries_verdict(size_t bytes) { return bytes <= kVerdictMax; }
// In a replay, the data messages one writer rank sends one reader rank, in the plan's order, travel
// together while they add up to at most the link's bundle size (a bundle: one message, which carries
// the verdict at its end when it is at most kVerdictMax bytes): a program that gets one variable at a
// time (netCDF-C has no nonblocking gets) receives a message per writer for several of its gets, at
// the first of them, and the others' from dtf's buffer. Both sides hold the plan and group alike
// (bundle_heads, bundle_max): the writer its plan's orders when it records it, the reader its plan's
// batches (ReaderPlan::Batch::bundles). A bundle costs one more copy (a message alone is received
// straight into the get's buffer), a message what the transport makes it cost; the bundle size is:
// - kBundleMax between components of one launch (shared memory on a node: a message costs little):
//   small messages only, with the verdict at most 64 KiB, Open MPI's eager limit over TCP (bundles of
//   64 KiB and a verdict each waited for the receiver's handshake there);
// - kBundleMaxJobs between separately launched jobs (TCP here: each message above the eager limit
//   waits for a handshake with a writer rank that shares the cores): letkf_io's netCDF-4 cycle, two
//   jobs, default size, 84 -> 6 data messages, 27.3 -> 22.0 ms (PnetCDF's 18.5); one launch, bundles
//   that large made it slower, 18.0 -> 23.8 ms (medians of 3 and 4 runs). Bounded, so that a reader
//   holds at most that much of one writer's data before its gets take it.
constexpr size_t kBundleMax = kVerdictMax - kVerdictBytes;
constexpr size_t kBundleMaxJobs = size_t{16} << 20;
// For messages of `sizes` bytes, in order: the index of the first message of each one's bundle (its own
// where it begins one, or travels alone), bundles of at most `max` bytes.
std::vector<size_t> bundle_heads(const std::vector<size_t> &sizes, size_t max);
// The bundle size of replayed data messages over the link to component `peer`.
size_t bundle_max(Runtime &rt, int peer);
// 32 bits of a plan's stamp in the verdict: a reader that took the data by another plan than the
// writers' says so instead of keeping values laid out by the other.
inline int32_t plan_check(int64_t stamp) {
    return static_cast<int32_t>(static_cast<uint64_t>(stamp) ^ (static_cast<uint64_t>(stamp) >> 32));
}

// A hash of a list of ranks (ReaderDone names the reader group by it).
inline uint64_t ranks_hash(const std::vector<int> &ranks) {
    return fnv1a(std::string(reinterpret_cast<const char *>(ranks.data()), ranks.size() * sizeof(int)));
}

// The rank of a group that speaks for it to the other component (leader_of(path, size)), spread by
// the path over the group's ranks so that a rank that reads or writes many files does not speak for
// every one of them. A reader group's leader takes the FileDefined and gives it to the others (the
// writer of a session replaying a plan of known readers sends it there alone) and says ReaderOpened.
// In such a session of a file written at no rank's own time (WriterSession::quiet_end) the writer
// group has a leader too: it makes the stamp, sends the FileDefined and the final header, and takes
// the reader ranks' ReaderDone; else rank 0 does.
inline int leader_of(const std::string &path, int size) {
    return static_cast<int>(fnv1a(path) % static_cast<uint64_t>(size));
}

// The session a plan was recorded in, and how many sessions before the one that found it as its
// `since`-th (with num_sessions=1 every session of a path is number 1: this says which cycle), for
// messages.
template <class Plan> inline std::string origin(const Plan &plan, int since) {
    return format("session %d of '%s' (%d session%s before this one)", plan.session, plan.path.c_str(), since,
                  since == 1 ? "" : "s");
}

// A record-count agreement of the writer ranks (agree_records): the count they agreed on, and whether
// any of them got from the file in that call.
struct RecordAgreement {
    int64_t numrecs = 0;
    bool gets = false;
};

struct WriterPlan {
    int64_t stamp = 0;              // the writer session it was recorded in (WriterSession::stamp)
    std::string path;               // and that session's path and number (for messages)
    int session = 0;
    mutable int found = 0;          // sessions that found it since (under the runtime lock; for messages)
    // Its readers followed it in the last session that took it for a file of another name (a file
    // named after the cycle): the next such session takes them as its readers too (ReaderSide::assumed).
    mutable bool followed = false;
    std::vector<int> ranks;         // component ranks of the writer's file communicator
    std::vector<int> reader_ranks;  // component ranks of the reader's file communicator
    std::vector<match::WriteReq> writes;
    std::vector<match::WriteReq> group_writes; // matcher: its work group's writes (the replayed epoch's)
    std::vector<char> defined_header; // root: the header FileDefined carried (a session with the same one says so)
    // Every bput of the session took effect where its call predicted (the next collective call, in
    // the order of the requests: WriterSession::bputs_predicted): the sessions that replay it pack a
    // bput's values at the call (pack_ahead).
    mutable bool bputs_predicted = false; // (cleared by a replaying session whose bputs did not)
    // The record-count agreements before the first dtf_transfer, in order; once a session replayed the
    // plan (`repeated`), the next ones take those without gets from it instead of agreeing (agree_records).
    std::vector<RecordAgreement> agreements;
    mutable bool repeated = false;
    // The stamp of the next session that replays it for known readers (ReaderSide::assumed), reserved by
    // the leader of the last one and agreed in its numrecs allreduce: every writer rank knows it at the
    // create, so that each one defines the file to its own reader ranks and pushes data before dtf_transfer.
    // Taken once (0 then: no session takes the plan's readers as known until one replays it again).
    mutable int64_t next_stamp = 0;
    // Every reader rank with its own writer rank (a writer of its data in the plan's first batch, or
    // the leader; reader.cpp: own_writer) and whether it gets no verdict with its data (kVerdictMax):
    // (reader, writer, no verdict) triples, component ranks, flat. In a replay the writer rank takes the
    // reader rank's ReaderDone, and sends it the final header if it gets no verdict.
    std::vector<int> own_writers;
    struct Order {
        int reader;
        std::vector<match::Piece> pieces; // one data message to `reader`
    };
    std::vector<Order> orders; // in the order they were sent
    const std::vector<int> &peers() const { return reader_ranks; }
};

struct ReaderPlan {
    int64_t stamp = 0; // the writer session it was recorded in (WriterSession::stamp)
    std::string path;  // and that session's path and number (for messages)
    int session = 0;
    mutable int found = 0; // sessions that found it since (under the runtime lock; for messages)
    std::vector<int> writer_ranks;
    int64_t numrecs = 0; // the record count of that session's final header
    // The header its FileDefined carried, as the readers decoded it (read-only): a later FileDefined
    // that refers to it leaves the header out, and the open copies this one.
    std::shared_ptr<const model::Header> defined;
    struct Batch {
        std::vector<match::ReadReq> reads;
        std::vector<match::Piece> pieces; // from every matcher, writers as component ranks
        // In a replay (bundle_max): the writers whose message here begins a bundle, with the sizes of its
        // messages (this batch's first), and those whose message here came in an earlier batch's bundle.
        std::map<int, std::vector<size_t>> bundles;
        std::set<int> bundled;
    };
    std::vector<Batch> batches;
    int own_writer = -1; // the writer rank that takes this rank's ReaderDone in a replay (reader.cpp: own_writer)
    const std::vector<int> &peers() const { return writer_ranks; }
};

// A matcher's results of one single-epoch session: its work group's writes and, per request served,
// the reads and the pieces. The next session with the same plan_key reuses a result when its writes
// and a request's reads are equal to those (match() is a function of them), with or without replay.
struct MatchMemo {
    int64_t kept = 0; // Runtime::new_stamp() when it was kept: the oldest goes first
    std::vector<match::WriteReq> writes;
    std::vector<std::pair<std::vector<match::ReadReq>, std::vector<match::Piece>>> results;
};

// One reader component of a writer session (several for a writer=/readers= rule, each served on its own).
struct ReaderSide {
    int component = -1;
    std::vector<int> ranks;   // component ranks of its file communicator, once its root said (ReaderOpened)
    int64_t plan = 0;         // stamp of the replay plan its root holds (ReaderOpened)
    bool header_sent = false; // the epoch's final header went to its ranks
    size_t done = 0;          // its ranks done with the epoch (on a matcher; in a led epoch, those this rank feeds)
    // A session replaying a plan of known readers takes the plan's reader ranks as the readers at
    // once: both sides kept that plan when it was last read (a reader rank that dropped it said so,
    // and the writers dropped it too), so its readers open the file again holding it. They send no
    // ReaderOpened; each reader rank's ReaderDone names its reader ranks and plan, which its own writer
    // rank or the matcher checks.
    bool assumed = false;
    bool opened = false;      // its leader's ReaderOpened came (not for an assumed one)
    std::vector<int> serial_opened; // a serial file (WriterSession::serial): the processes that opened it so far
    bool known() const { return !ranks.empty(); }
};

// The writer side of one session: its writes, and the service of the transfer epoch being served
// (the writer's part of the protocol as a state machine: step() advances it and never blocks). While
// it serves it belongs to the runtime too, so it may outlive the file: with the progress thread,
// dtf_transfer and ncmpi_close return while the readers are still being served. It has its own
// communicator for that.
struct WriterSession {
    std::string path;
    int session = 0;
    // The reader components (one for a comp1/comp2 rule). A replayed session has one (replay_io=1
    // takes one reader): the replay code speaks of readers.front().
    std::vector<ReaderSide> readers;
    // A serial file (netCDF-C's nc_create: this writer process alone), whose reader processes each open
    // it alone: each sends its own ReaderOpened, and the reader group is their union once
    // serial_readers of them came (serial_readers=; 0: every rank of the reader component).
    bool serial = false;
    int serial_readers = 0;
    // Unique in the run (Runtime::new_stamp() of the root, agreed at the first dtf_transfer): names
    // the session's plan on both sides, since session numbers start again once a path is forgotten.
    int64_t stamp = 0;
    std::shared_ptr<transport::Group> group;   // the file's (FileSession::group); may outlive the file
    std::unique_ptr<transport::Channel> local; // over group: write metadata and orders
    int rank = 0, size = 1, workgroup = 1;     // workgroup: ranks per matcher (MAX_WORKGROUP_SIZE)
    std::vector<int> ranks;                    // component rank of each rank of group
    std::vector<WriteRecord> writes;           // write id = position + 1
    // The collective calls the program made on the file so far (the same count on every writer
    // rank): the seq of the writes that take effect now (match::WriteReq::seq).
    uint64_t seq = 0;
    bool first_put = false;          // a put was made (in data mode)
    uint64_t first_put_revision = 0; // the header's revision() then (writer_put, note_definition)
    bool defines_late = false;       // the readers get the definition at dtf_transfer or close (writer_put)
    // Gets of the writer on its own file (readback.cpp): the other ranks' writes it learned, how many
    // of its own it told them, and their messages not taken yet (by rank: each sends in order).
    std::vector<match::WriteReq> readback_writes;
    size_t readback_told = 0;
    std::map<int, std::deque<std::vector<char>>> readback_inbox;
    size_t writes_announced = 0;               // writes whose metadata went to the matcher
    std::vector<match::WriteReq> group_writes; // matcher: the writes of its work group
    int epoch = 0;                             // epochs (dtf_transfer calls) started

    // The epoch being served.
    bool serving = false;
    std::vector<size_t> elsize;       // bytes per element of each variable
    std::vector<char> final_header;   // root: the header with the final record count, for the readers
    // root: the header FileDefined carried; whether the final header is that one with perhaps
    // another count (then HeaderFinal carries only the count)
    std::vector<char> defined_header;
    uint64_t defined_revision = 0; // root: the header's revision() when it was encoded for FileDefined
    bool defined_to_all = true; // FileDefined went to every rank of the reader components (else to the readers' root)
    bool final_as_defined = false;
    bool header_changed = false;      // the header changed since FileDefined but for the record count (agreed)
    int64_t final_numrecs = 0;
    std::vector<int> own_writers_log; // matcher: WriterPlan::own_writers of this session (for a new plan)
    size_t own_readers = 0;           // the reader ranks whose own writer rank this is in the plan (led epochs)
    int meta_expected = 0;            // matcher: work group members whose metadata is still missing
    bool finished = false;            // the matcher said every reader rank of every reader is done
    bool ordered_self = false;        // matcher: it sent itself orders this epoch (its finish follows them)
    bool ordered_any = false;         // matcher: it sent orders this epoch
    // The end of a replayed epoch of a file written at no rank's own time (`quiet_end`: no persist=1,
    // no fallback=) is one collective over the writer ranks instead of the matcher's finish to each
    // rank of its work group (end_quietly): started by every rank once the epoch is due to end
    // (`finish_due`: past the close's collectives, or at the next dtf_transfer, which waits for it),
    // by a matcher once its readers are done (`matcher_done`).
    bool quiet_end = false;
    int leader = 0;           // the writer leader (leader_of; rank 0 but in a quiet replay of known readers)
    bool finish_due = false;
    bool matcher_done = false;
    bool quiet_done = false;                   // that collective completed
    std::unique_ptr<transport::Pending> finish_op;
    int64_t finish_result[2] = {0, 0};         // whether a reader left the plan, whether a matcher sent orders
    std::vector<transport::Ticket> sends;   // every send of the epoch (served once all are done)
    std::vector<transport::Ticket> pushed_sends; // replay: the data messages to the readers, among `sends`
    std::unique_ptr<Error> error;     // a failure while serving in the background

    // Replay.
    bool record = false;                     // replay_io=1: record this session's plan
    std::string plan_key;                    // where this session's plan is kept (plan_key())
    std::shared_ptr<const WriterPlan> plan;  // the plan found there, if any
    int plan_since = 0;                      // this session is the plan's plan_since-th since it was recorded
    bool plan_exact = false;                 // recorded from this very path (else: a similar name's)
    // matcher: the last session's results (memo), whether this session's writes equal its writes
    // (-1: not compared yet), and this session's results (for the next one)
    std::shared_ptr<const MatchMemo> memo;
    int memo_same = -1;
    std::shared_ptr<MatchMemo> memo_new;
    bool replay_candidate = false;           // every writer rank's writes equal the plan's (agreed)
    int replay = -1;                         // -1 undecided, 0 no, 1 the plan's data was pushed
    bool drop_plan = false;                  // a reader did not follow the replayed plan
    std::vector<WriterPlan::Order> orders_log; // data messages sent on request (for a new plan)
    bool closed = false;                     // the file was closed
    bool bputs_predicted = true;             // every bput so far took effect where its call predicted
    bool stamp_known = false;                // the root's stamp is known here (from ReaderOpened or the agreement)
    // The record-count agreements before the first dtf_transfer (for a new plan), and those taken from
    // the plan instead (agree_records): which one, the plan's count, this rank's own count then; the
    // largest count taken so, which the program sees where the header's own is smaller, and whether it
    // asked for it (checked in agree_numrecs).
    std::vector<RecordAgreement> agreements;
    struct Guess {
        size_t agreement;
        int64_t planned, own;
    };
    std::vector<Guess> guesses;
    bool guess_seen = false;
    int64_t guessed_numrecs = 0;
    int64_t next_stamp = 0; // WriterPlan::next_stamp of the plan this session keeps or records (agreed)
    // Replay at put time: while the puts are the plan's, only the pieces the plan says are read are
    // copied, straight into the plan's data messages (`pushed`, one per order); the rest of the
    // values are not kept. A put that differs after that makes the session fail at dtf_transfer.
    // A message is sent as soon as its pieces are complete, once the readers confirmed the plan,
    // without waiting for dtf_transfer (per reader in the plan's order: MPI matches by order).
    // Unconfirmed: the puts follow a plan of another file name that the readers have not named yet;
    // every value is kept until they do (then the session packs), or until a put differs (Full).
    enum class Packing { None, Unconfirmed, Packing, Full, Broken } packing = Packing::None;
    struct Target {
        size_t order, offset; // where in pushed[order]
        match::Box region;
    };
    std::vector<std::vector<Target>> targets; // by write position (0-based)
    std::vector<std::vector<char>> pushed;
    std::vector<size_t> missing;              // per order: pieces not packed yet
    std::vector<char> sent;                   // per order: the message was sent (in `pushed_sends`)
    double polled = 0;                        // Unconfirmed: when the last put asked (now_s())
    std::string broken;                       // what differed (Packing::Broken)
    bool borrows = false; // some writes refer to user memory (buffer_data=0): served before close returns
    // fallback=N: a wait for the readers ends after N seconds, to fall back (0 here: after DTF_TIMEOUT,
    // as with fallback="wait"). With fallback= the readers are served before dtf_transfer and close
    // return, even with the progress thread.
    double give_up_after = 0;

    BufferPool *pool = nullptr;       // where the writes' buffers go back to

    bool is_matcher() const { return rank % workgroup == 0; }
    // Whether some reader component's root said who reads (ReaderOpened).
    bool any_reader_known() const {
        return std::any_of(readers.begin(), readers.end(), [](const ReaderSide &r) { return r.known(); });
    }
    ~WriterSession();
};

// The receives of one batch of gets, posted (reader.cpp).
struct PostedBatch;

// The reader side of one session on this rank: the protocol's state (the writer's ranks and
// matchers, the headers it sent, the epochs said done), replay (the plan and how far it got) and
// fallback (the file the gets are read from instead).
struct ReaderSession {
    std::vector<int> writer_ranks; // component ranks of the writer's file communicator
    std::vector<int> matchers;     // component ranks (peer component) of the writer side's matchers
    int64_t writer_stamp = 0;      // the writer session's stamp (WriterSession::stamp)
    // the header FileDefined carried, decoded (read-only; HeaderFinal may refer to it)
    std::shared_ptr<const model::Header> defined;
    bool header_final = false;
    bool looked = false;           // a call of the program looked at the header (accept_final)
    std::string redefined;         // why the definition it looked at is not the file's (final_definition)
    bool redefined_told = false;   // a call of the program failed saying so
    bool definition_changed = false; // the writer's final header was another definition than FileDefined's
    int header_final_epoch = 0;    // epoch of the last final header taken
    uint64_t next_read_id = 1;     // ids of the read requests sent to matchers
    int batches = 0;
    bool done_sent = false; // ReaderDone sent for the current epoch
    // Each writer rank sent FileDefined to the reader ranks whose own writer rank it is: it replays a plan
    // of known readers, and takes this session's readers from it. Then no ReaderOpened goes out, and each
    // reader rank's ReaderDone of a session with one dtf_transfer goes at its close (`done_deferred`
    // until then), with whether it keeps the plan, its reader ranks and the plan it holds (which the
    // writer checks): to its own writer rank where the writer has a leader (quiet_writer), else to every
    // matcher.
    bool defined_by_own_writer = false;
    bool done_deferred = false;
    bool quiet_writer = false; // the writer has a leader (WriterSession::leader): defined_by_own_writer, quiet_end
    // fallback=: the writer wrote the session to the file system instead of sending it; this rank
    // reads its gets there (the file opened on MPI_COMM_SELF as file_ncid; reader.cpp)
    bool from_file = false;
    int file_ncid = -1;
    // replay
    std::string plan_key;                   // replay_io=1: where this session's plan is kept
    std::shared_ptr<const ReaderPlan> plan; // the plan found there, if any
    int plan_since = 0;                     // this session is the plan's plan_since-th since it was recorded
    int replay = -1;               // -1 not known yet, 0 no, 1 the writer pushed the plan's data
    size_t plan_batch = 0;         // next batch of the plan
    int64_t ahead_numrecs = -1;    // >= 0: gets on record variables were checked against the plan's
                                   // record count before the final header came (records_ahead):
    int64_t ahead_records_read = 0; // the records those gets reach (1 + the last record index)
    bool ahead_refused = false;     // one of them was refused
    std::shared_ptr<PostedBatch> ahead; // the plan's next batch, posted at the nonblocking get that
                                        // completed it (post_ahead), before the writers' final header
    // The plan's next batch, received into dtf's buffers before its gets came, since this rank needed
    // the writers' verdict first (kVerdictMax; e.g. the record count); its gets unpack it from there.
    std::shared_ptr<PostedBatch> prefetched;
    // A bundle that came (bundle_max), by writer: its message, where the next batch's part begins, and
    // the sizes of the parts later batches take from it, in order (given back once they took them all).
    struct Stash {
        std::vector<char> bytes;
        size_t at = 0;
        std::deque<size_t> parts;
    };
    std::map<int, Stash> stashed;
    bool fell_back = false;        // a batch differed from the plan (the rest was matched again)
    std::vector<ReaderPlan::Batch> batches_log; // this session's batches (for a new plan)
};

// One session of a served file on this rank, as the protocol sees it: which file and session, the
// ranks that have it open, its header, the gets not completed yet, and this rank's role: a writer
// session (`ws`) or a reader session (`reader`). The front end's virtual file is one
// (frontend/vfile.hpp), with what the program's calls need besides.
struct FileSession {
    std::string path;
    const config::FileRule *rule = nullptr;
    // The components this one exchanges the file with: the writer's readers (several for a
    // writer=/readers= rule), or the reader's writer. `peer` is the first (a reader's writer).
    std::vector<int> peers;
    int peer = -1;
    bool writer = false;
    std::shared_ptr<transport::Group> group; // over a dup of the user's communicator (shared with a writer's session)
    int rank = 0, size = 1;                  // in group
    std::vector<int> ranks;                  // component rank of each rank of group
    int session = 0; // 1-based session of this path (counted per writer component)
    // ncmpi_inq_put_size/_get_size: bytes this rank's puts and gets moved, in the variables' types
    // (with the header bytes PnetCDF's root writes at enddef, and reads at open: vfile.cpp).
    int64_t put_bytes = 0, get_bytes = 0;
    int epoch = 0;   // reader: dtf_transfer calls completed in this session
    model::Header header;
    // Variables defined before this session (an ncmpi_open with NC_WRITE continues the path's last
    // session; varids below this): in the file, what this session does not write of them keeps an
    // earlier session's values, which transfer mode does not keep. Reader: sent with FileDefined.
    int inherited = 0;
    // dtf_finalize ends the turn: the close does not wait until the readers are served (they may read
    // the files of the turns in another order: dtf_finalize serves them all at once afterwards).
    bool ending_turn = false;
    std::map<int, std::unique_ptr<ReadRecord>> pending; // nonblocking gets by request id

    // writer
    std::shared_ptr<WriterSession> ws;
    bool defined_sent = false; // FileDefined sent (first put, dtf_transfer or close: announce_definition)
    // fallback=: why this rank stopped serving the session's readers (they were lost or late); its
    // close then writes the file instead, with the other writer ranks (close_file)
    std::string gave_up;

    ReaderSession reader;
};

// The session layer's state in the runtime (Runtime::part): the writer sessions progress() steps,
// the replay plans of both roles and the matchers' memos.
struct Sessions : Part {
    static constexpr int kSlot = 1;
    // Writer sessions being served: stepped until their epoch is served (serve, forsake).
    std::vector<std::shared_ptr<WriterSession>> serving;
    // Writer sessions replaying a plan before their first dtf_transfer: their data messages leave as
    // they become complete and the readers confirm the plan (push_early).
    std::vector<std::shared_ptr<WriterSession>> early;
    // Replay plans by plan_key() (replay_io=1), one shelf per role.
    PlanShelf<WriterPlan> writer_plans;
    PlanShelf<ReaderPlan> reader_plans;
    // Matchers' results of the last session per plan_key; at most kMemos.
    static constexpr size_t kMemos = 256;
    std::map<std::string, std::shared_ptr<const MatchMemo>> match_memos;
    // Whether the last session of a file pattern (plan_key) written here changed its definition after
    // its first put: then the next one gives its readers the definition when it is final, at its
    // dtf_transfer or close, not at its first put (announce_definition; a pattern not written yet:
    // defines_late).
    std::map<std::string, bool> late_definitions;

    void serve(const std::shared_ptr<WriterSession> &ws);
    void start_early(const std::shared_ptr<WriterSession> &ws);
    // Neither (a session whose close failed: its readers are not served any more).
    void forsake(const std::shared_ptr<WriterSession> &ws);
    // The writer session of `path` numbered `session` (0: any) still being served here, or nullptr.
    const WriterSession *serving_session(const std::string &path, int session = 0) const;
    // Whether a session of that plan_key for which `which` holds is being served.
    bool serving_key(const std::string &plan_key, const std::function<bool(const WriterSession &)> &which) const;

    bool step(Runtime &rt) override;
    bool busy() const override { return !serving.empty() || !early.empty(); }
    bool serves(const std::string &path, int session) const override { return serving_session(path, session); }
    int writes_unopened(const std::string &path, int session) const override;
    // Serve the writer sessions of closed files to the end.
    void finish(Runtime &rt, const char *who) override;
};
inline Sessions &sessions(Runtime &rt) { return rt.part<Sessions>(); }

// A FileDefined's payload after its withdrawals (written by announce_definition).
struct Definition {
    int64_t writer_stamp = 0;
    bool to_all = false;     // every reader rank got a copy (else the leader alone)
    int64_t planned = 0;     // the header is that of the plan recorded in the session stamped so (0: sent)
    std::vector<char> header;
    std::vector<int> writer_ranks, matchers;
    int inherited = 0;
};
Definition read_definition(const std::vector<char> &payload);
// Whether `m` is the writer's definition (FileDefined) of session `session` of `path`, and the
// header it carries (empty when it names a replay plan's instead).
bool is_definition(const Message &m, const std::string &path, int session);
std::vector<char> defined_header(const Message &m);

// The fill value of `varid` in `h` (its _FillValue or the default), in the variable's type.
std::vector<char> fill_value(const model::Header &h, int varid);
// `fill` (one element) over the elements of `region` in a buffer laid out as `outer` (a superset).
inline void fill_region(const match::Box &outer, char *buf, const match::Box &region, const std::vector<char> &fill) {
    const size_t es = fill.size();
    counters::copied(false, static_cast<uint64_t>(region.size()) * es);
    match::for_each_run(outer, region, [&](int64_t off, int64_t step, int64_t, int64_t len) {
        char *at = buf + static_cast<size_t>(off) * es;
        if (step != 1 || len < 1) {
            for (int64_t k = 0; k < len; ++k) std::memcpy(at + static_cast<size_t>(k * step) * es, fill.data(), es);
            return;
        }
        // a contiguous run: one element, then the run doubled from itself
        std::memcpy(at, fill.data(), es);
        const size_t n = static_cast<size_t>(len) * es;
        for (size_t done = es; done < n; done *= 2) std::memcpy(at + done, at, std::min(done, n - done));
    });
}
// Writer: FileDefined to the readers, once (writer.cpp): at the first put (writer_put), so that the
// readers may post their gets while the writer writes, or at the first dtf_transfer or the close,
// when the definition is final, where the last session of the file's pattern changed its
// definition after its first put (Sessions::late_definitions; note_definition records that at the close),
// or, its first session, where the file is a netCDF-4 one its writer may define in data mode.
void announce_definition(Runtime &rt, FileSession &fs);
void writer_put(Runtime &rt, FileSession &fs);
void note_definition(Runtime &rt, const FileSession &fs);
// dtf_transfer on the session: the writer serves its readers the epoch (or, fallback=, gives them
// up); the reader completes its pending gets and says it is done with the epoch.
int session_transfer(Runtime &rt, FileSession &fs);
int writer_transfer(Runtime &rt, FileSession &fs); // (writer.cpp)
int reader_transfer(Runtime &rt, FileSession &fs); // (reader.cpp)
// Reader: a batch of gets, from the writers' data or the file (reader.cpp).
int read_batch(Runtime &rt, FileSession &fs, std::vector<ReadRecord *> &batch);
// A batch of gets whose values are in place (each in its destination, in the variable's type): the
// bytes counted (ncmpi_inq_get_size), the staged ones converted into the user's buffers; the first
// get's error (NC_ERANGE...), each get's in its status.
int finish_gets(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch);
// Writer: the gets of `batch` on the file this component writes (readback.cpp): every element as the
// session's writes so far left it (the last write wins, fills included; zeros where nothing was
// written), as PnetCDF reads the file. Collective over the session's ranks, each with its own gets (perhaps
// none); an independent get (`collective` false) only where the session has one rank.
int read_own(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch, bool collective);
// Writer: PnetCDF's agreement on the record count at a collective call (ncmpi_wait_all, a collective
// put of a record variable, ncmpi_sync, ncmpi_sync_numrecs, ncmpi_end_indep_data, ncmpi_fill_var_rec):
// every writer rank takes the largest count; `gets`: this rank gets from the file in the call. Returns
// whether any rank does. Before the first dtf_transfer of a session that replays a plan which repeated
// before, an agreement the plan made without gets is taken from it instead: no collective (a get there
// fails, since the other ranks do not join it); agree_numrecs checks the counts taken so, and fails
// the session if one was wrong and the program asked for it (inquiry_call: FileSession::ws->guess_seen).
bool agree_records(Runtime &rt, FileSession &fs, bool gets, const std::string &context);
// Reader: this rank's ReaderDone of transfer `epoch`, with whether it left the replayed plan (or
// drops it), to every matcher; of a replayed session (`replayed`) with its reader ranks and plan, to
// its own writer rank where the writer has a leader (quiet_writer).
void send_done(Runtime &rt, FileSession &fs, int epoch, bool left, bool replayed);
// Writer sessions (writer.cpp): open one for a new writer file; start serving an epoch (after the
// record count was agreed; the runtime steps it from then on); advance it without blocking (true
// once the epoch is served); what it waits for (for timeout messages); close: the last epoch is
// started if needed, returns whether it is still being served (then the runtime keeps it).
std::shared_ptr<WriterSession> open_writer_session(Runtime &rt, const FileSession &fs);
void start_epoch(Runtime &rt, const std::shared_ptr<WriterSession> &ws, const model::Header &header);
bool step(Runtime &rt, WriterSession &ws);
std::string waiting_for(Runtime &rt, const WriterSession &ws);
// The reader component a wait for the session waits for (the first one not done, as far as this rank knows).
int blocking_reader(const WriterSession &ws);
bool writer_close(Runtime &rt, FileSession &fs);
// fallback=: whether the failure `e` of a wait for the readers makes this writer rank give them up
// (then it stops serving them, and its close writes the file: FileSession::gave_up).
bool give_up_readers(Runtime &rt, FileSession &fs, const Error &e);
// Collective over the file's writer ranks: why the first of them that gave the readers up did so
// (then every rank has given them up), or nothing.
std::string agree_gave_up(Runtime &rt, FileSession &fs, const std::string &context);
// Collective over the writer ranks, once they agreed to give the readers up: each matcher takes the
// write metadata its work group sent when the epoch began (nothing else takes it now), so that no
// send is left pending.
void settle_given_up(Runtime &rt, WriterSession &ws);
// Replay at put time (writer.cpp): when `meta` is the plan's next write, copy the plan's pieces of
// it from `values` (its elements in the variable's type) into the data messages and return true.
bool pack_for_replay(Runtime &rt, FileSession &fs, const match::WriteReq &meta, const char *values);
// A bput at its call: `meta` is the write it will be if it takes effect where predicted (the next
// collective call completes it with the requests before it, in their order). When the session replays
// a plan its readers confirmed, whose bputs took effect so (WriterPlan::bputs_predicted), and `meta`
// is the plan's write there, copy the plan's pieces of it into the data messages at once and return
// true: the bput's values are then not kept (its wait must find it where predicted, or the session
// fails at dtf_transfer as for any put that leaves the plan). Else change nothing and return false.
bool pack_ahead(Runtime &rt, FileSession &fs, const match::WriteReq &meta, const char *values);
// Replay before the first dtf_transfer (Sessions::step): start packing once the readers confirm
// the plan, and send the data messages that are complete. Whether there may be more to do.
bool push_early(Runtime &rt, WriterSession &ws);
// Replay bookkeeping once a writer session is closed and served, or a reader session closes.
void end_writer_session(Runtime &rt, WriterSession &ws);
void end_reader_session(Runtime &rt, FileSession &fs);
// Reader: wait for the writer's final header (record count), which comes with its dtf_transfer.
// Once the writer wrote the session to the file instead (fallback=), the record count is the file's.
void wait_header_final(Runtime &rt, FileSession &fs);
// Reader, closing: wait for the final header of the last epoch (the writer root sends one per epoch,
// in order, so none arrives once the path is forgotten); then close the file the gets were read
// from, if the writer wrote it instead (fallback=).
void end_reading(Runtime &rt, FileSession &fs, bool wait);
// Reader, a get on a record variable: whether it can be checked now, before the final header,
// against the record count of the plan the writers may replay (then the header has that count until
// the final one comes, which must agree). Else the get waits for the final header.
bool records_ahead(FileSession &fs);
// Reader, after a nonblocking get: when the pending gets are the replayed plan's next batch, post
// its receives now, so that the data the writers send ahead lands while the program goes on.
void post_ahead(Runtime &rt, FileSession &fs);
// Reader: the batch posted ahead will not be completed as it is (ncmpi_cancel, a wait for other
// requests, ncmpi_abort): finish or cancel its receives so that none is left posted.
void settle_ahead(Runtime &rt, FileSession &fs);
// Whether the batch posted ahead has any of the nonblocking requests `ids`.
bool ahead_includes(const FileSession &fs, const std::vector<int> &ids);
// ncmpi_abort, or a close that leaves them unused: cancel the receives of the batch posted ahead or
// prefetched, without waiting.
void drop_ahead(Runtime &rt, FileSession &fs);

} // namespace dtf::runtime
