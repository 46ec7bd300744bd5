#include "match/wire.hpp"

#include <string>

#include "common/bytes.hpp"
#include "common/error.hpp"

namespace dtf::match {

namespace {

using ull = unsigned long long;

constexpr size_t kHeaderBytes = 16;
constexpr size_t kRequestBytes = 20; // fixed part of a request record (a write's: 8 more)
constexpr size_t kOrderBytes = 8;    // a write's or piece's seq and fill flag
constexpr size_t kPieceBytes = 40;   // fixed part of a piece record
constexpr uint64_t kFillBit = uint64_t{1} << 63;

uint64_t order_of(uint64_t seq, bool fill) { return seq | (fill ? kFillBit : 0); }
constexpr size_t kDimBytes = 24;

const char *kind_name(WireKind k) {
    return k == WireKind::Writes ? "write list" : k == WireKind::Reads ? "read list" : "piece list";
}

// ---- encoding ----

class Writer : public ByteWriter {
public:
    using ByteWriter::ByteWriter;
    void box(const Box &b) {
        for (int d = 0; d < b.ndims(); ++d) i64(b.start[d]), i64(b.count[d]), i64(b.stride[d]);
    }
};

size_t dims_bytes(const Box &b) { return kDimBytes * static_cast<size_t>(b.ndims()); }

constexpr bool is_write(const WriteReq *) { return true; }
constexpr bool is_write(const ReadReq *) { return false; }
void write_order(Writer &w, const WriteReq &q) { w.le(order_of(q.seq, q.fill), 8); }
void write_order(Writer &, const ReadReq &) {}

template <class Req> std::vector<char> encode_requests(const std::vector<Req> &reqs, WireKind kind) {
    const size_t fixed = kRequestBytes + (is_write(static_cast<const Req *>(nullptr)) ? kOrderBytes : 0);
    size_t bytes = kHeaderBytes;
    for (const Req &q : reqs) bytes += fixed + dims_bytes(q.box);
    Writer w(bytes);
    w.le(kWireMagic, 4), w.le(kWireVersion, 2), w.le(static_cast<uint16_t>(kind), 2), w.le(reqs.size(), 8);
    for (const Req &q : reqs) {
        w.i32(q.rank), w.i32(q.varid), w.le(q.id, 8);
        write_order(w, q);
        w.le(static_cast<uint32_t>(q.box.ndims()), 4);
        w.box(q.box);
    }
    return w.take();
}

// ---- decoding ----

class Reader {
public:
    Reader(const char *data, size_t size, WireKind kind) : in_(data, size), kind_(kind) {}

    [[noreturn]] void bad(const std::string &why) const {
        fail(DTF_ERR_PEER, "malformed %s message (%zu bytes): %s", kind_name(kind_), in_.size(), why.c_str());
    }
    size_t left() const { return in_.left(); }
    uint64_t u(int bytes, const char *what) {
        uint64_t v = 0;
        if (!in_.le(bytes, &v))
            bad(format("truncated: %s needs %d bytes at offset %zu, %zu left%s", what, bytes, in_.pos(), left(),
                       where().c_str()));
        return v;
    }
    int32_t i32(const char *what) { return static_cast<int32_t>(static_cast<uint32_t>(u(4, what))); }
    int64_t i64(const char *what) { return static_cast<int64_t>(u(8, what)); }

    // Checks the header; returns the number of records, which the remaining bytes can hold.
    uint64_t header(size_t fixed) {
        const uint32_t magic = static_cast<uint32_t>(u(4, "magic"));
        if (magic != kWireMagic) bad(format("magic 0x%08x, expected 0x%08x", magic, kWireMagic));
        const uint16_t version = static_cast<uint16_t>(u(2, "version"));
        if (version != kWireVersion)
            bad(format("wire version %u, expected %u (peer runs another dtf version?)", version, kWireVersion));
        const uint16_t kind = static_cast<uint16_t>(u(2, "kind"));
        if (kind != static_cast<uint16_t>(kind_))
            bad(format("message kind %u, expected %u", kind, static_cast<unsigned>(kind_)));
        const uint64_t n = u(8, "record count");
        if (n > left() / fixed)
            bad(format("%llu records announced but only %zu bytes follow (at least %zu per record)",
                       static_cast<ull>(n), left(), fixed));
        return n;
    }
    // Marks the record being read, for messages.
    void record(uint64_t i, uint64_t n) { rec_ = i, nrec_ = n, in_record_ = true; }

