// Unit tests of src/match: strided boxes and their exact intersection, element runs, match() and
// coverage against brute force on random workloads, and the wire encoding (round
// trips, every truncation, corrupted and malicious inputs).
//
// Usage: dtf_match_test [--seed S] [--cases N]   (defaults: fixed seed, a run well under 2 seconds)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/error.hpp"
#include "match/box.hpp"
#include "match/index.hpp"
#include "match/match.hpp"
#include "match/wire.hpp"

using namespace dtf::match;
using Index = std::vector<int64_t>;

namespace {

int g_passed = 0, g_failed = 0;
uint64_t g_seed = 20240601;
int g_cases = 1000;
std::mt19937_64 g_rng;

void check(bool ok, const std::string &name, const char *what, int line) {
    if (ok) {
        ++g_passed;
        return;
    }
    ++g_failed;
    if (g_failed <= 30)
        std::fprintf(stderr, "FAIL [%s] %s (test_match.cpp:%d, seed %llu)\n", name.c_str(), what, line,
                     static_cast<unsigned long long>(g_seed));
}

void check_eq(const std::string &got, const std::string &want, const std::string &name, int line) {
    check(got == want, name, ("\n  got:  " + got + "\n  want: " + want).c_str(), line);
}

#define CHECK(name, cond) check((cond), (name), #cond, __LINE__)
#define CHECK_EQ(name, got, want) check_eq((got), (want), (name), __LINE__)

// The message of the dtf::Error with `code` that f() throws, or "<no error>" / "<wrong code ...>".
template <class F> std::string error_of(int code, F &&f) {
    try {
        f();
    } catch (const dtf::Error &e) {
        return e.code() == code ? e.what() : dtf::format("<wrong code %d> %s", e.code(), e.what());
    } catch (const std::exception &e) {
        return std::string("<other exception> ") + e.what();
    }
    return "<no error>";
}

int64_t rnd(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g_rng); }
bool coin(int percent = 50) { return rnd(0, 99) < percent; }

std::string str(const std::optional<Box> &b) { return b ? b->to_string() : "none"; }

Box box(Index start, Index count, Index stride) { return Box{std::move(start), std::move(count), std::move(stride)}; }

// ---------------------------------------------------------------------------------------------
// Brute force helpers

// All elements of a box in row-major order (small boxes only).
std::vector<Index> elements(const Box &b) {
    std::vector<Index> out;
    if (b.empty()) return out;
    const int n = b.ndims();
    Index i(n, 0);
    for (;;) {
        Index x(n);
        for (int d = 0; d < n; ++d) x[d] = b.start[d] + i[d] * b.stride[d];
        out.push_back(x);
        int d = n - 1;
        while (d >= 0 && ++i[d] == b.count[d]) i[d] = 0, --d;
        if (d < 0) break;
    }
    return out;
}

// Elements common to both boxes, by enumeration of a.
std::set<Index> common(const Box &a, const Box &b) {
    std::set<Index> s;
    for (const Index &x : elements(a))
        if (b.contains(x)) s.insert(x);
    return s;
}

std::set<Index> element_set(const std::optional<Box> &b) {
    if (!b) return {};
    std::vector<Index> v = elements(*b);
    return std::set<Index>(v.begin(), v.end());
}

// ---------------------------------------------------------------------------------------------
// Box basics

// Dims behaves as the std::vector<int64_t> it replaces, inline (up to kInline values) and on the heap.
void test_dims() {
    int bad = 0;
    for (int c = 0; c < g_cases * 10; ++c) {
        Dims d;
        Index v;
        for (int op = 0; op < 12; ++op) {
            switch (rnd(0, 4)) {
            case 0: {
                const int64_t x = rnd(-9, 9);
                d.push_back(x), v.push_back(x);
                break;
            }
            case 1: {
                const size_t n = static_cast<size_t>(rnd(0, 9));
                const int64_t x = rnd(-9, 9);
                d.resize(n, x), v.resize(n, x);
                break;
            }
            case 2: { // copy, then move, through a temporary
                Dims copy(d);
                Dims moved(std::move(copy));
                d = moved;
                break;
            }
            case 3: { // move-assign from a vector-built Dims
                Dims other(v);
                d = std::move(other);
                break;
            }
            default:
                if (!v.empty()) d[0] = v[0] = rnd(-9, 9);
            }
            if (d.vec() != v || d.size() != v.size() || d.empty() != v.empty() || !(d == Dims(v))) ++bad;
        }
    }
    CHECK("random Dims operations match std::vector", bad == 0);
    const bool constructors = Dims(3, 7).vec() == Index({7, 7, 7}) && Dims{3, 7}.vec() == Index({3, 7});
    CHECK("Dims(n, value) is not a list", constructors);
}

