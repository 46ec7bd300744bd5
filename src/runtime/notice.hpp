// Notices: the small control messages components send each other about shared files (for now: "I
// closed my write/read session number N of path P"). Encoding and validation live here, without MPI,
// so that a malformed message gives an error instead of a crash and the decoder can be unit-tested.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtf::runtime {

enum class NoticeKind : uint32_t { ClosedWrite = 1, ClosedRead = 2 };

struct Notice {
    NoticeKind kind;
    int32_t from_component;
    int32_t session; // 1-based number of that component's session of this kind on the path
    std::string path;
};

constexpr uint32_t kNoticeMagic = 0x44544601; // "DTF" + wire version 1

std::vector<char> encode(const Notice &n);
// nullopt (and a reason in *why) when the bytes are not a valid notice of this wire version.
std::optional<Notice> decode(const char *data, size_t size, std::string *why);

} // namespace dtf::runtime
