// Transfer mode: the writer and reader roles of a session, replay and fallback reads; the protocol is in
// docs/ARCHITECTURE.md.
#include <pnetcdf.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <limits>

#include "common/clock.hpp"
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

std::string plan_key(const std::string &path, const std::vector<int> &ranks) {
    // The path with every run of digits as '#' (hist.0001.nc and hist.0002.nc share a plan), and the
    // component ranks of the file's communicator (each ensemble member's files have their own).
    std::string key;
    for (size_t i = 0; i < path.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(path[i])))
            key += path[i];
        else if (i == 0 || !std::isdigit(static_cast<unsigned char>(path[i - 1])))
            key += '#';
    key += '|';
    for (int r : ranks) key += std::to_string(r) + ',';
    return key;
}

int name_distance(const std::string &a, const std::string &b) {
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    int differ = 0;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            const size_t i0 = i, j0 = j;
            while (i < a.size() && digit(a[i])) ++i;
            while (j < b.size() && digit(b[j])) ++j;
            if (a.compare(i0, i - i0, b, j0, j - j0) != 0) ++differ;
        } else if (a[i] == b[j] && !digit(a[i])) {
            ++i, ++j;
        } else {
            return std::numeric_limits<int>::max();
        }
    }
    return i == a.size() && j == b.size() ? differ : std::numeric_limits<int>::max();
}

