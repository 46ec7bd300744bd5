// The writer's side of a session: its definition sent to the readers, its writes (packed into the
// replay plan's data messages as they come), and the service of each transfer epoch (step(): the
// matcher's part and the data sent); the close, and fallback='s giving up of the readers. The
// protocol is described in docs/ARCHITECTURE.md.
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "common/clock.hpp"
#include "common/counters.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "match/wire.hpp"
#include "model/netcdf4_mark.h"
#include "runtime/runtime.hpp"
#include "session/session.hpp"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using transport::Tag;
using transport::Ticket;

namespace {

bool learn_readers(Runtime &rt, WriterSession &ws);
void send_finish(WriterSession &ws);
void take_done(Runtime &rt, WriterSession &ws);

// A replayed epoch of a session with a writer leader (WriterSession::leader): each reader rank says
// ReaderDone to its own writer rank (WriterPlan::own_writers), and no matcher takes the others'.
bool led_epoch(const WriterSession &ws) {
    return ws.replay == 1 && ws.quiet_end && !ws.readers.empty() && ws.readers.front().assumed;
}

// The reader ranks (component ranks) whose own writer rank is `me` in `plan` (WriterPlan::own_writers);
// with `no_verdict`, only those that get no verdict with their data.
std::vector<int> own_readers_of(const WriterPlan &plan, int me, bool no_verdict = false) {
    const std::vector<int> &own = plan.own_writers; // (reader, writer, no verdict) triples
    std::vector<int> out;
    for (size_t i = 0; i + 2 < own.size(); i += 3)
        if (own[i + 1] == me && (own[i + 2] || !no_verdict)) out.push_back(own[i]);
    return out;
}

// Whether the readers hold the writer's plan (same session, same reader ranks) and this rank knows
// the session's stamp (the data messages' tag): known once their root's ReaderOpened came, or at
// once for a plan of known readers (ReaderSide::assumed) once the stamp is known here.
bool plan_confirmed(Runtime &rt, WriterSession &ws) {
    const WriterPlan &plan = *ws.plan;
    const ReaderSide &reader = ws.readers.front(); // a replayed session has one reader
    return learn_readers(rt, ws) && ws.stamp_known && reader.ranks == plan.reader_ranks && reader.plan == plan.stamp;
}

std::vector<int> matcher_ranks(int size, int group_size) {
    std::vector<int> m;
    for (int r = 0; r < size; r += group_size) m.push_back(r);
    return m;
}

// Whether the file is a netCDF-4 one without the classic model (model/netcdf4_mark.h): netCDF-C leaves
// and enters define mode by itself there, and netCDF4-python's way of writing one, a variable created
// and written after the other, changes the definition after the first put as a rule.
bool defines_in_data_mode(const model::Header &h) { return model::netcdf4_format(h) == model::kNetcdf4Format; }

// Whether the readers get the definition at dtf_transfer or close, not at the first put: as the
// pattern's last session needed (note_definition), or, for its first one, where it is likely to.
bool defines_late(Runtime &rt, const FileSession &fs) {
    const auto &known = sessions(rt).late_definitions;
    const auto it = known.find(fs.ws->plan_key);
    return it != known.end() ? it->second : defines_in_data_mode(fs.header);
}

} // namespace

void writer_put(Runtime &rt, FileSession &fs) {
    if (fs.header.in_define_mode()) return; // (an iput or bput posted in define mode)
    WriterSession &ws = *fs.ws;
    if (!ws.first_put) {
        ws.first_put = true;
        ws.first_put_revision = fs.header.revision();
        ws.defines_late = defines_late(rt, fs);
    }
    if (!fs.defined_sent && !ws.defines_late) announce_definition(rt, fs);
}

void note_definition(Runtime &rt, const FileSession &fs) {
    const WriterSession &ws = *fs.ws;
    sessions(rt).late_definitions[ws.plan_key] = ws.first_put && fs.header.revision() != ws.first_put_revision;
}

// FileDefined, at the writer's first put (not at enddef: a program may define in steps, redef and enddef for
// each definition as netCDF4-python does, and the readers must see the header as it is when the data begins),
// or at its dtf_transfer or close where the last session of the file's pattern changed its definition after
// its first put (Sessions::late_definitions): from the root to every rank of each reader component, since the
// writer does not know which ranks will open the file (the readers' ReaderOpened tells; the others drop
// theirs when withdrawn); when the session replays a plan of known readers (ReaderSide::assumed), from each
// writer rank to the reader ranks whose own writer rank it is (WriterPlan::own_writers), with the header
// left out when it is the one that plan's session had, which the readers kept with it.
void announce_definition(Runtime &rt, FileSession &fs) {
    if (fs.defined_sent) return;
    fs.defined_sent = true;
    WriterSession &ws = *fs.ws;
    // (A replayed session has one reader; an output file has none.)
    const ReaderSide *assumed = ws.readers.empty() || !ws.readers.front().assumed ? nullptr : &ws.readers.front();
    ws.defined_to_all = !assumed;
    std::vector<int> to; // assumed: the reader ranks (component ranks) this rank defines the file to
    if (assumed) {
        to = own_readers_of(*ws.plan, fs.ranks[static_cast<size_t>(fs.rank)]);
        const std::vector<int> &own = ws.plan->own_writers; // (reader, writer, no verdict) triples
        auto listed = [&](int reader) {
            for (size_t i = 0; i + 2 < own.size(); i += 3)
                if (own[i] == reader) return true;
            return false;
        };
        if (fs.rank == ws.leader) // (the leader: any reader rank the plan gives no own writer rank)
            for (int reader : assumed->ranks)
                if (!listed(reader)) to.push_back(reader);
    }
    // (Every rank of a session that may record a plan keeps the header, which the plan keeps: a session
    // replaying it compares its own with it.)
    if (fs.rank != ws.leader && to.empty()) { // (the leader keeps the header for the numrecs agreement)
        if (ws.record && !ws.readers.empty() && !assumed) ws.defined_header = fs.header.encode();
        return;
    }
    std::vector<int> matchers;
    for (int m : matcher_ranks(fs.size, rt.settings().max_workgroup_size))
        matchers.push_back(fs.ranks[static_cast<size_t>(m)]);
    const std::vector<char> header = fs.header.encode();
    ws.defined_header = header;
    ws.defined_revision = fs.header.revision();
    const bool same = assumed && ws.plan->defined_header == header;
    for (int reader : fs.peers) {
        auto defined = [&] {
            PayloadWriter p;
            write_withdrawn(p, assumed ? std::vector<std::pair<std::string, int>>{} : rt.take_withdrawals(reader));
            p.i64(ws.stamp);
            p.i32(assumed ? 0 : 1);
            p.i32(same ? 1 : 0);
            if (same) p.i64(ws.plan->stamp);
            else p.bytes(header);
            p.ints(fs.ranks);
            p.ints(matchers);
            p.i32(fs.inherited);
            return Message{MessageKind::FileDefined, 0, fs.session, 0, fs.path, p.take()};
        };
        if (!assumed) rt.notify(reader, defined());
        else
            for (int r : to) rt.send(reader, r, defined());
    }
}

namespace {

// The leader makes the stamp; the other ranks learn it from the numrecs agreement at the first
// dtf_transfer, or, since it names the tag of the data messages they may send before (replay_io=1),
// from the readers' ReaderOpened, which confirms the plan those messages need (the readers have it
// from FileDefined). A replay of known readers takes the stamp the last session of the plan reserved
// (WriterPlan::next_stamp), once: every rank knows it at once.
void take_stamp(Runtime &rt, WriterSession &ws, int rank) {
    if (!ws.readers.empty() && ws.readers.front().assumed) {
        ws.stamp = std::exchange(ws.plan->next_stamp, 0); // (the session's end reserves the next one)
        ws.stamp_known = true;
        return;
    }
    if (rank == ws.leader) ws.stamp = rt.new_stamp();
    ws.stamp_known = rank == ws.leader;
}

} // namespace

