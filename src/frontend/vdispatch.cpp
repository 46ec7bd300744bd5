// Transfer mode: every ncmpi_* call on a virtual ncid lands here (through files.cpp). Define and
// inquiry calls go to the header model; data calls become write records (writer) or read records
// (reader); the data exchange itself is in the session layer (session/writer.cpp, session/reader.cpp).
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <type_traits>

#include "common/counters.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "pnc/args.hpp"
#include "pnc/hook.h"
#include "pnc_info.h"
#include "runtime/runtime.hpp"
#include "frontend/files.hpp"
#include "model/netcdf4_mark.h"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using pnc::arg;

namespace {

// ---------------------------------------------------------------------------------------------
// Data calls

// A data call's arguments: the regions of the variable (one box, or `num` for varn), the user buffer
// and its description.
struct Call {
    int varid = -1;
    std::vector<match::Box> boxes;
    int64_t nelems = 0;
    const MPI_Offset *imap = nullptr;
    void *buf = nullptr;
    MPI_Offset bufcount = -1;
    MPI_Datatype buftype = MPI_DATATYPE_NULL;
    nc_type xtype = NC_NAT;
};

model::Api api_of(int kind) {
    switch (kind) {
    case DTF_PNC_KIND_VAR: return model::Api::var;
    case DTF_PNC_KIND_VAR1: return model::Api::var1;
    case DTF_PNC_KIND_VARS: return model::Api::vars;
    case DTF_PNC_KIND_VARM: return model::Api::varm;
    default: return model::Api::vara;
    }
}

const int64_t *offsets_arg(void **args, int i) {
    return i >= 0 ? reinterpret_cast<const int64_t *>(arg<const MPI_Offset *>(args, i)) : nullptr;
}

// The box one access touches (after the header checked it).
match::Box box_of(const VirtualFile &vf, const model::Access &a) {
    const size_t nd = vf.header.vars()[static_cast<size_t>(a.varid)].dimids.size();
    match::Box box{match::Dims(nd, 0), match::Dims(nd, 0), match::Dims(nd, 1)};
    for (size_t d = 0; d < nd; ++d) {
        if (a.start) box.start[d] = a.start[d];
        box.count[d] = a.api == model::Api::var1 ? 1 : a.count ? a.count[d] : vf.header.shape_len(a.varid, d);
        if (a.stride) box.stride[d] = a.stride[d];
    }
    return box;
}

// Check the call as PnetCDF would (same codes, same order), then describe its regions and buffer.
// `accesses` receives what the header checked (for note_write after a successful put).
int describe(const VirtualFile &vf, const struct dtf_pnc_info &in, void **args, bool is_write, Call *c,
             std::vector<model::Access> *accesses) {
    static_assert(sizeof(MPI_Offset) == sizeof(int64_t), "MPI_Offset is 64-bit");
    model::Access a;
    a.varid = c->varid = arg<int>(args, in.varid);
    a.is_write = is_write;
    a.nonblocking = in.mode == DTF_PNC_MODE_NB || in.mode == DTF_PNC_MODE_BPUT;
    a.collective = in.mode == DTF_PNC_MODE_COLL;
    a.memtype = in.flexible ? NC_NAT : in.memtype;
    // A replayed writer session whose record count came from its plan: the program sees that count,
    // which bounds its reads too (checked at dtf_transfer, as one the program asked for: guess_seen).
    if (!is_write && vf.ws && !vf.ws->guesses.empty() && vf.header.is_record_var(a.varid) &&
        vf.ws->guessed_numrecs > vf.header.numrecs()) {
        a.numrecs_seen = vf.ws->guessed_numrecs;
        vf.ws->guess_seen = true;
    }
    if (in.kind == DTF_PNC_KIND_VARN) {
        // varn: num (start, count) pairs; a NULL counts array means one element each.
        // As PnetCDF 1.12.3: starts may be NULL only with num 0. A negative num is none (PnetCDF then
        // allocates a negative size: its request is no request, or, under a sanitizer, an abort).
        const MPI_Offset *const *starts = arg<const MPI_Offset *const *>(args, in.start);
        const MPI_Offset *const *counts = arg<const MPI_Offset *const *>(args, in.count);
        if (arg<int>(args, in.num) != 0 && !starts) return NC_ENULLSTART;
        const int num = std::max(arg<int>(args, in.num), 0);
        a.api = counts ? model::Api::vara : model::Api::var1;
        for (int i = 0; i < num; ++i) {
            a.start = reinterpret_cast<const int64_t *>(starts[i]);
            a.count = counts ? reinterpret_cast<const int64_t *>(counts[i]) : nullptr;
            accesses->push_back(a);
        }
        if (num == 0) { // still checks the variable and the mode
            a.api = model::Api::var1;
            int rc = vf.header.check_access(a);
            if (rc != NC_NOERR && rc != NC_EINVALCOORDS) return rc;
        }
    } else {
        a.api = api_of(in.kind);
        a.start = offsets_arg(args, in.start);
        a.count = offsets_arg(args, in.count);
        a.stride = offsets_arg(args, in.stride);
        accesses->push_back(a);
    }
    for (const auto &acc : *accesses) {
        int rc = vf.header.check_access(acc);
        if (rc != NC_NOERR) return rc;
        c->boxes.push_back(box_of(vf, acc));
        c->nelems += c->boxes.back().size();
    }
    c->imap = in.imap >= 0 ? arg<const MPI_Offset *>(args, in.imap) : nullptr;
    c->buf = arg<void *>(args, in.buf);
    if (in.flexible) {
        c->bufcount = arg<MPI_Offset>(args, in.bufcount);
        c->buftype = arg<MPI_Datatype>(args, in.buftype);
    }
    c->xtype = vf.header.vars()[static_cast<size_t>(c->varid)].type;
    // PnetCDF dereferences it (and crashes); here the caller gets an error and the other ranks go on.
    if (!c->buf && c->nelems > 0 && !(in.flexible && c->bufcount == 0)) {
        set_last_error(format("a %s on '%s' variable '%s': NULL buffer for %lld elements", is_write ? "put" : "get",
                              vf.path.c_str(), vf.header.vars()[static_cast<size_t>(c->varid)].name.c_str(),
                              static_cast<long long>(c->nelems)));
        return NC_EINVAL;
    }
    return NC_NOERR;
}

// The next write of this rank: ids in the order the writes take effect (which decides overlaps
// within one rank), seq the file's collective calls so far (which decides them across ranks).
match::WriteReq next_write(const VirtualFile &vf, int varid, const match::Box &box) {
    match::WriteReq m{vf.rank, vf.ws->writes.size() + 1, varid, box};
    m.seq = vf.ws->seq;
    return m;
}

// The write a bput's box will be if the next collective call (ncmpi_wait_all) completes it after
// the puts still pending, in the order of the requests, and after `before` earlier non-empty boxes of
// the same bput (the positions pack_ahead packs it for at the call).
match::WriteReq predicted_write(const VirtualFile &vf, int varid, const match::Box &box, size_t before) {
    size_t pos = vf.ws->writes.size() + before;
    for (const auto &[id, p] : vf.pending_puts) {
        if (p.deferred)
            for (const auto &b : p.deferred->boxes) pos += !b.empty();
        for (const auto &w : p.records) pos += !w.meta.box.empty();
    }
    match::WriteReq m{vf.rank, pos + 1, varid, box};
    m.seq = vf.ws->seq + 1;
    return m;
}

void record_write(VirtualFile &vf, WriteRecord &&w) {
    if (w.meta.box.empty()) return;
    vf.ws->writes.push_back(std::move(w));
}

// Record the writes of one put (its boxes in order) from `values`: the boxes' elements in the
// variable's type, one after the other. `owned` is the buffer `values` points into when the put
// made one (then a single box takes it without a copy), empty when `values` is the user's memory:
// then, with buffer_data=0, the write refers to that memory (the user keeps it unchanged until
// ncmpi_close returns), otherwise it is copied. While the session replays a plan, a write equal to
// the plan's next one keeps only the pieces the plan says are read (pack_for_replay).
void record_values(Runtime &rt, VirtualFile &vf, int varid, const std::vector<match::Box> &boxes, const char *values,
                   std::vector<char> &&owned) {
    const size_t es = types::type_size(vf.header.vars()[static_cast<size_t>(varid)].type);
    size_t offset = 0;
    for (const auto &box : boxes) {
        const size_t bytes = static_cast<size_t>(box.size()) * es;
        vf.put_bytes += static_cast<int64_t>(bytes);
        WriteRecord w;
        w.meta = next_write(vf, varid, box);
        if (!box.empty() && pack_for_replay(rt, vf, w.meta, values + offset)) {
            w.packed = true;
        } else if (boxes.size() == 1 && !owned.empty()) {
            w.data = std::move(owned); // converted or gathered: a copy already
            rt.stats().put_bytes_copied += static_cast<long>(bytes);
        } else if (owned.empty() && !rt.config().buffer_data) {
            w.borrowed = values + offset;
            vf.ws->borrows = true;
            rt.stats().put_bytes_referenced += static_cast<long>(bytes);
        } else {
            w.data = rt.buffers().take(bytes);
            if (bytes) std::memcpy(w.data.data(), values + offset, bytes);
            counters::copied(true, bytes);
            rt.stats().put_bytes_copied += static_cast<long>(bytes);
        }
        phase::add_bytes(phase::Pack, w.data.size());
        offset += bytes;
        record_write(vf, std::move(w));
    }
    if (!owned.empty()) rt.buffers().give(std::move(owned));
}

// A bput taking effect (at wait), w.meta the write its call predicted: recorded from the values it
// kept, or, packed at the call (pack_ahead), where predicted, else the session leaves its plan.
void record_bput(Runtime &rt, VirtualFile &vf, WriteRecord &&w) {
    const bool predicted = w.meta.box.empty() || next_write(vf, w.meta.varid, w.meta.box) == w.meta;
    vf.ws->bputs_predicted = vf.ws->bputs_predicted && predicted;
    const size_t bytes = static_cast<size_t>(w.meta.box.size()) *
                         types::type_size(vf.header.vars()[static_cast<size_t>(w.meta.varid)].type);
    if (!w.packed) { // copied whole at the call: counted once, whether it is kept or packed now
        const size_t recorded = vf.ws->writes.size();
        record_values(rt, vf, w.meta.varid, {w.meta.box}, w.data.data(), std::move(w.data));
        if (vf.ws->writes.size() > recorded && vf.ws->writes.back().packed)
            rt.stats().put_bytes_copied += static_cast<long>(bytes);
        return;
    }
    vf.put_bytes += static_cast<int64_t>(bytes);
    if (!predicted) { // its pieces went where the plan has another write: the session cannot replay
        if (vf.ws->broken.empty())
            vf.ws->broken = format("a bput of writer rank %d, variable '%s' %s, took effect as write %zu, not as "
                                   "write %llu where its call predicted and packed it (replay_io=1 packs a bput at "
                                   "its call when the plan's bputs took effect in the order of their requests at "
                                   "the next collective call)", vf.rank,
                                   vf.header.vars()[static_cast<size_t>(w.meta.varid)].name.c_str(),
                                   w.meta.box.to_string().c_str(), vf.ws->writes.size() + 1,
                                   static_cast<unsigned long long>(w.meta.id));
        vf.ws->packing = WriterSession::Packing::Broken;
        w.meta = next_write(vf, w.meta.varid, w.meta.box);
    }
    record_write(vf, std::move(w));
}

// ncmpi_inq_put_size: PnetCDF's root writes the header's record count whenever a put makes it grow
// (here: this rank's puts; the growth another rank's put makes is not seen before dtf_transfer).
void count_numrecs(VirtualFile &vf) {
    if (vf.rank != 0 || vf.header.numrecs() <= vf.numrecs_counted) return;
    vf.numrecs_counted = vf.header.numrecs();
    vf.put_bytes += vf.header.format() == NC_FORMAT_CDF5 ? 8 : 4;
}

int make_layout(const struct dtf_pnc_info &in, const Call &c, types::MemLayout *l) {
    int rc = in.flexible ? types::describe_flexible(c.bufcount, c.buftype, c.xtype, c.nelems, l)
                         : types::describe_typed(types::memtype_of_mpi(in.mpitype), c.nelems, l);
    if (rc == NC_NOERR && c.imap) {
        const match::Box &b = c.boxes.front();
        rc = types::apply_imap(l, b.ndims(), reinterpret_cast<const MPI_Offset *>(b.count.data()), c.imap);
    }
    return rc;
}

} // namespace

