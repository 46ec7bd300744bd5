// Unit test of the in-process channel (src/transport/loopback.cpp), the stand-in for MPI in the
// protocol's unit tests, so it must keep MPI's rules: messages from one rank with one tag arrive in
// send order; poll() takes any source, but never a message a posted receive is waiting for; a
// receive of the wrong size is an error, never a partial fill; a channel to its own group works. Its
// groups (LoopbackNet::dup_group) complete collectives only once every rank started them.
#include <cstdio>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "transport/channel.hpp"
#include "transport/data_plane.hpp"
#include "transport/group.hpp"

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

// data_tag(): one tag per writer session, within [kDataTagFirst, tag_ub], distinct between roots
// and between a root's sessions until its serials wrap around.
void test_data_tags() {
    const int ub = 32767; // the least MPI_TAG_UB the standard allows
    std::vector<bool> seen(ub + 1, false);
    bool distinct = true, in_range = true;
    for (int root = 0; root < 4; ++root)
        for (uint32_t serial = 1; serial <= 100; ++serial) {
            auto t = data_tag(root, serial, 4, ub);
            const int v = t ? static_cast<int>(*t) : -1;
            in_range = in_range && v >= kDataTagFirst && v <= ub;
            if (v < 0) continue;
            distinct = distinct && !seen[static_cast<size_t>(v)];
            seen[static_cast<size_t>(v)] = true;
        }
    CHECK(in_range && distinct);
    // A root's serials wrap around after (tags / writer ranks) sessions.
    const uint32_t per_root = (ub - kDataTagFirst + 1) / 4;
    CHECK(data_tag(1, 7, 4, ub) == data_tag(1, 7 + per_root, 4, ub));
    CHECK(data_tag(1, 7, 4, ub) != data_tag(1, 8 + per_root, 4, ub));
    CHECK(data_tag(3, 0xffffffffu, 4, ub).has_value()); // the largest serial stays in range
    CHECK(static_cast<int>(*data_tag(3, 0xffffffffu, 4, ub)) <= ub);
    CHECK(data_tag(0, 1, 1, 0x7fffffff).has_value());
    // No tag for every rank: more writer ranks than tags; a root outside the component.
    CHECK(!data_tag(0, 1, ub, ub));
    CHECK(!data_tag(4, 1, 4, ub));
    CHECK(!data_tag(0, 1, 4, kDataTagFirst - 1));
}

// The point-to-point data plane: a reader fetches each writer's offer of its session's tag into its
// spans, whichever the order of offers and fetches; sessions and control traffic stay apart; the
// tickets are the channel's (done, cancel); a message of another size is an error.
void test_data_plane() {
    LoopbackNet net;
    const int writers = net.add_group(2), readers = net.add_group(1);
    auto w0 = net.channel(writers, 0, readers), w1 = net.channel(writers, 1, readers);
    auto r = net.channel(readers, 0, writers);
    auto out0 = point_to_point(*w0), out1 = point_to_point(*w1), in = point_to_point(*r);
    const Tag s1 = *data_tag(0, 1, 2, 32767), s2 = *data_tag(0, 2, 2, 32767);

    char a[3] = {}, b[2] = {}, c[4] = {};
    const Ticket fa = in->fetch(0, s1, {{a, 1}, {a + 1, 2}}, "test"); // fetched before it is offered
    const Ticket o0 = out0->offer(0, s2, bytes("next"), "test");     // the next session's, first
    const Ticket o1 = out0->offer(0, s1, bytes("abc"), "test");
    out1->offer(0, s1, bytes("xy"), "test");
    w0->send(0, Tag::Control, bytes("ctl"), "test");
    const Ticket fb = in->fetch(1, s1, {{b, 2}}, "test");
    r->progress();
    w0->progress();
    CHECK(r->done(fa) && r->done(fb) && w0->done(o0) && w0->done(o1));
    CHECK(std::string(a, 3) == "abc" && std::string(b, 2) == "xy");
    const Ticket fc = in->fetch(0, s2, {{c, 4}}, "test");
    r->progress();
    CHECK(r->done(fc) && std::string(c, 4) == "next");
    auto m = r->poll(Tag::Control, "test");
    CHECK(m && text(m->bytes) == "ctl");

    // A fetch given up counts as done and takes nothing.
    const Ticket gone = in->fetch(1, s2, {{c, 4}}, "test");
    r->cancel({gone});
    CHECK(r->done(gone) && r->pending_bytes({gone}) == 0);

    // Another size than the fetch expects.
    in->fetch(1, s1, {{c, 4}}, "receiving data");
    out1->offer(0, s1, bytes("12345"), "test");
    int code = 0;
    try {
        r->progress();
    } catch (const Error &e) {
        code = e.code();
    }
    CHECK(code == DTF_ERR_PEER);
}