WriterSession::~WriterSession() {
    if (pool)
        for (auto &w : writes) pool->give(std::move(w.data));
}

std::shared_ptr<WriterSession> open_writer_session(Runtime &rt, const FileSession &fs) {
    auto ws = std::make_shared<WriterSession>();
    ws->path = fs.path;
    ws->session = fs.session;
    for (int reader : fs.peers) {
        ws->readers.emplace_back();
        ws->readers.back().component = reader;
    }
    ws->group = fs.group;
    ws->local = ws->group->channel();
    ws->rank = fs.rank;
    ws->size = fs.size;
    ws->workgroup = rt.settings().max_workgroup_size;
    ws->ranks = fs.ranks;
    ws->pool = &rt.buffers();
    ws->record = fs.rule->replay_io;
    ws->quiet_end = !fs.rule->persist && !fs.rule->falls_back();
    ws->plan_key = plan_key(fs.path, fs.ranks);
    if (fs.rule->falls_back() && fs.rule->fallback_s != config::kFallbackWait)
        ws->give_up_after = std::max(fs.rule->fallback_s, 1e-6); // (0: no wait beyond what is done)
    // Sessions of this pattern may still be served (a replayed epoch returns once its data is
    // delivered), and the end of one may change the replay plan this one starts from, which every
    // writer rank must find alike: wait for those. Given a plan of this very path, only a session
    // that took that plan can change it (one of another path keeps its own beside it, and one of
    // this path was waited for in make_file): the files of an ensemble's members, one pattern with
    // other readers each, are written one after the other without waiting for each to be read.
    // (A matcher's memo is only used where it equals this session's writes and reads.)
    rt.wait_until([&] {
        if (!ws->record) return true;
        int distance = 0;
        auto exact = sessions(rt).writer_plans.find(ws->plan_key, fs.path, nullptr, &distance);
        if (distance != 0 || sessions(rt).writer_plans.count(ws->plan_key) >= PlanShelf<WriterPlan>::kPerKey)
            exact = nullptr;
        return !sessions(rt).serving_key(ws->plan_key, [&](const WriterSession &s) {
            return !exact || s.path == fs.path || s.plan == exact;
        });
    }, [&] {
        return format("creating '%s' (session %d) waited for the readers of the previous file of its pattern to "
                      "call dtf_transfer or close it", fs.path.c_str(), fs.session);
    }, fs.peer);
    if (ws->is_matcher()) {
        auto memo = sessions(rt).match_memos.find(ws->plan_key);
        if (memo != sessions(rt).match_memos.end()) ws->memo = memo->second;
    }
    if (ws->record) {
        int distance = 0;
        ws->plan = sessions(rt).writer_plans.find(ws->plan_key, fs.path, nullptr, &distance); // readers not known yet
        ws->plan_exact = ws->plan && distance == 0;
        // A plan of this very path, or of another name that its readers followed last time (the
        // previous file of a series named after the cycle): the plan's readers are the readers. (The
        // previous session of the pattern has ended on every writer rank when this one starts, so
        // they decide alike.)
        if (ws->plan && (ws->plan_exact || ws->plan->followed) && ws->plan->next_stamp != 0) {
            ReaderSide &side = ws->readers.front(); // (a replayed session has one reader)
            side.ranks = ws->plan->reader_ranks;
            side.plan = ws->plan->stamp;
            side.assumed = true;
            if (ws->quiet_end) ws->leader = leader_of(fs.path, fs.size);
            ws->own_readers = own_readers_of(*ws->plan, fs.ranks[static_cast<size_t>(fs.rank)]).size();
        }
        if (ws->plan) {
            ws->writes.reserve(ws->plan->writes.size()); // (as many as the plan's, most likely: no regrowth)
            ws->plan_since = ++ws->plan->found;
            log::debug("writing '%s' (session %d) with the plan of %s%s", fs.path.c_str(), fs.session,
                       origin(*ws->plan, ws->plan_since).c_str(),
                       ws->plan_exact                  ? ""
                       : ws->readers.front().assumed ? " (a similar name its readers followed last time)"
                                                      : " (a similar name: until the readers confirm it)");
        }
    }
    take_stamp(rt, *ws, fs.rank);
    return ws;
}

namespace {

using Packing = WriterSession::Packing;

// The bytes of a data message of `pieces`, whose variables' elements have `elsize` bytes.
size_t pieces_bytes(const std::vector<match::Piece> &pieces, const std::vector<size_t> &elsize) {
    size_t n = 0;
    for (const auto &p : pieces) n += static_cast<size_t>(p.region.size()) * elsize[static_cast<size_t>(p.varid)];
    return n;
}

// The bytes of the plan's data message `o`.
size_t order_bytes(const WriterSession &ws, size_t o) { return pieces_bytes(ws.plan->orders[o].pieces, ws.elsize); }

// Whether the plan's data message `o` waits for the writers' agreement and carries their verdict.
bool held(const WriterSession &ws, size_t o) {
    return ws.readers.front().assumed && carries_verdict(order_bytes(ws, o));
}

// Send the plan's data message `o` (its bytes: packed, or gathered from the kept writes), with the
// writers' verdict at its end if it carries one (after the agreement).
void push_order(Runtime &rt, WriterSession &ws, size_t o, std::vector<char> bytes, bool early) {
    phase::add_bytes(phase::Transfer, bytes.size());
    if (held(ws, o)) {
        ByteWriter verdict;
        verdict.i64(ws.final_numrecs);
        verdict.i32(ws.header_changed ? 1 : 0);
        verdict.i32(plan_check(ws.plan->stamp));
        const std::vector<char> v = verdict.take();
        bytes.insert(bytes.end(), v.begin(), v.end());
    }
    if (ws.sent.size() <= o) ws.sent.resize(ws.plan->orders.size(), 0);
    ws.sent[o] = 1;
    const Ticket t = rt.peer_link(ws.readers.front().component)
                         .data->offer(ws.plan->orders[o].reader, rt.data_tag(rt.self(), ws.stamp), std::move(bytes),
                                      "sending data");
    ws.pushed_sends.push_back(t);
    ws.sends.push_back(t);
    ++(early ? rt.stats().pushed_early : rt.stats().pushed_at_transfer);
}

// Send the complete data messages, once the readers confirmed the plan and this rank knows the tag:
// to each reader in the plan's order (its receives match the messages in the order they come).
void push_complete(Runtime &rt, WriterSession &ws) {
    if (ws.packing != Packing::Packing || !plan_confirmed(rt, ws)) return; // (the stamp came with the confirmation)
    const auto &orders = ws.plan->orders;
    std::vector<int> blocked; // readers whose next message is not complete yet
    for (size_t o = 0; o < orders.size(); ++o) {
        if (ws.sent.size() > o && ws.sent[o]) continue;
        if (std::find(blocked.begin(), blocked.end(), orders[o].reader) != blocked.end()) continue;
        if (ws.missing[o] > 0 || held(ws, o)) blocked.push_back(orders[o].reader);
        else push_order(rt, ws, o, std::move(ws.pushed[o]), true);
    }
}

// Lay out the plan's data messages: where each piece of each write goes.
void lay_out(WriterSession &ws) {
    const WriterPlan &plan = *ws.plan;
    ws.targets.assign(plan.writes.size(), {});
    ws.missing.assign(plan.orders.size(), 0);
    ws.sent.assign(plan.orders.size(), 0);
    for (size_t o = 0; o < plan.orders.size(); ++o) {
        size_t offset = 0;
        for (const auto &p : plan.orders[o].pieces) {
            ws.targets[p.write_id - 1].push_back(WriterSession::Target{o, offset, p.region});
            offset += static_cast<size_t>(p.region.size()) * ws.elsize[static_cast<size_t>(p.varid)];
        }
        ws.missing[o] = plan.orders[o].pieces.size();
        // (with room for the writers' verdict, which a message that carries one gets at its end: push_order
        // appends it without moving the message)
        std::vector<char> bytes = ws.pool->take(offset + (carries_verdict(offset) ? kVerdictBytes : 0));
        bytes.resize(offset);
        ws.pushed.push_back(std::move(bytes));
    }
}

// Copy the plan's pieces of write `pos` (its values: the box's elements in the variable's type).
// Whether that completed a message.
bool pack_write(WriterSession &ws, size_t pos, const match::WriteReq &meta, const char *values) {
    const size_t es = ws.elsize[static_cast<size_t>(meta.varid)];
    phase::Scope timer(phase::Pack);
    bool complete = false;
    for (const auto &t : ws.targets[pos]) {
        match::copy_region(meta.box, const_cast<char *>(values), t.region, ws.pushed[t.order].data() + t.offset, es,
                           true);
        phase::add_bytes(phase::Pack, static_cast<uint64_t>(t.region.size()) * es);
        counters::copied(true, static_cast<uint64_t>(t.region.size()) * es);
        complete = --ws.missing[t.order] == 0 || complete;
    }
    return complete;
}

// The readers confirmed the plan of a session that kept every value so far: pack what was written
// and keep only that from now on.
void start_packing(WriterSession &ws) {
    lay_out(ws);
    for (size_t pos = 0; pos < ws.writes.size(); ++pos) {
        WriteRecord &w = ws.writes[pos];
        pack_write(ws, pos, w.meta, w.values());
        if (w.meta.fill) continue; // (no values of it move: its fill value is all it keeps)
        w.packed = true;
        w.borrowed = nullptr;
        ws.pool->give(std::move(w.data));
    }
    ws.packing = Packing::Packing;
}

// The first put of a session that replays a plan (packing None) decides how it packs: Full (keep every
// value) when the plan cannot be laid out now, else Packing once the readers named the plan (or, for
// a plan of another file name, Unconfirmed until they do). Sizes the elements of the variables first.
void begin_packing(Runtime &rt, FileSession &fs) {
    WriterSession &ws = *fs.ws;
    if (ws.elsize.size() != fs.header.vars().size()) { // the first put, or variables were added since
        ws.elsize.clear();
        for (const auto &v : fs.header.vars()) ws.elsize.push_back(types::type_size(v.type));
    }
    if (ws.packing != Packing::None) return;
    // A plan that writes variables this session has not defined yet (a redef after its first put)
    // cannot be laid out now: keep every value, and replay from them at dtf_transfer.
    const WriterPlan &plan = *ws.plan;
    if (std::any_of(plan.writes.begin(), plan.writes.end(),
                    [&](const match::WriteReq &w) { return w.varid >= static_cast<int>(ws.elsize.size()); })) {
        ws.packing = Packing::Full;
        return;
    }
    sessions(rt).start_early(fs.ws);
    // A plan of another file name (e.g. the last cycle's) is only a guess until the reader root
    // names it too: until it does, keep every value (the session may still replay).
    ws.packing = ws.readers.front().assumed ? Packing::Packing : Packing::Unconfirmed;
    if (ws.packing == Packing::Packing) lay_out(ws);
}

} // namespace

