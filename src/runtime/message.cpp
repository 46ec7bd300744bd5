#include "runtime/message.hpp"

#include <cstring>

#include "common/bytes.hpp"
#include "common/error.hpp"

namespace dtf::runtime {

namespace {
// The envelope: magic, kind, from_component, session, epoch, path length (4 bytes each), payload
// length (8), then the path and the payload; little-endian (common/bytes.hpp).
constexpr size_t kHeaderBytes = 32;
constexpr size_t kMaxPath = 4096;
static_assert(kEnvelopeMax == kHeaderBytes + kMaxPath, "kEnvelopeMax: the longest envelope");
} // namespace

const char *kind_name(MessageKind kind) {
    switch (kind) {
    case MessageKind::ClosedWrite: return "closed-write";
    case MessageKind::ClosedRead: return "closed-read";
    case MessageKind::FileDefined: return "file-defined";
    case MessageKind::ReaderOpened: return "reader-opened";
    case MessageKind::HeaderFinal: return "header-final";
    case MessageKind::ReadRequest: return "read-request";
    case MessageKind::ReadPlan: return "read-plan";
    case MessageKind::ReaderDone: return "reader-done";
    case MessageKind::Persisted: return "persisted";
    case MessageKind::PersistData: return "persist-data";
    case MessageKind::PersistDone: return "persist-done";
    case MessageKind::FileWritten: return "file-written";
    case MessageKind::SessionFailed: return "session-failed";
    case MessageKind::Finalizing: return "finalizing";
    }
    return "unknown";
}

namespace {
void envelope(ByteWriter &w, const Message &m) {
    w.u32(kMessageMagic), w.u32(static_cast<uint32_t>(m.kind));
    w.i32(m.from_component), w.i32(m.session), w.i32(m.epoch);
    w.u32(static_cast<uint32_t>(m.path.size())), w.u64(m.payload.size());
    w.raw(m.path.data(), m.path.size());
}
} // namespace

std::vector<char> encode(const Message &m) {
    ByteWriter w(kHeaderBytes + m.path.size() + m.payload.size());
    envelope(w, m);
    w.raw(m.payload.data(), m.payload.size());
    return w.take();
}

std::vector<char> encode(Message &&m) {
    const size_t head = kHeaderBytes + m.path.size(), n = m.payload.size();
    if (m.payload.capacity() < n + head) return encode(static_cast<const Message &>(m));
    ByteWriter w(head);
    envelope(w, m);
    std::vector<char> out = std::move(m.payload);
    out.resize(n + head); // (no reallocation: the capacity is there)
    std::memmove(out.data() + head, out.data(), n);
    std::memcpy(out.data(), w.take().data(), head);
    return out;
}

std::optional<Message> decode(const char *data, size_t size, std::string *why) {
    ByteReader r(data, size);
    uint32_t magic = 0, kind = 0, path_len = 0;
    int32_t from = 0, session = 0, epoch = 0;
    uint64_t payload_len = 0;
    if (!(r.u32(&magic) && r.u32(&kind) && r.i32(&from) && r.i32(&session) && r.i32(&epoch) && r.u32(&path_len) &&
          r.u64(&payload_len))) {
        *why = format("message of %zu bytes is shorter than its %zu-byte header", size, kHeaderBytes);
        return std::nullopt;
    }
    if (magic != kMessageMagic) {
        *why = format("message has magic/version 0x%08x, expected 0x%08x (peer runs another dtf version?)", magic,
                      kMessageMagic);
        return std::nullopt;
    }
    if (kind == 0 || kind > kMessageKindLast) {
        *why = format("message has unknown kind %u", kind);
        return std::nullopt;
    }
    if (path_len == 0 || path_len > kMaxPath || r.left() < path_len || payload_len != r.left() - path_len) {
        *why = format("message lengths (path %u, payload %llu) do not fit its size %zu", path_len,
                      static_cast<unsigned long long>(payload_len), size);
        return std::nullopt;
    }
    if (from < 0 || session < 0 || epoch < 0) {
        *why = format("message has invalid component %d, session %d or epoch %d", from, session, epoch);
        return std::nullopt;
    }
    const char *path = r.view(path_len), *payload = r.view(r.left());
    return Message{static_cast<MessageKind>(kind), from, session, epoch, std::string(path, path_len),
                   std::vector<char>(payload, payload + payload_len)};
}

[[noreturn]] void PayloadReader::truncated(const char *item) const {
    fail(DTF_ERR_PEER, "malformed %s message: payload of %zu bytes ends in its %s at offset %zu", what_, in_.size(),
         item, in_.pos());
}

int32_t PayloadReader::i32() {
    int32_t v;
    if (!in_.i32(&v)) truncated("integer");
    return v;
}

int64_t PayloadReader::i64() {
    int64_t v;
    if (!in_.i64(&v)) truncated("integer");
    return v;
}

std::vector<char> PayloadReader::bytes() {
    const int64_t n = i64();
    const char *p = n >= 0 ? in_.view(static_cast<size_t>(n)) : nullptr;
    if (!p)
        fail(DTF_ERR_PEER, "malformed %s message: byte string of %lld bytes in a payload of %zu", what_,
             static_cast<long long>(n), in_.size());
    return std::vector<char>(p, p + n);
}

std::vector<int> PayloadReader::ints(int32_t max_count) {
    int32_t n = i32();
    if (n < 0 || n > max_count) fail(DTF_ERR_PEER, "malformed %s message: %d ranks (at most %d)", what_, n, max_count);
    std::vector<int> out(static_cast<size_t>(n));
    for (auto &x : out) x = i32();
    return out;
}

void write_withdrawn(PayloadWriter &p, const std::vector<std::pair<std::string, int>> &sessions) {
    p.i32(static_cast<int32_t>(sessions.size()));
    for (const auto &[path, session] : sessions) {
        p.str(path);
        p.i32(session);
    }
}

std::vector<std::pair<std::string, int>> withdrawn_sessions(PayloadReader &r) {
    const int32_t n = r.i32();
    if (n < 0 || n > (1 << 24)) fail(DTF_ERR_PEER, "malformed file-defined message: %d sessions withdrawn", n);
    std::vector<std::pair<std::string, int>> out;
    for (int32_t i = 0; i < n; ++i) {
        std::string path = r.str();
        out.emplace_back(std::move(path), r.i32());
    }
    return out;
}

int64_t header_final_stamp(const Message &m) {
    if (m.payload.size() < sizeof(int64_t)) return 0;
    return PayloadReader(m.payload, "header-final").i64();
}

} // namespace dtf::runtime
