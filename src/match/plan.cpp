#include "match/plan.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>

#include "common/error.hpp"

namespace dtf::match {

namespace {

using ull = unsigned long long;

// The inclusive range [lo, hi] of indices a non-empty box spans in dimension d (d < 0: 0-D, [0, 0]).
struct Interval {
    int64_t lo, hi;
    int id;
};

Interval extent(const Box &b, int d, int id) {
    if (d < 0) return {0, 0, id};
    return {b.start[d], b.start[d] + (b.count[d] - 1) * b.stride[d], id}; // valid boxes: no overflow
}

// Whether the bounding boxes of two non-empty boxes meet in every dimension (cheap, no allocation).
bool hulls_meet(const Box &a, const Box &b) {
    for (int d = 0; d < a.ndims(); ++d) {
        const Interval x = extent(a, d, 0), y = extent(b, d, 0);
        if (x.hi < y.lo || y.hi < x.lo) return false;
    }
    return true;
}

// Static interval tree: the intervals sorted by lo, seen as an implicit balanced binary tree (the
// node of range [l, r) is its midpoint), each node knowing the largest hi of its subtree. A query
// visits only subtrees that can hold a meeting interval: O(log n + k log n) for k results.
class IntervalTree {
public:
    explicit IntervalTree(std::vector<Interval> items) : items_(std::move(items)) {
        std::sort(items_.begin(), items_.end(),
                  [](const Interval &a, const Interval &b) { return a.lo < b.lo; });
        maxhi_.resize(items_.size());
        build(0, items_.size());
    }
    // Calls f(id) for every interval meeting [lo, hi] until f returns false; false if stopped.
    template <class F> bool query(int64_t lo, int64_t hi, F &&f) const {
        return query(0, items_.size(), lo, hi, f);
    }

private:
    std::vector<Interval> items_;
    std::vector<int64_t> maxhi_;

