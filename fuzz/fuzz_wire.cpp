// libFuzzer target: every decoder of bytes that come from another rank or component.
//   byte 0 selects: 0 control message envelope (runtime/message), 1 write list, 2 read list,
//   3 piece list (match/wire), 4 netCDF header (model/header), 5 payload fields (PayloadReader).
// Malformed input must give an error (nullopt, dtf::Error(DTF_ERR_PEER), or a NetCDF code), never a
// crash, an over-read or undefined behaviour. Property: what decodes, re-encoded, decodes to the
// same encoding.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "match/wire.hpp"
#include "model/header.hpp"
#include "runtime/message.hpp"

using namespace dtf;

namespace {

template <class Decode> void round_trip(const char *data, size_t size, Decode decode) {
    try {
        auto once = match::encode(decode(data, size));
        auto twice = match::encode(decode(once.data(), once.size()));
        if (once != twice) __builtin_trap();
    } catch (const Error &e) {
        if (e.code() != DTF_ERR_PEER) __builtin_trap();
    }
}

void payload_fields(const std::vector<char> &bytes) {
    try {
        runtime::PayloadReader r(bytes, "fuzz");
        for (size_t i = 0; i < 64; ++i) {
            switch (i % 4) {
            case 0: (void)r.i32(); break;
            case 1: (void)r.ints(1 << 20); break;
            case 2: (void)r.bytes(); break;
            default: (void)r.i64(); break;
            }
        }
    } catch (const Error &e) {
        if (e.code() != DTF_ERR_PEER) __builtin_trap();
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *input, size_t size) {
    if (size == 0) return 0;
    const char *data = reinterpret_cast<const char *>(input) + 1;
    const size_t n = size - 1;
    switch (input[0] % 6) {
    case 0: {
        std::string why;
        auto m = runtime::decode(data, n, &why);
        if (!m) {
            if (why.empty()) __builtin_trap(); // a rejection always says why
            break;
        }
        auto once = runtime::encode(*m);
        auto again = runtime::decode(once.data(), once.size(), &why);
        if (!again || runtime::encode(*again) != once) __builtin_trap();
        break;
    }
    case 1: round_trip(data, n, [](const char *d, size_t s) { return match::decode_writes(d, s); }); break;
    case 2: round_trip(data, n, [](const char *d, size_t s) { return match::decode_reads(d, s); }); break;
    case 3: round_trip(data, n, [](const char *d, size_t s) { return match::decode_pieces(d, s); }); break;
    case 4: {
        model::Header h;
        if (model::Header::decode(data, n, &h) != 0) break;
        auto once = h.encode();
        model::Header again;
        if (model::Header::decode(once.data(), once.size(), &again) != 0 || again.encode() != once) __builtin_trap();
        break;
    }
    default: payload_fields(std::vector<char>(data, data + n)); break;
    }
    return 0;
}
