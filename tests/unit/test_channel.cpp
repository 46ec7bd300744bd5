// Unit test of the in-process channel (src/transport/loopback.cpp), the stand-in for MPI in the
// protocol's unit tests, so it must keep MPI's rules: messages from one rank with one tag arrive in
// send order; poll() takes any source, but never a message a posted receive is waiting for; a
// receive of the wrong size is an error, never a partial fill; a channel to its own group works.
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "transport/channel.hpp"

using namespace dtf;
using namespace dtf::transport;

namespace {
int failures = 0;

void check(bool ok, const std::string &what, int line) {
    if (ok) return;
    std::fprintf(stderr, "test_channel.cpp:%d: FAILED: %s\n", line, what.c_str());
    ++failures;
}
#define CHECK(cond) check((cond), #cond, __LINE__)

std::vector<char> bytes(const std::string &s) { return std::vector<char>(s.begin(), s.end()); }
std::string text(const std::vector<char> &b) { return std::string(b.begin(), b.end()); }
} // namespace

int main() {
    LoopbackNet net;
    const int writers = net.add_group(2), readers = net.add_group(3);
    auto w0 = net.channel(writers, 0, readers), w1 = net.channel(writers, 1, readers);
    auto r0 = net.channel(readers, 0, writers), r2 = net.channel(readers, 2, writers);
    CHECK(w0->remote_size() == 3 && r0->remote_size() == 2);

    // Order per (source, tag); tags are kept apart; a send to several ranks reaches each.
    w0->send(0, Tag::Control, bytes("a"), "test");
    w0->send(0, Tag::Data, bytes("data"), "test");
    w0->send({0, 2}, Tag::Control, bytes("b"), "test");
    auto m = r0->poll(Tag::Control, "test");
    CHECK(m && m->source == 0 && text(m->bytes) == "a");
    m = r0->poll(Tag::Control, "test");
    CHECK(m && text(m->bytes) == "b");
    CHECK(!r0->poll(Tag::Control, "test"));
    m = r2->poll(Tag::Control, "test");
    CHECK(m && text(m->bytes) == "b");

    // A posted receive takes the next message of its source and tag; poll() leaves it alone.
    char buf[4] = {};
    Ticket t = r0->receive(0, Tag::Data, buf, 4, "test");
    CHECK(!r0->poll(Tag::Data, "test"));
    r0->progress();
    CHECK(r0->done(t) && std::string(buf, 4) == "data");

    // A receive posted before the message arrives completes when it does, from that source only.
    char two[2] = {};
    t = r0->receive(1, Tag::Data, two, 2, "test");
    w0->send(0, Tag::Data, bytes("xx"), "test");
    r0->progress();
    CHECK(!r0->done(t) && r0->pending_bytes({t}) == 2);
    w1->send(0, Tag::Data, bytes("yy"), "test");
    r0->progress();
    CHECK(r0->done(t) && std::string(two, 2) == "yy" && r0->pending_bytes({t}) == 0);
    m = r0->poll(Tag::Data, "test");
    CHECK(m && m->source == 0 && text(m->bytes) == "xx");

    // A message of another size than the receive expects is an error.
    t = r0->receive(1, Tag::Data, buf, 4, "receiving data");
    w1->send(0, Tag::Data, bytes("toolong"), "test");
    int code = 0;
    std::string why;
    try {
        r0->progress();
    } catch (const Error &e) {
        code = e.code(), why = e.what();
    }
    CHECK(code == DTF_ERR_PEER && why.find("receiving data: expected 4 bytes from rank 1") != std::string::npos);

    // A group's channel to itself (a component's own ranks).
    auto s0 = net.channel(writers, 0, writers), s1 = net.channel(writers, 1, writers);
    s1->send(0, Tag::Meta, bytes("meta"), "test");
    m = s0->poll(Tag::Meta, "test");
    CHECK(m && m->source == 1 && text(m->bytes) == "meta");
    CHECK(!r0->poll(Tag::Meta, "test")); // another group's traffic is not seen

    // Nothing was left behind but the oversized message above (still queued).
    CHECK(net.undelivered() == 1);
    if (failures) std::fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
