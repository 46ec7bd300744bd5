// The reader's side of a session: the writer's definition and final header taken, batches of gets
// (matched, or replayed from the plan and posted ahead of the final header), and fallback='s reads
// from the file the writer wrote instead. The protocol is described in docs/ARCHITECTURE.md.
#include <pnetcdf.h>

#include <algorithm>
#include <functional>
#include <numeric>

#include "common/counters.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "pnc/hook.h"
#include "pnc/real.hpp"
#include "match/wire.hpp"
#include "runtime/runtime.hpp"
#include "session/session.hpp"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using pnc::call_real;

using transport::Tag;
using transport::Ticket;

namespace {

auto for_file(const FileSession &fs, MessageKind kind, int epoch = -1) {
    return [&fs, kind, epoch](const Message &m) {
        return m.kind == kind && m.path == fs.path && m.session == fs.session && (epoch < 0 || m.epoch == epoch);
    };
}

// The writer's final header of this session (of its epoch `epoch`, or of any): it names the writer
// session by its stamp, since it may come before this rank opened the session, while the one before
// it of the same path and number is still open here (num_sessions: a path's numbers start again).
auto header_final_of(const FileSession &fs, int epoch = -1) {
    return [&fs, epoch, other = for_file(fs, MessageKind::HeaderFinal, epoch)](const Message &m) {
        return other(m) && header_final_stamp(m) == fs.reader.writer_stamp;
    };
}

} // namespace

namespace {

// fallback=: the writer wrote the session to the file system instead of serving this rank (its root
// said so: Runtime::written). Thrown out of the reader's waits; then this rank reads the session's
// gets from the file (switch_to_file), on its own: the writer's ranks went on, nothing is agreed.
struct WentToFile : Error {
    using Error::Error;
};

// Also the end of every reader wait when the writers failed the session (MessageKind::SessionFailed).
void check_written(Runtime &rt, const FileSession &fs) {
    if (fs.reader.from_file || rt.written(fs.reader.writer_stamp))
        throw WentToFile(DTF_ERR_PEER,
                         format("component '%s' wrote '%s' (session %d) to the file system instead (fallback=)",
                                rt.config().component_name(fs.peer).c_str(), fs.path.c_str(), fs.session));
    if (const std::string *why = rt.failed(fs.reader.writer_stamp))
        fail(DTF_ERR_PEER, "reading '%s' (session %d): component '%s' failed the session: %s", fs.path.c_str(),
             fs.session, rt.config().component_name(fs.peer).c_str(), why->c_str());
}

// A reader's wait for a message of its session's writer: WentToFile once the writer wrote the session
// to the file instead.
Message wait_writer(Runtime &rt, const FileSession &fs, const std::function<bool(const Message &)> &match,
                    const std::function<std::string()> &what) {
    std::optional<Message> found;
    rt.wait_until([&] {
        check_written(rt, fs);
        return (found = rt.take(match)).has_value();
    }, what, fs.peer);
    return std::move(*found);
}

// Read the session from the file its writer wrote: every rank opens it on its own (MPI_COMM_SELF),
// takes the record count from it, and reads its gets there from now on (read_batch).
void switch_to_file(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    if (rd.from_file) return;
    const std::string writer = rt.config().component_name(fs.peer);
    auto check = [&](int rc, const char *call) {
        if (rc != NC_NOERR)
            fail(rc, "reading '%s' (session %d) from the file system, where component '%s' wrote it (fallback=): "
                 "%s failed: %s", fs.path.c_str(), fs.session, writer.c_str(), call, ncmpi_strerror(rc));
    };
    int ncid = -1;
    check(call_real<int (*)(MPI_Comm, const char *, int, MPI_Info, int *)>(
              DTF_FN_ncmpi_open, MPI_COMM_SELF, fs.path.c_str(), NC_NOWRITE, MPI_INFO_NULL, &ncid),
          "ncmpi_open");
    rd.from_file = true;
    rd.file_ncid = ncid;
    const int unlimited = fs.header.unlimdimid();
    if (unlimited >= 0) {
        MPI_Offset numrecs = 0;
        check(call_real<int (*)(int, int, MPI_Offset *)>(DTF_FN_ncmpi_inq_dimlen, ncid, unlimited, &numrecs),
              "ncmpi_inq_dimlen");
        fs.header.set_numrecs(numrecs);
    }
    rd.header_final = true;
    rd.replay = 0;
    rt.forget_outcome(rd.writer_stamp);
    (fs.rank == 0 ? log::notice : log::info)("reading '%s' (session %d) from the file system: component '%s' wrote it "
                                            "there instead of sending it (fallback=)", fs.path.c_str(), fs.session,
                                            writer.c_str());
}

// The gets of `batch` from the file (switch_to_file): into each get's destination, in the variable's
// type, as the writers' data would have come.
void read_from_file(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch) {
    for (auto *r : batch) {
        const size_t es = types::type_size(r->xtype);
        r->placed = false;
        r->stage(rt.buffers()); // (a failed wait kept the first staging: keep_buffers)
        for (size_t i = 0; i < r->parts.size(); ++i) {
            const match::Box &b = r->parts[i].box;
            if (b.empty()) continue;
            const std::vector<MPI_Offset> start(b.start.begin(), b.start.end()), count(b.count.begin(), b.count.end()),
                stride(b.stride.begin(), b.stride.end());
            const int rc = call_real<int (*)(int, int, const MPI_Offset *, const MPI_Offset *, const MPI_Offset *,
                                             void *, MPI_Offset, MPI_Datatype)>(
                DTF_FN_ncmpi_get_vars_all, fs.reader.file_ncid, r->parts[i].varid, start.data(), count.data(),
                stride.data(),
                static_cast<void *>(r->dest + static_cast<size_t>(r->offsets[i]) * es),
                static_cast<MPI_Offset>(b.size()), types::mpi_type(r->xtype));
            if (rc != NC_NOERR)
                fail(rc,
                     "reading '%s' (session %d) from the file system (fallback=): ncmpi_get_vars_all of variable '%s' "
                     "%s failed: %s",
                     fs.path.c_str(), fs.session, fs.header.vars()[static_cast<size_t>(r->parts[i].varid)].name.c_str(),
                     b.to_string().c_str(), ncmpi_strerror(rc));
        }
    }
}

} // namespace

namespace {

// A final header the writer sent (the definition changed since FileDefined), decoded. If this rank
// has looked at the definition it had, what it saw is not the file's: its calls fail saying so from
// now on (ReaderSession::redefined; the one that learned it once it is done, the close once the file
// is closed); it has the final one otherwise (never a mix).
model::Header final_definition(Runtime &rt, FileSession &fs, const std::vector<char> &sent) {
    ReaderSession &rd = fs.reader;
    model::Header final;
    if (model::Header::decode(sent.data(), sent.size(), &final) != NC_NOERR)
        fail(DTF_ERR_PEER, "malformed header of '%s' from component %d", fs.path.c_str(), fs.peer);
    rd.definition_changed = true;
    const std::string change = rd.looked ? fs.header.difference(final) : std::string();
    if (!change.empty() && rd.redefined.empty())
        rd.redefined = format("'%s' (session %d): component '%s' changed the definition of the file after this rank "
                              "had opened it and looked at it (%s): dtf gives the readers the definition at the "
                              "writer's first put; the next session of this file pattern gives it at the writer's "
                              "dtf_transfer or close instead", fs.path.c_str(), fs.session,
                              rt.config().component_name(fs.peer).c_str(), change.c_str());
    return final;
}

} // namespace