void test_box_basics() {
    const Box b = box({0, 2}, {4, 3}, {1, 2});
    CHECK_EQ("to_string", b.to_string(), "[0:4:1, 2:3:2]");
    CHECK("size", b.size() == 12 && !b.empty() && b.ndims() == 2);
    CHECK("contains", b.contains({3, 6}) && !b.contains({3, 5}) && !b.contains({4, 2}) && !b.contains({0, 8}));
    CHECK("contains wrong ndims", !b.contains({1}));
    const Box scalar;
    CHECK_EQ("0-D to_string", scalar.to_string(), "[]");
    CHECK("0-D size", scalar.size() == 1 && !scalar.empty() && scalar.contains({}));
    CHECK("empty", box({0, 0}, {3, 0}, {1, 1}).empty());
    CHECK("vara", Box::vara({1, 2}, {3, 4}) == box({1, 2}, {3, 4}, {1, 1}));
    CHECK("!=", Box::vara({1}, {3}) != box({1}, {3}, {2}));
    CHECK("valid", valid(b) && valid(scalar) && valid(box({0}, {0}, {1})));

    std::string why;
    CHECK("invalid stride", !valid(box({0}, {3}, {0}), &why));
    CHECK_EQ("invalid stride why", why, "box dimension 0 (start 0, count 3, stride 0): stride < 1");
    CHECK("invalid count", !valid(box({0, 1}, {1, -1}, {1, 1}), &why));
    CHECK_EQ("invalid count why", why, "box dimension 1 (start 1, count -1, stride 1): negative count");
    CHECK("invalid start", !valid(box({-1}, {1}, {1}), &why) && why.find("negative start") != std::string::npos);
    CHECK("invalid lengths", !valid(box({0, 1}, {1}, {1}), &why));
    CHECK_EQ("invalid lengths why", why, "box has 2 starts, 1 counts and 1 strides");
    const int64_t big = int64_t(1) << 62;
    CHECK("last index overflow", !valid(box({big}, {3}, {big}), &why) &&
                                     why.find("last index overflows") != std::string::npos);
    CHECK("last index fits", valid(box({big - 1}, {2}, {big})));
    CHECK("too many elements", !valid(box({0, 0, 0}, {1 << 30, 1 << 30, 1 << 30}, {1, 1, 1}), &why) &&
                                   why.find("more than 2^63-1 elements") != std::string::npos);
    CHECK("huge but empty is valid", valid(box({0, 0, 0, 0}, {1 << 30, 1 << 30, 1 << 30, 0}, {1, 1, 1, 1})));
    Box many;
    many.start.assign(1025, 0), many.count.assign(1025, 1), many.stride.assign(1025, 1);
    CHECK("too many dims", !valid(many, &why) && why == "box has 1025 dimensions (at most 1024)");

    CHECK("subset", subset(box({2}, {3}, {2}), box({0}, {10}, {1})) && subset(box({2}, {3}, {4}), box({0}, {10}, {2})));
    CHECK("not subset (stride)", !subset(box({2}, {3}, {3}), box({0}, {10}, {2})));
    CHECK("not subset (end)", !subset(box({2}, {5}, {2}), box({0}, {5}, {2})));
    CHECK("subset single", subset(box({4}, {1}, {7}), box({0}, {5}, {2})));
    CHECK("subset empty", subset(box({99}, {0}, {1}), box({0}, {5}, {2})));
    CHECK("offset_in", offset_in(box({0, 2}, {4, 3}, {1, 2}), {2, 6}) == 2 * 3 + 2);
}

// ---------------------------------------------------------------------------------------------
// Intersections

void test_intersect_fixed() {
    auto I1 = [](Box a, Box b) { return str(intersect(a, b)); };
    CHECK_EQ("1-D overlap", I1(box({0}, {10}, {1}), box({5}, {10}, {1})), "[5:5:1]");
    CHECK_EQ("1-D disjoint ranges", I1(box({0}, {5}, {1}), box({5}, {10}, {1})), "none");
    CHECK_EQ("1-D touching", I1(box({0}, {6}, {1}), box({5}, {10}, {1})), "[5:1:1]");
    CHECK_EQ("odd vs even", I1(box({0}, {10}, {2}), box({1}, {10}, {2})), "none");
    CHECK_EQ("2 vs 3", I1(box({0}, {10}, {2}), box({0}, {10}, {3})), "[0:4:6]");
    CHECK_EQ("CRT 4/6", I1(box({1}, {100}, {4}), box({3}, {100}, {6})), "[9:33:12]");
    CHECK_EQ("CRT no solution", I1(box({0}, {100}, {4}), box({1}, {100}, {6})), "none");
    CHECK_EQ("coprime", I1(box({2}, {50}, {7}), box({0}, {50}, {5})), "[30:7:35]");
    CHECK_EQ("same", I1(box({3}, {1}, {9}), box({3}, {1}, {9})), "[3:1:9]");
    CHECK_EQ("empty count", I1(box({0}, {0}, {1}), box({0}, {10}, {1})), "none");
    CHECK_EQ("0-D", I1(Box{}, Box{}), "[]");
    CHECK_EQ("2-D", I1(box({0, 0}, {4, 10}, {1, 2}), box({2, 3}, {5, 4}, {1, 3})), "[2:2:1, 6:2:6]");
    CHECK_EQ("2-D one dim empty", I1(box({0, 0}, {4, 10}, {1, 2}), box({2, 1}, {5, 4}, {1, 2})), "none");
    CHECK_EQ("3-D", I1(Box::vara({0, 0, 0}, {2, 3, 4}), Box::vara({1, 1, 1}, {2, 3, 4})), "[1:1:1, 1:2:1, 1:3:1]");

    const int64_t p62 = int64_t(1) << 62;
    // Elements near 2^62: a = {2^62, 2^62+3, ...}, b = {2^62+1, 2^62+1+5, ...}: x == 2^62 (mod 3) and
    // x == 2^62+1 (mod 5) -> x = 2^62 + 6 + 15k.
    CHECK_EQ("near 2^62", I1(box({p62}, {1000}, {3}), box({p62 + 1}, {1000}, {5})),
             dtf::format("[%lld:200:15]", static_cast<long long>(p62 + 6)));
    // lcm(2^62, 3*2^60) = 3*2^62 does not fit in int64: one common element, stride 1.
    CHECK_EQ("lcm overflow", I1(box({0}, {2}, {p62}), box({0}, {2}, {3 * (p62 >> 2)})), "[0:1:1]");
    // Huge coprime strides: the CRT product needs 128 bits.
    const int64_t s1 = (int64_t(1) << 61) - 1, s2 = (int64_t(1) << 61) - 3;
    auto r = intersect(box({0}, {4}, {s1}), box({s1}, {3}, {s2}));
    CHECK("huge coprime no overflow", element_set(r) == common(box({0}, {4}, {s1}), box({s1}, {3}, {s2})));
    CHECK_EQ("ndims mismatch", error_of(DTF_ERR_ARG, [] { intersect(Box::vara({0}, {1}), Box{}); }),
             "intersect: box [0:1:1] has 1 dimensions but box [] has 0");
    const Box a = box({1, 5}, {3, 1}, {2, 7});
    CHECK("intersect(a, a) == a", intersect(a, a) == a);
}

// A random 1-D progression; `big` draws starts and strides up to ~2^62 with small counts.
Box random_prog(bool big) {
    if (!big) return box({rnd(0, 30)}, {rnd(0, 20)}, {rnd(1, 7)});
    const int64_t stride = coin() ? rnd(1, 1000) : rnd(1, int64_t(1) << rnd(1, 61));
    const int64_t count = rnd(1, std::min<int64_t>(30, 1 + (int64_t(1) << 62) / stride));
    const int64_t max_start = std::numeric_limits<int64_t>::max() - (count - 1) * stride;
    const int64_t start = coin() ? rnd(0, max_start) : std::max<int64_t>(0, max_start - rnd(0, 1000));
    return box({start}, {count}, {stride});
}

