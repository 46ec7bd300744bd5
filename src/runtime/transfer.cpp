// Transfer mode: sessions of virtual files and the data exchange (protocol in vfile.hpp).
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>

#include "common/log.hpp"
#include "common/phase.hpp"
#include "pnc/hook.h"
#include "match/wire.hpp"
#include "runtime/runtime.hpp"
#include "runtime/vfile.hpp"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using transport::check_mpi;

using transport::Tag;
using transport::Ticket;

namespace {

int matcher_of(int rank, int group_size) { return rank / group_size * group_size; }

std::vector<int> matcher_ranks(int size, int group_size) {
    std::vector<int> m;
    for (int r = 0; r < size; r += group_size) m.push_back(r);
    return m;
}

auto for_file(const VirtualFile &vf, MessageKind kind, int epoch = -1) {
    return [&vf, kind, epoch](const Message &m) {
        return m.kind == kind && m.path == vf.path && m.session == vf.session && (epoch < 0 || m.epoch == epoch);
    };
}

nc_type var_type(const VirtualFile &vf, int varid) { return vf.header.vars()[static_cast<size_t>(varid)].type; }

// Copy the elements of `sub` (a subset of `outer`) between a buffer laid out as `outer` and a dense
// buffer laid out as `sub` (elements of `es` bytes): packing (to_dense) or unpacking.
void copy_region(const match::Box &outer, char *outer_buf, const match::Box &sub, char *dense, size_t es, bool to_dense) {
    match::for_each_run(outer, sub, [&](int64_t off, int64_t step, int64_t sub_off, int64_t len) {
        char *o = outer_buf + static_cast<size_t>(off) * es, *d = dense + static_cast<size_t>(sub_off) * es;
        if (step == 1) {
            std::memcpy(to_dense ? d : o, to_dense ? o : d, static_cast<size_t>(len) * es);
            return;
        }
        for (int64_t i = 0; i < len; ++i, o += step * static_cast<int64_t>(es), d += es)
            std::memcpy(to_dense ? d : o, to_dense ? o : d, es);
    });
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Writer side

void announce_definition(Runtime &rt, VirtualFile &vf) {
    if (vf.defined_sent) return;
    vf.defined_sent = true;
    const std::vector<int> &writers = vf.ranks;
    std::vector<int> matchers;
    for (int m : matcher_ranks(vf.size, rt.settings().max_workgroup_size)) matchers.push_back(writers[static_cast<size_t>(m)]);
    if (vf.rank != 0) return;
    PayloadWriter p;
    p.bytes(vf.header.encode());
    p.ints(writers);
    p.ints(matchers);
    rt.notify(vf.peer, Message{MessageKind::FileDefined, 0, vf.session, 0, vf.path, p.take()});
}

namespace {

// Sends in flight during serve() or announce_writes(): done once all were delivered.
using Outbox = std::vector<Ticket>;

// The matcher's part of serving one ReadRequest: match, send orders to the writers, the plan to the reader.
void serve_request(Runtime &rt, VirtualFile &vf, const Message &m, int reader_rank, Outbox &out) {
    phase::Scope timer(phase::Match);
    std::vector<match::ReadReq> reads = match::decode_reads(m.payload);
    for (auto &r : reads) r.rank = reader_rank;
    std::vector<match::Piece> pieces = match::match(vf.group_writes, reads);
    std::map<int, std::vector<match::Piece>> by_writer;
    for (const auto &p : pieces) by_writer[p.writer].push_back(p);
    for (auto &[writer, list] : by_writer) {
        PayloadWriter w;
        w.i32(reader_rank);
        w.bytes(match::encode(list));
        out.push_back(vf.local->send(writer, Tag::Orders, w.take(), "sending orders"));
    }
    // The plan names writers by their component rank, which is how the reader addresses them.
    for (auto &p : pieces) p.writer = vf.ranks[static_cast<size_t>(p.writer)];
    rt.send(vf.peer, reader_rank, Message{MessageKind::ReadPlan, 0, vf.session, m.epoch, vf.path, match::encode(pieces)});
}

// A writer's part: send the data of `pieces` (all for one reader) in one message. Write ids are the
// positions in vf.writes, counted from 1.
void send_pieces(Runtime &rt, VirtualFile &vf, int reader_rank, const std::vector<match::Piece> &pieces, Outbox &out) {
    phase::Scope timer(phase::Pack);
    size_t total = 0;
    for (const auto &p : pieces) {
        if (p.write_id < 1 || p.write_id > vf.writes.size())
            fail(DTF_ERR_PEER, "'%s': order for unknown write request %llu", vf.path.c_str(),
                 static_cast<unsigned long long>(p.write_id));
        total += static_cast<size_t>(p.region.size()) * types::type_size(var_type(vf, vf.writes[p.write_id - 1].meta.varid));
    }
    std::vector<char> bytes = rt.buffers().take(total);
    size_t base = 0;
    for (const auto &p : pieces) {
        WriteRecord &w = vf.writes[p.write_id - 1];
        const size_t es = types::type_size(var_type(vf, w.meta.varid));
        copy_region(w.meta.box, w.data.data(), p.region, bytes.data() + base, es, true);
        base += static_cast<size_t>(p.region.size()) * es;
    }
    phase::add_bytes(phase::Pack, bytes.size());
    phase::add_bytes(phase::Transfer, bytes.size());
    out.push_back(rt.peer_link(vf.peer).channel->send(reader_rank, Tag::Data, std::move(bytes), "sending data"));
}

// Every writer rank sends its writes not yet announced to its matcher; the matcher collects its group's.
void announce_writes(Runtime &rt, VirtualFile &vf) {
    const int g = rt.settings().max_workgroup_size, matcher = matcher_of(vf.rank, g);
    std::vector<match::WriteReq> fresh;
    for (size_t i = vf.writes_announced; i < vf.writes.size(); ++i) fresh.push_back(vf.writes[i].meta);
    vf.writes_announced = vf.writes.size();
    Outbox out;
    out.push_back(vf.local->send(matcher, Tag::Meta, match::encode(fresh), "sending write metadata"));
    int expected = vf.rank == matcher ? std::min(g, vf.size - matcher) : 0;
    rt.wait_until([&] {
        while (expected > 0) {
            auto in = vf.local->poll(Tag::Meta, "receiving write metadata");
            if (!in) break;
            for (auto &w : match::decode_writes(in->bytes)) {
                w.rank = in->source;
                vf.group_writes.push_back(w);
            }
            --expected;
        }
        return vf.local->done(out) && expected == 0;
    }, [&] {
        return format("dtf_transfer of '%s': writer rank %d waited for the write metadata of %d ranks of its work group",
                      vf.path.c_str(), vf.rank, expected);
    });
}

// The largest record written by any writer rank: the unlimited dimension's length.
void agree_numrecs(VirtualFile &vf) {
    long long mine = vf.header.numrecs(), all = 0;
    for (const auto &w : vf.writes) {
        if (!vf.header.is_record_var(w.meta.varid) || w.meta.box.size() == 0) continue;
        const auto &b = w.meta.box;
        mine = std::max<long long>(mine, b.start[0] + (b.count[0] - 1) * b.stride[0] + 1);
    }
    check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_MAX, vf.comm), "MPI_Allreduce (numrecs)");
    vf.header.set_numrecs(all);
}

int serve(Runtime &rt, VirtualFile &vf) {
    ++vf.epoch;
    if (vf.reader_ranks.empty()) {
        Message m = rt.wait_message(for_file(vf, MessageKind::ReaderOpened), [&] {
            return format("dtf_transfer of '%s' (session %d) waited for component '%s' to open it", vf.path.c_str(),
                          vf.session, rt.config().components[static_cast<size_t>(vf.peer)].c_str());
        });
        PayloadReader r(m.payload, "reader-opened");
        vf.reader_ranks = r.ints(1 << 24);
        // FileDefined went to every rank of the reader component; the others will never open this session.
        if (vf.rank == 0) {
            std::vector<bool> reads(static_cast<size_t>(rt.peer(vf.peer).remote_size), false);
            for (int r : vf.reader_ranks)
                if (r >= 0 && static_cast<size_t>(r) < reads.size()) reads[static_cast<size_t>(r)] = true;
            for (size_t r = 0; r < reads.size(); ++r)
                if (!reads[r])
                    rt.send(vf.peer, static_cast<int>(r), Message{MessageKind::FileWithdrawn, 0, vf.session, 0, vf.path, {}});
        }
    }
    agree_numrecs(vf);
    if (vf.rank == 0)
        for (int r : vf.reader_ranks)
            rt.send(vf.peer, r, Message{MessageKind::HeaderFinal, 0, vf.session, vf.epoch, vf.path, vf.header.encode()});
    announce_writes(rt, vf);

    const int g = rt.settings().max_workgroup_size;
    const bool is_matcher = vf.rank == matcher_of(vf.rank, g);
    size_t done = 0;
    bool finished = false;
    Outbox sends;
    const std::string peer = rt.config().components[static_cast<size_t>(vf.peer)];
    rt.wait_until([&] {
        if (is_matcher) {
            while (auto m = rt.take(for_file(vf, MessageKind::ReadRequest))) serve_request(rt, vf, *m, m->source, sends);
            while (rt.take(for_file(vf, MessageKind::ReaderDone, vf.epoch))) {
                if (++done < vf.reader_ranks.size()) continue;
                // Every reader is done: tell the group (after the orders, on the same tag).
                const int members = std::min(g, vf.size - vf.rank);
                std::vector<int> group(static_cast<size_t>(members));
                for (int i = 0; i < members; ++i) group[static_cast<size_t>(i)] = vf.rank + i;
                sends.push_back(vf.local->send(group, Tag::Orders, std::vector<char>(sizeof(int), 0), "sending finish"));
            }
        }
        while (auto in = vf.local->poll(Tag::Orders, "receiving orders")) {
            if (in->bytes.size() == sizeof(int)) {
                finished = true;
                continue;
            }
            PayloadReader r(in->bytes, "orders");
            int reader = r.i32();
            send_pieces(rt, vf, reader, match::decode_pieces(r.bytes()), sends);
        }
        return vf.local->done(sends) && finished;
    }, [&] {
        const size_t bytes = vf.local->pending_bytes(sends);
        return format("dtf_transfer of '%s' (session %d, writer rank %d) waited for component '%s': %zu of %zu reader "
                      "ranks done, %zu bytes not delivered",
                      vf.path.c_str(), vf.session, vf.rank, peer.c_str(), done, vf.reader_ranks.size(), bytes);
    });
    return NC_NOERR;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Reader side

void wait_header_final(Runtime &rt, VirtualFile &vf) {
    if (vf.header_final) return;
    Message m = rt.wait_message(for_file(vf, MessageKind::HeaderFinal), [&] {
        return format("reading '%s' (session %d) waited for component '%s' to call dtf_transfer (the final header, "
                      "with the number of records, comes with it)",
                      vf.path.c_str(), vf.session, rt.config().components[static_cast<size_t>(vf.peer)].c_str());
    });
    int rc = model::Header::decode(m.payload.data(), m.payload.size(), &vf.header);
    if (rc != NC_NOERR) fail(DTF_ERR_PEER, "malformed header of '%s' from component %d", vf.path.c_str(), vf.peer);
    vf.header_final = true;
}

// Execute a batch of gets: ask every matcher, receive the plans and the data, unpack, convert.
int read_batch(Runtime &rt, VirtualFile &vf, std::vector<ReadRecord *> &batch) {
    if (batch.empty()) return NC_NOERR;
    phase::Scope timer(phase::Transfer);
    const int tag = ++vf.batches; // pairs each plan with its request
    std::vector<match::ReadReq> reqs;
    for (auto *r : batch) reqs.insert(reqs.end(), r->parts.begin(), r->parts.end());
    std::vector<char> bytes = match::encode(reqs);
    for (int m : vf.matchers) rt.send(vf.peer, m, Message{MessageKind::ReadRequest, 0, vf.session, tag, vf.path, bytes});

    std::vector<match::Piece> pieces;
    for (size_t i = 0; i < vf.matchers.size(); ++i) {
        Message m = rt.wait_message(for_file(vf, MessageKind::ReadPlan, tag), [&] {
            return format("a get on '%s' waited for the plan of %zu matcher ranks of component '%s' (%zu arrived)",
                          vf.path.c_str(), vf.matchers.size(), rt.config().components[static_cast<size_t>(vf.peer)].c_str(), i);
        });
        for (auto &p : match::decode_pieces(m.payload)) pieces.push_back(p);
    }
    struct Part {
        ReadRecord *record;
        size_t index;
    };
    std::map<uint64_t, Part> by_id;
    for (auto *r : batch)
        for (size_t i = 0; i < r->parts.size(); ++i) by_id[r->parts[i].id] = Part{r, i};
    std::map<int, std::vector<const match::Piece *>> by_writer;
    for (const auto &p : pieces) by_writer[p.writer].push_back(&p);
    std::map<int, std::vector<char>> data;
    std::vector<Ticket> recvs;
    transport::Channel &channel = *rt.peer_link(vf.peer).channel;
    for (auto &[writer, list] : by_writer) {
        size_t n = 0;
        for (const auto *p : list) n += static_cast<size_t>(p->region.size()) * types::type_size(by_id.at(p->read_id).record->xtype);
        std::vector<char> &buf = data[writer];
        buf = rt.buffers().take(n);
        recvs.push_back(channel.receive(writer, Tag::Data, buf.data(), n, "receiving data"));
    }
    rt.wait_until([&] { return channel.done(recvs); }, [&] {
        return format("a get on '%s' (reader rank %d) waited for %zu of its bytes from %zu writer ranks of component '%s'",
                      vf.path.c_str(), rt.component_rank(), channel.pending_bytes(recvs), by_writer.size(),
                      rt.config().components[static_cast<size_t>(vf.peer)].c_str());
    });
    phase::Scope unpack(phase::Pack);
    for (auto &[writer, list] : by_writer) {
        phase::add_bytes(phase::Transfer, data[writer].size());
        phase::add_bytes(phase::Pack, data[writer].size());
        char *src = data[writer].data();
        for (const auto *p : list) {
            const Part part = by_id.at(p->read_id);
            ReadRecord &r = *part.record;
            const size_t es = types::type_size(r.xtype);
            char *base = r.staging.data() + static_cast<size_t>(r.offsets[part.index]) * es;
            copy_region(r.parts[part.index].box, base, p->region, src, es, false);
            src += static_cast<size_t>(p->region.size()) * es;
        }
    }
    int first_error = NC_NOERR;
    for (auto &[writer, buf] : data) rt.buffers().give(std::move(buf));
    for (auto *r : batch) {
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

int vfile_transfer(Runtime &rt, VirtualFile &vf) {
    phase::Scope timer(phase::Transfer);
    if (vf.writer) return serve(rt, vf);
    std::vector<ReadRecord *> batch;
    for (auto &[id, r] : vf.pending) batch.push_back(r.get());
    int rc = read_batch(rt, vf, batch);
    vf.pending.clear();
    ++vf.epoch;
    for (int m : vf.matchers) rt.send(vf.peer, m, Message{MessageKind::ReaderDone, 0, vf.session, vf.epoch, vf.path, {}});
    vf.done_sent = true;
    return rc;
}

} // namespace dtf::runtime