    int64_t build(size_t l, size_t r) {
        if (l >= r) return std::numeric_limits<int64_t>::min();
        const size_t mid = l + (r - l) / 2;
        maxhi_[mid] = std::max({items_[mid].hi, build(l, mid), build(mid + 1, r)});
        return maxhi_[mid];
    }
    template <class F> bool query(size_t l, size_t r, int64_t lo, int64_t hi, F &f) const {
        if (l >= r) return true;
        const size_t mid = l + (r - l) / 2;
        if (maxhi_[mid] < lo) return true; // nothing in this subtree reaches lo
        if (!query(l, mid, lo, hi, f)) return false;
        if (items_[mid].lo > hi) return true; // neither mid nor its right subtree starts by hi
        if (items_[mid].hi >= lo && !f(items_[mid].id)) return false;
        return query(mid + 1, r, lo, hi, f);
    }
};

// The dimension in which the (non-empty) boxes overlap least: smallest sum of extents divided by the
// span of their union's hull, i.e. the average number of boxes over an index. -1 for 0-D.
int least_overlap_dim(const std::vector<const Box *> &boxes, int ndims) {
    int best = -1;
    long double best_depth = 0;
    for (int d = 0; d < ndims; ++d) {
        long double sum = 0;
        int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
        for (const Box *b : boxes) {
            const Interval e = extent(*b, d, 0);
            sum += static_cast<long double>(e.hi) - e.lo + 1;
            lo = std::min(lo, e.lo), hi = std::max(hi, e.hi);
        }
        const long double depth = boxes.empty() ? 0 : sum / (static_cast<long double>(hi) - lo + 1);
        if (best < 0 || depth < best_depth) best = d, best_depth = depth;
    }
    return best;
}

// An interval tree over non-empty boxes in their least-overlap dimension; ids index `boxes`.
struct BoxIndex {
    int dim;
    IntervalTree tree;
    BoxIndex(const std::vector<const Box *> &boxes, int ndims)
        : dim(least_overlap_dim(boxes, ndims)), tree(intervals(boxes, dim)) {}
    static std::vector<Interval> intervals(const std::vector<const Box *> &boxes, int dim) {
        std::vector<Interval> v;
        v.reserve(boxes.size());
        for (size_t i = 0; i < boxes.size(); ++i) v.push_back(extent(*boxes[i], dim, static_cast<int>(i)));
        return v;
    }
    // Calls f(id) for each box whose extent in `dim` meets that of `b` (non-empty), until f is false.
    template <class F> bool candidates(const Box &b, F &&f) const {
        const Interval e = extent(b, dim, 0);
        return tree.query(e.lo, e.hi, f);
    }
};

template <class Req> void check_requests(const std::vector<Req> &reqs, const char *kind) {
    std::string why;
    for (const Req &q : reqs)
        if (!valid(q.box, &why))
            fail(DTF_ERR_ARG, "%s (rank %d, id %llu, varid %d): %s", kind, q.rank, static_cast<ull>(q.id),
                 q.varid, why.c_str());
}

// Indices of `reqs` sorted by (rank, id); DTF_ERR_ARG if a (rank, id) pair repeats.
template <class Req> std::vector<int> by_rank_id(const std::vector<Req> &reqs, const char *kind) {
    std::vector<int> order(reqs.size());
    std::iota(order.begin(), order.end(), 0);
    auto key = [&](int i) { return std::make_pair(reqs[i].rank, reqs[i].id); };
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    for (size_t i = 1; i < order.size(); ++i)
        if (key(order[i - 1]) == key(order[i]))
            fail(DTF_ERR_ARG, "two %ss of rank %d have id %llu", kind, reqs[order[i]].rank,
                 static_cast<ull>(reqs[order[i]].id));
    return order;
}

// The writes of one variable: all of them (for the ndims check) and an index of the non-empty ones.
struct VarWrites {
    int varid;
    const WriteReq *first; // the first write seen, for error messages
    std::vector<const WriteReq *> nonempty; // in (rank, id) order
    std::vector<const Box *> boxes;         // their boxes, same order (ids of the index)
    std::optional<BoxIndex> index;
};

[[noreturn]] void ndims_mismatch(const WriteReq &w, const char *kind, int rank, uint64_t id, const Box &b) {
    fail(DTF_ERR_PEER, "varid %d: write (rank %d, id %llu) has %d dimensions but %s (rank %d, id %llu) has %d",
         w.varid, w.rank, static_cast<ull>(w.id), w.box.ndims(), kind, rank, static_cast<ull>(id), b.ndims());
}

// Groups the writes by varid (ascending), each group in (rank, id) order, and indexes each group.
std::vector<VarWrites> group_writes(const std::vector<WriteReq> &writes) {
    std::vector<int> order = by_rank_id(writes, "write");
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return writes[a].varid < writes[b].varid; });
    std::vector<VarWrites> vars;
    for (int i : order) {
        const WriteReq &w = writes[i];
        if (vars.empty() || vars.back().varid != w.varid) vars.push_back(VarWrites{w.varid, &w, {}, {}, {}});
        VarWrites &v = vars.back();
        if (w.box.ndims() != v.first->box.ndims()) ndims_mismatch(*v.first, "write", w.rank, w.id, w.box);
        if (!w.box.empty()) v.nonempty.push_back(&w), v.boxes.push_back(&w.box);
    }
    for (VarWrites &v : vars) v.index.emplace(v.boxes, v.first->box.ndims());
    return vars;
}

// Pieces of one read, appended in (writer, write_id) order.
void match_read(const ReadReq &r, const VarWrites &v, std::vector<int> &scratch, std::vector<Piece> &out) {
    scratch.clear();
    v.index->candidates(r.box, [&](int id) {
        scratch.push_back(id);
        return true;
    });
    std::sort(scratch.begin(), scratch.end()); // positions in (rank, id) order
    for (int id : scratch) {
        const WriteReq &w = *v.nonempty[id];
        if (!hulls_meet(w.box, r.box)) continue;
        if (std::optional<Box> region = intersect(w.box, r.box))
            out.push_back(Piece{w.rank, w.id, r.rank, r.id, r.varid, std::move(*region)});
    }
}

