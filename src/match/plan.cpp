#include "match/plan.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>

#include "common/error.hpp"

namespace dtf::match {

namespace {

using ull = unsigned long long;

// The bounding box ("hull") of a non-empty box: the inclusive range [lo[d], hi[d]] it spans in each
// dimension d.
int64_t hull_lo(const Box &b, int d) { return b.start[d]; }
int64_t hull_hi(const Box &b, int d) { return b.start[d] + (b.count[d] - 1) * b.stride[d]; } // valid: no overflow

// Static R-tree over the hulls of non-empty boxes, bulk-loaded by sort-tile-recursive packing at
// every level: the entries of a level are ordered in slabs (by hull centre in dimension 0, each slab
// by dimension 1, ...) and groups of kFan consecutive entries become the nodes of the level above,
// whose entries are packed the same way. A query descends only into nodes whose hull meets the query
// box in every dimension, so it costs O(log n + k) when the hulls tile the array (blocks along any
// dimensions, element-wise, mixed sizes), k being the number of boxes whose hull meets the query.
// Build: O(n log n) sorting, O(n n_dims) memory.
class BoxIndex {
public:
    BoxIndex(const std::vector<const Box *> &boxes, int ndims) : nd_(ndims) {
        const size_t n = boxes.size();
        Level leaves; // level 0: the boxes themselves; node i is box ids_[i]
        leaves.count = n;
        leaves.bounds.resize(2 * n * nd_);
        for (size_t i = 0; i < n; ++i)
            for (int d = 0; d < nd_; ++d)
                leaves.bounds[2 * (i * nd_ + d)] = hull_lo(*boxes[i], d), leaves.bounds[2 * (i * nd_ + d) + 1] = hull_hi(*boxes[i], d);
        ids_.resize(n);
        std::iota(ids_.begin(), ids_.end(), 0);
        pack(leaves, ids_);
        levels_.push_back(std::move(leaves));
        while (levels_.back().count > 1) {
            const Level &below = levels_.back();
            Level up; // node j: the entries first[j] .. first[j] + kFan - 1 (at most) of the level below
            up.count = (below.count + kFan - 1) / kFan;
            up.first.resize(up.count);
            up.bounds.resize(2 * up.count * nd_);
            for (size_t j = 0; j < up.count; ++j) {
                up.first[j] = static_cast<uint32_t>(j * kFan);
                for (int d = 0; d < nd_; ++d) {
                    int64_t *u = &up.bounds[2 * (j * nd_ + d)];
                    u[0] = std::numeric_limits<int64_t>::max(), u[1] = std::numeric_limits<int64_t>::min();
                    for (size_t c = j * kFan; c < std::min(below.count, (j + 1) * kFan); ++c) {
                        const int64_t *b = &below.bounds[2 * (c * nd_ + d)];
                        u[0] = std::min(u[0], b[0]), u[1] = std::max(u[1], b[1]);
                    }
                }
            }
            pack(up, up.first);
            levels_.push_back(std::move(up));
        }
    }

    // Calls f(id) for each box whose hull meets that of `b` (non-empty), until f returns false;
    // false if stopped. ids index the `boxes` given to the constructor.
    template <class F> bool candidates(const Box &b, F &&f) const {
        if (ids_.empty()) return true;
        int64_t small[2 * 8]; // the query's hull, laid out as a node's bounds
        std::vector<int64_t> large(nd_ > 8 ? 2 * nd_ : 0);
        int64_t *q = nd_ > 8 ? large.data() : small;
        for (int d = 0; d < nd_; ++d) q[2 * d] = hull_lo(b, d), q[2 * d + 1] = hull_hi(b, d);
        return visit(levels_.size() - 1, 0, q, f);
    }

private:
    static constexpr size_t kFan = 8;
    struct Level {
        size_t count = 0;            // nodes
        std::vector<int64_t> bounds; // node i, dimension d: lo at [2 (i nd + d)], hi next to it
        std::vector<uint32_t> first; // above level 0: node i's first child in the level below
    };
    int nd_;
    std::vector<int> ids_;      // level 0's node i is box ids_[i]
    std::vector<Level> levels_; // levels_[0]: the boxes; levels_.back(): the root

    // Reorders the nodes of `l` (their bounds, and `payload`, one value per node) in STR order, so
    // that kFan consecutive nodes are close together.
    template <class T> void pack(Level &l, std::vector<T> &payload) const {
        if (l.count <= kFan || nd_ == 0) return;
        std::vector<int64_t> centres(l.count * nd_);
        for (size_t i = 0; i < centres.size(); ++i)
            centres[i] = l.bounds[2 * i] + (l.bounds[2 * i + 1] - l.bounds[2 * i]) / 2;
        std::vector<int> order(l.count);
        std::iota(order.begin(), order.end(), 0);
        tile(centres, order, 0, l.count, 0);
        std::vector<int64_t> bounds(l.bounds.size());
        std::vector<T> moved(payload.size());
        for (size_t i = 0; i < l.count; ++i) {
            std::copy_n(&l.bounds[2 * order[i] * nd_], 2 * nd_, &bounds[2 * i * nd_]);
            moved[i] = payload[order[i]];
        }
        l.bounds.swap(bounds), payload.swap(moved);
    }