bool pack_for_replay(Runtime &rt, FileSession &fs, const match::WriteReq &meta, const char *values) {
    WriterSession &ws = *fs.ws;
    if (!ws.plan || ws.epoch != 0 || ws.packing == Packing::Full || ws.packing == Packing::Broken) return false;
    if (fs.rule->persist) return false; // every value goes to the file too: keep them all
    const WriterPlan &plan = *ws.plan;
    const size_t pos = ws.writes.size();
    if (ws.ranks != plan.ranks || pos >= plan.writes.size() || !(plan.writes[pos] == meta)) {
        if (ws.packing == Packing::None || ws.packing == Packing::Unconfirmed) {
            ws.packing = Packing::Full; // nothing dropped yet: keep every value, match as without replay
            return false;
        }
        ws.packing = Packing::Broken;
        ws.broken = format("put %zu of writer rank %d, variable '%s' %s, differs from the writes of %s that "
                           "this session replays", pos + 1, fs.rank,
                           fs.header.vars()[static_cast<size_t>(meta.varid)].name.c_str(),
                           meta.box.to_string().c_str(), origin(plan, ws.plan_since).c_str());
        return false;
    }
    begin_packing(rt, fs);
    if (ws.packing == Packing::Full) return false;
    if (ws.packing == Packing::Unconfirmed) {
        // Has the reader root named the plan? (progress() then starts packing: push_early.) Asked at
        // most every 100 us, so that many small puts do not each poll MPI.
        if (now_s() - ws.polled >= 100e-6) {
            rt.progress();
            ws.polled = now_s();
        }
        if (ws.packing == Packing::Unconfirmed) return false;
    }
    if (pack_write(ws, pos, meta, values)) rt.progress(); // a message is complete: send it (push_early)
    return true;
}

bool pack_ahead(Runtime &rt, FileSession &fs, const match::WriteReq &meta, const char *values) {
    WriterSession &ws = *fs.ws;
    if (!ws.plan || ws.epoch != 0 || fs.rule->persist || !ws.plan->bputs_predicted) return false;
    if (ws.packing != Packing::None && ws.packing != Packing::Packing) return false;
    const WriterPlan &plan = *ws.plan;
    const size_t pos = static_cast<size_t>(meta.id) - 1;
    if (ws.ranks != plan.ranks || pos >= plan.writes.size() || !(plan.writes[pos] == meta)) return false;
    begin_packing(rt, fs);
    if (ws.packing != Packing::Packing) return false; // (Unconfirmed: kept whole until the readers name the plan)
    if (pack_write(ws, pos, meta, values)) rt.progress(); // a message is complete: send it (push_early)
    return true;
}

bool push_early(Runtime &rt, WriterSession &ws) {
    if (ws.epoch != 0 || ws.error) return false; // dtf_transfer took over
    if (ws.packing == Packing::Unconfirmed && plan_confirmed(rt, ws)) start_packing(ws);
    if (ws.packing == Packing::Unconfirmed) return true;
    if (ws.packing != Packing::Packing) return false;
    push_complete(rt, ws);
    return std::find(ws.sent.begin(), ws.sent.end(), 0) != ws.sent.end();
}