std::vector<Box> regions_of(const std::vector<Piece> &pieces) {
    std::vector<Box> v;
    v.reserve(pieces.size());
    for (const Piece &p : pieces) v.push_back(p.region);
    return v;
}

// The non-empty parts of the regions within `read`.
std::vector<Box> clip(const Box &read, const std::vector<Box> &regions) {
    std::vector<Box> v;
    for (const Box &b : regions)
        if (std::optional<Box> c = intersect(read, b)) v.push_back(std::move(*c));
    return v;
}

bool pairwise_disjoint(const std::vector<Box> &boxes) {
    if (boxes.size() < 2) return true;
    std::vector<const Box *> ptrs;
    for (const Box &b : boxes) ptrs.push_back(&b);
    const BoxIndex index(ptrs, boxes[0].ndims());
    for (size_t i = 0; i < boxes.size(); ++i) {
        const bool ok = index.candidates(boxes[i], [&](int j) {
            return static_cast<size_t>(j) <= i || !hulls_meet(boxes[i], boxes[j]) || !intersect(boxes[i], boxes[j]);
        });
        if (!ok) return false;
    }
    return true;
}

// Sum of the sizes, saturating at INT64_MAX (overlapping boxes may add up to more).
int64_t total_size(const std::vector<Box> &boxes) {
    int64_t n = 0;
    for (const Box &b : boxes)
        if (__builtin_add_overflow(n, b.size(), &n)) return std::numeric_limits<int64_t>::max();
    return n;
}

// Appends b \ p as pairwise disjoint boxes. Dimension by dimension, the part of the current box
// outside p's progression in that dimension is emitted and the box narrows to p's progression.
void subtract(const Box &b, const Box &p, std::vector<Box> &out) {
    const std::optional<Box> in = intersect(b, p);
    if (!in) {
        out.push_back(b);
        return;
    }
    Box cur = b;
    for (int d = 0; d < b.ndims(); ++d) {
        // In b's index space (0 .. c-1) the intersection is a, a+r, ..., a+(m-1)r = end.
        const int64_t base = b.start[d], st = b.stride[d], c = b.count[d], m = in->count[d];
        const int64_t a = (in->start[d] - base) / st, r = m > 1 ? in->stride[d] / st : 1;
        const int64_t end = a + (m - 1) * r;
        auto emit = [&](int64_t first, int64_t count, int64_t step) {
            Box x = cur;
            x.start[d] = base + first * st, x.count[d] = count, x.stride[d] = count > 1 ? step * st : st;
            out.push_back(std::move(x));
        };
        if (a > 0) emit(0, a, 1);
        if (m > 1 && r > 1) { // the holes between: r-1 residue classes or m-1 gaps, whichever is fewer
            if (r <= m)
                for (int64_t t = 1; t < r; ++t) emit(a + t, m - 1, r);
            else
                for (int64_t j = 0; j + 1 < m; ++j) emit(a + j * r + 1, r - 1, 1);
        }
        if (end + 1 < c) emit(end + 1, c - end - 1, 1);
        cur.start[d] = in->start[d], cur.count[d] = m, cur.stride[d] = in->stride[d];
    }
}

} // namespace

std::string Piece::to_string() const {
    return format("reader %d read %llu <- writer %d write %llu var %d %s", reader, static_cast<ull>(read_id),
                  writer, static_cast<ull>(write_id), varid, region.to_string().c_str());
}