void test_intersect_random() {
    int bad = 0;
    for (int c = 0; c < g_cases * 10; ++c) {
        const bool big = c % 2 == 1;
        Box a = random_prog(big), b = random_prog(big);
        if (big && coin()) b.start[0] = a.start[0] + (a.count[0] - 1) / 2 * a.stride[0]; // force overlap
        if (big && !valid(b)) b.start[0] = a.start[0];
        const std::optional<Box> r = intersect(a, b);
        bool ok = element_set(r) == common(a, b) && (!r || (valid(*r) && !r->empty()));
        if (r && r->count[0] > 1) ok = ok && subset(*r, a) && subset(*r, b);
        if (!ok && ++bad <= 5)
            std::fprintf(stderr, "  intersect(%s, %s) = %s\n", a.to_string().c_str(), b.to_string().c_str(),
                         str(r).c_str());
    }
    CHECK("random 1-D intersections match enumeration", bad == 0);
}

// ---------------------------------------------------------------------------------------------
// for_each_run

// A random box of ndims n (counts >= 1 unless allow_empty).
Box random_box(int n, int64_t max_count, int64_t max_stride, bool allow_empty = false) {
    Box b;
    for (int d = 0; d < n; ++d) {
        b.start.push_back(rnd(0, 5));
        b.count.push_back(rnd(allow_empty ? 0 : 1, max_count));
        b.stride.push_back(rnd(1, max_stride));
    }
    return b;
}

// A random subset of `outer`: per dimension a sub-progression of outer's index space.
Box random_sub(const Box &outer) {
    Box s = outer;
    for (int d = 0; d < outer.ndims(); ++d) {
        const int64_t c = outer.count[d];
        const int64_t a = rnd(0, c - 1), r = coin(60) ? 1 : rnd(1, 3);
        const int64_t m = coin(30) ? (c - 1 - a) / r + 1 : rnd(coin(10) ? 0 : 1, (c - 1 - a) / r + 1);
        s.start[d] = outer.start[d] + a * outer.stride[d];
        s.count[d] = m;
        s.stride[d] = m == 1 && coin() ? rnd(1, 9) : r * outer.stride[d];
    }
    return s;
}

// (outer offset, sub offset) of every element, from the runs.
std::vector<std::pair<int64_t, int64_t>> expand_runs(const Box &outer, const Box &sub, int *calls) {
    std::vector<std::pair<int64_t, int64_t>> v;
    *calls = 0;
    for_each_run(outer, sub, [&](int64_t off, int64_t step, int64_t sub_off, int64_t len) {
        ++*calls;
        for (int64_t k = 0; k < len; ++k) v.emplace_back(off + k * step, sub_off + k);
    });
    return v;
}

void test_runs() {
    int calls = 0;
    const Box outer = Box::vara({0, 0, 0}, {4, 5, 6});
    CHECK("whole box is one run", expand_runs(outer, outer, &calls).size() == 120 && calls == 1);
    const Box rows = Box::vara({1, 0, 0}, {2, 5, 6});
    auto v = expand_runs(outer, rows, &calls);
    CHECK("full rows are one run", calls == 1 && v.front().first == 30 && v.back().first == 89);
    expand_runs(outer, Box::vara({1, 1, 0}, {2, 3, 6}), &calls);
    CHECK("partial middle dim: one run per outer row", calls == 2);
    expand_runs(outer, Box::vara({1, 1, 2}, {2, 3, 2}), &calls);
    CHECK("partial last dim", calls == 6);
    expand_runs(outer, box({0, 0, 0}, {4, 5, 3}, {1, 1, 2}), &calls);
    CHECK("strided last dim merges into one stepped run", calls == 1);
    expand_runs(Box{}, Box{}, &calls);
    CHECK("0-D: one run", calls == 1);
    expand_runs(outer, Box::vara({1, 1, 1}, {0, 3, 3}), &calls);
    CHECK("empty sub: no run", calls == 0);
    CHECK("not a subset", error_of(DTF_ERR_ARG, [&] { expand_runs(outer, Box::vara({3, 0, 0}, {2, 1, 1}), &calls); }) ==
                              "region [3:2:1, 0:1:1, 0:1:1] is not within box [0:4:1, 0:5:1, 0:6:1]");

    int bad = 0;
    for (int c = 0; c < g_cases * 5; ++c) {
        const int n = static_cast<int>(rnd(0, 6)); // beyond Dims::kInline (4) too: values on the heap
        const Box o = random_box(n, n > 4 ? 3 : 5, 3);
        const Box s = random_sub(o);
        std::vector<std::pair<int64_t, int64_t>> want;
        int64_t k = 0;
        for (const Index &x : elements(s)) want.emplace_back(offset_in(o, x), k++);
        const auto got = expand_runs(o, s, &calls);
        bool ok = got == want && subset(s, o);
        // Runs are maximal when sub == outer.
        if (s == o) ok = ok && calls == 1;
        if (!ok && ++bad <= 5)
            std::fprintf(stderr, "  for_each_run(%s, %s): %zu elements, want %zu\n", o.to_string().c_str(),
                         s.to_string().c_str(), got.size(), want.size());
    }
    CHECK("random for_each_run matches enumeration", bad == 0);

    // Brute-force offset check of offset_in itself, on elements in row-major order.
    const Box o = box({1, 3}, {3, 4}, {2, 5});
    int64_t k = 0;
    bool ok = true;
    for (const Index &x : elements(o)) ok = ok && offset_in(o, x) == k++;
    CHECK("offset_in enumerates 0..size-1", ok);
}

// ---------------------------------------------------------------------------------------------
// Matching

struct Workload {
    std::vector<WriteReq> writes;
    std::vector<ReadReq> reads;
};

// A random sub-box of the array `shape` (dense or strided, maybe one element).
Box random_region(const Index &shape, bool strided) {
    Box b;
    for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t st = strided ? rnd(1, 3) : 1;
        const int64_t s = rnd(0, shape[d] - 1);
        b.start.push_back(s);
        b.stride.push_back(st);
        b.count.push_back(rnd(1, (shape[d] - 1 - s) / st + 1));
    }
    return b;
}