namespace {

// A message of reader component `reader` about the session.
auto for_session(const WriterSession &ws, int reader, MessageKind kind, int epoch = -1) {
    return [&ws, reader, kind, epoch](const Message &m) {
        return m.kind == kind && m.from_component == reader && m.path == ws.path && m.session == ws.session &&
               (epoch < 0 || m.epoch == epoch);
    };
}

// The matcher's part of serving one ReadRequest of component `reader`: match, send orders to the
// writers, the plan to the reader rank.
void serve_request(Runtime &rt, WriterSession &ws, int reader, const Message &m) {
    phase::Scope timer(phase::Match);
    const int reader_rank = m.source;
    std::vector<match::ReadReq> reads = match::decode_reads(m.payload);
    for (auto &r : reads) r.rank = reader_rank;
    // The same writes and reads as a request of the last session: its result (no promise needed).
    const std::vector<match::Piece> *known = nullptr;
    if (ws.epoch == 1 && ws.memo) {
        if (ws.memo_same < 0) ws.memo_same = ws.group_writes == ws.memo->writes;
        for (size_t i = 0; ws.memo_same == 1 && !known && i < ws.memo->results.size(); ++i)
            if (ws.memo->results[i].first == reads) known = &ws.memo->results[i].second;
    }
    std::vector<match::Piece> pieces = known ? *known : match::match(ws.group_writes, reads);
    ++(known ? rt.stats().requests_reused : rt.stats().requests_matched);
    if (ws.epoch == 1) {
        if (!ws.memo_new) ws.memo_new = std::make_shared<MatchMemo>();
        ws.memo_new->results.emplace_back(reads, pieces);
    }
    std::map<int, std::vector<match::Piece>> by_writer; // (no values move for a fill: the reader writes it)
    for (const auto &p : pieces)
        if (!p.fill) by_writer[p.writer].push_back(p);
    for (auto &[writer, list] : by_writer) {
        ws.ordered_self = ws.ordered_self || writer == ws.rank;
        ws.ordered_any = true;
        PayloadWriter w;
        w.i32(reader);
        w.i32(reader_rank);
        w.bytes(match::encode(list));
        ws.sends.push_back(ws.local->send(writer, Tag::Orders, w.take(), "sending orders"));
    }
    // The plan names writers by their component rank, which is how the reader addresses them.
    for (auto &p : pieces) p.writer = ws.ranks[static_cast<size_t>(p.writer)];
    rt.send(reader, reader_rank,
            Message{MessageKind::ReadPlan, 0, ws.session, m.epoch, ws.path, match::encode(pieces)});
}

// The data of `pieces` (all for one reader) as one message, from the kept writes. Write ids are the
// positions in ws.writes, counted from 1.
std::vector<char> gather_pieces(Runtime &rt, WriterSession &ws, const std::vector<match::Piece> &pieces) {
    phase::Scope timer(phase::Pack);
    auto record = [&](const match::Piece &p) -> WriteRecord & {
        if (p.write_id < 1 || p.write_id > ws.writes_announced)
            fail(DTF_ERR_PEER, "'%s': order for unknown write request %llu", ws.path.c_str(),
                 static_cast<unsigned long long>(p.write_id));
        WriteRecord &w = ws.writes[p.write_id - 1];
        if (w.packed)
            fail(DTF_ERR_UNSUPPORTED, "'%s' (session %d): a reader asked for values of write %llu that this replayed "
                 "session did not keep; set replay_io=0 for this file", ws.path.c_str(), ws.session,
                 static_cast<unsigned long long>(p.write_id));
        return w;
    };
    size_t total = 0;
    for (const auto &p : pieces)
        total += static_cast<size_t>(p.region.size()) * ws.elsize[static_cast<size_t>(record(p).meta.varid)];
    std::vector<char> bytes = rt.buffers().take(total);
    size_t base = 0;
    for (const auto &p : pieces) {
        WriteRecord &w = record(p);
        const size_t es = ws.elsize[static_cast<size_t>(w.meta.varid)];
        match::copy_region(w.meta.box, const_cast<char *>(w.values()), p.region, bytes.data() + base, es, true);
        base += static_cast<size_t>(p.region.size()) * es;
    }
    phase::add_bytes(phase::Pack, bytes.size());
    counters::copied(true, bytes.size());
    return bytes;
}

// A writer's part of a matched batch: send the data of `pieces` (all for rank `reader_rank` of
// component `reader`) in one message.
void send_pieces(Runtime &rt, WriterSession &ws, int reader, int reader_rank, const std::vector<match::Piece> &pieces) {
    if (ws.record && ws.replay != 1) ws.orders_log.push_back(WriterPlan::Order{reader_rank, pieces});
    std::vector<char> bytes = gather_pieces(rt, ws, pieces);
    phase::add_bytes(phase::Transfer, bytes.size());
    log::debug("sending %zu data bytes of '%s' session %d epoch %d to rank %d of '%s'", bytes.size(), ws.path.c_str(),
               ws.session, ws.epoch, reader_rank, rt.config().component_name(reader).c_str());
    ws.sends.push_back(rt.peer_link(reader).data->offer(reader_rank, rt.data_tag(rt.self(), ws.stamp), std::move(bytes),
                                                        "sending data"));
}

// The reader group of each reader component, once its leader said who reads (ReaderOpened), or at
// once (ReaderSide::assumed); whether every one is known. FileDefined went to every rank of the
// reader components (unless assumed); the root withdraws it from the others, which will never open
// this session (with its next FileDefined to them).
bool learn_readers(Runtime &rt, WriterSession &ws) {
    bool all = true;
    for (ReaderSide &side : ws.readers)
        while (!side.opened && !side.assumed) {
            auto m = rt.take(for_session(ws, side.component, MessageKind::ReaderOpened));
            if (!m) {
                all = false;
                break;
            }
            PayloadReader r(m->payload, "reader-opened");
            std::vector<int> ranks = r.ints(1 << 24);
            const int64_t plan = r.i64();
            const int64_t stamp = r.i64();
            if (ranks.empty())
                fail(DTF_ERR_PEER, "'%s': component '%s' opened it with no rank", ws.path.c_str(),
                     rt.config().component_name(side.component).c_str());
            if (!ws.stamp_known) {
                ws.stamp = stamp;
                ws.stamp_known = true;
            } else if (ws.rank == ws.leader && stamp != ws.stamp) {
                fail(DTF_ERR_PEER, "'%s' (session %d): component '%s' opened another session of it (stamp %lld, not "
                     "%lld)", ws.path.c_str(), ws.session, rt.config().component_name(side.component).c_str(),
                     static_cast<long long>(stamp), static_cast<long long>(ws.stamp));
            }
            // A serial file's readers open it one process at a time: the group is their union, known
            // once serial_readers of them came, and the plan theirs if each holds the same one.
            side.plan = !ws.serial || side.serial_opened.empty() || side.plan == plan ? plan : 0;
            std::vector<int> &into = ws.serial ? side.serial_opened : side.ranks;
            into.insert(into.end(), ranks.begin(), ranks.end());
            if (ws.serial) {
                std::sort(into.begin(), into.end());
                into.erase(std::unique(into.begin(), into.end()), into.end());
                if (into.size() < static_cast<size_t>(rt.serial_readers(ws.serial_readers, side.component))) continue;
                side.ranks = into;
            }
            side.opened = true;
            if (ws.rank == 0 && ws.defined_to_all &&
                side.ranks.size() < static_cast<size_t>(rt.peer(side.component).remote_size))
                rt.withdraw(side.component, ws.path, ws.session);
        }
    return all;
}

// The matcher collects the write metadata of its work group.
void collect_metadata(WriterSession &ws) {
    while (ws.meta_expected > 0) {
        auto in = ws.local->poll(Tag::Meta, "receiving write metadata");
        if (!in) return;
        for (auto &w : match::decode_writes(in->bytes)) {
            w.rank = in->source;
            ws.group_writes.push_back(w);
        }
        if (--ws.meta_expected == 0) // in (rank, id) order whatever the arrival order (see MatchMemo)
            std::sort(ws.group_writes.begin(), ws.group_writes.end(),
                      [](const match::WriteReq &a, const match::WriteReq &b) {
                          return std::make_pair(a.rank, a.id) < std::make_pair(b.rank, b.id);
                      });
    }
}

// HeaderFinal to every rank of reader component `side`, from the writer leader (rank 0 but in a
// replay of a plan of known readers): the replayed plan's stamp (0: none, -1: the writers cannot
// replay to these readers) and, for messages, its session and path; then the header with the final
// record count. In a replayed epoch of a plan of known readers whose header did not change, the data
// messages carry the verdict (held()): it goes only to the readers that have none of them in the
// plan's first batch, each from its own writer rank (WriterPlan::own_writers), so that no rank sends
// it to every reader.
void send_header_final(Runtime &rt, WriterSession &ws, ReaderSide &side, const WriterPlan *replayed,
                       bool cannot = false) {
    side.header_sent = true;
    const bool verdicts = replayed && side.assumed && !ws.header_changed;
    std::vector<int> to;
    if (verdicts) {
        to = own_readers_of(*replayed, ws.ranks[static_cast<size_t>(ws.rank)], true);
    } else if (ws.rank == ws.leader) {
        to = side.ranks;
    }
    if (to.empty()) return;
    PayloadWriter p;
    p.i64(ws.stamp);
    p.i64(cannot ? -1 : replayed ? replayed->stamp : 0);
    p.i32(replayed ? replayed->session : 0);
    p.str(replayed ? replayed->path : std::string());
    p.i32(ws.final_as_defined ? 0 : 1); // 0: FileDefined's header with this record count; 1: the header
    if (ws.final_as_defined) p.i64(ws.final_numrecs);
    else p.bytes(ws.final_header);
    const std::vector<char> payload = p.take();
    for (int r : to)
        rt.send(side.component, r, Message{MessageKind::HeaderFinal, 0, ws.session, ws.epoch, ws.path, payload});
}

// The matcher serves the requests of the epoch of every reader component that opened the file, each
// as they come; once every rank of every reader is done it tells its group (after the orders, on
// the same tag, so they arrive first).
void serve_requests(Runtime &rt, WriterSession &ws) {
    for (ReaderSide &side : ws.readers) {
        if (!side.known()) continue;
        while (auto m = rt.take(for_session(ws, side.component, MessageKind::ReadRequest)))
            serve_request(rt, ws, side.component, *m);
    }
    if (!led_epoch(ws)) take_done(rt, ws);
}

// The ReaderDones this rank takes from reader `side` in an epoch: as a matcher, one from every reader
// rank; in a led epoch, those of the reader ranks whose own writer rank it is (WriterPlan::own_writers).
size_t expected_done(const WriterSession &ws, const ReaderSide &side) {
    return led_epoch(ws) ? ws.own_readers : side.ranks.size();
}

// The readers' ReaderDone of the epoch, on a matcher or (led_epoch) on every writer rank, each from
// the reader ranks it feeds: once every one is done, the epoch ends (send_finish, or end_quietly).
void take_done(Runtime &rt, WriterSession &ws) {
    for (ReaderSide &side : ws.readers) {
        if (!side.known()) continue;
        while (auto done = rt.take(for_session(ws, side.component, MessageKind::ReaderDone, ws.epoch))) {
            PayloadReader r(done->payload, "reader-done");
            if (r.i32() != 0) ws.drop_plan = true; // a reader rank did not follow the replayed plan, or drops it
            ++side.done;
            if (r.i32() == 0) { // its writer rank in a replay, and whether its data would bring it no verdict
                const int own = r.i32(), no_verdict = r.i32() == 0;
                ws.own_writers_log.insert(ws.own_writers_log.end(), {done->source, own, no_verdict});
            } else { // a replayed session's: which reader ranks it read with, and the plan it holds (a
                // serial file's reader processes each read alone)
                const bool same_ranks = static_cast<uint64_t>(r.i64()) ==
                                        ranks_hash(ws.serial ? std::vector<int>{done->source} : side.ranks);
                const int64_t plan = r.i64();
                if (!same_ranks || plan != side.plan)
                    fail(DTF_ERR_UNSUPPORTED, "'%s' (session %d): %s than in %s, whose transfer pattern it replays, "
                         "and the writers kept only the values that pattern reads; set replay_io=0 for this file",
                         ws.path.c_str(), ws.session,
                         !same_ranks ? "other reader ranks read it" : "its readers held another plan",
                         ws.plan ? origin(*ws.plan, ws.plan_since).c_str() : "the last session");
            }
        }
    }
    if (!ws.matcher_done && std::all_of(ws.readers.begin(), ws.readers.end(), [&](const ReaderSide &side) {
            return side.known() && side.done == expected_done(ws, side);
        })) {
        ws.matcher_done = true;
        if (!(ws.replay == 1 && ws.quiet_end)) send_finish(ws); // (else: end_quietly)
    }
}

// The matcher's finish to the ranks of its work group, after the orders on the same tag. (It knows by
// itself, unless it sent itself orders this epoch: then its finish comes after them, as the others'.)
// With it, in a session that records a plan, the reader ranks that get no verdict with their data
// (ReaderDone said so), which the plan keeps on every writer rank (the leader of a later session
// sends them the final header).
void send_finish(WriterSession &ws) {
    std::vector<int> group;
    for (int x = ws.ordered_self ? ws.rank : ws.rank + 1; x < std::min(ws.size, ws.rank + ws.workgroup); ++x)
        group.push_back(x);
    PayloadWriter finish;
    finish.i32(-1); // (orders begin with the reader component)
    finish.i32(ws.drop_plan ? 1 : 0);
    finish.ints(ws.own_writers_log);
    if (!group.empty()) ws.sends.push_back(ws.local->send(group, Tag::Orders, finish.take(), "sending finish"));
    if (!ws.ordered_self) ws.finished = true;
}

// The end of a replayed epoch (WriterSession::quiet_end): one collective over the writer ranks says
// whether a reader left the plan, and whether a matcher sent orders (a reader that left it asked for
// values), whose finish then follows them as in a matched epoch. No rank waits for it before the
// close, which returns once the epoch's data is delivered.
void end_quietly(WriterSession &ws) {
    if (ws.finished || ws.quiet_done) return;
    if (!ws.finish_op) {
        const bool knows = led_epoch(ws) || ws.is_matcher(); // (who takes ReaderDone)
        if (!ws.finish_due || (knows && !ws.matcher_done)) return;
        const int64_t in[2] = {ws.drop_plan ? 1 : 0, ws.ordered_any ? 1 : 0};
        ws.finish_op = ws.group->allreduce_max(in, ws.finish_result, 2);
    }
    if (!ws.finish_op->test()) return;
    ws.finish_op.reset();
    ws.quiet_done = true;
    if (ws.finish_result[0] != 0) ws.drop_plan = true;
    if (ws.finish_result[1] == 0) ws.finished = true;
    else if (ws.is_matcher()) send_finish(ws);
}

} // namespace

