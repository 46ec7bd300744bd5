// Transfer mode: a writer reading the file it writes (PnetCDF examples and many programs check what
// they wrote with a get on the same open file, or on the file opened again within the writer's turn:
// writer_closes=). The values are with the ranks that wrote them, so such a get is collective over the
// session's ranks: they tell each other their new writes and this call's reads, all of them match the
// reads against all the writes alike (match::match), each sends the others the pieces of its writes
// they read, and each applies its pieces in the order the writes took effect.
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>

#include "common/bytes.hpp"
#include "common/counters.hpp"
#include "common/phase.hpp"
#include "match/wire.hpp"
#include "runtime/runtime.hpp"
#include "session/session.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

namespace {

using transport::Tag;

// The next readback message of rank `source` (each rank's come in the order it sent them).
std::vector<char> next_from(Runtime &rt, WriterSession &ws, int source, const std::string &context) {
    std::deque<std::vector<char>> &queue = ws.readback_inbox[source];
    rt.wait_until(
        [&] {
            while (auto in = ws.local->poll(Tag::Readback, "receiving a readback"))
                ws.readback_inbox[in->source].push_back(std::move(in->bytes));
            return !queue.empty();
        },
        [&] {
            return format("%s waited for writer rank %d to make the same collective call", context.c_str(), source);
        });
    std::vector<char> m = std::move(queue.front());
    queue.pop_front();
    return m;
}

// The values of `pieces` (of this rank's writes) as one dense message, in order.
std::vector<char> gather(Runtime &rt, const FileSession &fs, const std::vector<const match::Piece *> &pieces,
                         const std::string &context) {
    const WriterSession &ws = *fs.ws;
    size_t total = 0;
    for (const auto *p : pieces)
        total += static_cast<size_t>(p->region.size()) *
                 types::type_size(fs.header.vars()[static_cast<size_t>(p->varid)].type);
    std::vector<char> bytes = rt.buffers().take(total);
    char *at = bytes.data();
    for (const auto *p : pieces) {
        const WriteRecord &w = ws.writes[p->write_id - 1];
        if (w.packed)
            fail(DTF_ERR_UNSUPPORTED,
                 "%s: this session replays the transfer pattern of an earlier one and kept only the "
                 "values its readers read (replay_io=1, %s:%d); set replay_io=0 for this file",
                 context.c_str(), rt.config().path.c_str(), fs.rule->line);
        const size_t es = types::type_size(fs.header.vars()[static_cast<size_t>(w.meta.varid)].type);
        match::copy_region(w.meta.box, const_cast<char *>(w.values()), p->region, at, es, true);
        counters::copied(true, static_cast<uint64_t>(p->region.size()) * es);
        at += static_cast<size_t>(p->region.size()) * es;
    }
    return bytes;
}

// Where each read request of a read-back is: its get and the part of it.
using PartOf = std::vector<std::pair<ReadRecord *, size_t>>;

// The writer ranks tell each other the writes they made since the last read-back and the reads of
// this one: the writes of every rank so far (this rank's last), and every rank's reads (`all_reads`).
std::vector<match::WriteReq> exchange_requests(Runtime &rt, FileSession &fs, const std::vector<match::ReadReq> &reads,
                                               std::vector<match::ReadReq> *all_reads,
                                               std::vector<transport::Ticket> *sends, const std::string &context) {
    WriterSession &ws = *fs.ws;
    auto writes_so_far = [&] {
        std::vector<match::WriteReq> writes = ws.readback_writes;
        for (const WriteRecord &w : ws.writes) writes.push_back(w.meta);
        return writes;
    };
    *all_reads = reads;
    std::vector<int> others;
    for (int q = 0; q < fs.size; ++q)
        if (q != fs.rank) others.push_back(q);
    if (others.empty()) return writes_so_far();
    PayloadWriter p;
    std::vector<match::WriteReq> told;
    for (size_t i = ws.readback_told; i < ws.writes.size(); ++i) told.push_back(ws.writes[i].meta);
    p.bytes(match::encode(told));
    p.bytes(match::encode(reads));
    ws.readback_told = ws.writes.size();
    sends->push_back(ws.local->send(others, Tag::Readback, p.take(), "sending a readback's writes and reads"));
    for (int q : others) {
        const std::vector<char> m = next_from(rt, ws, q, context);
        PayloadReader in(m, "readback");
        for (auto &w : match::decode_writes(in.bytes())) ws.readback_writes.push_back(w);
        for (auto &r : match::decode_reads(in.bytes())) all_reads->push_back(r);
    }
    return writes_so_far();
}

// This rank's pieces (the values of those from rank q in values[q], in `from`'s order; fills) put in
// place in the order their writes took effect (the last write wins), over zeros. Returns that order.
std::vector<std::pair<const match::Piece *, const char *>>
place_pieces(const FileSession &fs, const std::vector<ReadRecord *> &batch, const PartOf &part_of,
             const std::map<int, std::vector<const match::Piece *>> &from,
             const std::map<int, std::vector<char>> &values, const std::vector<const match::Piece *> &fills) {
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) r->zero_part(i);
    std::vector<std::pair<const match::Piece *, const char *>> order;
    for (const auto &[q, list] : from) {
        const char *src = values.at(q).data();
        for (const auto *p : list) {
            order.emplace_back(p, src);
            src += static_cast<size_t>(p->region.size()) * types::type_size(part_of[p->read_id].first->xtype);
        }
    }
    for (const auto *p : fills) order.emplace_back(p, nullptr);
    std::stable_sort(order.begin(), order.end(),
                     [](const auto &a, const auto &b) { return match::applies_before(*a.first, *b.first); });
    for (const auto &[p, src] : order) {
        ReadRecord &r = *part_of[p->read_id].first;
        const size_t i = part_of[p->read_id].second, es = types::type_size(r.xtype);
        char *base = r.dest + static_cast<size_t>(r.offsets[i]) * es;
        if (!src) {
            fill_region(r.parts[i].box, base, p->region, fill_value(fs.header, p->varid));
            continue;
        }
        match::copy_region(r.parts[i].box, base, p->region, const_cast<char *>(src), es, false);
        counters::copied(false, static_cast<uint64_t>(p->region.size()) * es);
    }
    return order;
}