    uint32_t ndims() {
        const uint64_t nd = u(4, "ndims");
        if (nd > static_cast<uint64_t>(kMaxDims))
            bad(format("ndims %llu > %d%s", static_cast<ull>(nd), kMaxDims, where().c_str()));
        if (nd * kDimBytes > left())
            bad(format("truncated: %llu dimensions need %llu bytes at offset %zu, %zu left%s", static_cast<ull>(nd),
                       static_cast<ull>(nd * kDimBytes), in_.pos(), left(), where().c_str()));
        return static_cast<uint32_t>(nd);
    }
    Box box(uint32_t nd) {
        Box b;
        b.start.resize(nd), b.count.resize(nd), b.stride.resize(nd);
        for (uint32_t d = 0; d < nd; ++d)
            b.start[d] = i64("start"), b.count[d] = i64("count"), b.stride[d] = i64("stride");
        std::string why;
        if (!valid(b, &why)) bad(why + where());
        return b;
    }
    void non_negative(int32_t v, const char *what) {
        if (v < 0) bad(format("negative %s %d%s", what, v, where().c_str()));
    }
    void finish() {
        if (left() != 0) bad(format("%zu trailing bytes after the last record", left()));
    }

private:
    ByteReader in_;
    WireKind kind_;
    uint64_t rec_ = 0, nrec_ = 0;
    bool in_record_ = false;

    std::string where() const {
        return in_record_ ? format(" (record %llu of %llu)", static_cast<ull>(rec_), static_cast<ull>(nrec_)) : "";
    }
};

void read_order(Reader &r, WriteReq &q) {
    const uint64_t order = r.u(8, "order");
    q.seq = order & ~kFillBit;
    q.fill = (order & kFillBit) != 0;
}
void read_order(Reader &, ReadReq &) {}

template <class Req> std::vector<Req> decode_requests(const char *data, size_t size, WireKind kind) {
    Reader r(data, size, kind);
    const uint64_t n = r.header(kRequestBytes + (is_write(static_cast<const Req *>(nullptr)) ? kOrderBytes : 0));
    std::vector<Req> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        r.record(i, n);
        Req q;
        q.rank = r.i32("rank");
        q.varid = r.i32("varid");
        q.id = r.u(8, "id");
        read_order(r, q);
        r.non_negative(q.rank, "rank"), r.non_negative(q.varid, "varid");
        q.box = r.box(r.ndims());
        out.push_back(std::move(q));
    }
    r.finish();
    return out;
}

} // namespace

std::vector<char> encode(const std::vector<WriteReq> &writes) { return encode_requests(writes, WireKind::Writes); }
std::vector<char> encode(const std::vector<ReadReq> &reads) { return encode_requests(reads, WireKind::Reads); }

std::vector<char> encode(const std::vector<Piece> &pieces) {
    size_t bytes = kHeaderBytes;
    for (const Piece &p : pieces) bytes += kPieceBytes + dims_bytes(p.region);
    Writer w(bytes);
    w.le(kWireMagic, 4), w.le(kWireVersion, 2), w.le(static_cast<uint16_t>(WireKind::Pieces), 2);
    w.le(pieces.size(), 8);
    for (const Piece &p : pieces) {
        w.i32(p.writer), w.i32(p.reader), w.i32(p.varid), w.le(static_cast<uint32_t>(p.region.ndims()), 4);
        w.le(p.write_id, 8), w.le(p.read_id, 8), w.le(order_of(p.seq, p.fill), 8);
        w.box(p.region);
    }
    return w.take();
}

std::vector<WriteReq> decode_writes(const char *data, size_t size) {
    return decode_requests<WriteReq>(data, size, WireKind::Writes);
}
std::vector<ReadReq> decode_reads(const char *data, size_t size) {
    return decode_requests<ReadReq>(data, size, WireKind::Reads);
}

std::vector<Piece> decode_pieces(const char *data, size_t size) {
    Reader r(data, size, WireKind::Pieces);
    const uint64_t n = r.header(kPieceBytes);
    std::vector<Piece> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; ++i) {
        r.record(i, n);
        Piece p;
        p.writer = r.i32("writer");
        p.reader = r.i32("reader");
        p.varid = r.i32("varid");
        const uint32_t nd = r.ndims();
        p.write_id = r.u(8, "write_id");
        p.read_id = r.u(8, "read_id");
        const uint64_t order = r.u(8, "order");
        p.seq = order & ~kFillBit;
        p.fill = (order & kFillBit) != 0;
        r.non_negative(p.writer, "writer"), r.non_negative(p.reader, "reader"), r.non_negative(p.varid, "varid");
        p.region = r.box(nd);
        out.push_back(std::move(p));
    }
    r.finish();
    return out;
}

} // namespace dtf::match