void end_reading(Runtime &rt, FileSession &fs, bool wait) {
    ReaderSession &rd = fs.reader;
    bool written = rd.from_file;
    if (wait && !rd.from_file && rd.header_final_epoch < fs.epoch) {
        try {
            const Message m = wait_writer(rt, fs, header_final_of(fs, fs.epoch), [&] {
                return format(
                    "closing '%s' (session %d) waited for the final header of transfer %d from component '%s' "
                    "(it comes with its dtf_transfer)",
                    fs.path.c_str(), fs.session, fs.epoch, rt.config().component_name(fs.peer).c_str());
            });
            // (what it says about the definition, should this rank have looked at another)
            PayloadReader r(m.payload, "header-final");
            r.i64(), r.i64(), r.i32(), r.str();
            if (r.i32() != 0) final_definition(rt, fs, r.bytes());
        } catch (const WentToFile &) { // nothing more to come
            written = true;
        }
    }
    if (written) // what the writer sent before it gave up (its root's final header came before its FileWritten)
        while (rt.take(header_final_of(fs)) || rt.take(for_file(fs, MessageKind::ReadPlan))) {
        }
    rt.forget_outcome(rd.writer_stamp);
    if (rd.file_ncid < 0) return;
    call_real<int (*)(int)>(DTF_FN_ncmpi_close, rd.file_ncid); // (read only: nothing to lose)
    rd.file_ncid = -1;
}

// The plan the writers may replay to this rank, before their final header says whether they do.
static const ReaderPlan *undecided_plan(const FileSession &fs) {
    const ReaderSession &rd = fs.reader;
    if (!fs.rule->replay_io || fs.epoch != 0 || rd.replay >= 0 || rd.header_final || !rd.plan ||
        rd.plan->writer_ranks != rd.writer_ranks)
        return nullptr;
    return rd.plan.get();
}

bool records_ahead(FileSession &fs) {
    if (fs.reader.ahead_numrecs >= 0) return true;
    const ReaderPlan *plan = undecided_plan(fs);
    if (!plan) return false;
    fs.reader.ahead_numrecs = plan->numrecs;
    fs.header.set_numrecs(plan->numrecs);
    return true;
}

namespace {

// Wait for the data receives `recvs`. If the wait fails (a timeout, a lost peer), they are
// cancelled and `give_up` hands their buffers to the runtime: MPI may still fill a receive it had
// begun, so the buffer must outlive the call (and then any reuse by the next session's messages).
void wait_receives(Runtime &rt, const FileSession &fs, transport::Channel &channel, const std::vector<Ticket> &recvs,
                   const std::function<void()> &give_up, const std::function<std::string()> &what) {
    try {
        rt.wait_until([&] {
            check_written(rt, fs);
            return channel.done(recvs);
        }, what, fs.peer);
    } catch (...) {
        channel.cancel(recvs);
        give_up();
        throw;
    }
}

// Bytes of the data message each writer sends for `pieces` (in the variables' types).
std::map<int, size_t> message_sizes(const FileSession &fs, const std::vector<match::Piece> &pieces) {
    std::map<int, size_t> bytes;
    for (const auto &p : pieces)
        if (!p.fill)
            bytes[p.writer] += static_cast<size_t>(p.region.size()) *
                               types::type_size(fs.header.vars()[static_cast<size_t>(p.varid)].type);
    return bytes;
}

// Whether a replayed data message of `n` bytes ends with the writers' verdict (kVerdictMax): in a
// session each reader rank's own writer rank defined.
bool with_verdict(const FileSession &fs, size_t n) { return fs.reader.defined_by_own_writer && carries_verdict(n); }

// Each writer's data messages to this rank in `batches`, in order: (batch, bytes), with the index of the
// first message of each one's bundle in a replay (bundle_heads; the writers group their orders alike:
// writer.cpp bundle_orders).
struct WriterMessages {
    std::vector<std::pair<size_t, size_t>> list;
    std::vector<size_t> heads;
};
std::map<int, WriterMessages> writer_messages(Runtime &rt, const FileSession &fs,
                                              const std::vector<ReaderPlan::Batch> &batches) {
    std::map<int, WriterMessages> of_writer;
    for (size_t b = 0; b < batches.size(); ++b)
        for (const auto &[writer, n] : message_sizes(fs, batches[b].pieces)) of_writer[writer].list.emplace_back(b, n);
    for (auto &[writer, m] : of_writer) {
        std::vector<size_t> sizes;
        for (const auto &one : m.list) sizes.push_back(one.second);
        m.heads = bundle_heads(sizes, bundle_max(rt, fs.peer));
    }
    return of_writer;
}

// A plan being recorded: mark in its batches the bundles the writers will send its data messages in, in
// a replay.
void mark_bundles(Runtime &rt, const FileSession &fs, std::vector<ReaderPlan::Batch> &batches) {
    for (const auto &[writer, m] : writer_messages(rt, fs, batches)) {
        const auto &[list, heads] = m;
        for (size_t i = 0; i < list.size(); ++i) {
            if (heads[i] == i) continue;
            batches[list[i].first].bundled.insert(writer);
            std::vector<size_t> &bundle = batches[list[heads[i]].first].bundles[writer];
            if (bundle.empty()) bundle.push_back(list[heads[i]].second);
            bundle.push_back(list[i].second);
        }
    }
}

// The sizes of the messages of the bundle writer `writer`'s message begins in a batch of the replayed
// plan (`planned`), or nullptr.
const std::vector<size_t> *bundle_of(const ReaderPlan::Batch *planned, int writer) {
    if (!planned) return nullptr;
    auto it = planned->bundles.find(writer);
    return it == planned->bundles.end() ? nullptr : &it->second;
}

// The bytes of writer `writer`'s message in a batch where its pieces have `n`: its bundle's where it
// begins one there.
size_t bundle_bytes(const ReaderPlan::Batch *planned, int writer, size_t n) {
    const std::vector<size_t> *sizes = bundle_of(planned, writer);
    return sizes ? std::accumulate(sizes->begin(), sizes->end(), size_t{0}) : n;
}

// The messages that come in a batch of the replayed plan, by writer, with their bytes (a bundle's where
// one begins there): none from a writer whose data for it comes in an earlier batch's bundle.
std::map<int, size_t> arriving(const FileSession &fs, const ReaderPlan::Batch &batch) {
    std::map<int, size_t> sizes;
    for (const auto &[writer, n] : message_sizes(fs, batch.pieces))
        if (!batch.bundled.count(writer)) sizes[writer] = bundle_bytes(&batch, writer, n);
    return sizes;
}

// The writer rank this rank hears from in a replay of the session being recorded: one of the writers of
// its data in the plan's first batch, picked by the path (so that the reader ranks of a file fed by the
// same writers are spread over them), or, with no data, the writer leader. It sends this rank the final
// header when no data message brings the writers' verdict (`verdict`: the message, a bundle's, that one
// of them begins in the first batch does, carries_verdict), and takes its ReaderDone of the replayed
// session. Its ReaderDone says both when the plan is recorded.
struct OwnWriter {
    int rank;
    bool verdict;
};
OwnWriter own_writer(Runtime &rt, const FileSession &fs) {
    std::map<int, size_t> sizes; // the writers of the first batch, with the bytes of the bundle each begins there
    for (const auto &[writer, m] : writer_messages(rt, fs, fs.reader.batches_log)) {
        if (m.list.front().first != 0) continue;
        size_t &n = sizes[writer];
        for (size_t i = 0; i < m.list.size() && m.heads[i] == 0; ++i) n += m.list[i].second;
    }
    const bool verdict = std::any_of(sizes.begin(), sizes.end(), [](auto &w) { return carries_verdict(w.second); });
    if (!sizes.empty())
        return {std::next(sizes.begin(), leader_of(fs.path, static_cast<int>(sizes.size())))->first, verdict};
    const bool led = !fs.rule->persist && !fs.rule->falls_back(); // (WriterSession::leader)
    const auto &writers = fs.reader.writer_ranks;
    return {writers[static_cast<size_t>(led ? leader_of(fs.path, static_cast<int>(writers.size())) : 0)], false};
}

} // namespace

