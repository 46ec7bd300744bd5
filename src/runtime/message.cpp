#include "runtime/message.hpp"

#include <cstring>

#include "common/error.hpp"

namespace dtf::runtime {

namespace {
struct Header {
    uint32_t magic;
    uint32_t kind;
    int32_t from_component;
    int32_t session;
    int32_t epoch;
    uint32_t path_len;
    uint64_t payload_len;
};
constexpr size_t kMaxPath = 4096;
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
    case MessageKind::FileWithdrawn: return "file-withdrawn";
    }
    return "unknown";
}

std::vector<char> encode(const Message &m) {
    Header h{kMessageMagic, static_cast<uint32_t>(m.kind), m.from_component, m.session, m.epoch,
             static_cast<uint32_t>(m.path.size()), m.payload.size()};
    std::vector<char> out(sizeof h + m.path.size() + m.payload.size());
    std::memcpy(out.data(), &h, sizeof h);
    std::memcpy(out.data() + sizeof h, m.path.data(), m.path.size());
    if (!m.payload.empty()) std::memcpy(out.data() + sizeof h + m.path.size(), m.payload.data(), m.payload.size());
    return out;
}

std::optional<Message> decode(const char *data, size_t size, std::string *why) {
    Header h;
    if (size < sizeof h) {
        *why = format("message of %zu bytes is shorter than its %zu-byte header", size, sizeof h);
        return std::nullopt;
    }
    std::memcpy(&h, data, sizeof h);
    if (h.magic != kMessageMagic) {
        *why = format("message has magic/version 0x%08x, expected 0x%08x (peer runs another dtf version?)", h.magic,
                      kMessageMagic);
        return std::nullopt;
    }
    if (h.kind == 0 || h.kind > kMessageKindLast) {
        *why = format("message has unknown kind %u", h.kind);
        return std::nullopt;
    }
    if (h.path_len == 0 || h.path_len > kMaxPath || h.payload_len > size ||
        sizeof h + h.path_len + h.payload_len != size) {
        *why = format("message lengths (path %u, payload %llu) do not fit its size %zu", h.path_len,
                      static_cast<unsigned long long>(h.payload_len), size);
        return std::nullopt;
    }
    if (h.from_component < 0 || h.session < 0 || h.epoch < 0) {
        *why = format("message has invalid component %d, session %d or epoch %d", h.from_component, h.session,
                      h.epoch);
        return std::nullopt;
    }
    const char *path = data + sizeof h;
    return Message{static_cast<MessageKind>(h.kind), h.from_component, h.session, h.epoch,
                   std::string(path, h.path_len), std::vector<char>(path + h.path_len, path + h.path_len + h.payload_len)};
}

void PayloadReader::get(void *dst, size_t n) {
    if (n > p_.size() - pos_)
        fail(DTF_ERR_PEER, "malformed %s message: payload ends after %zu of %zu bytes", what_, p_.size(), pos_ + n);
    std::memcpy(dst, p_.data() + pos_, n);
    pos_ += n;
}

int32_t PayloadReader::i32() {
    int32_t v;
    get(&v, sizeof v);
    return v;
}

int64_t PayloadReader::i64() {
    int64_t v;
    get(&v, sizeof v);
    return v;
}

std::vector<char> PayloadReader::bytes() {
    int64_t n = i64();
    if (n < 0 || static_cast<uint64_t>(n) > p_.size() - pos_)
        fail(DTF_ERR_PEER, "malformed %s message: byte string of %lld bytes in a payload of %zu", what_,
             static_cast<long long>(n), p_.size());
    std::vector<char> out(p_.data() + pos_, p_.data() + pos_ + n);
    pos_ += static_cast<size_t>(n);
    return out;
}

std::vector<int> PayloadReader::ints(int32_t max_count) {
    int32_t n = i32();
    if (n < 0 || n > max_count) fail(DTF_ERR_PEER, "malformed %s message: %d ranks (at most %d)", what_, n, max_count);
    std::vector<int> out(static_cast<size_t>(n));
    for (auto &x : out) x = i32();
    return out;
}

} // namespace dtf::runtime