std::vector<Piece> match(const std::vector<WriteReq> &writes, const std::vector<ReadReq> &reads) {
    check_requests(writes, "write");
    check_requests(reads, "read");
    const std::vector<VarWrites> vars = group_writes(writes);
    std::vector<Piece> pieces;
    std::vector<int> scratch;
    for (int i : by_rank_id(reads, "read")) {
        const ReadReq &r = reads[i];
        auto v = std::lower_bound(vars.begin(), vars.end(), r.varid,
                                  [](const VarWrites &x, int varid) { return x.varid < varid; });
        if (v == vars.end() || v->varid != r.varid) continue; // nobody wrote this variable
        if (r.box.ndims() != v->first->box.ndims()) ndims_mismatch(*v->first, "read", r.rank, r.id, r.box);
        if (!r.box.empty()) match_read(r, *v, scratch, pieces);
    }
    return pieces;
}

Plan make_plan(const std::vector<WriteReq> &writes, const std::vector<ReadReq> &reads) {
    return Plan{match(writes, reads)};
}

std::string Plan::to_string() const {
    std::string s;
    for (const Piece &p : pieces) s += p.to_string() + "\n";
    return s;
}

namespace {
template <class Pred> std::vector<Piece> select(const std::vector<Piece> &pieces, Pred pred) {
    std::vector<Piece> v;
    std::copy_if(pieces.begin(), pieces.end(), std::back_inserter(v), pred);
    return v;
}
std::vector<int> distinct(std::vector<int> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
}
} // namespace

std::vector<Piece> Plan::pieces_for_writer(int w) const {
    return select(pieces, [&](const Piece &p) { return p.writer == w; });
}
// pieces are sorted by (reader, read_id, ...): the pieces of a reader or of a read are one range.
std::vector<Piece> Plan::pieces_for_reader(int r) const {
    auto lo = std::partition_point(pieces.begin(), pieces.end(), [&](const Piece &p) { return p.reader < r; });
    auto hi = std::partition_point(lo, pieces.end(), [&](const Piece &p) { return p.reader == r; });
    return std::vector<Piece>(lo, hi);
}
std::vector<Piece> Plan::pieces_between(int w, int r) const {
    return select(pieces_for_reader(r), [&](const Piece &p) { return p.writer == w; });
}
std::vector<Piece> Plan::pieces_for_read(int r, uint64_t read_id) const {
    auto key = [](const Piece &p) { return std::make_pair(p.reader, p.read_id); };
    const auto want = std::make_pair(r, read_id);
    auto lo = std::partition_point(pieces.begin(), pieces.end(), [&](const Piece &p) { return key(p) < want; });
    auto hi = std::partition_point(lo, pieces.end(), [&](const Piece &p) { return key(p) == want; });
    return std::vector<Piece>(lo, hi);
}
std::vector<int> Plan::writers() const {
    std::vector<int> v;
    for (const Piece &p : pieces) v.push_back(p.writer);
    return distinct(std::move(v));
}
std::vector<int> Plan::readers() const {
    std::vector<int> v;
    for (const Piece &p : pieces) v.push_back(p.reader);
    return distinct(std::move(v));
}

int64_t covered_count(const Box &read, const std::vector<Box> &regions) {
    const std::vector<Box> parts = clip(read, regions);
    if (pairwise_disjoint(parts)) return total_size(parts);
    return read.size() - total_size(uncovered(read, parts));
}

int64_t covered_count(const Box &read, const std::vector<Piece> &pieces) {
    return covered_count(read, regions_of(pieces));
}

std::vector<Box> uncovered(const Box &read, const std::vector<Box> &regions) {
    const std::vector<Box> parts = clip(read, regions);
    if (read.empty()) return {};
    if (total_size(parts) == read.size() && pairwise_disjoint(parts)) return {}; // the common case
    std::vector<Box> left{read}, next;
    for (const Box &p : parts) {
        next.clear();
        for (const Box &b : left) subtract(b, p, next);
        left.swap(next);
        if (left.empty()) break;
    }
    return left;
}

std::vector<Box> uncovered(const Box &read, const std::vector<Piece> &pieces) {
    return uncovered(read, regions_of(pieces));
}

} // namespace dtf::match