void start_epoch(Runtime &rt, const std::shared_ptr<WriterSession> &ws, const model::Header &header) {
    if (ws->epoch > 0) { // (before the first epoch: the stamp and data sent ahead, which are the first epoch's)
        ws->sends.clear();
        ws->pushed_sends.clear();
    }
    ++ws->epoch;
    ws->serving = true;
    ws->replay = -1;
    ws->finished = false;
    ws->ordered_self = ws->ordered_any = false;
    ws->finish_due = ws->matcher_done = ws->quiet_done = false;
    for (ReaderSide &side : ws->readers) side.header_sent = false, side.done = 0;
    ws->final_numrecs = header.numrecs();
    // Usually only the record count changed since FileDefined (agree_numrecs): then that is all the
    // final header says (a few bytes to each reader rank instead of the header, which is above MPI's
    // eager limit for files of many variables, so that each of those messages waited for its receiver).
    ws->final_as_defined = !ws->header_changed;
    if (ws->rank == ws->leader && ws->header_changed) ws->final_header = header.encode(); // (the leader sends it)
    ws->elsize.clear();
    for (const auto &v : header.vars()) ws->elsize.push_back(types::type_size(v.type));
    if (ws->replay_candidate) {
        // Every writer rank's writes are its plan's, and every rank holds the plan of one session
        // (agreed): the matcher has its work group's writes from that session's plan (a reader that
        // leaves the plan is served from them).
        ws->writes_announced = ws->writes.size();
        if (ws->is_matcher()) ws->group_writes = ws->plan->group_writes;
        ws->meta_expected = 0;
    } else {
        // Every writer rank sends its writes not yet announced to its matcher.
        const int matcher = ws->rank / ws->workgroup * ws->workgroup;
        std::vector<match::WriteReq> fresh;
        for (size_t i = ws->writes_announced; i < ws->writes.size(); ++i) fresh.push_back(ws->writes[i].meta);
        ws->writes_announced = ws->writes.size();
        ws->sends.push_back(ws->local->send(matcher, Tag::Meta, match::encode(fresh), "sending write metadata"));
        ws->meta_expected = ws->is_matcher() ? std::min(ws->workgroup, ws->size - ws->rank) : 0;
    }
    sessions(rt).serve(ws);
}