struct PostedBatch {
    struct Part {
        ReadRecord *record;
        size_t index;
    };
    std::vector<ReadRecord *> records; // posted ahead: the gets, in batch order
    std::vector<match::Piece> pieces;
    const ReaderPlan::Batch *planned = nullptr; // the batch of the replayed plan it is (else matched)
    std::map<uint64_t, Part> by_id;
    std::map<int, std::vector<const match::Piece *>> by_writer; // into `pieces`, the data pieces
    // Pieces that overlap (ordered): each writer's message, received whole (`data`), and every piece
    // applied in the order the writes took effect (apply_messages); else each message lands in place,
    // except that those with pieces of a placed get are received whole too and applied as they are.
    bool ordered = false;
    std::map<int, std::vector<char>> data;
    // The messages of writers whose data for this batch came in an earlier batch's bundle: where it is
    // in ReaderSession::stashed.
    std::map<int, const char *> stashed;
    std::vector<Ticket> recvs;
    std::vector<Part> uncovered; // parts some of whose elements no piece covers
    // The writers' verdict at the end of the messages that carry one (with_verdict), by writer, with
    // the receive that brings it: into a buffer of its own, or (none) at the end of the writer's message
    // received whole into `data`.
    std::map<int, std::pair<Ticket, std::vector<char>>> verdicts;
    const char *verdict_at(int writer) const {
        const std::vector<char> &own = verdicts.at(writer).second;
        return own.empty() ? data.at(writer).data() + data.at(writer).size() - kVerdictBytes : own.data();
    }
};

namespace {

// Receive writer `writer`'s message of `n` bytes (with the writers' verdict at its end: `verdict`) whole
// into a buffer of dtf's (`posted.data`), as one span, so that MPI receives it in place.
void fetch_whole(Runtime &rt, const FileSession &fs, PostedBatch &posted, int writer, size_t n, bool verdict,
                 const char *what) {
    std::vector<char> &buf = posted.data[writer];
    buf = rt.buffers().take(n + (verdict ? kVerdictBytes : 0));
    posted.recvs.push_back(rt.peer_link(fs.peer).data->fetch(writer, rt.data_tag(fs.peer, fs.reader.writer_stamp),
                                                              {{buf.data(), buf.size()}}, what));
    if (verdict) posted.verdicts[writer].first = posted.recvs.back();
}

// A batch whose messages came and were applied: its buffers given back, but the bundles that begin
// in it (a batch of the replayed plan), which are kept for the later batches they bring data for
// (ReaderSession::stashed); a bundle those took all of is given back.
void keep_bundles(Runtime &rt, FileSession &fs, PostedBatch &posted) {
    auto &stashed = fs.reader.stashed;
    for (auto &[writer, buf] : posted.data) {
        const std::vector<size_t> *sizes = bundle_of(posted.planned, writer);
        if (!sizes) {
            rt.buffers().give(std::move(buf));
            continue;
        }
        ReaderSession::Stash &stash = stashed[writer];
        stash.bytes = std::move(buf);
        stash.at = sizes->front();
        stash.parts.assign(sizes->begin() + 1, sizes->end());
    }
    for (const auto &[writer, at] : posted.stashed) {
        auto it = stashed.find(writer);
        if (it == stashed.end() || !it->second.parts.empty()) continue;
        rt.buffers().give(std::move(it->second.bytes));
        stashed.erase(it);
    }
}

// The writers' verdict of a batch of the replayed plan, once one of its messages that carry one came:
// the final record count and whether the header changed (then the final header comes too).
struct Verdict {
    int64_t numrecs;
    bool header_changed;
};
std::optional<Verdict> verdict_of(Runtime &rt, const FileSession &fs, const PostedBatch &posted) {
    const ReaderSession &rd = fs.reader;
    transport::Channel &channel = *rt.peer_link(fs.peer).channel;
    for (const auto &[writer, v] : posted.verdicts)
        if (channel.done(v.first)) {
            ByteReader r(posted.verdict_at(writer), kVerdictBytes);
            int64_t numrecs = 0;
            int32_t changed = 0, plan = 0;
            if (!r.i64(&numrecs) || !r.i32(&changed) || !r.i32(&plan) || numrecs < 0)
                fail(DTF_ERR_PEER, "'%s' (session %d): malformed verdict from writer rank %d", fs.path.c_str(),
                     fs.session, writer);
            if (plan != plan_check(rd.plan->stamp))
                fail(DTF_ERR_PEER, "'%s' (session %d): component '%s' replays another transfer pattern than %s, which "
                     "this rank holds and received the data by; set replay_io=0 for this file", fs.path.c_str(),
                     fs.session, rt.config().component_name(fs.peer).c_str(),
                     origin(*rd.plan, rd.plan_since).c_str());
            return Verdict{numrecs, changed != 0};
        }
    return std::nullopt;
}

// The plan's next batch, received into dtf's buffers before its gets came, because this rank needed
// the writers' verdict before (its record count, say): each writer's message whole, and its verdict.
// None if no message of that batch carries a verdict.
std::shared_ptr<PostedBatch> prefetch(Runtime &rt, FileSession &fs, const ReaderPlan &plan) {
    ReaderSession &rd = fs.reader;
    if (rd.plan_batch >= plan.batches.size()) return nullptr;
    const std::map<int, size_t> sizes = arriving(fs, plan.batches[rd.plan_batch]);
    if (std::none_of(sizes.begin(), sizes.end(), [&](const auto &w) { return with_verdict(fs, w.second); }))
        return nullptr;
    auto pre = std::make_shared<PostedBatch>();
    for (const auto &[writer, n] : sizes)
        fetch_whole(rt, fs, *pre, writer, n, with_verdict(fs, n), "receiving replayed data");
    return pre;
}

// Cancel the receives of a batch posted ahead or prefetched that will not be used; MPI may still fill
// one it had begun, so its buffers stay allocated until dtf_finalize.
void drop_posted(Runtime &rt, FileSession &fs, std::shared_ptr<PostedBatch> &posted) {
    if (!posted) return;
    rt.peer_link(fs.peer).channel->cancel(posted->recvs);
    for (auto &[writer, buf] : posted->data) rt.keep_until_finalize(std::move(buf));
    for (auto &[writer, v] : posted->verdicts) rt.keep_until_finalize(std::move(v.second));
    for (auto *r : posted->records)
        if (!r->direct) rt.keep_until_finalize(std::move(r->staging));
    posted.reset();
}

// The reader left the replayed plan: take the data the writer pushed for the plan's remaining
// batches (so that no message is left in flight), then match the rest as without replay.
void leave_plan(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    if (rd.replay != 1 || rd.fell_back) return;
    rd.fell_back = true;
    transport::Channel &channel = *rt.peer_link(fs.peer).channel;
    transport::DataPlane &data = *rt.peer_link(fs.peer).data;
    const Tag tag = rt.data_tag(fs.peer, rd.writer_stamp);
    std::vector<std::vector<char>> scratch;
    std::vector<Ticket> recvs;
    std::shared_ptr<PostedBatch> pre = std::move(rd.prefetched); // (the plan's next batch, posted already)
    if (pre) {
        recvs = pre->recvs;
        for (auto &[writer, buf] : pre->data) scratch.push_back(std::move(buf));
        for (auto &[writer, v] : pre->verdicts) scratch.push_back(std::move(v.second));
    }
    for (size_t b = rd.plan_batch + (pre ? 1 : 0); b < rd.plan->batches.size(); ++b)
        for (const auto &[writer, n] : arriving(fs, rd.plan->batches[b])) {
            scratch.push_back(rt.buffers().take(n + (with_verdict(fs, n) ? kVerdictBytes : 0)));
            recvs.push_back(
                data.fetch(writer, tag, {{scratch.back().data(), scratch.back().size()}}, "receiving replayed data"));
        }
    for (auto &[writer, stash] : rd.stashed) scratch.push_back(std::move(stash.bytes));
    rd.stashed.clear();
    rd.plan_batch = rd.plan->batches.size();
    wait_receives(
        rt, fs, channel, recvs, [&] { for (auto &b : scratch) rt.keep_until_finalize(std::move(b)); },
        [&] {
            return format("'%s' (session %d): reader rank %d left the replayed pattern and waited for %zu bytes the "
                          "writers had already sent", fs.path.c_str(), fs.session, rt.component_rank(),
                          channel.pending_bytes(recvs));
        });
    for (auto &b : scratch) rt.buffers().give(std::move(b));
}

} // namespace

