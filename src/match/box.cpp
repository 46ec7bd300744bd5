#include "match/box.hpp"

#include <algorithm>
#include <limits>

#include "common/error.hpp"

namespace dtf::match {

namespace {

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

// One dimension of a box: the progression start + i*stride, 0 <= i < count.
struct Prog {
    int64_t start, count, stride;
};

Prog dim(const Box &b, int d) { return {b.start[d], b.count[d], b.stride[d]}; }

i128 last(const Prog &p) { return p.start + static_cast<i128>(p.count - 1) * p.stride; }

// Mathematical modulo: result in [0, m) for m > 0.
i128 mod(i128 x, i128 m) {
    i128 r = x % m;
    return r < 0 ? r + m : r;
}

int64_t gcd(int64_t a, int64_t b) {
    while (b != 0) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

// Inverse of a modulo m (gcd(a, m) == 1, 0 <= a < m, m >= 2) by the extended Euclidean algorithm.
// The Bezout coefficients stay within [-m, m], so int64_t does not overflow.
int64_t inverse(int64_t a, int64_t m) {
    int64_t r0 = m, r1 = a, t0 = 0, t1 = 1;
    while (r1 != 0) {
        int64_t q = r0 / r1;
        int64_t r2 = r0 - q * r1, t2 = t0 - q * t1;
        r0 = r1, r1 = r2, t0 = t1, t1 = t2;
    }
    return static_cast<int64_t>(mod(t0, m));
}

// The common elements of two progressions (counts >= 1): x = a.start + i*a.stride = b.start +
// j*b.stride. All solutions are congruent modulo L = lcm(a.stride, b.stride); intersect with the
// overlap of the two ranges.
std::optional<Prog> intersect1(const Prog &a, const Prog &b) {
    const i128 lo = std::max(a.start, b.start), hi = std::min(last(a), last(b));
    if (lo > hi) return std::nullopt;
    const int64_t g = gcd(a.stride, b.stride);
    const i128 diff = static_cast<i128>(b.start) - a.start;
    if (diff % g != 0) return std::nullopt;
    // x = a.start + k*a.stride with k*(a.stride/g) == diff/g (mod m), m = b.stride/g.
    const int64_t m = b.stride / g;
    int64_t k = 0;
    if (m > 1) {
        const auto rhs = static_cast<u128>(mod(diff / g, m));
        const auto inv = static_cast<u128>(inverse(a.stride / g % m, m));
        k = static_cast<int64_t>(rhs * inv % static_cast<u128>(m)); // both < 2^63
    }
    const i128 lcm = static_cast<i128>(a.stride) * m; // < 2^126
    const i128 x0 = a.start + static_cast<i128>(k) * a.stride;
    const i128 first = lo + mod(x0 - lo, lcm); // smallest solution >= lo
    if (first > hi) return std::nullopt;
    const i128 count = (hi - first) / lcm + 1;
    // count > 1 implies lcm <= hi - lo < 2^63; a single element keeps the step only if it fits.
    const int64_t stride = lcm <= kMax ? static_cast<int64_t>(lcm) : 1;
    return Prog{static_cast<int64_t>(first), static_cast<int64_t>(count), stride};
}

// Whether x is one of the elements of progression p.
bool in_prog(const Prog &p, int64_t x) {
    if (p.count <= 0 || x < p.start) return false;
    if (p.stride == 1) return x - p.start < p.count; // no overflow: 0 <= start <= x
    const i128 off = static_cast<i128>(x) - p.start;
    return off % p.stride == 0 && off / p.stride < p.count;
}

void check_same_ndims(const Box &a, const Box &b, const char *what) {
    if (a.ndims() != b.ndims())
        fail(DTF_ERR_ARG, "%s: box %s has %d dimensions but box %s has %d", what, a.to_string().c_str(),
             a.ndims(), b.to_string().c_str(), b.ndims());
}

} // namespace

Box Box::vara(Dims start, Dims count) {
    Dims stride(start.size(), 1);
    return Box{std::move(start), std::move(count), std::move(stride)};
}

int64_t Box::size() const {
    int64_t n = 1;
    bool saturated = false;
    for (int64_t c : count) {
        if (c <= 0) return 0;
        saturated |= __builtin_mul_overflow(n, c, &n);
    }
    return saturated ? kMax : n;
}

bool Box::empty() const {
    for (int64_t c : count)
        if (c <= 0) return true;
    return false;
}

bool Box::contains(const std::vector<int64_t> &index) const {
    if (index.size() != start.size()) return false;
    for (int d = 0; d < ndims(); ++d)
        if (!in_prog(dim(*this, d), index[d])) return false;
    return true;
}

std::string Box::to_string() const {
    std::string s = "[";
    for (int d = 0; d < ndims(); ++d) {
        if (d > 0) s += ", ";
        s += std::to_string(start[d]) + ":" + std::to_string(count[d]) + ":" + std::to_string(stride[d]);
    }
    return s + "]";
}

bool valid(const Box &b, std::string *why) {
    std::string dummy;
    std::string &w = why ? *why : dummy;
    if (b.count.size() != b.start.size() || b.stride.size() != b.start.size()) {
        w = format("box has %zu starts, %zu counts and %zu strides", b.start.size(), b.count.size(),
                   b.stride.size());
        return false;
    }
    if (b.ndims() > kMaxDims) {
        w = format("box has %d dimensions (at most %d)", b.ndims(), kMaxDims);
        return false;
    }
    bool has_zero = false;
    int64_t n = 1;
    bool too_big = false;
    for (int d = 0; d < b.ndims(); ++d) {
        const int64_t s = b.start[d], c = b.count[d], st = b.stride[d];
        const char *bad = s < 0 ? "negative start" : c < 0 ? "negative count" : st < 1 ? "stride < 1" : nullptr;
        if (!bad && c > 0 && (c - 1) > (kMax - s) / st) bad = "last index overflows int64";
        if (bad) {
            w = format("box dimension %d (start %lld, count %lld, stride %lld): %s", d,
                       static_cast<long long>(s), static_cast<long long>(c), static_cast<long long>(st), bad);
            return false;
        }
        has_zero |= c == 0;
        too_big |= __builtin_mul_overflow(n, c, &n);
    }
    if (too_big && !has_zero) {
        w = format("box %s has more than 2^63-1 elements", b.to_string().c_str());
        return false;
    }
    return true;
}

std::optional<Box> intersect(const Box &a, const Box &b) {
    Box r;
    if (!intersect(a, b, r)) return std::nullopt;
    return r;
}

bool intersect(const Box &a, const Box &b, Box &out) {
    check_same_ndims(a, b, "intersect");
    const int n = a.ndims();
    Prog small[8]; // no allocation unless the boxes meet (most candidate pairs do not)
    std::vector<Prog> large(n > 8 ? n : 0);
    Prog *p = n > 8 ? large.data() : small;
    for (int d = 0; d < n; ++d) {
        if (a.count[d] <= 0 || b.count[d] <= 0) return false;
        if (a.stride[d] == 1 && b.stride[d] == 1) { // two ranges (vara): no congruence to solve
            const int64_t lo = std::max(a.start[d], b.start[d]);
            const int64_t hi = std::min(a.start[d] + (a.count[d] - 1), b.start[d] + (b.count[d] - 1));
            if (lo > hi) return false;
            p[d] = Prog{lo, hi - lo + 1, 1};
            continue;
        }
        const std::optional<Prog> q = intersect1(dim(a, d), dim(b, d));
        if (!q) return false;
        p[d] = *q;
    }
    out.start.clear(), out.count.clear(), out.stride.clear();
    for (int d = 0; d < n; ++d)
        out.start.push_back(p[d].start), out.count.push_back(p[d].count), out.stride.push_back(p[d].stride);
    return true;
}

bool subset(const Box &sub, const Box &outer) {
    if (sub.ndims() != outer.ndims()) return false;
    if (sub.empty()) return true;
    for (int d = 0; d < sub.ndims(); ++d) {
        const Prog s = dim(sub, d), o = dim(outer, d);
        if (!in_prog(o, s.start)) return false;
        if (s.count > 1 && (s.stride % o.stride != 0 || last(s) > last(o))) return false;
    }
    return true;
}

int64_t offset_in(const Box &outer, const std::vector<int64_t> &index) {
    int64_t off = 0, mult = 1;
    for (int d = outer.ndims() - 1; d >= 0; --d) {
        off += (index[d] - outer.start[d]) / outer.stride[d] * mult;
        mult *= outer.count[d];
    }
    return off;
}

namespace detail {

Runs runs(const Box &outer, const Box &sub) {
    if (!subset(sub, outer))
        fail(DTF_ERR_ARG, "region %s is not within box %s", sub.to_string().c_str(),
             outer.to_string().c_str());
    Runs r;
    if (sub.empty()) return r;
    const int n = sub.ndims();
    // step[d]: outer offset increment when sub's index in dimension d grows by one.
    Dims step(static_cast<size_t>(n), 0);
    int64_t mult = 1;
    for (int d = n - 1; d >= 0; --d) {
        r.first += (sub.start[d] - outer.start[d]) / outer.stride[d] * mult;
        step[d] = sub.count[d] > 1 ? sub.stride[d] / outer.stride[d] * mult : 0;
        mult *= outer.count[d];
    }
    // Merge trailing dimensions while the run stays one arithmetic progression in outer's order.
    r.len = 1;
    int k = n - 1;
    for (; k >= 0; --k) {
        const int64_t c = sub.count[k];
        if (c == 1) continue;
        if (r.len == 1) {
            r.step = step[k], r.len = c;
        } else if (static_cast<i128>(r.step) * r.len == step[k]) {
            r.len *= c;
        } else {
            break;
        }
    }
    for (int d = 0; d <= k; ++d) {
        if (sub.count[d] == 1) continue;
        r.loop_count.push_back(sub.count[d]);
        r.loop_step.push_back(step[d]);
        r.loop_rewind.push_back(step[d] * (sub.count[d] - 1));
    }
    r.nruns = sub.size() / r.len;
    return r;
}

} // namespace detail

} // namespace dtf::match