bool step(Runtime &rt, WriterSession &ws) {
    if (!ws.serving) return true;
    const bool readers_known = learn_readers(rt, ws);
    if (ws.replay < 0 && (!ws.plan || readers_known)) {
        // Replay: every writer rank's writes are the plan's (agreed), and the readers are the same
        // ranks holding the same plan: push the plan's data without waiting for requests.
        const WriterPlan *plan = ws.plan.get();
        const ReaderSide &reader = ws.readers.front(); // a replayed session has one reader
        ws.replay = ws.replay_candidate && reader.ranks == plan->reader_ranks && reader.plan == plan->stamp;
        if (ws.replay == 1) {
            // The messages not sent ahead: packed at put, or (the readers had not confirmed the plan
            // by dtf_transfer) gathered now from the writes, which were all kept.
            const bool packed = ws.packing == Packing::Packing;
            for (size_t o = 0; o < plan->orders.size(); ++o)
                if (ws.sent.size() <= o || !ws.sent[o])
                    push_order(rt, ws, o,
                               packed ? std::move(ws.pushed[o]) : gather_pieces(rt, ws, plan->orders[o].pieces), false);
        } else if (ws.packing == Packing::Packing) {
            // The values were kept only where the plan's readers read them, but other ranks read now.
            send_header_final(rt, ws, ws.readers.front(), nullptr, true);
            fail(DTF_ERR_UNSUPPORTED, "'%s' (session %d): other reader ranks opened it than in %s, whose "
                 "transfer pattern it replays, and the writers kept only the values that pattern reads; set "
                 "replay_io=0 for this file", ws.path.c_str(), ws.session, origin(*plan, ws.plan_since).c_str());
        }
    }
    if (ws.replay >= 0) // each reader its final header as soon as it opened the file
        for (ReaderSide &side : ws.readers)
            if (side.known() && !side.header_sent)
                send_header_final(rt, ws, side, ws.replay == 1 ? ws.plan.get() : nullptr);
    collect_metadata(ws);
    if (ws.is_matcher() && ws.replay >= 0 && ws.meta_expected == 0) serve_requests(rt, ws);
    if (led_epoch(ws)) take_done(rt, ws);
    if (ws.replay == 1 && ws.quiet_end) end_quietly(ws);
    while (auto in = ws.local->poll(Tag::Orders, "receiving orders")) {
        PayloadReader r(in->bytes, "orders");
        const int reader = r.i32();
        if (reader < 0) { // finish: whether a reader left the replayed plan, and who needs the final header
            if (r.i32() != 0) ws.drop_plan = true;
            ws.own_writers_log = r.ints(1 << 24);
            ws.finished = true;
            continue;
        }
        const int reader_rank = r.i32();
        if (std::none_of(ws.readers.begin(), ws.readers.end(),
                         [&](const ReaderSide &s) { return s.component == reader; }))
            fail(DTF_ERR_INTERNAL, "'%s': orders for component %d, which does not read it", ws.path.c_str(), reader);
        send_pieces(rt, ws, reader, reader_rank, match::decode_pieces(r.bytes()));
    }
    if (!ws.finished || !ws.local->done(ws.sends) ||
        std::any_of(ws.readers.begin(), ws.readers.end(), [](const ReaderSide &s) { return !s.header_sent; }))
        return false;
    ws.serving = false;
    return true;
}

int blocking_reader(const WriterSession &ws) {
    for (const ReaderSide &side : ws.readers)
        if (!side.known()) return side.component;
    if (ws.is_matcher())
        for (const ReaderSide &side : ws.readers)
            if (side.done < side.ranks.size()) return side.component;
    return ws.readers.front().component;
}

std::string waiting_for(Runtime &rt, const WriterSession &ws) {
    auto name = [&](const ReaderSide &side) {
        return "'" + rt.config().component_name(side.component) + "'";
    };
    std::string absent;
    for (const ReaderSide &side : ws.readers)
        if (!side.known()) absent += (absent.empty() ? "" : ", ") + name(side);
    if (!absent.empty())
        return format("dtf_transfer of '%s' (session %d) waited for component%s %s to open it", ws.path.c_str(),
                      ws.session, absent.find(',') != std::string::npos ? "s" : "", absent.c_str());
    std::string state, readers;
    for (const ReaderSide &side : ws.readers) {
        readers += (readers.empty() ? "" : ", ") + name(side);
        if (ws.is_matcher())
            state += format("%s%zu of %zu reader ranks%s done", state.empty() ? "" : ", ", side.done, side.ranks.size(),
                            ws.readers.size() > 1 ? (" of " + name(side)).c_str() : "");
    }
    if (!ws.is_matcher())
        state = format("its matcher (writer rank %d) %s every reader rank is done",
                       ws.rank / ws.workgroup * ws.workgroup, ws.finished ? "said" : "has not yet said");
    if (ws.meta_expected > 0)
        state += format(", write metadata of %d ranks of its work group missing", ws.meta_expected);
    return format("dtf_transfer of '%s' (session %d, writer rank %d) waited for %s %s: %s, %zu bytes not delivered",
                  ws.path.c_str(), ws.session, ws.rank, ws.readers.size() > 1 ? "components" : "component",
                  readers.c_str(), state.c_str(), ws.local->pending_bytes(ws.sends));
}