namespace {

// The writers' final word on the session's transfer `epoch`: whether they replayed the plan recorded
// in the session stamped `replayed` (0: no, -1: they cannot), the record count, and the header when
// it changed since FileDefined (else nullptr: FileDefined's with that count). From their root's
// HeaderFinal, or from a data message's verdict.
void accept_final(Runtime &rt, FileSession &fs, int epoch, int64_t replayed, int replayed_session,
                  const std::string &replayed_path, int64_t final_numrecs, const std::vector<char> *sent) {
    ReaderSession &rd = fs.reader;
    // The final header replaces the definitions (FileDefined's with the final record count, or one
    // of its own); the data mode is this rank's own (begin_indep_data may have come before the first
    // read that needed the final header).
    // A reader's header is FileDefined's as its open took it (read-only, so unchanged since): without
    // a header of the writers' own only the record count is new.
    if (sent) {
        const bool indep = fs.header.in_indep_mode();
        model::Header final = final_definition(rt, fs, *sent);
        fs.header = std::move(final);
        fs.header.set_read_only(true);
        if (indep) fs.header.begin_indep_data();
    } else {
        fs.header.set_numrecs(final_numrecs);
    }
    rd.header_final = true;
    rd.header_final_epoch = epoch;
    // Gets on record variables were checked against the plan's record count: they stand if the final
    // count gives each of them the same answer (all accepted, and the records they read exist).
    const int64_t numrecs = fs.header.numrecs();
    if (rd.ahead_numrecs >= 0 && numrecs != rd.ahead_numrecs && (rd.ahead_refused || numrecs < rd.ahead_records_read))
        fail(DTF_ERR_UNSUPPORTED,
             "'%s' (session %d): gets on record variables were checked against the %lld records "
             "of %s, whose transfer pattern the writers may replay (replay_io=1, %s:%d), but component '%s' wrote "
             "%lld records this time (%s); set replay_io=0 for this file",
             fs.path.c_str(), fs.session, static_cast<long long>(rd.ahead_numrecs),
             origin(*rd.plan, rd.plan_since).c_str(), rt.config().path.c_str(), fs.rule->line,
             rt.config().component_name(fs.peer).c_str(), static_cast<long long>(numrecs),
             rd.ahead_refused
                 ? "a get this rank was refused might have been accepted"
                 : format("a get read up to record %lld", static_cast<long long>(rd.ahead_records_read - 1)).c_str());
    if (rd.replay >= 0) return; // decided at the first epoch
    if (replayed < 0)
        fail(DTF_ERR_UNSUPPORTED, "'%s' (session %d): component '%s' could not replay the transfer pattern of the "
             "last session to these reader ranks (it kept only the values that pattern reads); set replay_io=0 "
             "for this file", fs.path.c_str(), fs.session, rt.config().component_name(fs.peer).c_str());
    // The writer pushed the data of the plan recorded in the session stamped `replayed`; this rank
    // must hold the same plan to take it (the reader root said it does, and all ranks record alike).
    // (Checked first: a later call must not take the session for a replay of a plan it does not hold.)
    if (replayed != 0 && (!rd.plan || rd.plan->stamp != replayed || rd.plan->writer_ranks != rd.writer_ranks))
        fail(DTF_ERR_PEER, "'%s' (session %d): component '%s' replays the transfer pattern of session %d of '%s', "
             "which reader rank %d does not hold; set replay_io=0 for this file", fs.path.c_str(), fs.session,
             rt.config().component_name(fs.peer).c_str(), replayed_session, replayed_path.c_str(),
             rt.component_rank());
    rd.replay = replayed != 0;
}

void take_final(Runtime &rt, FileSession &fs, const Message &m) {
    PayloadReader r(m.payload, "header-final");
    r.i64(); // (the session's stamp: header_final_of)
    const int64_t replayed = r.i64();
    const int replayed_session = r.i32();
    const std::string replayed_path = r.str();
    const bool as_defined = r.i32() == 0;
    const int64_t final_numrecs = as_defined ? r.i64() : 0;
    std::vector<char> sent;
    if (!as_defined) sent = r.bytes();
    accept_final(rt, fs, m.epoch, replayed, replayed_session, replayed_path, final_numrecs,
                 as_defined ? nullptr : &sent);
}

// Wait for the writers' word on the first transfer: their root's final header, or, where this rank
// has messages of the replayed plan posted that carry the verdict (`posted`), the first of those.
void decide(Runtime &rt, FileSession &fs, const PostedBatch *posted) {
    ReaderSession &rd = fs.reader;
    if (rd.header_final) return;
    std::optional<Message> got;
    std::optional<Verdict> verdict;
    try {
        rt.wait_until([&] {
            check_written(rt, fs);
            if ((got = rt.take(header_final_of(fs)))) return true;
            if (posted && !verdict) verdict = verdict_of(rt, fs, *posted);
            return verdict && !verdict->header_changed; // (else the final header comes with the header)
        }, [&] {
            return format("reading '%s' (session %d) waited for component '%s' to call dtf_transfer (the final header, "
                          "with the number of records, comes with it%s)", fs.path.c_str(), fs.session,
                          rt.config().component_name(fs.peer).c_str(),
                          posted && !posted->verdicts.empty() ? ", or with the data of the replayed pattern" : "");
        }, fs.peer);
    } catch (const WentToFile &) {
        return switch_to_file(rt, fs);
    }
    if (got) return take_final(rt, fs, *got);
    accept_final(rt, fs, 1, rd.plan->stamp, rd.plan->session, rd.plan->path, verdict->numrecs, nullptr);
}

} // namespace