Box single_element(const Index &shape) {
    Box b;
    for (int64_t n : shape) b.start.push_back(rnd(0, n - 1)), b.count.push_back(1), b.stride.push_back(1);
    return b;
}

// Writes of one variable by P ranks, per a random decomposition; ids from next_id[rank].
void add_writes(Workload &w, int varid, const Index &shape, int P, std::vector<uint64_t> &next_id) {
    const int n = static_cast<int>(shape.size());
    // seq: when each write took effect (a few collective calls apart); now and then a fill
    auto put = [&](int rank, Box b) {
        w.writes.push_back(WriteReq{rank, next_id[rank]++, varid, std::move(b), static_cast<uint64_t>(rnd(0, 3)), coin(10)});
    };
    const int kind = static_cast<int>(rnd(0, 4));
    if (n == 0 || kind == 0) { // overlapping random boxes
        for (int r = 0; r < P; ++r)
            for (int k = rnd(1, 3); k > 0; --k) put(r, random_region(shape, coin(30)));
    } else if (kind == 1) { // block decomposition along one dimension, maybe two puts per block
        const int d = static_cast<int>(rnd(0, n - 1));
        for (int r = 0; r < P; ++r) {
            Box b = Box::vara(Index(n, 0), shape);
            const int64_t lo = shape[d] * r / P, hi = shape[d] * (r + 1) / P;
            b.start[d] = lo, b.count[d] = hi - lo;
            if (b.count[d] == 0) continue;
            const int e = static_cast<int>(rnd(0, n - 1));
            if (e != d && b.count[e] > 1 && coin()) {
                Box b2 = b;
                const int64_t half = b.count[e] / 2;
                b.count[e] = half, b2.start[e] += half, b2.count[e] -= half;
                put(r, b2);
            }
            put(r, b);
        }
    } else if (kind == 2) { // single elements, each by a random rank (some elements twice, some never)
        for (int64_t k = rnd(1, 12); k > 0; --k) put(static_cast<int>(rnd(0, P - 1)), single_element(shape));
    } else if (kind == 3) { // round robin: rank r owns indices r, r+P, ... of one dimension
        const int d = static_cast<int>(rnd(0, n - 1));
        for (int r = 0; r < P && r < shape[d]; ++r) {
            Box b = Box::vara(Index(n, 0), shape);
            b.start[d] = r, b.stride[d] = P, b.count[d] = (shape[d] - 1 - r) / P + 1;
            put(r, b);
        }
    } else { // whole array by everybody, plus an empty put
        for (int r = 0; r < P; ++r) put(r, Box::vara(Index(n, 0), shape));
        Box e = Box::vara(Index(n, 0), shape);
        e.count[0] = 0;
        put(static_cast<int>(rnd(0, P - 1)), e);
    }
}

void add_reads(Workload &w, int varid, const Index &shape, int Q, std::vector<uint64_t> &next_id) {
    const int n = static_cast<int>(shape.size());
    for (int r = 0; r < Q; ++r)
        for (int k = rnd(1, 4); k > 0; --k) {
            Box b;
            switch (rnd(0, 4)) {
            case 0: b = Box::vara(Index(n, 0), shape); break;
            case 1: b = single_element(shape); break;
            case 2: b = random_region(shape, false); break;
            case 3: b = random_region(shape, true); break;
            default:
                b = random_region(shape, false);
                if (n > 0 && coin(30)) b.count[0] = 0;
            }
            w.reads.push_back(ReadReq{r, next_id[r]++, varid, std::move(b)});
        }
}

Workload random_workload() {
    Workload w;
    const int P = static_cast<int>(rnd(1, 5)), Q = static_cast<int>(rnd(1, 3));
    std::vector<uint64_t> wid(P, 0), rid(Q, 0);
    for (auto &x : wid) x = static_cast<uint64_t>(rnd(0, 3)); // ids need not start at 0
    const int nvars = static_cast<int>(rnd(1, 3));
    for (int v = 0; v < nvars; ++v) {
        const int n = static_cast<int>(rnd(0, 4));
        Index shape;
        for (int d = 0; d < n; ++d) shape.push_back(rnd(1, n >= 3 ? 4 : 8));
        const int varid = v * 2; // odd varids: read but never written
        add_writes(w, varid, shape, P, wid);
        add_reads(w, varid, shape, Q, rid);
        if (coin(20)) add_reads(w, varid + 1, shape, Q, rid);
    }
    std::shuffle(w.writes.begin(), w.writes.end(), g_rng); // input order must not matter
    std::shuffle(w.reads.begin(), w.reads.end(), g_rng);
    return w;
}