bool netcdf4_file(VirtualFile &vf) {
    if (vf.netcdf4 < 0) vf.netcdf4 = model::netcdf4_format(vf.header) != 0;
    return vf.netcdf4 != 0;
}

void record_fill(Runtime &rt, VirtualFile &vf, const model::Header::Region &f) {
    if (vf.rank != 0 || netcdf4_file(vf)) return;
    WriteRecord w;
    w.meta = next_write(vf, f.varid, match::Box::vara(f.start, f.count));
    w.meta.fill = true;
    w.data = fill_value(vf.header, f.varid);
    pack_for_replay(rt, vf, w.meta, w.data.data()); // (nothing of it is packed: it keeps its place in the plan)
    record_write(vf, std::move(w));
}

namespace {

// A put on a file of netCDF-C's classic library in fill mode (VirtualFile::classic_fills): the records
// it added are filled in every record variable before its values are written (NC3's NCvnrecs, which
// does not ask the variables' own no_fill).
void fill_added_records(Runtime &rt, VirtualFile &vf, int64_t numrecs_before) {
    const model::Header &h = vf.header;
    if (!vf.classic_fills || h.fill_mode() != NC_FILL || h.numrecs() <= numrecs_before) return;
    for (int v = 0; v < static_cast<int>(h.vars().size()); ++v) {
        if (!h.is_record_var(v)) continue;
        model::Header::Region f{v, {}, h.shape(v)};
        f.start.assign(f.count.size(), 0);
        f.start[0] = numrecs_before;
        f.count[0] = h.numrecs() - numrecs_before;
        if (std::find(f.count.begin(), f.count.end(), 0) == f.count.end()) record_fill(rt, vf, f);
    }
}

// The values of a put of `varid` in the variable's type: the user's memory itself when no conversion
// is needed and it is laid out densely, else a gathered or converted copy (in *owned). Returns the conversion's
// status (NC_ERANGE included); *values is set unless it is another error.
int values_of(Runtime &rt, const VirtualFile &vf, int varid, const types::MemLayout &layout, const void *buf,
              const char **values, std::vector<char> *owned) {
    const nc_type xtype = vf.header.vars()[static_cast<size_t>(varid)].type;
    int rc = NC_NOERR;
    const bool gathered = !layout.contiguous();
    const bool same = types::same_representation(layout.memtype, xtype, vf.header.format());
    std::vector<char> scratch = gathered ? rt.buffers().take(layout.dense_bytes()) : std::vector<char>();
    const char *mem = types::gather_view(layout, buf, scratch, &rc);
    if (rc != NC_NOERR) return rc;
    if (gathered) counters::copied(true, scratch.size());
    if (same) { // the user's memory itself (what is kept is copied from there), or the gathered copy
        if (gathered) *owned = std::move(scratch);
        *values = gathered ? owned->data() : mem;
        return NC_NOERR;
    }
    const size_t n = static_cast<size_t>(layout.nelems), es = types::type_size(xtype);
    *owned = rt.buffers().take(n * es);
    *values = owned->data();
    counters::copied(true, owned->size());
    const std::vector<char> fill = fill_value(vf.header, varid);
    rc = types::convert_put(mem, layout.memtype, owned->data(), xtype, n, fill.data(), vf.header.format());
    if (gathered) rt.buffers().give(std::move(scratch));
    return rc;
}

int put(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, void **args) {
    if (!vf.writer) return NC_EPERM;
    const bool bput = in.mode == DTF_PNC_MODE_BPUT;
    if (bput && vf.bput_buffer.size == 0) return NC_ENULLABUF; // (as PnetCDF: before the arguments)
    Call c;
    std::vector<model::Access> accesses;
    int rc = describe(vf, in, args, true, &c, &accesses);
    types::MemLayout layout;
    if (rc == NC_NOERR) rc = make_layout(in, c, &layout);
    if (rc != NC_NOERR) return rc;
    writer_put(rt, vf);
    const int64_t numrecs_before = vf.header.numrecs();
    const bool nonblocking = in.req >= 0;
    int *req = nonblocking ? arg<int *>(args, in.req) : nullptr;
    // As PnetCDF: nothing to do, no request (the id is NC_REQ_NULL already: dtf_pnc_ncid_call).
    if (nonblocking && c.nelems == 0) return NC_NOERR;
    const MPI_Offset held = bput ? static_cast<MPI_Offset>(c.nelems) * types::type_size(c.xtype) : 0;
    if (bput && vf.bput_buffer.used() + held > vf.bput_buffer.size) return NC_EINSUFFBUF;
    // An iput's values are taken at wait (PnetCDF lets the caller touch its buffer only after the
    // wait); a bput's now (its buffer is free at once). A typed iput only: a flexible one's datatype
    // may be freed after the call.
    const bool defer = nonblocking && in.mode == DTF_PNC_MODE_NB && !in.flexible;
    const char *values = nullptr;
    std::vector<char> owned;
    int conv = NC_NOERR;
    if (!defer) {
        conv = values_of(rt, vf, c.varid, layout, c.buf, &values, &owned);
        if (conv != NC_NOERR && conv != NC_ERANGE) return conv;
    }
    // PnetCDF grows the record count for every vara-like write, even an empty one, but not for the
    // empty boxes of a varn.
    for (size_t i = 0; i < accesses.size(); ++i)
        if (in.kind != DTF_PNC_KIND_VARN || !c.boxes[i].empty()) vf.header.note_write(accesses[i]);
    if (!nonblocking) {
        count_numrecs(vf);
        fill_added_records(rt, vf, numrecs_before);
        record_values(rt, vf, c.varid, c.boxes, values, std::move(owned));
        return conv;
    }
    // Like PnetCDF, the write takes effect in the order of wait/wait_all, and its outcome (and the
    // records it adds; a cancelled put adds none) is reported there.
    const int id = vf.next_request++;
    if (req) *req = id;
    if (bput) vf.bput_buffer.held.emplace_back(id, held);
    VirtualFile::PendingPut pending{{}, conv, vf.header.numrecs(), std::nullopt};
    if (defer) {
        pending.deferred.emplace(DeferredPut{c.varid, std::move(c.boxes), std::move(layout), c.buf, c.xtype});
    } else { // bput: its values now (the buffer is free at once), recorded at wait (record_bput)
        const size_t es = types::type_size(c.xtype);
        size_t offset = 0, before = 0;
        for (const auto &box : c.boxes) {
            WriteRecord w;
            w.meta = predicted_write(vf, c.varid, box, before);
            const size_t bytes = static_cast<size_t>(box.size()) * es;
            if (!box.empty() && pack_ahead(rt, vf, w.meta, values + offset)) { // replay: packed, not kept
                w.packed = true;
            } else {
                w.data = rt.buffers().take(bytes);
                if (bytes) std::memcpy(w.data.data(), values + offset, bytes);
                counters::copied(true, bytes);
            }
            offset += bytes;
            before += !box.empty();
            pending.records.push_back(std::move(w));
        }
        if (!owned.empty()) rt.buffers().give(std::move(owned));
    }
    vf.pending_puts.emplace(id, std::move(pending));
    vf.header.set_numrecs(numrecs_before);
    return NC_NOERR;
}

// For dtf_errmsg(): which variable of which writer a rejected get asked for, and what it is.
void explain_rejected_get(Runtime &rt, const VirtualFile &vf, int varid, int rc, const char *call) {
    const std::string writer = rt.config().component_name(vf.peer);
    const auto &vars = vf.header.vars();
    if (varid < 0 || varid >= static_cast<int>(vars.size())) {
        set_last_error(format("%s on '%s': component '%s' defined no variable %d (it defined %zu): %s", call,
                              vf.path.c_str(), writer.c_str(), varid, vars.size(), ncmpi_strerror(rc)));
        return;
    }
    std::string shape;
    for (int64_t len : vf.header.shape(varid)) shape += (shape.empty() ? "" : " x ") + std::to_string(len);
    set_last_error(format("%s on '%s' variable '%s' (%s [%s] as defined by component '%s'): %s", call, vf.path.c_str(),
                          vars[static_cast<size_t>(varid)].name.c_str(),
                          types::type_name(vars[static_cast<size_t>(varid)].type), shape.c_str(), writer.c_str(),
                          ncmpi_strerror(rc)));
}

// Where a get's elements go (r.xtype, r.layout, r.format and r.user_buf set): the user's buffer itself
// when it holds them densely in the variable's representation, else a staging buffer (converted and
// scattered once filled), taken when the batch needs it where the layout walks the user's buffer with
// strides (ReadRecord::strided). read_batch zeroes what no piece covers.
void set_destination(Runtime &rt, ReadRecord &r) {
    const bool same = r.user_buf && types::same_representation(r.layout.memtype, r.xtype, r.format);
    r.direct = same && r.layout.contiguous();
    if (r.direct) {
        r.dest = static_cast<char *>(r.user_buf);
        return;
    }
    if (same) r.strided = types::strided_map(r.layout);
    if (!r.strided.valid()) r.stage(rt.buffers());
}

// A netCDF-4 file's get (model/netcdf4_mark.h): what no write covered reads as the fill value of each
// part's variable, as HDF5 gives it, but zeros in a fixed-size variable netCDF-4 does not fill; a
// PnetCDF file's reads zeros there. (netCDF-C pads a record variable's records past the last one
// written to it with the fill value, filled or not; HDF5 gives zeros below it in one not filled, where
// dtf gives the fill value: the per-variable record count does not reach the readers.)
void set_unwritten(VirtualFile &vf, ReadRecord &r) {
    if (!netcdf4_file(vf)) return;
    for (const match::ReadReq &part : r.parts) { // (the mark, not the header's no_fill: a reader's is ncmpi_open's)
        const bool unfilled =
            !vf.header.is_record_var(part.varid) && model::netcdf4_unfilled(vf.header, part.varid);
        r.unwritten.push_back(unfilled ? std::vector<char>() : fill_value(vf.header, part.varid));
    }
}

// The record of a get (its parts, where its values go), or PnetCDF's error for it.
int prepare_get(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, int fn, void **args,
                std::unique_ptr<ReadRecord> *out) {
    const int varid = arg<int>(args, in.varid);
    // Reads are bounded by the final numrecs (or, while a replay may come, the plan's: records_ahead).
    const bool record = !vf.writer && vf.header.is_record_var(varid), ahead = record && records_ahead(vf);
    if (record && !ahead) wait_header_final(rt, vf);
    Call c;
    std::vector<model::Access> accesses;
    int rc = describe(vf, in, args, false, &c, &accesses);
    auto r = std::make_unique<ReadRecord>();
    if (rc == NC_NOERR) rc = make_layout(in, c, &r->layout);
    if (rc != NC_NOERR) {
        vf.reader.ahead_refused = vf.reader.ahead_refused || ahead;
        explain_rejected_get(rt, vf, varid, rc, dtf_pnc_name(fn));
        return rc;
    }
    if (ahead) // the record dimension comes first
        for (const auto &box : c.boxes)
            if (!box.empty())
                vf.reader.ahead_records_read =
                    std::max(vf.reader.ahead_records_read, box.start[0] + (box.count[0] - 1) * box.stride[0] + 1);
    r->xtype = c.xtype;
    r->user_buf = c.buf;
    r->format = vf.header.format();
    int64_t offset = 0;
    for (const auto &box : c.boxes) {
        r->parts.push_back(match::ReadReq{rt.component_rank(), vf.reader.next_read_id++, c.varid, box});
        r->offsets.push_back(offset);
        offset += box.size();
    }
    // Elements no writer wrote read as zeros, as in a file PnetCDF wrote (it writes fill values only
    // where the writer's fills, at enddef and ncmpi_fill_var_rec, put them: those come as pieces); in
    // a netCDF-4 file as the fill value.
    set_destination(rt, *r);
    set_unwritten(vf, *r);
    *out = std::move(r);
    return NC_NOERR;
}

// The writer's igets on its own file (read_own) that a wait completes: ncmpi_wait_all (`all`) is
// collective, though only some ranks may have gets: the ranks agree whether any has (and on the
// record count, as PnetCDF's collective calls do: agree_records); ncmpi_wait is independent.
int own_gets(Runtime &rt, VirtualFile &vf, const std::vector<ReadRecord *> &batch, bool all) {
    if (!all || vf.size == 1) return batch.empty() ? NC_NOERR : read_own(rt, vf, batch, all);
    if (!agree_records(rt, vf, !batch.empty(),
                       format("ncmpi_wait_all on '%s' (session %d)", vf.path.c_str(), vf.session)))
        return NC_NOERR;
    return read_own(rt, vf, batch, true);
}

// Writer, a collective get on its own file: the ranks agree on the record count first (as PnetCDF's
// collective calls do), which bounds the get.
void agree_own_numrecs(Runtime &rt, VirtualFile &vf, int fn) {
    int64_t numrecs = vf.header.numrecs();
    rt.allreduce_max(*vf.group, &numrecs, 1, format("%s on '%s' (session %d)", dtf_pnc_name(fn), vf.path.c_str(),
                                                    vf.session));
    vf.header.set_numrecs(numrecs);
}

int get(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, int fn, void **args) {
    const bool collective = in.mode == DTF_PNC_MODE_COLL;
    if (vf.writer && collective && vf.size > 1) agree_own_numrecs(rt, vf, fn);
    std::unique_ptr<ReadRecord> r;
    const int rc = prepare_get(rt, vf, in, fn, args, &r);
    if (in.mode == DTF_PNC_MODE_NB) {
        if (rc != NC_NOERR) return rc;
        int *req = arg<int *>(args, in.req);
        if (r->parts.empty() || // (as PnetCDF: nothing to do, no request; the id is NC_REQ_NULL already)
            std::all_of(r->parts.begin(), r->parts.end(), [](const auto &p) { return p.box.empty(); }))
            return NC_NOERR;
        int id = vf.next_request++;
        if (req) *req = id;
        vf.pending[id] = std::move(r);
        if (!vf.writer) post_ahead(rt, vf);
        return NC_NOERR;
    }
    std::vector<ReadRecord *> batch;
    if (rc == NC_NOERR) batch.push_back(r.get());
    if (vf.writer) { // (a collective get that failed on this rank still joins the others)
        const int own = collective || rc == NC_NOERR ? read_own(rt, vf, batch, collective) : rc;
        return rc != NC_NOERR ? rc : own;
    }
    return rc != NC_NOERR ? rc : read_batch(rt, vf, batch);
}

// ncmpi_wait / ncmpi_wait_all: complete the named nonblocking requests (NC_REQ_ALL: all of them).
// Puts take effect now (their values were taken at the call, or now for an iput); gets are
// fetched now, in one batch, after the puts (as PnetCDF).
int wait(Runtime &rt, VirtualFile &vf, bool all, int count, int *reqs, int *statuses) {
    // PnetCDF's checks: ncmpi_wait_all is collective and ncmpi_wait independent.
    if (vf.header.in_define_mode()) return NC_EINDEFINE;
    if (all && vf.header.in_indep_mode()) return NC_EINDEP;
    if (!all && !vf.header.in_indep_mode()) return NC_ENOTINDEP;
    if (!all && count == 0) return NC_NOERR;
    std::vector<int> ids;
    if (count == NC_REQ_ALL) {
        for (auto &[id, r] : vf.pending) ids.push_back(id);
        for (auto &[id, p] : vf.pending_puts) ids.push_back(id);
        std::sort(ids.begin(), ids.end());
    } else {
        if (count < 0 || (count > 0 && !reqs)) return NC_EINVAL;
        ids.assign(reqs, reqs + count);
    }
    // The puts first: they take effect now, before the gets read (as PnetCDF's wait).
    std::vector<int> put_status(ids.size(), NC_NOERR);
    std::vector<bool> was_put(ids.size(), false);
    for (size_t i = 0; i < ids.size(); ++i) {
        auto p = vf.pending_puts.find(ids[i]);
        if (p == vf.pending_puts.end()) continue;
        int st = p->second.status;
        if (const auto &d = p->second.deferred) {
            const char *values = nullptr;
            std::vector<char> owned;
            st = values_of(rt, vf, d->varid, d->layout, d->buf, &values, &owned);
            if (st == NC_NOERR || st == NC_ERANGE) record_values(rt, vf, d->varid, d->boxes, values, std::move(owned));
        }
        for (auto &w : p->second.records) record_bput(rt, vf, std::move(w));
        if (p->second.numrecs > vf.header.numrecs()) vf.header.set_numrecs(p->second.numrecs);
        count_numrecs(vf);
        vf.pending_puts.erase(p);
        vf.bput_buffer.give_back(ids[i]);
        put_status[i] = st;
        was_put[i] = true;
    }
    std::vector<ReadRecord *> batch;
    for (int id : ids) {
        auto it = vf.pending.find(id);
        if (it != vf.pending.end()) batch.push_back(it->second.get());
    }
    int rc;
    try {
        rc = vf.writer ? own_gets(rt, vf, batch, all) : read_batch(rt, vf, batch);
    } catch (...) {
        // The gets failed with this wait: they are no longer pending, so that nothing writes into
        // their buffers later (the next wait, dtf_transfer or close), which the program may have freed.
        if (!vf.writer) { // a batch posted ahead refers to them: it goes first (receives cancelled, buffers kept)
            try {
                drop_ahead(rt, vf);
            } catch (...) { // (the wait's own failure is the one to report)
            }
        }
        for (int id : ids) vf.pending.erase(id);
        throw;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
        const int id = ids[i];
        int st = put_status[i];
        if (!was_put[i]) {
            if (auto it = vf.pending.find(id); it != vf.pending.end()) {
                st = it->second->status;
                vf.pending.erase(it);
            } else if (id != NC_REQ_NULL) {
                st = NC_EINVAL_REQUEST; // not pending (e.g. already completed): the id stays as it is
            }
        }
        if (count != NC_REQ_ALL) {
            if (statuses) statuses[i] = st;
            if (st != NC_EINVAL_REQUEST) reqs[i] = NC_REQ_NULL;
        }
        if (rc == NC_NOERR) rc = st; // as PnetCDF: the first request error, also with a status array
    }
    return rc;
}

// ncmpi_mput_* / ncmpi_mget_*: `num` variables in one call, each as the call of one variable of the
// same kind (its arguments the num-th of each array), the gets as one batch. The first error is
// returned; the other variables are put or got all the same.
int multi_call(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, int fn, void **args) {
    const int num = arg<int>(args, in.num);
    if (num < 0) return NC_EINVAL;
    const bool put_call = in.dir == DTF_PNC_DIR_PUT, collective = in.mode == DTF_PNC_MODE_COLL;
    if (!put_call && vf.writer && collective) agree_own_numrecs(rt, vf, fn);
    struct dtf_pnc_info one = in;
    one.multi = 0;
    const signed char fields[] = {in.varid, in.start, in.count, in.stride, in.imap, in.buf, in.bufcount, in.buftype};
    const int nargs = 1 + *std::max_element(std::begin(fields), std::end(fields));
    // What each argument of the one-variable call points to: the i-th element of the array the
    // multi-variable call's argument points to (an int, a pointer, an MPI_Offset or an MPI_Datatype).
    union Element {
        int i;
        const void *p;
        MPI_Offset n;
        MPI_Datatype t;
    };
    std::vector<Element> element(static_cast<size_t>(nargs));
    std::vector<void *> one_args(static_cast<size_t>(nargs), nullptr);
    one_args[0] = args[0];
    int first = NC_NOERR;
    std::vector<std::unique_ptr<ReadRecord>> gets;
    for (int v = 0; v < num; ++v) {
        auto take = [&](signed char at, auto *array_type) {
            if (at < 0) return;
            using T = std::remove_pointer_t<decltype(array_type)>;
            const T *array = arg<const T *>(args, at);
            Element &e = element[static_cast<size_t>(at)];
            if constexpr (std::is_same_v<T, int>) e.i = array ? array[v] : 0;
            else if constexpr (std::is_same_v<T, MPI_Offset>) e.n = array ? array[v] : 0;
            else if constexpr (std::is_same_v<T, MPI_Datatype>) e.t = array ? array[v] : MPI_DATATYPE_NULL;
            else e.p = array ? array[v] : nullptr;
            one_args[static_cast<size_t>(at)] = &e;
        };
        take(in.varid, static_cast<int *>(nullptr));
        for (signed char at : {in.start, in.count, in.stride, in.imap, in.buf})
            take(at, static_cast<const void **>(nullptr));
        take(in.bufcount, static_cast<MPI_Offset *>(nullptr));
        take(in.buftype, static_cast<MPI_Datatype *>(nullptr));
        int rc;
        if (put_call) {
            rc = put(rt, vf, one, one_args.data());
        } else {
            std::unique_ptr<ReadRecord> r;
            rc = prepare_get(rt, vf, one, fn, one_args.data(), &r);
            if (rc == NC_NOERR) gets.push_back(std::move(r));
        }
        if (first == NC_NOERR) first = rc;
    }
    if (put_call) return first;
    std::vector<ReadRecord *> batch;
    for (auto &r : gets) batch.push_back(r.get());
    const int rc = vf.writer ? read_own(rt, vf, batch, collective) : read_batch(rt, vf, batch);
    return first != NC_NOERR ? first : rc;
}

// What a vard call's file type selects: the regions of variables of the type of its variable (whose
// type is xtype), as boxes, how many elements, and the record count they reach.
struct VardTarget {
    nc_type xtype = NC_NAT;
    std::vector<model::Header::Region> regions;
    std::vector<match::Box> boxes;
    int64_t nelems = 0, numrecs = 0;
};

// The target of a vard call (types::flatten, Header::vard_regions; possibly of several variables of
// its type, as PnetCDF allows), each region a put or get of a box, in the file type's order; a
// PnetCDF code. A reader's get on a file with records waits for the final header first.
int vard_target(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, int fn, void **args, VardTarget *t) {
    const bool put_call = in.dir == DTF_PNC_DIR_PUT;
    const int varid = arg<int>(args, in.varid);
    model::Access a;
    a.varid = varid;
    a.api = model::Api::var;
    a.is_write = put_call;
    a.collective = in.mode == DTF_PNC_MODE_COLL;
    int rc = vf.header.check_access(a);
    if (rc == NC_NOERR) t->xtype = vf.header.vars()[static_cast<size_t>(varid)].type;
    std::vector<types::ByteRun> runs;
    MPI_Datatype elem = MPI_DATATYPE_NULL;
    if (rc == NC_NOERR) rc = types::flatten(arg<MPI_Datatype>(args, in.filetype), &runs, &elem);
    // (its element type is the variable's; a Fortran one counts as its C twin: MPI_INTEGER as MPI_INT)
    if (rc == NC_NOERR && !runs.empty() && types::memtype_of_mpi(elem) != t->xtype) rc = NC_ETYPE_MISMATCH;
    if (rc == NC_NOERR && !put_call && !vf.writer && vf.header.unlimdimid() >= 0) wait_header_final(rt, vf);
    t->numrecs = vf.header.numrecs();
    std::vector<std::pair<int64_t, int64_t>> byte_runs;
    for (const auto &r : runs) byte_runs.emplace_back(r.offset, r.bytes);
    if (rc == NC_NOERR && vf.header.vard_regions(varid, byte_runs, &t->regions, &t->numrecs) != NC_NOERR) {
        rc = DTF_ERR_UNSUPPORTED;
        set_last_error(
            format("%s on '%s' variable '%s': the file type selects bytes that are not elements of variables "
                   "of its type (the header, padding, or another type's variable)",
                   dtf_pnc_name(fn), vf.path.c_str(), vf.header.vars()[static_cast<size_t>(varid)].name.c_str()));
    }
    for (const auto &r : t->regions) {
        t->boxes.push_back(match::Box::vara(r.start, r.count));
        t->nelems += t->boxes.back().size();
    }
    return rc;
}

// ncmpi_put_vard: each region a write of its box, the values in the file type's order.
int vard_put(Runtime &rt, VirtualFile &vf, const VardTarget &t, int varid, const types::MemLayout &layout,
             void *buf) {
    const char *values = nullptr;
    std::vector<char> owned;
    const int conv = values_of(rt, vf, varid, layout, buf, &values, &owned);
    if (conv != NC_NOERR && conv != NC_ERANGE) return conv;
    writer_put(rt, vf);
    const size_t es = types::type_size(t.xtype);
    size_t offset = 0;
    for (size_t i = 0; i < t.regions.size(); ++i) {
        record_values(rt, vf, t.regions[i].varid, {t.boxes[i]}, values + offset, {});
        offset += static_cast<size_t>(t.boxes[i].size()) * es;
    }
    if (!owned.empty()) rt.buffers().give(std::move(owned));
    if (t.numrecs > vf.header.numrecs()) vf.header.set_numrecs(t.numrecs);
    count_numrecs(vf);
    return conv;
}

// ncmpi_get_vard: one get whose parts are the regions; `rc`: the call's error so far (a collective
// get that failed on this rank still joins the others).
int vard_get(Runtime &rt, VirtualFile &vf, const VardTarget &t, types::MemLayout layout, void *buf, int rc,
             bool collective) {
    auto r = std::make_unique<ReadRecord>();
    std::vector<ReadRecord *> batch;
    if (rc == NC_NOERR && t.nelems > 0) {
        r->xtype = t.xtype;
        r->user_buf = buf;
        r->format = vf.header.format();
        r->layout = std::move(layout);
        int64_t offset = 0;
        for (size_t i = 0; i < t.regions.size(); ++i) {
            const uint64_t id = vf.reader.next_read_id++;
            r->parts.push_back(match::ReadReq{rt.component_rank(), id, t.regions[i].varid, t.boxes[i]});
            r->offsets.push_back(offset);
            offset += t.boxes[i].size();
        }
        set_destination(rt, *r);
        set_unwritten(vf, *r);
        batch.push_back(r.get());
    }
    if (vf.writer) {
        const int own = collective || !batch.empty() ? read_own(rt, vf, batch, collective) : NC_NOERR;
        return rc != NC_NOERR ? rc : own;
    }
    return rc != NC_NOERR ? rc : read_batch(rt, vf, batch);
}

// ncmpi_put_vard / ncmpi_get_vard (and _all): the elements that the file type selects from variable
// varid's begin in the file, put or got as the buffer type lays them out.
int vard_call(Runtime &rt, VirtualFile &vf, const struct dtf_pnc_info &in, int fn, void **args) {
    const bool put_call = in.dir == DTF_PNC_DIR_PUT, collective = in.mode == DTF_PNC_MODE_COLL;
    if (!put_call && vf.writer && collective) agree_own_numrecs(rt, vf, fn);
    VardTarget t;
    int rc = vard_target(rt, vf, in, fn, args, &t);
    types::MemLayout layout;
    if (rc == NC_NOERR && t.nelems > 0)
        rc = types::describe_flexible(arg<MPI_Offset>(args, in.bufcount), arg<MPI_Datatype>(args, in.buftype), t.xtype,
                                      t.nelems, &layout);
    void *buf = arg<void *>(args, in.buf);
    if (!put_call) return vard_get(rt, vf, t, std::move(layout), buf, rc, collective);
    return rc != NC_NOERR || t.nelems == 0 ? rc : vard_put(rt, vf, t, arg<int>(args, in.varid), layout, buf);
}

} // namespace