void wait_header_final(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    if (rd.header_final) return;
    if (rd.ahead) return decide(rt, fs, rd.ahead.get());
    // Before the batch's gets came: where the plan's next batch brings the verdict, receive it now.
    if (!rd.prefetched && rd.defined_by_own_writer)
        if (const ReaderPlan *plan = undecided_plan(fs)) rd.prefetched = prefetch(rt, fs, *plan);
    decide(rt, fs, rd.prefetched.get());
    if (rd.replay == 0) drop_posted(rt, fs, rd.prefetched); // (nothing comes for it)
}


namespace {

// The pieces of a batch: from the replayed plan when the batch is the plan's next one, else from
// the matchers (ReadRequest -> ReadPlan).
std::vector<match::Piece> plan_batch(Runtime &rt, FileSession &fs, const std::vector<match::ReadReq> &reqs) {
    ReaderSession &rd = fs.reader;
    if (fs.rule->replay_io && fs.epoch == 0) wait_header_final(rt, fs); // says whether the writer replays
    if (rd.replay == 1 && !rd.fell_back) {
        if (rd.plan_batch < rd.plan->batches.size() && rd.plan->batches[rd.plan_batch].reads == reqs) {
            ++rt.stats().batches_replayed;
            return rd.plan->batches[rd.plan_batch++].pieces;
        }
        // The writers kept only the values the plan reads: take what they sent, then fail clearly.
        const size_t batch = rd.plan_batch + 1;
        leave_plan(rt, fs);
        const match::ReadReq first = reqs.empty() ? match::ReadReq{0, 0, 0, {}} : reqs.front();
        fail(DTF_ERR_UNSUPPORTED,
             "'%s' (session %d): get batch %zu of reader rank %d (variable '%s' %s%s) is not the "
             "one of %s, whose transfer pattern the writers replay (replay_io=1, %s:%d); they kept only the "
             "values that pattern reads: set replay_io=0 for this file",
             fs.path.c_str(), fs.session, batch, rt.component_rank(),
             fs.header.vars()[static_cast<size_t>(first.varid)].name.c_str(), first.box.to_string().c_str(),
             reqs.size() > 1 ? format(" and %zu more", reqs.size() - 1).c_str() : "",
             origin(*rd.plan, rd.plan_since).c_str(), rt.config().path.c_str(), fs.rule->line);
    }
    ++rt.stats().batches_matched;
    const int tag = ++rd.batches; // pairs each plan with its request
    std::vector<char> bytes = match::encode(reqs);
    for (int m : rd.matchers)
        rt.send(fs.peer, m, Message{MessageKind::ReadRequest, 0, fs.session, tag, fs.path, bytes});
    std::vector<match::Piece> pieces;
    for (size_t i = 0; i < rd.matchers.size(); ++i) {
        Message m = wait_writer(rt, fs, for_file(fs, MessageKind::ReadPlan, tag), [&] {
            return format("a get on '%s' waited for the plan of %zu matcher ranks of component '%s' (%zu arrived)",
                          fs.path.c_str(), rd.matchers.size(), rt.config().component_name(fs.peer).c_str(), i);
        });
        for (auto &p : match::decode_pieces(m.payload)) pieces.push_back(p);
    }
    return pieces;
}

// The variable's fill value over the region of fill piece `p`, in its get's destination.
void fill_piece(const FileSession &fs, const PostedBatch &posted, const match::Piece &p) {
    const PostedBatch::Part part = posted.by_id.at(p.read_id);
    const ReadRecord &r = *part.record;
    fill_region(r.parts[part.index].box,
                r.dest + static_cast<size_t>(r.offsets[part.index]) * types::type_size(r.xtype), p.region,
                fill_value(fs.header, p.varid));
}

// The pieces of a batch whose messages came into dtf's buffers, once every one came: each from its
// writer's message into its get's destination, or straight into the user's buffer where the get is
// placed; where they overlap (ordered), with the fills, in the order their writes took effect
// (match::applies_before).
void apply_messages(const FileSession &fs, PostedBatch &posted) {
    std::vector<std::pair<const match::Piece *, const char *>> order; // with where its values are
    auto message = [&](int writer, const char *src) {
        const char *begin = src;
        for (const auto *p : posted.by_writer.at(writer)) {
            order.emplace_back(p, src);
            const ReadRecord &r = *posted.by_id.at(p->read_id).record;
            src += static_cast<size_t>(p->region.size()) * types::type_size(r.xtype);
        }
        phase::add_bytes(phase::Pack, static_cast<uint64_t>(src - begin));
    };
    for (const auto &[writer, buf] : posted.data) message(writer, buf.data());
    for (const auto &[writer, at] : posted.stashed) message(writer, at);
    if (posted.ordered) {
        for (const auto &p : posted.pieces)
            if (p.fill) order.emplace_back(&p, nullptr);
        std::stable_sort(order.begin(), order.end(),
                         [](const auto &a, const auto &b) { return match::applies_before(*a.first, *b.first); });
    }
    for (const auto &[p, src] : order) {
        if (!src) {
            fill_piece(fs, posted, *p);
            continue;
        }
        const PostedBatch::Part part = posted.by_id.at(p->read_id);
        ReadRecord &r = *part.record;
        const size_t es = types::type_size(r.xtype);
        const match::Box &box = r.parts[part.index].box;
        if (r.placed) {
            const int64_t first = r.offsets[part.index];
            match::for_each_run(box, p->region, [&](int64_t off, int64_t step, int64_t sub_off, int64_t len) {
                const char *from = src + static_cast<size_t>(sub_off) * es;
                if (step == 1) return types::place(r.strided, es, first + off, len, from, r.user_buf);
                for (int64_t i = 0; i < len; ++i)
                    types::place(r.strided, es, first + off + i * step, 1, from + static_cast<size_t>(i) * es,
                                 r.user_buf);
            });
        } else {
            match::copy_region(box, r.dest + static_cast<size_t>(r.offsets[part.index]) * es, p->region,
                               const_cast<char *>(src), es, false);
        }
        counters::copied(false, static_cast<uint64_t>(p->region.size()) * es);
    }
}

// How the pieces of `batch` cover its gets: whether they must be applied in the order their writes took
// effect (`*ordered`: data pieces overlap, or a fill takes effect after data), and the parts no piece
// covers whole (`uncovered`). False when `ahead` and some element is not covered by a data piece.
bool coverage(const std::vector<ReadRecord *> &batch, const std::vector<match::Piece> &pieces, bool ahead,
              bool *ordered, std::vector<PostedBatch::Part> *uncovered) {
    std::map<uint64_t, std::vector<const match::Piece *>> of_read;
    for (const auto &p : pieces) of_read[p.read_id].push_back(&p);
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) {
            const match::Box &box = r->parts[i].box;
            std::vector<match::Box> data_regions, all_regions;
            const match::Piece *last_fill = nullptr, *first_data = nullptr;
            for (const match::Piece *p : of_read[r->parts[i].id]) {
                all_regions.push_back(p->region);
                if (p->fill) {
                    if (!last_fill || match::applies_before(*last_fill, *p)) last_fill = p;
                } else {
                    data_regions.push_back(p->region);
                    if (!first_data || match::applies_before(*p, *first_data)) first_data = p;
                }
            }
            if (ahead && last_fill) return false;
            int64_t sum = 0;
            for (const auto &g : data_regions) sum += g.size();
            *ordered = *ordered || sum != match::covered_count(box, data_regions) ||
                       (last_fill && first_data && match::applies_before(*first_data, *last_fill));
            if (match::covered_count(box, all_regions) == box.size()) continue;
            if (ahead) return false;
            uncovered->push_back(PostedBatch::Part{r, i});
        }
    return true;
}