// The spatial indexes: GridIndex and TreeIndex report exactly the boxes whose hull meets the query's
// hull (brute force), the grid once per box unless replicated(); both stop when told to; the grid is
// refused beyond its entry budget, and BoxSearch then falls back to the tree.
void test_index() {
    auto hulls_meet = [](const Box &a, const Box &b) {
        for (int d = 0; d < a.ndims(); ++d)
            if (hull_hi(a, d) < hull_lo(b, d) || hull_hi(b, d) < hull_lo(a, d)) return false;
        return true;
    };
    int bad_grid = 0, bad_tree = 0, bad_repeat = 0, bad_stop = 0, grids = 0, replicated = 0;
    for (int c = 0; c < g_cases; ++c) {
        const int n = static_cast<int>(rnd(0, 4));
        Index shape;
        for (int d = 0; d < n; ++d) shape.push_back(rnd(1, 12));
        std::vector<Box> boxes;
        const bool tiled = coin() && n > 0; // a block decomposition (no replication), else random boxes
        if (tiled) {
            Index block;
            for (int d = 0; d < n; ++d) block.push_back(rnd(1, 4));
            Index at(n, 0);
            for (;;) {
                Box b = Box::vara(at, block);
                for (int d = 0; d < n; ++d) b.count[d] = std::min(block[d], shape[d] - at[d]);
                boxes.push_back(b);
                int d = n - 1;
                while (d >= 0 && (at[d] += block[d]) >= shape[d]) at[d] = 0, --d;
                if (d < 0) break;
            }
        } else {
            for (int k = static_cast<int>(rnd(0, 30)); k > 0; --k) boxes.push_back(random_region(shape, coin(30)));
        }
        std::vector<const Box *> ptrs;
        for (const Box &b : boxes) ptrs.push_back(&b);
        const std::optional<GridIndex> grid = GridIndex::build(ptrs, n, 1000000);
        const TreeIndex tree(ptrs, n);
        grids += grid.has_value();
        replicated += grid && grid->replicated();
        if (!grid || (tiled && grid->replicated())) ++bad_grid;
        for (int q = 0; q < 8; ++q) {
            const Box query = random_region(shape, coin(30));
            std::vector<int> want, from_grid, from_tree;
            for (size_t i = 0; i < boxes.size(); ++i)
                if (hulls_meet(boxes[i], query)) want.push_back(static_cast<int>(i));
            if (grid) grid->candidates(query, [&](int i) { return from_grid.push_back(i), true; });
            tree.candidates(query, [&](int i) { return from_tree.push_back(i), true; });
            std::sort(from_grid.begin(), from_grid.end());
            std::sort(from_tree.begin(), from_tree.end());
            const bool repeats = std::adjacent_find(from_grid.begin(), from_grid.end()) != from_grid.end();
            if (grid && repeats && !grid->replicated()) ++bad_repeat;
            from_grid.erase(std::unique(from_grid.begin(), from_grid.end()), from_grid.end());
            if (grid && from_grid != want) ++bad_grid;
            if (from_tree != want) ++bad_tree;
            if (want.size() >= 2) { // stopping after the first candidate
                int calls = 0;
                const bool done = tree.candidates(query, [&](int) { return ++calls, false; });
                int gcalls = 0;
                const bool gdone = !grid || !grid->candidates(query, [&](int) { return ++gcalls, false; });
                if (done || calls != 1 || !gdone || (grid && gcalls != 1)) ++bad_stop;
            }
        }
    }
    CHECK("grid index candidates equal brute force", bad_grid == 0);
    CHECK("tree index candidates equal brute force", bad_tree == 0);
    CHECK("grid repeats a box only when replicated", bad_repeat == 0);
    CHECK("index queries stop when told", bad_stop == 0);
    CHECK("both kinds of grid exercised", grids > 0 && replicated > 0);
    // The budget: 3 disjoint boxes make at least 3 cells; a box that ends at INT64_MAX has no edge after it.
    const std::vector<Box> three = {Box::vara({0}, {2}), Box::vara({4}, {2}), Box::vara({8}, {2})};
    const std::vector<const Box *> p3 = {&three[0], &three[1], &three[2]};
    const Box to_end = box({std::numeric_limits<int64_t>::max() - 1}, {2}, {1});
    CHECK("grid refused beyond its budget", !GridIndex::build(p3, 1, 2) && GridIndex::build(p3, 1, 5));
    CHECK("grid refused at INT64_MAX", !GridIndex::build({&to_end}, 1, 100));
    const BoxSearch fallback({&to_end}, 1);
    int found = 0;
    fallback.candidates(Box::vara({0}, {1}), [&](int) { return ++found, true; });
    fallback.candidates(to_end, [&](int) { return ++found, true; });
    CHECK("BoxSearch falls back to the tree", !fallback.is_grid() && found == 1);
}

// Reference: every (read, write) pair, in the documented order.
std::vector<Piece> brute_match(std::vector<WriteReq> writes, std::vector<ReadReq> reads) {
    auto by_key = [](const auto &a, const auto &b) {
        return std::make_pair(a.rank, a.id) < std::make_pair(b.rank, b.id);
    };
    std::sort(writes.begin(), writes.end(), by_key);
    std::sort(reads.begin(), reads.end(), by_key);
    std::vector<Piece> out;
    for (const ReadReq &r : reads)
        for (const WriteReq &w : writes)
            if (w.varid == r.varid)
                if (auto region = intersect(w.box, r.box)) {
                    out.push_back(Piece{w.rank, w.id, r.rank, r.id, r.varid, *region});
                    out.back().seq = w.seq, out.back().fill = w.fill;
                }
    return out;
}

// Checks coverage helpers and the "last write wins" outcome for one read: applying its pieces in
// applies_before order leaves each element with the write of the highest (seq, rank, id).
// The pieces of read `id` of reader rank `reader`, in order; and pieces one per line.
std::vector<Piece> of_read(const std::vector<Piece> &pieces, int reader, uint64_t id) {
    std::vector<Piece> v;
    for (const Piece &p : pieces)
        if (p.reader == reader && p.read_id == id) v.push_back(p);
    return v;
}

std::string lines(const std::vector<Piece> &pieces) {
    std::string s;
    for (const Piece &p : pieces) s += p.to_string() + "\n";
    return s;
}

bool check_read(const ReadReq &r, const std::vector<WriteReq> &writes, const std::vector<Piece> &all) {
    std::vector<Piece> pieces = of_read(all, r.rank, r.id);
    std::stable_sort(pieces.begin(), pieces.end(), applies_before);
    std::map<Index, std::pair<int, uint64_t>> applied; // element -> (writer, write_id), applying in order
    for (const Piece &p : pieces) {
        if (!subset(p.region, r.box)) return false;
        for (const Index &x : elements(p.region)) applied[x] = {p.writer, p.write_id};
    }
    int64_t covered = 0;
    std::set<Index> holes;
    for (const Index &x : elements(r.box)) {
        std::optional<std::tuple<uint64_t, int, uint64_t>> best; // the last (seq, rank, id) writing x
        for (const WriteReq &w : writes)
            if (w.varid == r.varid && w.box.contains(x) && (!best || *best < std::make_tuple(w.seq, w.rank, w.id)))
                best = std::make_tuple(w.seq, w.rank, w.id);
        auto it = applied.find(x);
        if (best) {
            ++covered;
            if (it == applied.end() || it->second != std::make_pair(std::get<1>(*best), std::get<2>(*best))) return false;
        } else {
            if (it != applied.end()) return false;
            holes.insert(x);
        }
    }
    if (covered_count(r.box, pieces) != covered) return false;
    // uncovered(): pairwise disjoint, within the read, exactly the holes.
    std::set<Index> got;
    size_t total = 0;
    for (const Box &b : uncovered(r.box, pieces)) {
        if (b.empty() || !valid(b) || !subset(b, r.box)) return false;
        for (const Index &x : elements(b)) got.insert(x), ++total;
    }
    return got == holes && total == holes.size();
}