    // Orders order[begin, end) into slabs by centre in dimension d (centres[i * nd + d]), then each
    // slab recursively by the following dimensions. Ties are broken by the next dimensions, so that
    // e.g. columns that all span dimension 0 are ordered by dimension 1.
    void tile(const std::vector<int64_t> &centres, std::vector<int> &order, size_t begin, size_t end, int d) const {
        const size_t n = end - begin;
        if (d >= nd_ || n <= kFan) return;
        const int64_t *c = centres.data();
        const int nd = nd_;
        std::sort(order.begin() + begin, order.begin() + end, [c, d, nd](int a, int b) {
            const int64_t *x = c + static_cast<size_t>(a) * nd, *y = c + static_cast<size_t>(b) * nd;
            for (int e = d; e < nd; ++e)
                if (x[e] != y[e]) return x[e] < y[e];
            return a < b;
        });
        if (d == nd_ - 1) return;
        const size_t groups = (n + kFan - 1) / kFan;
        const auto slabs = static_cast<size_t>(std::ceil(std::pow(static_cast<double>(groups), 1.0 / (nd_ - d))));
        const size_t per_slab = kFan * ((groups + slabs - 1) / slabs);
        for (size_t s = begin; s < end; s += per_slab) tile(centres, order, s, std::min(end, s + per_slab), d + 1);
    }

    bool meets(const Level &l, size_t i, const int64_t *q) const {
        const int64_t *b = l.bounds.data() + 2 * i * nd_; // (0-D: no bounds at all)
        for (int d = 0; d < 2 * nd_; d += 2)
            if (b[d + 1] < q[d] || q[d + 1] < b[d]) return false;
        return true;
    }
    template <class F> bool visit(size_t level, size_t i, const int64_t *q, F &f) const {
        if (!meets(levels_[level], i, q)) return true;
        if (level == 0) return f(ids_[i]);
        const size_t first = levels_[level].first[i];
        const size_t last = std::min(levels_[level - 1].count, first + kFan);
        for (size_t j = first; j < last; ++j)
            if (!visit(level - 1, j, q, f)) return false;
        return true;
    }
};

template <class Req> void check_requests(const std::vector<Req> &reqs, const char *kind) {
    std::string why;
    for (const Req &q : reqs)
        if (!valid(q.box, &why))
            fail(DTF_ERR_ARG, "%s (rank %d, id %llu, varid %d): %s", kind, q.rank, static_cast<ull>(q.id),
                 q.varid, why.c_str());
}

// Indices of `reqs` sorted by (rank, id), or by (varid, rank, id) if by_varid; DTF_ERR_ARG if a
// (rank, id) pair repeats. Sorts dense keys (the requests themselves are large and scattered).
template <class Req> std::vector<int> sorted_order(const std::vector<Req> &reqs, const char *kind, bool by_varid) {
    struct Key {
        int rank;
        uint64_t id;
        int varid, index;
    };
    std::vector<Key> keys(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) keys[i] = Key{reqs[i].rank, reqs[i].id, reqs[i].varid, static_cast<int>(i)};
    std::sort(keys.begin(), keys.end(),
              [](const Key &a, const Key &b) { return std::tie(a.rank, a.id) < std::tie(b.rank, b.id); });
    for (size_t i = 1; i < keys.size(); ++i)
        if (keys[i - 1].rank == keys[i].rank && keys[i - 1].id == keys[i].id)
            fail(DTF_ERR_ARG, "two %ss of rank %d have id %llu", kind, keys[i].rank, static_cast<ull>(keys[i].id));
    if (by_varid)
        std::stable_sort(keys.begin(), keys.end(), [](const Key &a, const Key &b) { return a.varid < b.varid; });
    std::vector<int> order(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].index;
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
    const std::vector<int> order = sorted_order(writes, "write", true);
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
    if (boxes.size() <= 16) { // a few pieces (the usual read): every pair, no index to build
        for (size_t i = 0; i < boxes.size(); ++i)
            for (size_t j = i + 1; j < boxes.size(); ++j)
                if (intersect(boxes[i], boxes[j])) return false;
        return true;
    }
    std::vector<const Box *> ptrs;
    for (const Box &b : boxes) ptrs.push_back(&b);
    const BoxIndex index(ptrs, boxes[0].ndims());
    for (size_t i = 0; i < boxes.size(); ++i) {
        const bool ok = index.candidates(boxes[i], [&](int j) {
            return static_cast<size_t>(j) <= i || !intersect(boxes[i], boxes[j]);
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
    pieces.reserve(reads.size()); // at least one piece per read in a complete transfer
    std::vector<int> scratch;
    const std::vector<int> order = sorted_order(reads, "read", false);
    for (size_t k = 0; k < order.size(); ++k) {
        // Once 1/64 of the reads are matched, reserve for all at that rate (+1/8): growing a vector of
        // 10^6 pieces by doubling would copy them and touch twice the memory.
        if (k == order.size() / 64 && k >= 64) {
            const auto want = static_cast<size_t>(1.125 * static_cast<double>(pieces.size()) * order.size() / k);
            if (want > pieces.capacity()) pieces.reserve(want);
        }
        const ReadReq &r = reads[order[k]];
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
    // Regions from match() lie within the read: use them as they are, clip copies only otherwise.
    const bool inside = std::all_of(regions.begin(), regions.end(),
                                    [&](const Box &b) { return !b.empty() && subset(b, read); });
    std::vector<Box> clipped;
    if (!inside) clipped = clip(read, regions);
    const std::vector<Box> &parts = inside ? regions : clipped;
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
