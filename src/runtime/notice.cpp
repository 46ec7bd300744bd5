#include "runtime/notice.hpp"

#include <cstring>

#include "common/error.hpp"

namespace dtf::runtime {

namespace {
struct Header {
    uint32_t magic;
    uint32_t kind;
    int32_t from_component;
    int32_t session;
    uint32_t path_len;
};
constexpr size_t kMaxPath = 4096;
} // namespace

std::vector<char> encode(const Notice &n) {
    Header h{kNoticeMagic, static_cast<uint32_t>(n.kind), n.from_component, n.session,
             static_cast<uint32_t>(n.path.size())};
    std::vector<char> out(sizeof h + n.path.size());
    std::memcpy(out.data(), &h, sizeof h);
    std::memcpy(out.data() + sizeof h, n.path.data(), n.path.size());
    return out;
}

std::optional<Notice> decode(const char *data, size_t size, std::string *why) {
    Header h;
    if (size < sizeof h) {
        *why = format("notice of %zu bytes is shorter than its %zu-byte header", size, sizeof h);
        return std::nullopt;
    }
    std::memcpy(&h, data, sizeof h);
    if (h.magic != kNoticeMagic) {
        *why = format("notice has magic/version 0x%08x, expected 0x%08x (peer runs another dtf version?)",
                      h.magic, kNoticeMagic);
        return std::nullopt;
    }
    if (h.kind != static_cast<uint32_t>(NoticeKind::ClosedWrite) &&
        h.kind != static_cast<uint32_t>(NoticeKind::ClosedRead)) {
        *why = format("notice has unknown kind %u", h.kind);
        return std::nullopt;
    }
    if (h.path_len == 0 || h.path_len > kMaxPath || sizeof h + h.path_len != size) {
        *why = format("notice path length %u does not fit its size %zu", h.path_len, size);
        return std::nullopt;
    }
    if (h.from_component < 0 || h.session < 1) {
        *why = format("notice has invalid component %d or session %d", h.from_component, h.session);
        return std::nullopt;
    }
    return Notice{static_cast<NoticeKind>(h.kind), h.from_component, h.session,
                  std::string(data + sizeof h, h.path_len)};
}

} // namespace dtf::runtime