// Where the data of one writer's pieces `list` lands, in its message's order: spans over the element
// runs of the gets' destinations (none when `whole`: then the message goes to a buffer of dtf's).
// `*bytes`: the message's size.
std::vector<transport::Span> landing(const PostedBatch &out, const std::vector<const match::Piece *> &list,
                                     bool whole, size_t *bytes) {
    std::vector<transport::Span> spans;
    *bytes = 0;
    for (const auto *p : list) {
        const PostedBatch::Part part = out.by_id.at(p->read_id);
        const ReadRecord &r = *part.record;
        const size_t es = types::type_size(r.xtype);
        *bytes += static_cast<size_t>(p->region.size()) * es;
        if (whole) continue;
        char *base = r.dest + static_cast<size_t>(r.offsets[part.index]) * es;
        match::for_each_run(r.parts[part.index].box, p->region, [&](int64_t off, int64_t step, int64_t, int64_t len) {
            if (step == 1) {
                spans.push_back({base + static_cast<size_t>(off) * es, static_cast<size_t>(len) * es});
                return;
            }
            for (int64_t i = 0; i < len; ++i) spans.push_back({base + static_cast<size_t>(off + i * step) * es, es});
        });
    }
    return spans;
}

// Post the receives of `batch` for `pieces`: one message per writer, received where its pieces go
// (spans over their element runs, DataPlane::fetch): the user's buffer for a direct get, else the get's
// staging buffer; a message with pieces of a placed get (ReadRecord::strided, covered whole by data
// pieces, no fill) goes to a buffer of dtf's, from which apply_messages puts each piece in place.
// Elements no piece covers read as zeros; a fill piece (the writers' fill, for which no values move)
// gets the variable's fill value here, before any data lands, when it took effect before every data
// piece of its get. Where pieces overlap otherwise (one element written by several writes), messages
// go to buffers of dtf's too and every piece is applied in the order the writes took effect
// (apply_messages), so that the last write wins, as in the file, whatever the order the messages
// arrive in. `ahead`: only if every element of every get is covered by a data piece (nothing but the
// writers' data is written into the user's buffers before they agreed); false if not. `planned`: the
// batch of the replayed plan it is (or may be, before the writers said whether they replay it); a
// message that begins a bundle there is received whole, one that came in an earlier batch's bundle is
// taken from where that one left it (ReaderSession::stashed).
bool post_batch(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch, std::vector<match::Piece> pieces,
                bool ahead, const ReaderPlan::Batch *planned, PostedBatch &out, PostedBatch *from = nullptr) {
    bool ordered = from != nullptr;
    std::vector<PostedBatch::Part> uncovered;
    // (fills that data written after them covers whole: in fill mode each variable's enddef fill
    // precedes the data, which overwrites it)
    match::drop_overwritten_fills(pieces);
    if (!coverage(batch, pieces, ahead, &ordered, &uncovered)) return false;
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) out.by_id[r->parts[i].id] = PostedBatch::Part{r, i};
    std::set<const ReadRecord *> staged;
    for (const PostedBatch::Part &u : uncovered) staged.insert(u.record);
    for (const auto &p : pieces)
        if (p.fill) staged.insert(out.by_id.at(p.read_id).record);
    for (auto *r : batch) {
        r->placed = r->strided.valid() && staged.count(r) == 0;
        if (!r->placed) r->stage(rt.buffers());
    }
    for (const PostedBatch::Part &u : uncovered) u.record->zero_part(u.index);
    out.uncovered.insert(out.uncovered.end(), uncovered.begin(), uncovered.end());
    out.pieces = std::move(pieces);
    out.ordered = ordered;
    out.planned = planned;
    for (const auto &p : out.pieces) {
        if (!p.fill) out.by_writer[p.writer].push_back(&p);
        else if (!ordered) fill_piece(fs, out, p); // (before any data lands)
    }
    transport::DataPlane &data = *rt.peer_link(fs.peer).data;
    const Tag tag = rt.data_tag(fs.peer, fs.reader.writer_stamp);
    bool bundled_any = false;
    for (auto &[writer, list] : out.by_writer) {
        size_t n = 0;
        const bool bundled = planned && planned->bundled.count(writer);
        const bool whole = ordered || bundled || bundle_of(planned, writer) ||
                           std::any_of(list.begin(), list.end(), [&](const match::Piece *p) {
                               return out.by_id.at(p->read_id).record->placed;
                           });
        std::vector<transport::Span> spans = landing(out, list, whole, &n);
        phase::add_bytes(phase::Transfer, n);
        if (bundled) { // (received already, with an earlier batch)
            auto stash = fs.reader.stashed.find(writer);
            if (stash == fs.reader.stashed.end() || stash->second.parts.empty() || stash->second.parts.front() != n)
                fail(DTF_ERR_INTERNAL, "'%s' (session %d): the data of writer rank %d for batch %zu of the replayed "
                     "pattern did not come with an earlier one", fs.path.c_str(), fs.session, writer,
                     static_cast<size_t>(planned - fs.reader.plan->batches.data()) + 1);
            out.stashed[writer] = stash->second.bytes.data() + stash->second.at;
            stash->second.at += n;
            stash->second.parts.pop_front();
            bundled_any = true;
            continue;
        }
        if (from) { // (received already: the batch was prefetched)
            out.data[writer] = std::move(from->data.at(writer));
            continue;
        }
        // A batch of the replayed plan (or posted before the writers said whether they replay it):
        // its messages that carry the writers' verdict end with it (with_verdict).
        n = bundle_bytes(planned, writer, n);
        const bool verdict = planned && with_verdict(fs, n);
        if (whole) {
            fetch_whole(rt, fs, out, writer, n, verdict, "receiving data");
            continue;
        }
        if (verdict) {
            auto &v = out.verdicts[writer].second;
            v.assign(kVerdictBytes, 0);
            spans.push_back({v.data(), v.size()});
        }
        out.recvs.push_back(data.fetch(writer, tag, spans, "receiving data"));
        if (verdict) out.verdicts[writer].first = out.recvs.back();
    }
    if (from) {
        out.recvs = std::move(from->recvs);
        out.verdicts = std::move(from->verdicts);
    }
    if (bundled_any) ++rt.stats().batches_bundled;
    return true;
}

// A batch failed and its receives were cancelled: MPI may still fill one it had begun, so their
// buffers stay allocated until dtf_finalize.
void keep_buffers(Runtime &rt, PostedBatch &posted, const std::vector<ReadRecord *> &batch) {
    for (auto &[writer, buf] : posted.data) rt.keep_until_finalize(std::move(buf));
    for (auto &[writer, v] : posted.verdicts) rt.keep_until_finalize(std::move(v.second));
    for (auto *r : batch)
        if (!r->direct) rt.keep_until_finalize(std::move(r->staging));
}

} // namespace

void post_ahead(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    const ReaderPlan *plan = undecided_plan(fs);
    if (rd.ahead || rd.prefetched || !plan || plan->batches.size() <= rd.plan_batch || fs.pending.empty()) return;
    const auto &want = plan->batches[rd.plan_batch].reads;
    // Read ids grow with every get: the pending gets can be the batch only once the newest is its last.
    const auto &newest = fs.pending.rbegin()->second->parts;
    if (want.empty() || newest.empty() || newest.back().id != want.back().id) return;
    std::vector<ReadRecord *> batch;
    std::vector<match::ReadReq> reqs;
    for (auto &[id, r] : fs.pending) {
        batch.push_back(r.get());
        reqs.insert(reqs.end(), r->parts.begin(), r->parts.end());
    }
    if (reqs != want) return;
    auto posted = std::make_shared<PostedBatch>();
    const ReaderPlan::Batch &next = plan->batches[rd.plan_batch];
    if (!post_batch(rt, fs, batch, next.pieces, true, &next, *posted)) return;
    posted->records = std::move(batch);
    rd.ahead = std::move(posted);
}

