// Unit test of the control-message envelope and payloads (src/runtime/message): every kind round-trips;
// every truncation, a foreign magic/version, an unknown kind, lengths that do not fit and negative ids
// are rejected with a reason (never a crash or an over-read; run under ASan in CI); payload readers
// stop at the end of the payload and at absurd counts.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "runtime/message.hpp"

using namespace dtf;
using namespace dtf::runtime;

namespace {
int failures = 0;

void check(bool ok, const std::string &what, int line) {
    if (ok) return;
    std::fprintf(stderr, "test_message.cpp:%d: FAILED: %s\n", line, what.c_str());
    ++failures;
}
#define CHECK(cond) check((cond), #cond, __LINE__)

// The reason decode() gives for rejecting `bytes` ("" if it accepts them).
std::string rejection(const std::vector<char> &bytes) {
    std::string why;
    auto m = decode(bytes.data(), bytes.size(), &why);
    return m ? "" : why;
}

// The error code and message of running f (0, "" when it does not throw).
template <class F> std::pair<int, std::string> error_of(F f) {
    try {
        f();
    } catch (const Error &e) {
        return {e.code(), e.what()};
    }
    return {0, ""};
}

void set_u32(std::vector<char> &b, size_t offset, uint32_t v) { std::memcpy(b.data() + offset, &v, sizeof v); }
void set_i32(std::vector<char> &b, size_t offset, int32_t v) { std::memcpy(b.data() + offset, &v, sizeof v); }
} // namespace

int main() {
    PayloadWriter p;
    p.ints({4, 5, 6});
    p.bytes({'x', 'y', 'z'});
    p.i64(-7);
    const std::vector<char> payload = p.take();

    // Every kind round-trips, with and without a payload.
    for (uint32_t k = 1; k <= kMessageKindLast; ++k) {
        for (bool with_payload : {false, true}) {
            Message m{static_cast<MessageKind>(k), 2, 5, 3, "/a/b.nc", with_payload ? payload : std::vector<char>{}};
            std::vector<char> bytes = encode(m);
            std::string why;
            auto back = decode(bytes.data(), bytes.size(), &why);
            CHECK(back.has_value());
            if (!back) continue;
            CHECK(back->kind == m.kind && back->from_component == 2 && back->session == 5 && back->epoch == 3);
            CHECK(back->path == m.path && back->payload == m.payload);
            CHECK(std::string(kind_name(m.kind)) != "unknown");
        }
    }

    // Encoding by moving the payload gives the same bytes, in place when the payload writer left room
    // for the envelope (bytes_header), by a copy when not.
    {
        PayloadWriter big;
        big.i32(9);
        const std::vector<char> values(100000, 'v');
        big.bytes_header(values.size());
        big.raw(values.data(), values.size());
        Message roomy{MessageKind::PersistData, 1, 2, 0, "/run/out.0.nc", big.take()};
        const std::vector<char> copied = encode(roomy);
        const char *buffer = roomy.payload.data();
        const std::vector<char> moved = encode(std::move(roomy));
        CHECK(moved == copied);
        CHECK(moved.data() == buffer); // the payload's own buffer
        Message tight{MessageKind::Persisted, 1, 2, 0, "/p.nc", payload};
        tight.payload.shrink_to_fit();
        CHECK(encode(std::move(tight)) == encode(Message{MessageKind::Persisted, 1, 2, 0, "/p.nc", payload}));
    }

    const std::vector<char> good = encode(Message{MessageKind::ReadPlan, 1, 2, 3, "/p.nc", payload});
    CHECK(rejection(good).empty());
    // Every truncation, and one byte too many, is rejected with a reason.
    for (size_t n = 0; n < good.size(); ++n) {
        std::string why = rejection(std::vector<char>(good.begin(), good.begin() + static_cast<long>(n)));
        check(!why.empty(), "truncation to " + std::to_string(n) + " bytes rejected", __LINE__);
    }
    std::vector<char> longer = good;
    longer.push_back(0);
    CHECK(rejection(longer).find("do not fit") != std::string::npos);

    // Header fields: magic/version (offset 0), kind (4), component (8), session (12), epoch (16),
    // path length (20), payload length (24).
    std::vector<char> b = good;
    set_u32(b, 0, 0x44544601); // wire version 1
    CHECK(rejection(b).find("another dtf version") != std::string::npos);
    b = good;
    set_u32(b, 4, 0);
    CHECK(rejection(b).find("unknown kind 0") != std::string::npos);
    set_u32(b, 4, kMessageKindLast + 1);
    CHECK(rejection(b).find("unknown kind") != std::string::npos);
    for (size_t offset : {8, 12, 16}) {
        b = good;
        set_i32(b, offset, -1);
        CHECK(rejection(b).find("invalid component") != std::string::npos);
    }
    b = good;
    set_u32(b, 20, 0); // empty path
    CHECK(!rejection(b).empty());
    set_u32(b, 20, 0xffffffffu); // path longer than the message
    CHECK(rejection(b).find("do not fit") != std::string::npos);
    b = good;
    uint64_t huge = ~0ull;
    std::memcpy(b.data() + 24, &huge, sizeof huge); // payload length that would wrap around
    CHECK(rejection(b).find("do not fit") != std::string::npos);

    // Payload readers: in bounds, then errors naming the message, never reading past the end.
    {
        PayloadReader r(payload, "test");
        CHECK(r.ints(3) == std::vector<int>({4, 5, 6}));
        CHECK(r.bytes() == std::vector<char>({'x', 'y', 'z'}));
        CHECK(r.i64() == -7);
        auto [code, msg] = error_of([&] { r.i32(); });
        CHECK(code == DTF_ERR_PEER && msg.find("malformed test message") != std::string::npos);
    }
    {
        PayloadReader r(payload, "ranks");
        auto [code, msg] = error_of([&] { r.ints(2); }); // more ranks than allowed
        CHECK(code == DTF_ERR_PEER && msg.find("3 ranks (at most 2)") != std::string::npos);
    }
    {
        PayloadWriter w;
        w.i64(1 << 30); // claims a byte string far longer than the payload
        w.i32(0);
        const std::vector<char> lying = w.take();
        PayloadReader r(lying, "header");
        auto [code, msg] = error_of([&] { r.bytes(); });
        CHECK(code == DTF_ERR_PEER && msg.find("byte string of 1073741824 bytes") != std::string::npos);
        PayloadWriter w2;
        w2.i64(-1);
        const std::vector<char> negative = w2.take();
        PayloadReader r2(negative, "header");
        CHECK(error_of([&] { r2.bytes(); }).first == DTF_ERR_PEER);
    }
    {
        PayloadWriter w;
        w.i32(-5); // negative count
        const std::vector<char> neg = w.take();
        PayloadReader r(neg, "ranks");
        CHECK(error_of([&] { r.ints(100); }).first == DTF_ERR_PEER);
    }

    if (failures) std::fprintf(stderr, "test_message: %d failures\n", failures);
    else std::printf("test_message: all checks passed\n");
    return failures ? 1 : 0;
}