void test_match_random() {
    int bad_match = 0, bad_cover = 0, bad_drop = 0;
    size_t dropped = 0;
    for (int c = 0; c < g_cases; ++c) {
        const Workload w = random_workload();
        const std::vector<Piece> got = match(w.writes, w.reads);
        const std::vector<Piece> want = brute_match(w.writes, w.reads);
        if (got != want && ++bad_match <= 3)
            std::fprintf(stderr, "  match: %zu pieces, brute force %zu\n%s---\n%s", got.size(), want.size(),
                         lines(got).c_str(), lines(want).c_str());
        // The fills data overwrites dropped: every element still ends with its last write.
        std::vector<Piece> kept = got;
        drop_overwritten_fills(kept);
        dropped += got.size() - kept.size();
        for (const ReadReq &r : w.reads) {
            if (!check_read(r, w.writes, got) && ++bad_cover <= 3)
                std::fprintf(stderr, "  coverage of read (rank %d, id %llu) %s is wrong\n", r.rank,
                             static_cast<unsigned long long>(r.id), r.box.to_string().c_str());
            if (!check_read(r, w.writes, kept) && ++bad_drop <= 3)
                std::fprintf(stderr, "  read (rank %d, id %llu) %s: dropping overwritten fills changed it\n",
                             r.rank, static_cast<unsigned long long>(r.id), r.box.to_string().c_str());
        }
    }
    CHECK("match() equals brute force on random workloads", bad_match == 0);
    CHECK("coverage, uncovered and overlap winner exact", bad_cover == 0);
    CHECK("dropping the fills data overwrites leaves every element's last write", bad_drop == 0 && dropped > 0);
}

void test_drop_overwritten_fills() {
    // A fill at enddef (seq 0) over a 4x4 block, then two writers' data (seq 1) over its rows 0-1 and
    // 2-3: the fill goes. A second read's data covers half: its fill stays. A fill after the data
    // (seq 2, ncmpi_fill_var_rec) stays.
    auto piece = [](int writer, uint64_t id, uint64_t read, uint64_t seq, bool fill, Box region) {
        Piece p{writer, id, 0, read, 7, std::move(region)};
        p.seq = seq, p.fill = fill;
        return p;
    };
    std::vector<Piece> pieces = {
        piece(0, 1, 1, 0, true, Box::vara({0, 0}, {4, 4})),  piece(0, 2, 1, 1, false, Box::vara({0, 0}, {2, 4})),
        piece(1, 1, 1, 1, false, Box::vara({2, 0}, {2, 4})), piece(0, 1, 2, 0, true, Box::vara({0, 0}, {4, 4})),
        piece(0, 2, 2, 1, false, Box::vara({0, 0}, {2, 4})), piece(0, 3, 3, 1, false, Box::vara({0, 0}, {1, 4})),
        piece(0, 4, 3, 2, true, Box::vara({0, 0}, {1, 4})),
    };
    drop_overwritten_fills(pieces);
    CHECK_EQ("overwritten fills dropped", lines(pieces),
             "reader 0 read 1 <- writer 0 write 2 seq 1 var 7 [0:2:1, 0:4:1]\n"
             "reader 0 read 1 <- writer 1 write 1 seq 1 var 7 [2:2:1, 0:4:1]\n"
             "reader 0 read 2 <- writer 0 write 1 (fill) seq 0 var 7 [0:4:1, 0:4:1]\n"
             "reader 0 read 2 <- writer 0 write 2 seq 1 var 7 [0:2:1, 0:4:1]\n"
             "reader 0 read 3 <- writer 0 write 3 seq 1 var 7 [0:1:1, 0:4:1]\n"
             "reader 0 read 3 <- writer 0 write 4 (fill) seq 2 var 7 [0:1:1, 0:4:1]\n");
}

void test_match_fixed() {
    // Two writers split a 4x6 array by rows; rank 1 also rewrites element (1,1) later.
    std::vector<WriteReq> writes = {
        {0, 0, 7, Box::vara({0, 0}, {2, 6})},
        {1, 0, 7, Box::vara({2, 0}, {2, 6})},
        {1, 1, 7, Box::vara({1, 1}, {1, 1})},
        {0, 1, 9, Box{}}, // a scalar
    };
    std::vector<ReadReq> reads = {
        {0, 5, 7, Box::vara({1, 0}, {2, 3})},
        {0, 6, 9, Box{}},
        {1, 0, 7, box({0, 0}, {4, 3}, {1, 2})},
        {1, 1, 8, Box::vara({0}, {3})}, // nobody wrote varid 8
    };
    const std::vector<Piece> pieces = match(writes, reads);
    CHECK_EQ("fixed pieces", lines(pieces),
             "reader 0 read 5 <- writer 0 write 0 seq 0 var 7 [1:1:1, 0:3:1]\n"
             "reader 0 read 5 <- writer 1 write 0 seq 0 var 7 [2:1:1, 0:3:1]\n"
             "reader 0 read 5 <- writer 1 write 1 seq 0 var 7 [1:1:1, 1:1:1]\n"
             "reader 0 read 6 <- writer 0 write 1 seq 0 var 9 []\n"
             "reader 1 read 0 <- writer 0 write 0 seq 0 var 7 [0:2:1, 0:3:2]\n"
             "reader 1 read 0 <- writer 1 write 0 seq 0 var 7 [2:2:1, 0:3:2]\n");
    CHECK("covered", covered_count(reads[0].box, of_read(pieces, 0, 5)) == 6);
    CHECK("nothing uncovered", uncovered(reads[0].box, of_read(pieces, 0, 5)).empty());
    CHECK("unwritten var uncovered", covered_count(reads[3].box, of_read(pieces, 1, 1)) == 0 &&
                                         uncovered(reads[3].box, of_read(pieces, 1, 1)) ==
                                             std::vector<Box>{reads[3].box});
    // Partial coverage: the read extends past what was written.
    const Box r = Box::vara({2, 4}, {4, 4});
    const std::vector<Box> regions = {Box::vara({2, 4}, {2, 2})};
    CHECK("partial covered_count", covered_count(r, regions) == 4);
    std::string u;
    for (const Box &b : uncovered(r, regions)) u += b.to_string() + " ";
    CHECK_EQ("partial uncovered", u, "[4:2:1, 4:4:1] [2:2:1, 6:2:1] ");
    CHECK("strided holes", covered_count(Box::vara({0}, {10}), {box({1}, {3}, {3})}) == 3 &&
                               uncovered(Box::vara({0}, {10}), {box({1}, {3}, {3})}).size() == 4);

    // Errors.
    CHECK_EQ("duplicate write id", error_of(DTF_ERR_ARG, [&] {
                 auto w2 = writes;
                 w2.push_back({1, 1, 3, Box{}});
                 match(w2, reads);
             }),
             "two writes of rank 1 have id 1");
    CHECK_EQ("duplicate read id", error_of(DTF_ERR_ARG, [&] {
                 auto r2 = reads;
                 r2.push_back({0, 6, 3, Box{}});
                 match(writes, r2);
             }),
             "two reads of rank 0 have id 6");
    CHECK_EQ("ndims mismatch read", error_of(DTF_ERR_PEER, [&] {
                 auto r2 = reads;
                 r2.push_back({2, 0, 7, Box::vara({0}, {1})});
                 match(writes, r2);
             }),
             "varid 7: write (rank 0, id 0) has 2 dimensions but read (rank 2, id 0) has 1");
    CHECK_EQ("ndims mismatch write", error_of(DTF_ERR_PEER, [&] {
                 auto w2 = writes;
                 w2.push_back({2, 0, 9, Box::vara({0}, {1})});
                 match(w2, reads);
             }),
             "varid 9: write (rank 0, id 1) has 0 dimensions but write (rank 2, id 0) has 1");
    CHECK_EQ("invalid box", error_of(DTF_ERR_ARG, [&] {
                 auto w2 = writes;
                 w2.push_back({3, 4, 7, box({0, 0}, {1, 1}, {1, 0})});
                 match(w2, reads);
             }),
             "write (rank 3, id 4, varid 7): box dimension 1 (start 0, count 1, stride 0): stride < 1");
    CHECK("no requests", match({}, {}).empty() && match(writes, {}).empty() && match({}, reads).empty());
}