// A variable of an earlier session (the file was opened with NC_WRITE): where this session wrote
// nothing, the file holds that session's values, which transfer mode does not keep. Each such get
// fails (its status); returns the first error, or `rc`.
int refuse_inherited(const FileSession &fs, const std::vector<match::ReadReq> &reads, const PartOf &part_of,
                     const std::vector<std::pair<const match::Piece *, const char *>> &placed, int rc,
                     const std::string &context) {
    std::map<uint64_t, std::vector<match::Box>> regions;
    for (const auto &[p, src] : placed) regions[p->read_id].push_back(p->region);
    for (const match::ReadReq &read : reads) {
        if (read.varid >= fs.inherited || match::covered_count(read.box, regions[read.id]) == read.box.size()) continue;
        part_of[read.id].first->status = DTF_ERR_UNSUPPORTED;
        if (rc == NC_NOERR) rc = DTF_ERR_UNSUPPORTED;
        report_error(
            DTF_ERR_UNSUPPORTED,
            format("%s: variable '%s' %s: this component opened the file with NC_WRITE and did not write all of "
                   "these elements since; the file holds the values of an earlier session there, which transfer "
                   "mode does not keep (read them in that session, or write them again)",
                   context.c_str(), fs.header.vars()[static_cast<size_t>(read.varid)].name.c_str(),
                   read.box.to_string().c_str())
                .c_str());
    }
    return rc;
}

} // namespace

int read_own(Runtime &rt, FileSession &fs, const std::vector<ReadRecord *> &batch, bool collective) {
    WriterSession &ws = *fs.ws;
    const std::string context = format("a get on '%s' (transfer mode, session %d), which this component writes",
                                       fs.path.c_str(), fs.session);
    if (!collective && fs.size > 1)
        fail(DTF_ERR_UNSUPPORTED, "%s: an independent get there may read values that the %d other writer ranks "
             "wrote, which are with them: use the collective get (the _all variant, or ncmpi_wait_all), or "
             "mode=\"file\" for this file (%s:%d)", context.c_str(), fs.size - 1, rt.config().path.c_str(),
             fs.rule->line);
    phase::Scope timer(phase::Transfer);
    // This rank's reads (ids: where each part is), the writes of every rank, the reads of every rank.
    std::vector<match::ReadReq> reads, all_reads;
    PartOf part_of;
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) {
            reads.push_back(match::ReadReq{fs.rank, part_of.size(), r->parts[i].varid, r->parts[i].box});
            part_of.emplace_back(r, i);
        }
    std::vector<transport::Ticket> sends;
    const std::vector<match::WriteReq> writes = exchange_requests(rt, fs, reads, &all_reads, &sends, context);
    // Every rank matches every read alike; each sends the others the values of its pieces they read.
    const std::vector<match::Piece> pieces = match::match(writes, all_reads);
    std::map<int, std::vector<const match::Piece *>> to, from; // data pieces this rank sends / gets, by rank
    std::vector<const match::Piece *> fills;
    for (const match::Piece &p : pieces) {
        if (p.fill) {
            if (p.reader == fs.rank) fills.push_back(&p);
        } else if (p.writer == fs.rank) {
            to[p.reader].push_back(&p);
        }
        if (!p.fill && p.reader == fs.rank) from[p.writer].push_back(&p);
    }
    std::map<int, std::vector<char>> values;
    for (auto &[q, list] : to) {
        std::vector<char> bytes = gather(rt, fs, list, context);
        if (q == fs.rank) values[q] = std::move(bytes);
        else sends.push_back(ws.local->send(q, Tag::Readback, std::move(bytes), "sending a readback's values"));
    }
    for (auto &[q, list] : from)
        if (q != fs.rank) values[q] = next_from(rt, ws, q, context);
    for (auto *r : batch) r->stage(rt.buffers());
    const auto placed = place_pieces(fs, batch, part_of, from, values, fills);
    for (auto &[q, bytes] : values) rt.buffers().give(std::move(bytes));
    rt.wait_until([&] { return ws.local->done(sends); },
                  [&] { return format("%s waited for %zu of its bytes to reach the other writer ranks", context.c_str(),
                                      ws.local->pending_bytes(sends)); });
    return refuse_inherited(fs, reads, part_of, placed, finish_gets(rt, fs, batch), context);
}

} // namespace dtf::runtime