namespace {

// Whether a replayed epoch's data is with the readers: its pushed messages and final header are sent
// and complete, so it needs neither the application's buffers nor its time any more. What is left
// (the readers' ReaderDone and the matcher's finish) is bookkeeping that any later wait, or
// dtf_finalize, advances. (A replayed epoch sends no write metadata, which a matcher whose own data
// is delivered might not receive before it returned to a collective of the program.)
bool delivered(const WriterSession &ws) {
    return ws.replay == 1 && ws.readers.front().header_sent && ws.local->done(ws.pushed_sends);
}

// Waits until the epoch being served (if any) is served, or with until_delivered until its data is
// delivered; a failure while serving in the background is reported here, once.
void finish_epoch(Runtime &rt, WriterSession &ws, bool until_delivered = false) {
    if (ws.serving)
        rt.wait_until([&] {
            rt.check_contested(ws.path, ws.session, [&] { return waiting_for(rt, ws); });
            return !ws.serving || (until_delivered && delivered(ws));
        }, [&] { return waiting_for(rt, ws); }, [&] { return blocking_reader(ws); }, ws.give_up_after);
    if (ws.error) {
        sessions(rt).writer_plans.drop(ws.plan_key, ws.plan);
        Error e = *ws.error;
        ws.error.reset();
        throw e;
    }
}

// The session fails with `what`: the readers' waits end now, saying why (not after DTF_TIMEOUT).
[[noreturn]] void fail_session(Runtime &rt, FileSession &fs, const std::string &what, bool quiet) {
    WriterSession &ws = *fs.ws;
    const Error failed(DTF_ERR_UNSUPPORTED, what, quiet);
    if (fs.rank == ws.leader) {
        PayloadWriter p;
        p.i64(ws.stamp);
        p.str(format("writer rank %d: %s", fs.rank, failed.what()));
        const std::vector<char> payload = p.take();
        for (const ReaderSide &side : ws.readers)
            if (!rt.lost(side.component))
                rt.notify(side.component, Message{MessageKind::SessionFailed, 0, fs.session, 0, fs.path, payload});
    }
    throw failed;
}

// The largest record written by any writer rank: the unlimited dimension's length; and whether
// every writer rank's writes are those of the path's replay plan. Also the record counts taken from
// the plan (agree_records): each one's true value, and whether one was wrong where the program asked.
void agree_numrecs(Runtime &rt, FileSession &fs) {
    WriterSession &ws = *fs.ws;
    // [3]: the root's stamp, which the other ranks learn here if no ReaderOpened brought it before;
    // [4], [5]: the plan's stamp and its negation (every rank holds the same plan if they agree)
    // [6]: whether the header changed since FileDefined but for the record count (the root's view)
    // [7]: whether the program asked for a record count taken from the plan; [8]: the stamp the leader
    // reserves for the next session of the plan (WriterPlan::next_stamp); then each count's true value
    const int64_t plan_stamp = ws.plan ? ws.plan->stamp : 0;
    const int64_t reserved = ws.record && fs.rank == ws.leader ? rt.new_stamp() : 0;
    std::vector<int64_t> all = {fs.header.numrecs(), 0, 0, ws.stamp, plan_stamp, -plan_stamp, 0, ws.guess_seen,
                                reserved};
    if (fs.rank == ws.leader && fs.header.revision() != ws.defined_revision) // (else unchanged: no encoding)
        all[6] = !model::Header::same_but_numrecs(fs.header.encode(), ws.defined_header);
    for (const auto &w : ws.writes) {
        if (!fs.header.is_record_var(w.meta.varid) || w.meta.box.size() == 0) continue;
        const auto &b = w.meta.box;
        all[0] = std::max<int64_t>(all[0], b.start[0] + (b.count[0] - 1) * b.stride[0] + 1);
    }
    bool same = ws.plan && ws.epoch == 0 && ws.ranks == ws.plan->ranks && ws.writes.size() == ws.plan->writes.size();
    for (size_t i = 0; same && i < ws.writes.size(); ++i) same = ws.writes[i].meta == ws.plan->writes[i];
    const bool mine = !same || ws.packing == Packing::Broken; // this rank's puts left the plan
    all[1] = mine;
    all[2] = ws.packing == Packing::Packing || ws.packing == Packing::Broken;
    for (const auto &g : ws.guesses) all.push_back(g.own);
    rt.allreduce_max(*fs.group, all.data(), static_cast<int>(all.size()),
                     format("dtf_transfer of '%s' (session %d)", fs.path.c_str(), fs.session));
    fs.header.set_numrecs(all[0]);
    ws.header_changed = all[6] != 0;
    ws.stamp = all[3];
    ws.stamp_known = true;
    ws.next_stamp = all[8];
    const std::vector<WriterSession::Guess> guesses = std::move(ws.guesses);
    ws.guesses.clear();
    ws.guess_seen = false;
    ws.guessed_numrecs = 0;
    for (size_t i = 0; i < guesses.size(); ++i) {
        const WriterSession::Guess &g = guesses[i];
        const int64_t truth = all[9 + i];
        ws.agreements[g.agreement].numrecs = truth;
        if (truth != g.planned && all[7])
            fail_session(rt, fs, format("'%s' (session %d): a record count this session took from %s, whose pattern "
                                        "it replays (replay_io=1, %s:%d), was %lld at its collective call %zu, where "
                                        "the writer ranks had written %lld records, and the program asked for it "
                                        "since: set replay_io=0 for this file", fs.path.c_str(), fs.session,
                                        origin(*ws.plan, ws.plan_since).c_str(), rt.config().path.c_str(),
                                        fs.rule->line, static_cast<long long>(g.planned), g.agreement + 1,
                                        static_cast<long long>(truth)),
                         fs.rank != ws.leader);
    }
    const bool differ = all[1] != 0 || all[4] != -all[5];
    ws.replay_candidate = ws.plan && !differ;
    if (ws.plan && differ && all[2] != 0) { // some values were dropped, yet the pattern changed
        const std::string replayed = origin(*ws.plan, ws.plan_since);
        sessions(rt).writer_plans.drop(ws.plan_key, ws.plan);
        const std::string what =
            !ws.broken.empty() ? ws.broken
            : mine             ? format("the puts of writer rank %d differ from those of %s", fs.rank, replayed.c_str())
                               : format("another writer rank's puts differ from those of %s", replayed.c_str());
        fail_session(rt, fs, format("dtf_transfer of '%s' (session %d): %s, whose transfer pattern it replays "
                                    "(replay_io=1, %s:%d); the values were kept only where that pattern reads them, "
                                    "so the session cannot be matched again: set replay_io=0 for this file",
                                    fs.path.c_str(), fs.session, what.c_str(), rt.config().path.c_str(), fs.rule->line),
                     !mine);
    }
}

// Fills not announced yet whose variable's fill value changed since they were made (a _FillValue
// deleted, renamed or copied over in a later define mode): the file holds the old value there, the
// readers know only the new one, so those become writes of their values.
void settle_fills(FileSession &fs) {
    WriterSession &ws = *fs.ws;
    for (size_t i = ws.writes_announced; i < ws.writes.size(); ++i) {
        WriteRecord &w = ws.writes[i];
        if (!w.meta.fill || w.data == fill_value(fs.header, w.meta.varid)) continue;
        const size_t es = w.data.size(), n = static_cast<size_t>(w.meta.box.size());
        std::vector<char> values = ws.pool->take(n * es);
        for (size_t k = 0; k < n; ++k) std::memcpy(values.data() + k * es, w.data.data(), es);
        ws.pool->give(std::move(w.data));
        w.data = std::move(values);
        w.meta.fill = false;
    }
}

// dtf_transfer on the writer: one more epoch. With the progress thread the readers are served in
// the background and this returns at once (the values are dtf's copies); without it, it serves
// until every reader rank is done, or, in a replayed epoch, until its data is delivered.
int serve(Runtime &rt, FileSession &fs) {
    announce_definition(rt, fs); // a file opened with NC_WRITE and not written to
    ++fs.ws->seq; // (a collective call: writes after it take effect after those before)
    fs.ws->finish_due = true;
    finish_epoch(rt, *fs.ws); // the previous epoch, completely
    settle_fills(fs);
    agree_numrecs(rt, fs);
    start_epoch(rt, fs.ws, fs.header);
    if (!(rt.progress_thread_running() || fs.ending_turn) || fs.rule->falls_back())
        finish_epoch(rt, *fs.ws, true);
    else
        rt.progress(); // the first step now (the final header), the rest in the background
    return NC_NOERR;
}

} // namespace

bool writer_close(Runtime &rt, FileSession &fs) {
    WriterSession &ws = *fs.ws;
    if (fs.peers.empty()) { // an output file (persist=1 without readers): nothing to serve; the stamp names
        int64_t stamp = ws.stamp; // its file (an I/O server's parts): the root's, agreed
        rt.allreduce_max(*fs.group, &stamp, 1, format("closing '%s' (session %d)", fs.path.c_str(), fs.session));
        ws.stamp = stamp;
        ws.closed = true;
        return false;
    }
    // One more epoch if no dtf_transfer came, or if any writer rank wrote since the last one: agreed,
    // since serve() is collective (a put of one rank after dtf_transfer is enough).
    int64_t any = ws.epoch == 0 || ws.writes_announced < ws.writes.size();
    if (ws.epoch > 0)
        rt.allreduce_max(*fs.group, &any, 1, format("closing '%s' (session %d)", fs.path.c_str(), fs.session));
    if (any) serve(rt, fs);
    if (!ws.serving || !(rt.progress_thread_running() || fs.ending_turn) || ws.borrows || fs.rule->falls_back())
        finish_epoch(rt, ws, true);
    ws.closed = true;
    if (!ws.serving) end_writer_session(rt, ws);
    return ws.serving;
}