void settle_ahead(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    if (!rd.ahead) return;
    std::shared_ptr<PostedBatch> posted = std::move(rd.ahead);
    transport::Channel &channel = *rt.peer_link(fs.peer).channel;
    try {
        decide(rt, fs, posted.get());
        if (rd.replay == 1) { // the writers send this batch's messages: take them (the plan's batch is used up)
            rt.wait_until([&] { return channel.done(posted->recvs); }, [&] {
                return format("'%s' (session %d): reader rank %d waited for %zu bytes the writers had already sent",
                              fs.path.c_str(), fs.session, rt.component_rank(), channel.pending_bytes(posted->recvs));
            }, fs.peer);
            ++rd.plan_batch;
        } else {
            channel.cancel(posted->recvs); // nothing was sent for them
            posted->planned = nullptr;     // (nor for the bundles that would begin in it)
        }
    } catch (...) {
        channel.cancel(posted->recvs);
        keep_buffers(rt, *posted, posted->records);
        throw;
    }
    keep_bundles(rt, fs, *posted);
}

bool ahead_includes(const FileSession &fs, const std::vector<int> &ids) {
    const ReaderSession &rd = fs.reader;
    if (!rd.ahead) return false;
    for (int id : ids) {
        auto it = fs.pending.find(id);
        if (it != fs.pending.end() &&
            std::find(rd.ahead->records.begin(), rd.ahead->records.end(), it->second.get()) != rd.ahead->records.end())
            return true;
    }
    return false;
}

void drop_ahead(Runtime &rt, FileSession &fs) {
    drop_posted(rt, fs, fs.reader.ahead);
    drop_posted(rt, fs, fs.reader.prefetched);
}

// The writers' data of a batch of gets: ask every matcher, receive the plans and the data, unpack
// into each get's destination.
void receive_batch(Runtime &rt, FileSession &fs, std::vector<ReadRecord *> &batch, PostedBatch &posted) {
    ReaderSession &rd = fs.reader;
    std::vector<match::ReadReq> reqs;
    for (auto *r : batch) reqs.insert(reqs.end(), r->parts.begin(), r->parts.end());
    transport::Channel &channel = *rt.peer_link(fs.peer).channel;
    auto keep = [&] { keep_buffers(rt, posted, batch); };
    // The plan's next batch is posted before the writers' final header says whether they replay
    // (here, or at the nonblocking get that completed it: post_ahead), so that the data they send
    // ahead (as soon as their puts complete a message, while the program computes) lands in place at
    // once. They send ahead only what they replay: if they do not, nothing came for these receives.
    bool ahead = false, ready = false;
    if (rd.prefetched && rd.plan_batch < rd.plan->batches.size() && rd.plan->batches[rd.plan_batch].reads == reqs) {
        const ReaderPlan::Batch &next = rd.plan->batches[rd.plan_batch];
        post_batch(rt, fs, batch, next.pieces, false, &next, posted, rd.prefetched.get());
        rd.prefetched.reset();
        ahead = true;
    } else if (rd.ahead && rd.ahead->records == batch) {
        posted = std::move(*rd.ahead);
        rd.ahead.reset();
        ahead = true;
    } else if (rd.ahead) {
        settle_ahead(rt, fs);
    } else if (const ReaderPlan *plan = undecided_plan(fs)) {
        ahead = plan->batches.size() > rd.plan_batch && plan->batches[rd.plan_batch].reads == reqs &&
                post_batch(rt, fs, batch, plan->batches[rd.plan_batch].pieces, true, &plan->batches[rd.plan_batch],
                           posted);
    }
    if (ahead) {
        try {
            decide(rt, fs, &posted);
        } catch (...) {
            channel.cancel(posted.recvs);
            keep();
            throw;
        }
        if (rd.replay == 1) {
            ++rd.plan_batch;
            ++rt.stats().batches_replayed;
            ++rt.stats().batches_ahead;
            ready = true;
        } else {
            channel.cancel(posted.recvs);
            for (auto &[writer, buf] : posted.data) rt.buffers().give(std::move(buf));
            posted = PostedBatch{};
        }
    }
    if (!ready) {
        // (Waiting for the writers' word there may have received the plan batch it takes into dtf's
        // buffers already: prefetched.)
        std::vector<match::Piece> pieces = plan_batch(rt, fs, reqs);
        const bool replayed = rd.replay == 1 && !rd.fell_back;
        std::shared_ptr<PostedBatch> pre = replayed ? std::move(rd.prefetched) : nullptr;
        post_batch(rt, fs, batch, std::move(pieces), false, replayed ? &rd.plan->batches[rd.plan_batch - 1] : nullptr,
                   posted, pre.get());
    }
    if (fs.rule->replay_io) rd.batches_log.push_back(ReaderPlan::Batch{reqs, posted.pieces, {}, {}});
    wait_receives(rt, fs, channel, posted.recvs, keep, [&] {
        return format("a get on '%s' (reader rank %d) waited for %zu of its bytes from %zu writer ranks of "
                      "component '%s'", fs.path.c_str(), rt.component_rank(), channel.pending_bytes(posted.recvs),
                      posted.by_writer.size(), rt.config().component_name(fs.peer).c_str());
    });
    phase::Scope convert(phase::Pack);
    apply_messages(fs, posted);
    keep_bundles(rt, fs, posted);
}

int finish_gets(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch) {
    phase::Scope convert(phase::Pack);
    int first_error = NC_NOERR;
    for (auto *r : batch) {
        for (const auto &part : r->parts)
            fs.get_bytes += part.box.size() * static_cast<int64_t>(types::type_size(r->xtype));
        if (r->direct) continue; // already in place, nothing to convert
        if (r->placed) { // put in place from the messages (apply_messages)
            rt.buffers().give(std::move(r->staging));
            continue;
        }
        counters::copied(false, r->layout.dense_bytes());
        if (types::same_representation(r->xtype, r->layout.memtype, r->format)) { // placed from staging itself
            r->status = types::scatter(r->layout, r->staging.data(), r->user_buf);
        } else if (r->layout.contiguous()) { // converted straight into the user's buffer
            r->status = types::convert_get(r->staging.data(), r->xtype, r->user_buf, r->layout.memtype,
                                           static_cast<size_t>(r->layout.nelems), r->format);
        } else {
            const size_t n = r->staging.size() / types::type_size(r->xtype);
            std::vector<char> mem = rt.buffers().take(n * r->layout.elsize);
            const int rc = types::convert_get(r->staging.data(), r->xtype, mem.data(), r->layout.memtype, n, r->format);
            const int rc2 = types::scatter(r->layout, mem.data(), r->user_buf);
            counters::copied(false, r->layout.dense_bytes());
            r->status = rc2 != NC_NOERR ? rc2 : rc;
            rt.buffers().give(std::move(mem));
        }
        rt.buffers().give(std::move(r->staging));
        if (first_error == NC_NOERR) first_error = r->status;
    }
    return first_error;
}