// Large decompositions: the result is checked by counting; the time is printed, not asserted.
void test_match_scale() {
    const int64_t N = 1024;
    auto blocks = [&](int64_t bx, int64_t by, int64_t shift) {
        std::vector<Box> v;
        for (int64_t i = 0; i < N / bx; ++i)
            for (int64_t j = 0; j < N / by; ++j) v.push_back(Box::vara({i * bx, (j * by + shift) % N}, {bx, by}));
        return v;
    };
    struct Case {
        const char *name;
        std::vector<Box> w, r;
        size_t want_pieces;
        int64_t want_covered;
    };
    const Case cases[] = {
        // 32x32 blocks read as 64x16 blocks: each read meets 2x1 writes.
        {"2-D blocks", blocks(32, 32, 0), blocks(64, 16, 0), 1024 * 2, N * N},
        // columns (split along dimension 1 only): read as written, and shifted by one column so that
        // each read meets 2 writes (the last read covers columns 1023 and 1024, one past the end).
        {"columns", blocks(N, 1, 0), blocks(N, 1, 0), 1024, N * N},
        {"columns x2 shifted", blocks(N, 2, 0), blocks(N, 2, 1), 511 * 2 + 1, N * (N - 1)},
    };
    for (const Case &c : cases) {
        std::vector<WriteReq> writes;
        std::vector<ReadReq> reads;
        for (size_t i = 0; i < c.w.size(); ++i) writes.push_back({static_cast<int>(i), 0, 0, c.w[i]});
        for (size_t i = 0; i < c.r.size(); ++i) reads.push_back({static_cast<int>(i), 0, 0, c.r[i]});
        const auto t0 = std::chrono::steady_clock::now();
        const std::vector<Piece> pieces = match(writes, reads);
        int64_t covered = 0;
        for (const ReadReq &r : reads) covered += covered_count(r.box, of_read(pieces, r.rank, r.id));
        const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::printf("  scale %s: %zu writes x %zu reads -> %zu pieces in %.1f ms\n", c.name, writes.size(),
                    reads.size(), pieces.size(), ms);
        CHECK(std::string("scale ") + c.name, pieces.size() == c.want_pieces && covered == c.want_covered);
    }
}

// ---------------------------------------------------------------------------------------------
// Wire encoding