bool give_up_readers(Runtime &rt, FileSession &fs, const Error &e) {
    // fallback=wait: only a lost reader (or one that failed to answer for DTF_TIMEOUT) is given up;
    // fallback=N: one not served in N seconds too
    if (!fs.rule->falls_back()) return false;
    const bool lost = std::any_of(fs.peers.begin(), fs.peers.end(), [&](int r) { return rt.lost(r); });
    if (!lost && !(e.code() == DTF_ERR_TIMEOUT && fs.ws->give_up_after > 0)) return false;
    if (fs.gave_up.empty()) fs.gave_up = e.what();
    sessions(rt).forsake(fs.ws);
    return true;
}

std::string agree_gave_up(Runtime &rt, FileSession &fs, const std::string &context) {
    try {
        rt.on_all(*fs.group, [&] { if (!fs.gave_up.empty()) throw Error(DTF_ERR_PEER, fs.gave_up); }, context);
        return {};
    } catch (const Error &e) {
        if (fs.gave_up.empty()) {
            fs.gave_up = e.what();
            sessions(rt).forsake(fs.ws);
        }
        return fs.gave_up;
    }
}

void settle_given_up(Runtime &rt, WriterSession &ws) {
    if (!ws.is_matcher() || ws.meta_expected == 0) return;
    try {
        rt.wait_until([&] {
            collect_metadata(ws);
            return ws.meta_expected == 0;
        }, [&] {
            return format("'%s' (session %d): the matcher waited for the write metadata of %d ranks of its work group",
                          ws.path.c_str(), ws.session, ws.meta_expected);
        });
    } catch (const Error &e) { // (the file is written all the same)
        log::warn("%s", e.what());
    }
}

namespace {

// The data messages of a recorded session as a replay of its plan sends them: each reader rank's in
// order, those that add up to at most `max` bytes as one (bundle_heads), at the first one's place.
std::vector<WriterPlan::Order> bundle_orders(std::vector<WriterPlan::Order> orders, const std::vector<size_t> &elsize,
                                             size_t max) {
    std::map<int, std::vector<size_t>> of_reader; // the orders to each reader rank
    for (size_t o = 0; o < orders.size(); ++o) of_reader[orders[o].reader].push_back(o);
    std::vector<size_t> head(orders.size());
    for (const auto &[reader, list] : of_reader) {
        std::vector<size_t> sizes;
        for (size_t o : list) sizes.push_back(pieces_bytes(orders[o].pieces, elsize));
        const std::vector<size_t> heads = bundle_heads(sizes, max);
        for (size_t i = 0; i < list.size(); ++i) head[list[i]] = list[heads[i]];
    }
    std::vector<WriterPlan::Order> out;
    std::vector<size_t> at(orders.size()); // where each head went in `out`
    for (size_t o = 0; o < orders.size(); ++o) {
        if (head[o] == o) {
            at[o] = out.size();
            out.push_back(std::move(orders[o]));
            continue;
        }
        auto &pieces = out[at[head[o]]].pieces;
        pieces.insert(pieces.end(), orders[o].pieces.begin(), orders[o].pieces.end());
    }
    return out;
}

} // namespace

void end_writer_session(Runtime &rt, WriterSession &ws) {
    if (ws.is_matcher()) { // keep this session's match results for the next one
        auto &memos = sessions(rt).match_memos;
        if (ws.epoch == 1 && ws.memo_new && !ws.error) {
            // (the session is over; a plan recorded from it keeps them too)
            ws.memo_new->writes = ws.record ? ws.group_writes : std::move(ws.group_writes);
            ws.memo_new->kept = rt.new_stamp();
            if (memos.size() >= Sessions::kMemos && !memos.count(ws.plan_key))
                memos.erase(std::min_element(memos.begin(), memos.end(), [](const auto &a, const auto &b) {
                    return a.second->kept < b.second->kept;
                }));
            memos[ws.plan_key] = std::move(ws.memo_new);
        } else {
            memos.erase(ws.plan_key);
        }
    }
    if (!ws.record) return;
    auto &plans = sessions(rt).writer_plans;
    // (a session whose definition changed after FileDefined records no plan, on either side: the
    // readers learn it from the final header)
    if (ws.epoch != 1 || ws.drop_plan || ws.header_changed) {
        plans.drop(ws.plan_key, ws.plan); // the pattern changed: the next session matches again
        return;
    }
    if (ws.replay == 1) { // every reader followed the plan: it holds
        if (ws.path != ws.plan->path) ws.plan->followed = true;
        ws.plan->repeated = true;
        ws.plan->next_stamp = ws.next_stamp;
        if (!ws.bputs_predicted) ws.plan->bputs_predicted = false;
        return;
    }
    auto plan = std::make_shared<WriterPlan>();
    plan->stamp = ws.stamp;
    plan->path = ws.path;
    plan->session = ws.session;
    plan->ranks = ws.ranks;
    plan->reader_ranks = ws.readers.front().ranks; // a recorded session has one reader
    plan->defined_header = std::move(ws.defined_header);
    plan->bputs_predicted = ws.bputs_predicted;
    plan->own_writers = std::move(ws.own_writers_log);
    plan->agreements = std::move(ws.agreements);
    plan->next_stamp = ws.next_stamp;
    for (const auto &w : ws.writes) plan->writes.push_back(w.meta);
    if (ws.is_matcher()) plan->group_writes = std::move(ws.group_writes);
    plan->orders = bundle_orders(std::move(ws.orders_log), ws.elsize, bundle_max(rt, ws.readers.front().component));
    plans.keep(ws.plan_key, ws.plan, std::move(plan));
}

int writer_transfer(Runtime &rt, FileSession &fs) {
    if (!fs.rule->falls_back()) return serve(rt, fs);
    // fallback=: the readers given up by one writer rank are given up by all (serve() is collective)
    const std::string context = format("dtf_transfer of '%s' (session %d)", fs.path.c_str(), fs.session);
    if (!agree_gave_up(rt, fs, context).empty()) return NC_NOERR; // the close writes the file
    try {
        return serve(rt, fs);
    } catch (const Error &e) {
        if (!give_up_readers(rt, fs, e)) throw;
        return NC_NOERR;
    }
}

bool agree_records(Runtime &rt, FileSession &fs, bool gets, const std::string &context) {
    WriterSession &ws = *fs.ws;
    const size_t k = ws.agreements.size();
    const WriterPlan *plan = ws.plan.get();
    const bool first_epoch = ws.epoch == 0; // (a plan's session has one dtf_transfer)
    // (a plan of this very path, or of a series named after the cycle whose readers followed it: not one
    // of a similar name that another program may write)
    const bool trusted = plan && plan->repeated && (ws.plan_exact || plan->followed);
    if (first_epoch && trusted && k < plan->agreements.size() && !plan->agreements[k].gets) {
        const int64_t planned = plan->agreements[k].numrecs;
        ws.agreements.push_back(plan->agreements[k]);
        ws.guesses.push_back(WriterSession::Guess{k, planned, fs.header.numrecs()}); // (alike on every rank)
        ws.guessed_numrecs = std::max(ws.guessed_numrecs, planned); // (the header keeps this rank's own count)
        if (gets)
            fail(DTF_ERR_UNSUPPORTED, "%s: this rank gets from the file it writes, where the writer ranks of %s, "
                 "whose pattern this session replays (replay_io=1, %s:%d), got nothing, so the others do not join "
                 "the get: set replay_io=0 for this file", context.c_str(), origin(*plan, ws.plan_since).c_str(),
                 rt.config().path.c_str(), fs.rule->line);
        return false;
    }
    int64_t agreed[2] = {gets ? 1 : 0, fs.header.numrecs()};
    rt.allreduce_max(*fs.group, agreed, 2, context);
    fs.header.set_numrecs(agreed[1]);
    ws.guessed_numrecs = 0; // (agreed since)
    if (first_epoch) ws.agreements.push_back(RecordAgreement{agreed[1], agreed[0] != 0});
    return agreed[0] != 0;
}

} // namespace dtf::runtime