// Execute a batch of gets: the writers' data (receive_batch), or the file's once the writer wrote
// the session there instead (fallback=); then convert.
int read_batch(Runtime &rt, FileSession &fs, std::vector<ReadRecord *> &batch) {
    if (batch.empty()) return NC_NOERR;
    phase::Scope timer(phase::Transfer);
    PostedBatch posted;
    if (!fs.reader.from_file) {
        try {
            if (fs.rule->falls_back()) rt.progress(); // (a FileWritten that came: asking the writer would be in vain)
            check_written(rt, fs);
            receive_batch(rt, fs, batch, posted);
        } catch (const WentToFile &) {
            // The receives posted were cancelled: where one had begun, MPI fills it with the values
            // the file holds too (the writer's), or a buffer kept until dtf_finalize.
            posted = PostedBatch{};
            switch_to_file(rt, fs);
        }
    }
    if (fs.reader.from_file) read_from_file(rt, fs, batch);
    int first_error = finish_gets(rt, fs, batch);
    // Elements of variables defined before this session (an ncmpi_open with NC_WRITE continued the
    // file) that this session's writers did not write: the file holds an earlier session's values
    // there, which transfer mode does not keep. Those gets fail rather than return fill values.
    for (const auto &[r, i] : posted.uncovered) {
        const match::ReadReq &part = r->parts[i];
        if (part.varid >= fs.inherited || r->status == DTF_ERR_UNSUPPORTED) continue;
        r->status = DTF_ERR_UNSUPPORTED;
        if (first_error == NC_NOERR) first_error = DTF_ERR_UNSUPPORTED;
        std::string name = std::to_string(part.varid);
        if (part.varid < static_cast<int>(fs.header.vars().size()))
            name = fs.header.vars()[static_cast<size_t>(part.varid)].name;
        report_error(
            DTF_ERR_UNSUPPORTED,
            format("a get on '%s' (session %d) of variable '%s' %s: component '%s' opened the file with NC_WRITE "
                   "and did not write all of these elements in this session; the file holds the values of an "
                   "earlier session there, which transfer mode does not keep (read them in that session, or "
                   "write them again)",
                   fs.path.c_str(), fs.session, name.c_str(), part.box.to_string().c_str(),
                   rt.config().component_name(fs.peer).c_str())
                .c_str());
    }
    return first_error;
}

int reader_transfer(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    std::vector<ReadRecord *> batch;
    for (auto &[id, r] : fs.pending) batch.push_back(r.get());
    int rc;
    try {
        rc = read_batch(rt, fs, batch);
    } catch (...) {
        fs.pending.clear(); // failed: nothing writes into their buffers later (see wait())
        throw;
    }
    fs.pending.clear();
    if (rd.from_file) { // the writer has closed the session: nobody to tell
        ++fs.epoch;
        rd.done_sent = true;
        return rc;
    }
    // Fewer batches than the replayed plan: take what the writers pushed for the others (a reader
    // that read nothing learns here whether they pushed anything).
    if (fs.rule->replay_io && fs.epoch == 0) wait_header_final(rt, fs);
    if (rd.replay == 1 && rd.plan_batch < rd.plan->batches.size()) leave_plan(rt, fs);
    ++fs.epoch;
    if (rd.done_deferred) { // a second dtf_transfer: the first one's ReaderDone goes now (the plan is dropped)
        send_done(rt, fs, 1, true, true);
        rd.done_deferred = false;
    }
    if (rd.defined_by_own_writer && fs.epoch == 1 && rd.replay == 1)
        rd.done_deferred = true; // said at the close, once this rank knows whether it keeps the plan
    else send_done(rt, fs, fs.epoch, rd.fell_back, false);
    rd.done_sent = true;
    return rc;
}

void send_done(Runtime &rt, FileSession &fs, int epoch, bool left, bool replayed) {
    ReaderSession &rd = fs.reader;
    PayloadWriter done; // whether this rank left the replayed plan or drops it (then both sides drop it)
    done.i32(left ? 1 : 0);
    done.i32(replayed ? 1 : 0);
    if (replayed) { // which reader ranks it read with, and the plan it holds, which the writer checks
        done.i64(static_cast<int64_t>(ranks_hash(fs.ranks))); // (a hash: the list would be 4 bytes per reader)
        done.i64(rd.plan ? rd.plan->stamp : 0);
    } else { // (and its writer rank in a replay of this session: own_writer)
        const OwnWriter own = own_writer(rt, fs);
        done.i32(own.rank);
        done.i32(own.verdict ? 1 : 0);
    }
    const std::vector<char> payload = done.take();
    if (replayed && rd.quiet_writer) { // to its writer rank, which the plan names
        if (!rd.plan || rd.plan->own_writer < 0)
            fail(DTF_ERR_INTERNAL, "'%s' (session %d): a replayed session without its plan's writer rank",
                 fs.path.c_str(), fs.session);
        rt.send(fs.peer, rd.plan->own_writer, Message{MessageKind::ReaderDone, 0, fs.session, epoch, fs.path, payload});
        return;
    }
    for (int m : rd.matchers)
        rt.send(fs.peer, m, Message{MessageKind::ReaderDone, 0, fs.session, epoch, fs.path, payload});
}

// Each reader rank keeps, replaces or drops its plan by what it saw, with no agreement among the
// reader ranks: one that drops it (it left the plan, read from the file, or the session had another
// epoch or definition) says so in its ReaderDone, the writers then drop theirs, and the readers follow
// the writers' word at the next open (FileDefined names the plan the writers replay, if any).
void end_reader_session(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    // (a session whose definition changed after FileDefined records no plan, on either side)
    const bool drop = rd.fell_back || fs.epoch != 1 || rd.definition_changed;
    if (rd.done_deferred) {
        send_done(rt, fs, 1, drop, true);
        rd.done_deferred = false;
    }
    auto &plans = sessions(rt).reader_plans;
    if (drop) {
        plans.drop(rd.plan_key, rd.plan);
    } else if (rd.replay != 1) {
        auto plan = std::make_shared<ReaderPlan>();
        plan->stamp = rd.writer_stamp;
        plan->path = fs.path;
        plan->session = fs.session;
        plan->writer_ranks = rd.writer_ranks;
        plan->numrecs = fs.header.numrecs();
        plan->defined = rd.defined;
        plan->own_writer = own_writer(rt, fs).rank;
        plan->batches = std::move(rd.batches_log);
        mark_bundles(rt, fs, plan->batches);
        plans.keep(rd.plan_key, rd.plan, std::move(plan));
    }
}

Definition read_definition(const std::vector<char> &payload) {
    PayloadReader r(payload, "file-defined");
    withdrawn_sessions(r); // (taken when it came: Runtime::apply_withdrawals)
    Definition d;
    d.writer_stamp = r.i64();
    d.to_all = r.i32() != 0;
    const bool as_planned = r.i32() != 0;
    d.planned = as_planned ? r.i64() : 0;
    if (!as_planned) d.header = r.bytes();
    d.writer_ranks = r.ints(1 << 24);
    d.matchers = r.ints(1 << 24);
    d.inherited = r.i32();
    return d;
}

bool is_definition(const Message &m, const std::string &path, int session) {
    return m.kind == MessageKind::FileDefined && m.path == path && m.session == session;
}

std::vector<char> defined_header(const Message &m) { return read_definition(m.payload).header; }

std::vector<char> fill_value(const model::Header &h, int varid) {
    std::vector<char> fill(types::type_size(h.vars()[static_cast<size_t>(varid)].type));
    int no_fill = 0;
    h.inq_var_fill(varid, &no_fill, fill.data());
    return fill;
}

} // namespace dtf::runtime