void test_wire() {
    const Workload w = random_workload();
    const std::vector<Piece> pieces = match(w.writes, w.reads);
    CHECK("writes round trip", decode_writes(encode(w.writes)) == w.writes);
    CHECK("reads round trip", decode_reads(encode(w.reads)) == w.reads);
    CHECK("pieces round trip", decode_pieces(encode(pieces)) == pieces);
    CHECK("empty round trip", decode_writes(encode(std::vector<WriteReq>{})).empty());
    const std::vector<WriteReq> big_ids = {{0, ~uint64_t(0), 2147483647, box({int64_t(1) << 62}, {1}, {1}),
                                            ~uint64_t(0) >> 1, true}};
    CHECK("extreme values round trip", decode_writes(encode(big_ids)) == big_ids);

    int bad_rt = 0;
    for (int c = 0; c < g_cases / 4; ++c) {
        const Workload x = random_workload();
        const std::vector<Piece> p = match(x.writes, x.reads);
        if (decode_writes(encode(x.writes)) != x.writes || decode_reads(encode(x.reads)) != x.reads ||
            decode_pieces(encode(p)) != p)
            ++bad_rt;
    }
    CHECK("random round trips", bad_rt == 0);

    // Every truncation fails cleanly with DTF_ERR_PEER.
    const std::vector<WriteReq> two = {{0, 1, 3, box({1, 2}, {3, 4}, {1, 2})}, {2, 9, 4, Box{}}};
    const std::vector<char> m = encode(two);
    const std::vector<char> mp = encode(match(two, {{0, 0, 3, Box::vara({0, 0}, {9, 9})}}));
    int not_peer = 0;
    for (size_t n = 0; n < m.size(); ++n) {
        const std::vector<char> t(m.begin(), m.begin() + n);
        if (error_of(DTF_ERR_PEER, [&] { decode_writes(t); }).rfind("malformed write list message", 0) != 0) ++not_peer;
    }
    for (size_t n = 0; n < mp.size(); ++n) {
        const std::vector<char> t(mp.begin(), mp.begin() + n);
        if (error_of(DTF_ERR_PEER, [&] { decode_pieces(t); }).rfind("malformed piece list message", 0) != 0) ++not_peer;
    }
    CHECK("every truncation is DTF_ERR_PEER", not_peer == 0);
    CHECK_EQ("truncated message text", error_of(DTF_ERR_PEER, [&] { decode_writes(m.data(), 81); }),
             "malformed write list message (81 bytes): truncated: 2 dimensions need 48 bytes at offset 44, 37 "
             "left (record 0 of 2)");

    // Hand-made corruptions at known offsets (header: magic 0, version 4, kind 6, count 8; first
    // record: rank 16, varid 20, id 24, seq and fill 32, ndims 40, dims from 44).
    auto patched = [&](size_t off, std::vector<unsigned char> bytes) {
        std::vector<char> c = m;
        for (size_t i = 0; i < bytes.size(); ++i) c[off + i] = static_cast<char>(bytes[i]);
        return error_of(DTF_ERR_PEER, [&] { decode_writes(c); });
    };
    auto i64le = [](int64_t v) {
        std::vector<unsigned char> b;
        for (int i = 0; i < 8; ++i) b.push_back(static_cast<unsigned char>(static_cast<uint64_t>(v) >> (8 * i)));
        return b;
    };
    const std::string pre = dtf::format("malformed write list message (%zu bytes): ", m.size());
    CHECK_EQ("bad magic", patched(0, {'X'}), pre + "magic 0x4d465458, expected 0x4d465444");
    CHECK_EQ("bad version", patched(4, {9}), pre + "wire version 9, expected 2 (peer runs another dtf version?)");
    CHECK_EQ("wrong kind", error_of(DTF_ERR_PEER, [&] { decode_reads(m); }),
             dtf::format("malformed read list message (%zu bytes): message kind 1, expected 2", m.size()));
    CHECK("message size", m.size() == 120);
    CHECK_EQ("huge count", patched(8, i64le(int64_t(1) << 60)),
             pre + "1152921504606846976 records announced but only 104 bytes follow (at least 28 per record)");
    CHECK_EQ("count 2^64-1", patched(8, i64le(-1)),
             pre + "18446744073709551615 records announced but only 104 bytes follow (at least 28 per record)");
    CHECK_EQ("too many records for the bytes", patched(8, i64le(3)),
             pre + "truncated: rank needs 4 bytes at offset 120, 0 left (record 2 of 3)");
    CHECK_EQ("negative rank", patched(16, {0xff, 0xff, 0xff, 0xff}), pre + "negative rank -1 (record 0 of 2)");
    CHECK_EQ("ndims 1025", patched(40, {0x01, 0x04}), pre + "ndims 1025 > 1024 (record 0 of 2)");
    CHECK_EQ("ndims huge", patched(40, {0xff, 0xff, 0xff, 0xff}), pre + "ndims 4294967295 > 1024 (record 0 of 2)");
    CHECK_EQ("ndims beyond the bytes", patched(40, {100}),
             pre + "truncated: 100 dimensions need 2400 bytes at offset 44, 76 left (record 0 of 2)");
    CHECK_EQ("stride 0", patched(44 + 16, i64le(0)),
             pre + "box dimension 0 (start 1, count 3, stride 0): stride < 1 (record 0 of 2)");
    CHECK_EQ("negative count", patched(44 + 8, i64le(-3)),
             pre + "box dimension 0 (start 1, count -3, stride 1): negative count (record 0 of 2)");
    CHECK("last index overflow", patched(44 + 16, i64le(int64_t(1) << 62)).find("last index overflows int64") !=
                                     std::string::npos);
    std::vector<char> trailing = m;
    trailing.push_back(0);
    CHECK_EQ("trailing byte", error_of(DTF_ERR_PEER, [&] { decode_writes(trailing); }),
             "malformed write list message (121 bytes): 1 trailing bytes after the last record");
    CHECK("null data, size 0", error_of(DTF_ERR_PEER, [] { decode_pieces(nullptr, 0); }).find("truncated: magic") !=
                                   std::string::npos);

    // Random corruption: decode succeeds with valid content or fails with DTF_ERR_PEER, never crashes.
    int wrong = 0;
    for (int c = 0; c < g_cases * 10; ++c) {
        std::vector<char> x = c % 2 ? m : mp;
        for (int k = static_cast<int>(rnd(1, 4)); k > 0; --k)
            x[static_cast<size_t>(rnd(0, static_cast<int64_t>(x.size()) - 1))] = static_cast<char>(rnd(0, 255));
        if (coin(20)) x.resize(static_cast<size_t>(rnd(0, static_cast<int64_t>(x.size()))));
        const std::string e = error_of(DTF_ERR_PEER, [&] {
            if (c % 2) {
                for (const WriteReq &q : decode_writes(x))
                    if (!valid(q.box) || q.rank < 0) throw std::runtime_error("invalid content accepted");
            } else {
                for (const Piece &p : decode_pieces(x))
                    if (!valid(p.region)) throw std::runtime_error("invalid content accepted");
            }
        });
        if (e != "<no error>" && e.rfind("malformed ", 0) != 0 && ++wrong <= 3)
            std::fprintf(stderr, "  %s\n", e.c_str());
    }
    CHECK("random corruption fails cleanly", wrong == 0);
}

void usage(const char *prog) {
    std::fprintf(stderr, "usage: %s [--seed S] [--cases N]\n", prog);
    std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
    for (int i = 1; i < argc; ++i) {
        if (i + 1 < argc && std::strcmp(argv[i], "--seed") == 0)
            g_seed = std::strtoull(argv[++i], nullptr, 10);
        else if (i + 1 < argc && std::strcmp(argv[i], "--cases") == 0)
            g_cases = std::max(1, std::atoi(argv[++i]));
        else
            usage(argv[0]);
    }
    std::printf("seed %llu, %d cases\n", static_cast<unsigned long long>(g_seed), g_cases);
    g_rng.seed(g_seed);
    test_dims();
    test_box_basics();
    test_intersect_fixed();
    test_intersect_random();
    test_runs();
    test_index();
    test_match_fixed();
    test_match_random();
    test_drop_overwritten_fills();
    test_match_scale();
    test_wire();
    std::printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