// Groups duplicated from a loopback group: the n-th dup of every rank is one group; its collectives
// complete once every rank started them, in order; ranks that start different ones are an error.
void test_groups() {
    LoopbackNet net;
    const int comp = net.add_group(3);
    std::vector<std::unique_ptr<Group>> g, h;
    for (int r = 0; r < 3; ++r) g.push_back(net.dup_group(comp, r));
    for (int r = 0; r < 3; ++r) h.push_back(net.dup_group(comp, r));
    CHECK(g[2]->rank() == 2 && g[2]->size() == 3 && g[1]->component_ranks() == std::vector<int>({0, 1, 2}));
    int64_t in[3][2] = {{1, 9}, {5, -3}, {2, 4}}, out[3][2] = {};
    std::vector<std::unique_ptr<Pending>> ops;
    for (int r = 0; r < 2; ++r) ops.push_back(g[static_cast<size_t>(r)]->allreduce_max(in[r], out[r], 2));
    CHECK(!ops[0]->test() && !ops[1]->test()); // rank 2 has not joined
    ops.push_back(g[2]->allreduce_max(in[2], out[2], 2));
    bool all = true;
    for (int r = 0; r < 3; ++r) all = all && ops[static_cast<size_t>(r)]->test() && out[r][0] == 5 && out[r][1] == 9;
    CHECK(all);
    // A broadcast, then a barrier; the other group's collectives are its own.
    std::vector<std::vector<char>> buf = {{}, bytes("root"), {'x'}};
    ops.clear();
    for (int r = 0; r < 3; ++r) ops.push_back(g[static_cast<size_t>(r)]->broadcast(1, &buf[static_cast<size_t>(r)]));
    auto hb = h[0]->barrier();
    CHECK(!hb->test());
    for (auto &op : ops) CHECK(op->test());
    CHECK(text(buf[0]) == "root" && text(buf[2]) == "root");
    auto b1 = h[1]->barrier(), b2 = h[2]->barrier();
    CHECK(hb->test() && b1->test() && b2->test());
    // A group's channel reaches its ranks, apart from the component's own channels.
    auto c0 = g[0]->channel(), c2 = g[2]->channel();
    c0->send(2, Tag::Meta, bytes("meta"), "test");
    auto m = c2->poll(Tag::Meta, "test");
    CHECK(m && m->source == 0 && text(m->bytes) == "meta");
    CHECK(!net.channel(comp, 2, comp)->poll(Tag::Meta, "test"));
    // Different collectives started as the same one: an error, not a wrong result.
    g[0]->barrier();
    bool refused = false;
    try {
        int64_t one = 1, res = 0;
        g[1]->allreduce_max(&one, &res, 1);
    } catch (const Error &e) {
        refused = e.code() == DTF_ERR_INTERNAL;
    }
    CHECK(refused);
}

int main() {
    test_data_tags();
    test_data_plane();
    test_groups();
    const Tag data = *data_tag(0, 1, 2, 32767);
    LoopbackNet net;
    const int writers = net.add_group(2), readers = net.add_group(3);
    auto w0 = net.channel(writers, 0, readers), w1 = net.channel(writers, 1, readers);
    auto r0 = net.channel(readers, 0, writers), r2 = net.channel(readers, 2, writers);
    CHECK(w0->remote_size() == 3 && r0->remote_size() == 2);

    // Order per (source, tag); tags are kept apart; a send to several ranks reaches each.
    w0->send(0, Tag::Control, bytes("a"), "test");
    w0->send(0, data, bytes("data"), "test");
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
    Ticket t = r0->receive(0, data, buf, 4, "test");
    CHECK(!r0->poll(data, "test"));
    r0->progress();
    CHECK(r0->done(t) && std::string(buf, 4) == "data");

    // A receive posted before the message arrives completes when it does, from that source only.
    char two[2] = {};
    t = r0->receive(1, data, two, 2, "test");
    w0->send(0, data, bytes("xx"), "test");
    r0->progress();
    CHECK(!r0->done(t) && r0->pending_bytes({t}) == 2);
    w1->send(0, data, bytes("yy"), "test");
    r0->progress();
    CHECK(r0->done(t) && std::string(two, 2) == "yy" && r0->pending_bytes({t}) == 0);
    m = r0->poll(data, "test");
    CHECK(m && m->source == 0 && text(m->bytes) == "xx");

    // Two sessions' data between the same two ranks: each receive takes its own session's message,
    // whichever was sent first.
    const Tag later = *data_tag(0, 2, 2, 32767);
    w1->send(0, data, bytes("first"), "test");
    w1->send(0, later, bytes("second"), "test");
    char six[6] = {};
    t = r0->receive(1, later, six, 6, "test");
    r0->progress();
    CHECK(r0->done(t) && std::string(six, 6) == "second");
    m = r0->poll(data, "test");
    CHECK(m && text(m->bytes) == "first");

    // A receive over spans puts the message's bytes into them in order.
    char head[2] = {}, tail[3] = {};
    t = r0->receive(1, data, std::vector<Span>{{head, 2}, {tail, 3}}, "test");
    w1->send(0, data, bytes("abcde"), "test");
    r0->progress();
    CHECK(r0->done(t) && std::string(head, 2) == "ab" && std::string(tail, 3) == "cde");

    // A cancelled receive counts as done and takes nothing: the message goes to whoever asks next.
    t = r0->receive(1, data, buf, 4, "test");
    CHECK(!r0->done(t));
    r0->cancel({t});
    CHECK(r0->done(t) && r0->pending_bytes({t}) == 0);
    w1->send(0, data, bytes("late"), "test");
    r0->progress();
    m = r0->poll(data, "test");
    CHECK(m && text(m->bytes) == "late");

    // A message of another size than the receive expects is an error.
    t = r0->receive(1, data, buf, 4, "receiving data");
    w1->send(0, data, bytes("toolong"), "test");
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