namespace {

// The session a plan was recorded in, and how many sessions before the one that found it as its
// `since`-th (with num_sessions=1 every session of a path is number 1: this says which cycle), for
// messages.
template <class Plan> std::string origin(const Plan &plan, int since) {
    return format("session %d of '%s' (%d session%s before this one)", plan.session, plan.path.c_str(), since,
                  since == 1 ? "" : "s");
}

bool learn_readers(Runtime &rt, WriterSession &ws);
void send_finish(WriterSession &ws);
void take_done(Runtime &rt, WriterSession &ws);

// A replayed epoch of a session with a writer leader (WriterSession::leader): the readers' leader
// says ReaderDone for all of them to the writer leader.
bool led_epoch(const WriterSession &ws) {
    return ws.replay == 1 && ws.quiet_end && !ws.readers.empty() && ws.readers.front().assumed;
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

// ---------------------------------------------------------------------------------------------
// Writer side

void writer_put(Runtime &rt, FileSession &fs) {
    if (fs.header.in_define_mode()) return; // (an iput or bput posted in define mode)
    WriterSession &ws = *fs.ws;
    if (!ws.first_put) {
        ws.first_put = true;
        ws.first_put_revision = fs.header.revision();
    }
    if (!sessions(rt).late_definitions.count(ws.plan_key)) announce_definition(rt, fs);
}

void note_definition(Runtime &rt, const FileSession &fs) {
    const WriterSession &ws = *fs.ws;
    if (ws.first_put && fs.header.revision() != ws.first_put_revision)
        sessions(rt).late_definitions.insert(ws.plan_key);
    else sessions(rt).late_definitions.erase(ws.plan_key);
}

// FileDefined, at the writer's first put (not at enddef: a program may define in steps, redef and enddef for
// each definition as netCDF4-python does, and the readers must see the header as it is when the data begins),
// or at its dtf_transfer or close where the last session of the file's pattern changed its definition after
// its first put (Sessions::late_definitions): to every rank of each reader component, since the writer does
// not know which ranks will open the file (the readers' ReaderOpened tells; the others drop theirs when
// withdrawn); to the leader of the plan's readers alone when the session replays a plan of known readers
// (ReaderSide::assumed), whose open spreads it to the others; then the header is left out when it is the one
// that plan's session had, which the readers kept with it.
void announce_definition(Runtime &rt, FileSession &fs) {
    if (fs.defined_sent) return;
    fs.defined_sent = true;
    WriterSession &ws = *fs.ws;
    // (Every rank of a session that may record a plan keeps the header, which the plan keeps: the
    // leader of a session replaying it compares its own with it.)
    if (fs.rank != ws.leader) {
        if (ws.record && !ws.readers.empty() && !ws.readers.front().assumed) ws.defined_header = fs.header.encode();
        return;
    }
    std::vector<int> matchers;
    for (int m : matcher_ranks(fs.size, rt.settings().max_workgroup_size))
        matchers.push_back(fs.ranks[static_cast<size_t>(m)]);
    const std::vector<char> header = fs.header.encode();
    ws.defined_header = header;
    ws.defined_revision = fs.header.revision();
    // (A replayed session has one reader; an output file has none.)
    const ReaderSide *assumed = ws.readers.empty() || !ws.readers.front().assumed ? nullptr : &ws.readers.front();
    ws.defined_to_all = !assumed;
    for (int reader : fs.peers) {
        PayloadWriter p;
        write_withdrawn(p,
                        ws.defined_to_all ? rt.take_withdrawals(reader) : std::vector<std::pair<std::string, int>>{});
        p.i64(ws.stamp);
        p.i32(ws.defined_to_all ? 1 : 0);
        const bool same = !ws.defined_to_all && ws.plan->defined_header == header;
        p.i32(same ? 1 : 0);
        if (same) p.i64(ws.plan->stamp);
        else p.bytes(header);
        p.ints(fs.ranks);
        p.ints(matchers);
        p.i32(fs.inherited);
        Message m{MessageKind::FileDefined, 0, fs.session, 0, fs.path, p.take()};
        if (ws.defined_to_all) rt.notify(reader, std::move(m));
        else
            rt.send(reader,
                    assumed->ranks[static_cast<size_t>(leader_of(fs.path, static_cast<int>(assumed->ranks.size())))],
                    std::move(m));
    }
}

WriterSession::~WriterSession() {
    if (group && runtime) runtime->retire(std::move(group));
    if (pool)
        for (auto &w : writes) pool->give(std::move(w.data));
}

std::shared_ptr<WriterSession> open_writer_session(Runtime &rt, const FileSession &fs) {
    auto ws = std::make_shared<WriterSession>();
    ws->path = fs.path;
    ws->session = fs.session;
    for (int reader : fs.peers) ws->readers.push_back(ReaderSide{reader, {}, 0, false, 0});
    ws->group = fs.group;
    ws->local = ws->group->channel();
    ws->rank = fs.rank;
    ws->size = fs.size;
    ws->workgroup = rt.settings().max_workgroup_size;
    ws->ranks = fs.ranks;
    ws->pool = &rt.buffers();
    ws->runtime = &rt;
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
        if (ws->plan && (ws->plan_exact || ws->plan->followed)) {
            ReaderSide &side = ws->readers.front(); // (a replayed session has one reader)
            side.ranks = ws->plan->reader_ranks;
            side.plan = ws->plan->stamp;
            side.assumed = true;
            if (ws->quiet_end) ws->leader = leader_of(fs.path, fs.size);
        }
        if (ws->plan) {
            ws->plan_since = ++ws->plan->found;
            log::debug("writing '%s' (session %d) with the plan of %s%s", fs.path.c_str(), fs.session,
                       origin(*ws->plan, ws->plan_since).c_str(),
                       ws->plan_exact                  ? ""
                       : ws->readers.front().assumed ? " (a similar name its readers followed last time)"
                                                      : " (a similar name: until the readers confirm it)");
        }
    }
    // The leader makes the stamp; the other ranks learn it from the numrecs agreement at the first
    // dtf_transfer, or, since it names the tag of the data messages they may send before
    // (replay_io=1), from the readers' ReaderOpened, which confirms the plan those messages need (the
    // readers have it from FileDefined).
    if (fs.rank == ws->leader) ws->stamp = rt.new_stamp();
    ws->stamp_known = fs.rank == ws->leader;
    return ws;
}

namespace {

using Packing = WriterSession::Packing;

// The bytes of the plan's data message `o`.
size_t order_bytes(const WriterSession &ws, size_t o) {
    size_t n = 0;
    for (const auto &p : ws.plan->orders[o].pieces)
        n += static_cast<size_t>(p.region.size()) * ws.elsize[static_cast<size_t>(p.varid)];
    return n;
}

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
        ws.pushed.push_back(ws.pool->take(offset));
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
    if (ws.elsize.size() != fs.header.vars().size()) { // the first put, or variables were added since
        ws.elsize.clear();
        for (const auto &v : fs.header.vars()) ws.elsize.push_back(types::type_size(v.type));
    }
    if (ws.packing == Packing::None) { // the first put
        // A plan that writes variables this session has not defined yet (a redef after its first put)
        // cannot be laid out now: keep every value, and replay from them at dtf_transfer.
        if (std::any_of(plan.writes.begin(), plan.writes.end(),
                        [&](const match::WriteReq &w) { return w.varid >= static_cast<int>(ws.elsize.size()); })) {
            ws.packing = Packing::Full;
            return false;
        }
        sessions(rt).start_early(fs.ws);
        // A plan of another file name (e.g. the last cycle's) is only a guess until the reader root
        // names it too: until it does, keep every value (the session may still replay).
        ws.packing = ws.readers.front().assumed ? Packing::Packing : Packing::Unconfirmed;
        if (ws.packing == Packing::Packing) lay_out(ws);
    }
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
    for (ReaderSide &side : ws.readers) {
        if (side.opened || side.assumed) continue;
        auto m = rt.take(for_session(ws, side.component, MessageKind::ReaderOpened));
        if (!m) {
            all = false;
            continue;
        }
        side.opened = true;
        PayloadReader r(m->payload, "reader-opened");
        side.ranks = r.ints(1 << 24);
        side.plan = r.i64();
        const int64_t stamp = r.i64();
        if (!ws.stamp_known) {
            ws.stamp = stamp;
            ws.stamp_known = true;
        } else if (ws.rank == ws.leader && stamp != ws.stamp) {
            fail(DTF_ERR_PEER, "'%s' (session %d): component '%s' opened another session of it (stamp %lld, not %lld)",
                 ws.path.c_str(), ws.session, rt.config().component_name(side.component).c_str(),
                 static_cast<long long>(stamp), static_cast<long long>(ws.stamp));
        }
        if (side.ranks.empty())
            fail(DTF_ERR_PEER, "'%s': component '%s' opened it with no rank", ws.path.c_str(),
                 rt.config().component_name(side.component).c_str());
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
// plan's first batch, each from the writer rank that sends it its first data (the plan's
// `needs_final`), so that no rank sends it to every reader.
void send_header_final(Runtime &rt, WriterSession &ws, ReaderSide &side, const WriterPlan *replayed,
                       bool cannot = false) {
    side.header_sent = true;
    const bool verdicts = replayed && side.assumed && !ws.header_changed;
    const int me = ws.ranks[static_cast<size_t>(ws.rank)];
    std::vector<int> to;
    if (verdicts) {
        const std::vector<int> &pairs = replayed->needs_final; // (reader, writer) component ranks
        for (size_t i = 0; i + 1 < pairs.size(); i += 2)
            if (pairs[i + 1] == me) to.push_back(pairs[i]);
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

// The readers' ReaderDone of the epoch, on a matcher or (led_epoch) the writer leader: once every
// rank of every reader is done, the epoch ends (send_finish, or end_quietly).
void take_done(Runtime &rt, WriterSession &ws) {
    bool any_done = false;
    for (ReaderSide &side : ws.readers) {
        if (!side.known()) continue;
        while (auto done = rt.take(for_session(ws, side.component, MessageKind::ReaderDone, ws.epoch))) {
            PayloadReader r(done->payload, "reader-done");
            if (r.i32() != 0) ws.drop_plan = true; // a reader did not follow the replayed plan
            if (r.i32() == 0) { // one reader rank, and whether it would get no verdict with its data (held())
                ++side.done;
                const int from = r.i32(); // (-1: its data brings it)
                if (from >= 0) ws.needs_final_log.insert(ws.needs_final_log.end(), {done->source, from});
            } else { // the leader, for every reader rank: which ranks, and the plan they hold
                const bool same_ranks = static_cast<uint64_t>(r.i64()) == ranks_hash(side.ranks);
                const int64_t plan = r.i64();
                if (!same_ranks || plan != side.plan || side.done != 0)
                    fail(DTF_ERR_UNSUPPORTED, "'%s' (session %d): %s than in %s, whose transfer pattern it replays, "
                         "and the writers kept only the values that pattern reads; set replay_io=0 for this file",
                         ws.path.c_str(), ws.session,
                         !same_ranks ? "other reader ranks read it" : "its readers held another plan",
                         ws.plan ? origin(*ws.plan, ws.plan_since).c_str() : "the last session");
                side.done = side.ranks.size();
            }
            any_done = true;
        }
    }
    if (any_done && std::all_of(ws.readers.begin(), ws.readers.end(), [](const ReaderSide &side) {
            return side.known() && side.done == side.ranks.size();
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
    finish.ints(ws.needs_final_log);
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
        const bool knows = led_epoch(ws) ? ws.rank == ws.leader : ws.is_matcher(); // (who takes ReaderDone)
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
    if (led_epoch(ws) && ws.rank == ws.leader) take_done(rt, ws);
    if (ws.replay == 1 && ws.quiet_end) end_quietly(ws);
    while (auto in = ws.local->poll(Tag::Orders, "receiving orders")) {
        PayloadReader r(in->bytes, "orders");
        const int reader = r.i32();
        if (reader < 0) { // finish: whether a reader left the replayed plan, and who needs the final header
            if (r.i32() != 0) ws.drop_plan = true;
            ws.needs_final_log = r.ints(1 << 24);
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

// The largest record written by any writer rank: the unlimited dimension's length; and whether
// every writer rank's writes are those of the path's replay plan.
void agree_numrecs(Runtime &rt, FileSession &fs) {
    WriterSession &ws = *fs.ws;
    // [3]: the root's stamp, which the other ranks learn here if no ReaderOpened brought it before;
    // [4], [5]: the plan's stamp and its negation (every rank holds the same plan if they agree)
    // [6]: whether the header changed since FileDefined but for the record count (the root's view)
    const int64_t plan_stamp = ws.plan ? ws.plan->stamp : 0;
    int64_t mine[7] = {fs.header.numrecs(), 0, 0, ws.stamp, plan_stamp, -plan_stamp, 0}, all[7];
    if (fs.rank == ws.leader && fs.header.revision() != ws.defined_revision) // (else unchanged: no encoding)
        mine[6] = !model::Header::same_but_numrecs(fs.header.encode(), ws.defined_header);
    for (const auto &w : ws.writes) {
        if (!fs.header.is_record_var(w.meta.varid) || w.meta.box.size() == 0) continue;
        const auto &b = w.meta.box;
        mine[0] = std::max<int64_t>(mine[0], b.start[0] + (b.count[0] - 1) * b.stride[0] + 1);
    }
    bool same = ws.plan && ws.epoch == 0 && ws.ranks == ws.plan->ranks && ws.writes.size() == ws.plan->writes.size();
    for (size_t i = 0; same && i < ws.writes.size(); ++i) same = ws.writes[i].meta == ws.plan->writes[i];
    mine[1] = same && ws.packing != Packing::Broken ? 0 : 1;
    mine[2] = ws.packing == Packing::Packing || ws.packing == Packing::Broken;
    std::copy(mine, mine + 7, all);
    rt.allreduce_max(*fs.group, all, 7, format("dtf_transfer of '%s' (session %d)", fs.path.c_str(), fs.session));
    fs.header.set_numrecs(all[0]);
    ws.header_changed = all[6] != 0;
    ws.stamp = all[3];
    ws.stamp_known = true;
    const bool differ = all[1] != 0 || all[4] != -all[5];
    ws.replay_candidate = ws.plan && !differ;
    if (ws.plan && differ && all[2] != 0) { // some values were dropped, yet the pattern changed
        const std::string replayed = origin(*ws.plan, ws.plan_since);
        sessions(rt).writer_plans.drop(ws.plan_key, ws.plan);
        const std::string what =
            !ws.broken.empty() ? ws.broken
            : mine[1]          ? format("the puts of writer rank %d differ from those of %s", fs.rank, replayed.c_str())
                               : format("another writer rank's puts differ from those of %s", replayed.c_str());
        throw Error(DTF_ERR_UNSUPPORTED,
                    format("dtf_transfer of '%s' (session %d): %s, whose transfer pattern it replays (replay_io=1, "
                           "%s:%d); the values were kept only where that pattern reads them, so the session cannot "
                           "be matched again: set replay_io=0 for this file",
                           fs.path.c_str(), fs.session, what.c_str(), rt.config().path.c_str(), fs.rule->line),
                    !mine[1]);
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
        return;
    }
    auto plan = std::make_shared<WriterPlan>();
    plan->stamp = ws.stamp;
    plan->path = ws.path;
    plan->session = ws.session;
    plan->ranks = ws.ranks;
    plan->reader_ranks = ws.readers.front().ranks; // a recorded session has one reader
    plan->defined_header = std::move(ws.defined_header);
    plan->needs_final = std::move(ws.needs_final_log);
    for (const auto &w : ws.writes) plan->writes.push_back(w.meta);
    if (ws.is_matcher()) plan->group_writes = std::move(ws.group_writes);
    plan->orders = std::move(ws.orders_log);
    plans.keep(ws.plan_key, ws.plan, std::move(plan));
}

// ---------------------------------------------------------------------------------------------
// Reader side

namespace {

// fallback=: the writer wrote the session to the file system instead of serving this rank (its root
// said so: Runtime::written). Thrown out of the reader's waits; then this rank reads the session's
// gets from the file (switch_to_file), on its own: the writer's ranks went on, nothing is agreed.
struct WentToFile : Error {
    using Error::Error;
};

void check_written(Runtime &rt, const FileSession &fs) {
    if (fs.reader.from_file || rt.written(fs.reader.writer_stamp))
        throw WentToFile(DTF_ERR_PEER,
                         format("component '%s' wrote '%s' (session %d) to the file system instead (fallback=)",
                                rt.config().component_name(fs.peer).c_str(), fs.path.c_str(), fs.session));
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
    rt.forget_written(rd.writer_stamp);
    (fs.rank == 0 ? log::notice : log::info)("reading '%s' (session %d) from the file system: component '%s' wrote it "
                                            "there instead of sending it (fallback=)", fs.path.c_str(), fs.session,
                                            writer.c_str());
}

// The gets of `batch` from the file (switch_to_file): into each get's destination, in the variable's
// type, as the writers' data would have come.
void read_from_file(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch) {
    for (auto *r : batch) {
        const size_t es = types::type_size(r->xtype);
        if (!r->direct && r->staging.empty()) { // (a failed wait kept the first staging: keep_buffers)
            int64_t n = 0;
            for (const auto &part : r->parts) n += part.box.size();
            r->staging = rt.buffers().take(static_cast<size_t>(n) * es);
            r->dest = r->staging.data();
        }
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
    rt.forget_written(rd.writer_stamp);
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
// session the writer defined to the reader leader alone.
bool with_verdict(const FileSession &fs, size_t n) { return fs.reader.defined_to_leader && carries_verdict(n); }

// Who sends this rank the final header of a replay of the plan whose first batch is `pieces`, when no
// data message of it brings the writers' verdict (carries_verdict): the writer of its first data, or,
// with no data, the writer leader; -1 when one does. Its ReaderDone says so when the plan is recorded.
int final_from(const FileSession &fs, const std::vector<match::Piece> &pieces) {
    const auto sizes = message_sizes(fs, pieces);
    for (const auto &[writer, n] : sizes)
        if (carries_verdict(n)) return -1;
    if (!sizes.empty()) return sizes.begin()->first;
    const bool led = !fs.rule->persist && !fs.rule->falls_back(); // (WriterSession::leader)
    const auto &writers = fs.reader.writer_ranks;
    return writers[static_cast<size_t>(led ? leader_of(fs.path, static_cast<int>(writers.size())) : 0)];
}

} // namespace

struct PostedBatch {
    struct Part {
        ReadRecord *record;
        size_t index;
    };
    std::vector<ReadRecord *> records; // posted ahead: the gets, in batch order
    std::vector<match::Piece> pieces;
    std::map<uint64_t, Part> by_id;
    std::map<int, std::vector<const match::Piece *>> by_writer; // into `pieces`, the data pieces
    // Pieces that overlap (ordered): each writer's message, received whole, and every piece applied
    // in the order the writes took effect (apply_ordered); else each message lands in place.
    bool ordered = false;
    std::map<int, std::vector<char>> data;
    std::vector<Ticket> recvs;
    std::vector<Part> uncovered; // parts some of whose elements no piece covers
    // The writers' verdict at the end of the messages that carry one (with_verdict), by writer, with
    // the receive that brings it.
    std::map<int, std::pair<Ticket, std::vector<char>>> verdicts;
};

namespace {

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
            ByteReader r(v.second.data(), v.second.size());
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
    const auto sizes = message_sizes(fs, plan.batches[rd.plan_batch].pieces);
    if (std::none_of(sizes.begin(), sizes.end(), [&](const auto &w) { return with_verdict(fs, w.second); }))
        return nullptr;
    auto pre = std::make_shared<PostedBatch>();
    transport::DataPlane &data = *rt.peer_link(fs.peer).data;
    const Tag tag = rt.data_tag(fs.peer, rd.writer_stamp);
    for (const auto &[writer, n] : sizes) {
        std::vector<char> &buf = pre->data[writer];
        buf = rt.buffers().take(n);
        std::vector<transport::Span> spans{{buf.data(), n}};
        if (with_verdict(fs, n)) {
            auto &v = pre->verdicts[writer].second;
            v.assign(kVerdictBytes, 0);
            spans.push_back({v.data(), v.size()});
        }
        pre->recvs.push_back(data.fetch(writer, tag, spans, "receiving replayed data"));
        if (with_verdict(fs, n)) pre->verdicts[writer].first = pre->recvs.back();
    }
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
        for (const auto &[writer, n] : message_sizes(fs, rd.plan->batches[b].pieces)) {
            scratch.push_back(rt.buffers().take(n + (with_verdict(fs, n) ? kVerdictBytes : 0)));
            recvs.push_back(
                data.fetch(writer, tag, {{scratch.back().data(), scratch.back().size()}}, "receiving replayed data"));
        }
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
    if (!rd.prefetched && rd.defined_to_leader)
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

// An ordered batch's pieces, once every message came: each applied in the order its write took
// effect (match::applies_before), from its writer's message or (a fill) the fill value.
void apply_ordered(Runtime &rt, const FileSession &fs, PostedBatch &posted) {
    std::vector<std::pair<const match::Piece *, const char *>> order; // with where its values are
    for (auto &[writer, buf] : posted.data) {
        phase::add_bytes(phase::Pack, buf.size());
        const char *src = buf.data();
        for (const auto *p : posted.by_writer.at(writer)) {
            order.emplace_back(p, src);
            const ReadRecord &r = *posted.by_id.at(p->read_id).record;
            src += static_cast<size_t>(p->region.size()) * types::type_size(r.xtype);
        }
    }
    for (const auto &p : posted.pieces)
        if (p.fill) order.emplace_back(&p, nullptr);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) { return match::applies_before(*a.first, *b.first); });
    for (const auto &[p, src] : order) {
        if (!src) {
            fill_piece(fs, posted, *p);
            continue;
        }
        const PostedBatch::Part part = posted.by_id.at(p->read_id);
        ReadRecord &r = *part.record;
        const size_t es = types::type_size(r.xtype);
        match::copy_region(r.parts[part.index].box, r.dest + static_cast<size_t>(r.offsets[part.index]) * es, p->region,
                    const_cast<char *>(src), es, false);
    }
    for (auto &[writer, buf] : posted.data) rt.buffers().give(std::move(buf));
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
// runs of the gets' destinations (none when `ordered`: then the message goes to a buffer of dtf's).
// `*bytes`: the message's size.
std::vector<transport::Span> landing(const PostedBatch &out, const std::vector<const match::Piece *> &list,
                                     bool ordered, size_t *bytes) {
    std::vector<transport::Span> spans;
    *bytes = 0;
    for (const auto *p : list) {
        const PostedBatch::Part part = out.by_id.at(p->read_id);
        const ReadRecord &r = *part.record;
        const size_t es = types::type_size(r.xtype);
        *bytes += static_cast<size_t>(p->region.size()) * es;
        if (ordered) continue;
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
// staging buffer. Elements no piece covers read as zeros; a fill piece (the writers' fill, for which
// no values move) gets the variable's fill value here, before any data lands, when it took effect
// before every data piece of its get. Where pieces overlap otherwise (one element written by several
// writes), messages go to buffers of dtf's instead and every piece is applied in the order the writes
// took effect (apply_ordered), so that the last write wins, as in the file, whatever the order the
// messages arrive in. `ahead`: only if every element of every get is covered by a data piece (nothing
// but the writers' data is written into the user's buffers before they agreed); false if not.
bool post_batch(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch, std::vector<match::Piece> pieces,
                bool ahead, bool replayed, PostedBatch &out, PostedBatch *from = nullptr) {
    bool ordered = from != nullptr;
    std::vector<PostedBatch::Part> uncovered;
    if (!coverage(batch, pieces, ahead, &ordered, &uncovered)) return false;
    for (const PostedBatch::Part &u : uncovered)
        if (u.record->direct) u.record->zero_part(u.index); // (staging starts as zeros)
    out.uncovered.insert(out.uncovered.end(), uncovered.begin(), uncovered.end());
    out.pieces = std::move(pieces);
    out.ordered = ordered;
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) out.by_id[r->parts[i].id] = PostedBatch::Part{r, i};
    for (const auto &p : out.pieces) {
        if (!p.fill) out.by_writer[p.writer].push_back(&p);
        else if (!ordered) fill_piece(fs, out, p); // (before any data lands)
    }
    transport::DataPlane &data = *rt.peer_link(fs.peer).data;
    const Tag tag = rt.data_tag(fs.peer, fs.reader.writer_stamp);
    for (auto &[writer, list] : out.by_writer) {
        size_t n = 0;
        std::vector<transport::Span> spans = landing(out, list, ordered, &n);
        phase::add_bytes(phase::Transfer, n);
        if (from) { // (received already: the batch was prefetched)
            out.data[writer] = std::move(from->data.at(writer));
            continue;
        }
        if (ordered) {
            std::vector<char> &buf = out.data[writer];
            buf = rt.buffers().take(n);
            spans = {{buf.data(), n}};
        }
        // A batch of the replayed plan (or posted before the writers said whether they replay it):
        // its messages that carry the writers' verdict end with it (with_verdict).
        const bool verdict = replayed && with_verdict(fs, n);
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
    if (!post_batch(rt, fs, batch, plan->batches[rd.plan_batch].pieces, true, true, *posted)) return;
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
        }
    } catch (...) {
        channel.cancel(posted->recvs);
        keep_buffers(rt, *posted, posted->records);
        throw;
    }
    for (auto &[writer, buf] : posted->data) rt.buffers().give(std::move(buf));
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
        post_batch(rt, fs, batch, rd.plan->batches[rd.plan_batch].pieces, false, true, posted, rd.prefetched.get());
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
                post_batch(rt, fs, batch, plan->batches[rd.plan_batch].pieces, true, true, posted);
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
        post_batch(rt, fs, batch, std::move(pieces), false, replayed, posted, pre.get());
    }
    if (fs.rule->replay_io) rd.batches_log.push_back(ReaderPlan::Batch{reqs, posted.pieces});
    wait_receives(rt, fs, channel, posted.recvs, keep, [&] {
        return format("a get on '%s' (reader rank %d) waited for %zu of its bytes from %zu writer ranks of "
                      "component '%s'", fs.path.c_str(), rt.component_rank(), channel.pending_bytes(posted.recvs),
                      posted.by_writer.size(), rt.config().component_name(fs.peer).c_str());
    });
    phase::Scope convert(phase::Pack);
    if (posted.ordered) apply_ordered(rt, fs, posted);
}

int finish_gets(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch) {
    phase::Scope convert(phase::Pack);
    int first_error = NC_NOERR;
    for (auto *r : batch) {
        for (const auto &part : r->parts)
            fs.get_bytes += part.box.size() * static_cast<int64_t>(types::type_size(r->xtype));
        if (r->direct) continue; // already in place, nothing to convert
        const size_t n = r->staging.size() / types::type_size(r->xtype);
        std::vector<char> mem = rt.buffers().take(n * r->layout.elsize);
        int rc = types::convert_get(r->staging.data(), r->xtype, mem.data(), r->layout.memtype, n, r->format);
        int rc2 = types::scatter(r->layout, mem.data(), r->user_buf);
        r->status = rc2 != NC_NOERR ? rc2 : rc;
        rt.buffers().give(std::move(r->staging));
        rt.buffers().give(std::move(mem));
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

int session_transfer(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    phase::Scope timer(phase::Transfer);
    if (fs.writer && fs.peers.empty()) return NC_NOERR; // an output file
    if (fs.writer && !fs.rule->falls_back()) return serve(rt, fs);
    if (fs.writer) { // fallback=: the readers given up by one writer rank are given up by all (serve() is collective)
        const std::string context = format("dtf_transfer of '%s' (session %d)", fs.path.c_str(), fs.session);
        if (!agree_gave_up(rt, fs, context).empty()) return NC_NOERR; // the close writes the file
        try {
            return serve(rt, fs);
        } catch (const Error &e) {
            if (!give_up_readers(rt, fs, e)) throw;
            return NC_NOERR;
        }
    }
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
    if (rd.done_deferred) { // a second dtf_transfer: the first one's ReaderDone is this rank's own after all
        send_done(rt, fs, 1, rd.fell_back, false);
        rd.done_deferred = false;
    }
    if (rd.defined_to_leader && fs.epoch == 1 && rd.replay == 1)
        rd.done_deferred = true; // the leader says it at the close
    else send_done(rt, fs, fs.epoch, rd.fell_back, false);
    rd.done_sent = true;
    return rc;
}

void send_done(Runtime &rt, FileSession &fs, int epoch, bool left, bool for_all) {
    ReaderSession &rd = fs.reader;
    PayloadWriter done; // whether a reader left the replayed plan (then both sides drop it), for whom
    done.i32(left ? 1 : 0);
    done.i32(for_all ? 1 : 0);
    if (for_all) {
        done.i64(static_cast<int64_t>(ranks_hash(fs.ranks))); // (a hash: the list would be 4 bytes per reader)
        done.i64(rd.plan ? rd.plan->stamp : 0);
    } else { // (and whether a replay of this session would bring this rank no verdict with its data)
        done.i32(final_from(fs, rd.batches_log.empty() ? std::vector<match::Piece>{} : rd.batches_log.front().pieces));
    }
    const std::vector<char> payload = done.take();
    if (for_all && rd.quiet_writer) { // to the writer leader (WriterSession::leader)
        const int leader =
            rd.writer_ranks[static_cast<size_t>(leader_of(fs.path, static_cast<int>(rd.writer_ranks.size())))];
        rt.send(fs.peer, leader, Message{MessageKind::ReaderDone, 0, fs.session, epoch, fs.path, payload});
        return;
    }
    for (int m : rd.matchers)
        rt.send(fs.peer, m, Message{MessageKind::ReaderDone, 0, fs.session, epoch, fs.path, payload});
}

// Every reader rank agrees (over the file's communicator) whether the pattern changed, so that they
// all keep, replace or drop the plan alike; collective, in place of the barrier at close.
void end_reader_session(Runtime &rt, FileSession &fs) {
    ReaderSession &rd = fs.reader;
    // (a session whose definition changed after FileDefined records no plan, on either side)
    int64_t any = rd.fell_back || fs.epoch != 1 || rd.definition_changed;
    rt.allreduce_max(*fs.group, &any, 1, format("closing '%s' (session %d)", fs.path.c_str(), fs.session));
    if (rd.done_deferred) { // the reader ranks' ReaderDone, said once by their leader
        if (fs.rank == leader_of(fs.path, fs.size)) send_done(rt, fs, 1, any != 0, true);
        rd.done_deferred = false;
    }
    auto &plans = sessions(rt).reader_plans;
    if (any) {
        plans.drop(rd.plan_key, rd.plan);
    } else if (rd.replay != 1) {
        auto plan = std::make_shared<ReaderPlan>();
        plan->stamp = rd.writer_stamp;
        plan->path = fs.path;
        plan->session = fs.session;
        plan->writer_ranks = rd.writer_ranks;
        plan->numrecs = fs.header.numrecs();
        plan->defined = rd.defined;
        plan->batches = std::move(rd.batches_log);
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

namespace {
const bool g_registered = Runtime::register_part(Sessions::kSlot, [] { return std::unique_ptr<Part>(new Sessions); });
} // namespace

void Sessions::serve(const std::shared_ptr<WriterSession> &ws) {
    if (std::find(serving.begin(), serving.end(), ws) == serving.end()) serving.push_back(ws);
}

void Sessions::start_early(const std::shared_ptr<WriterSession> &ws) {
    if (std::find(early.begin(), early.end(), ws) == early.end()) early.push_back(ws);
}

void Sessions::forsake(const std::shared_ptr<WriterSession> &ws) {
    serving.erase(std::remove(serving.begin(), serving.end(), ws), serving.end());
    early.erase(std::remove(early.begin(), early.end(), ws), early.end());
    ws->serving = false;
}

bool Sessions::serving_key(const std::string &plan_key, const std::function<bool(const WriterSession &)> &which) const {
    for (const auto &ws : serving)
        if (ws->plan_key == plan_key && which(*ws)) return true;
    return false;
}

const WriterSession *Sessions::serving_session(const std::string &path, int session) const {
    for (const auto &ws : serving)
        if (ws->path == path && (session == 0 || ws->session == session)) return ws.get();
    return nullptr;
}

int Sessions::writes_unopened(const std::string &path, int session) const {
    const WriterSession *ws = serving_session(path, session);
    return ws ? !ws->any_reader_known() : -1;
}

bool Sessions::step(Runtime &rt) {
    bool happened = false;
    // Replayed data that became complete (or whose readers confirmed the plan) leaves now. A failure
    // stays with the session, reported at its dtf_transfer.
    for (size_t i = 0; i < early.size();) {
        WriterSession &ws = *early[i];
        bool more;
        try {
            more = push_early(rt, ws);
        } catch (const Error &e) {
            if (!ws.error) ws.error = std::make_unique<Error>(e);
            more = false;
        }
        if (more) ++i;
        else early.erase(early.begin() + static_cast<long>(i));
    }
    // Step the writer sessions being served. A failure stays with its session and is reported by the
    // next call on it (or, once the file is closed, here and at dtf_finalize).
    for (size_t i = 0; i < serving.size();) {
        std::shared_ptr<WriterSession> ws = serving[i];
        bool served;
        try {
            served = runtime::step(rt, *ws);
        } catch (const Error &e) {
            ws->serving = false;
            ws->error = std::make_unique<Error>(e);
            if (ws.use_count() == 2) rt.report_detached(e); // its file is closed
            served = true;
        }
        if (served) {
            serving.erase(serving.begin() + static_cast<long>(i));
            if (ws->closed && ws->error) writer_plans.drop(ws->plan_key, ws->plan);
            else if (ws->closed) end_writer_session(rt, *ws);
            if (ws->closed) rt.forget_finished(ws->path);
            happened = true;
        } else {
            ++i;
        }
    }
    return happened;
}

void Sessions::finish(Runtime &rt, const char *who) {
    while (!serving.empty()) {
        const WriterSession *first = serving.front().get();
        auto what = [&] { return std::string(who) + ": " + waiting_for(rt, *first); };
        rt.wait_until([&] {
            if (serving.empty() || serving.front().get() != first) return true;
            rt.check_contested(first->path, first->session, what);
            return false;
        }, what, [&] { return blocking_reader(*first); });
    }
}

} // namespace dtf::runtime