int vfile_data_call(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    const struct dtf_pnc_info *in = dtf_pnc_info(fn);
    if (in->kind == DTF_PNC_KIND_VARD) return vard_call(rt, vf, *in, fn, args);
    if (in->multi) return multi_call(rt, vf, *in, fn, args);
    return in->dir == DTF_PNC_DIR_PUT ? put(rt, vf, *in, args) : get(rt, vf, *in, fn, args);
}

// ncmpi_cancel: drop pending nonblocking requests (NC_REQ_ALL: all); a cancelled put never happens.
int vfile_cancel(Runtime &rt, VirtualFile &vf, int num, int *reqs, int *statuses) {
    std::vector<int> ids;
    if (num == NC_REQ_ALL) {
        for (auto &[id, r] : vf.pending) ids.push_back(id);
        for (auto &[id, p] : vf.pending_puts) ids.push_back(id);
    } else {
        if (num < 0 || (num > 0 && !reqs)) return NC_EINVAL;
        ids.assign(reqs, reqs + num);
    }
    if (ahead_includes(vf, ids)) settle_ahead(rt, vf); // its receives point into the gets' buffers
    int rc = NC_NOERR;
    for (size_t i = 0; i < ids.size(); ++i) {
        const bool known = vf.pending.erase(ids[i]) + vf.pending_puts.erase(ids[i]) > 0;
        vf.bput_buffer.give_back(ids[i]);
        if (num == NC_REQ_ALL) continue;
        // As PnetCDF: an id that is not pending is NC_EINVAL_REQUEST and stays as it is.
        const int st = known || ids[i] == NC_REQ_NULL ? NC_NOERR : NC_EINVAL_REQUEST;
        if (statuses) statuses[i] = st;
        if (st == NC_NOERR)
            reqs[i] = NC_REQ_NULL;
        else if (rc == NC_NOERR)
            rc = st;
    }
    return rc;
}

// ncmpi_fill_var_rec(ncid, varid, recno): collective; rank 0 records a fill of the record, a write
// that takes effect at this call (data written there before is overwritten, data written after wins).
int vfile_fill_record(Runtime &rt, VirtualFile &vf, int varid, MPI_Offset recno) {
    model::Header::Region fill;
    if (int rc = vf.header.fill_rec(varid, recno, &fill)) return rc;
    count_numrecs(vf);
    record_fill(rt, vf, fill);
    return NC_NOERR;
}

int vfile_wait(Runtime &rt, VirtualFile &vf, bool all, int count, int *reqs, int *statuses) {
    return wait(rt, vf, all, count, reqs, statuses);
}

} // namespace dtf::runtime
