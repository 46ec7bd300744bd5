#include "match/index.hpp"

#include <cmath>
#include <limits>
#include <numeric>

namespace dtf::match {

// ---- TreeIndex ---------------------------------------------------------------------------------

TreeIndex::TreeIndex(const std::vector<const Box *> &boxes, int ndims) : nd_(ndims) {
    const size_t n = boxes.size();
    Level leaves; // level 0: the boxes themselves; node i is box ids_[i]
    leaves.count = n;
    leaves.bounds.resize(2 * n * nd_);
    for (size_t i = 0; i < n; ++i)
        for (int d = 0; d < nd_; ++d)
            leaves.bounds[2 * (i * nd_ + d)] = hull_lo(*boxes[i], d),
                                         leaves.bounds[2 * (i * nd_ + d) + 1] = hull_hi(*boxes[i], d);
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

// Reorders the nodes of `l` (their bounds, and `payload`, one value per node) in STR order, so that
// kFan consecutive nodes are close together.
template <class T> void TreeIndex::pack(Level &l, std::vector<T> &payload) const {
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

// Orders order[begin, end) into slabs by centre in dimension d (centres[i * nd + d]), then each slab
// recursively by the following dimensions. Ties are broken by the next dimensions, so that e.g.
// columns that all span dimension 0 are ordered by dimension 1.
void TreeIndex::tile(const std::vector<int64_t> &centres, std::vector<int> &order, size_t begin, size_t end,
                     int d) const {
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

// ---- GridIndex ---------------------------------------------------------------------------------

namespace {

// The distinct edges of one dimension (open addressing; a decomposition has few distinct edges and
// repeats them once per box), then each edge's position among them.
class EdgeSet {
public:
    EdgeSet() : keys_(16, kNone), pos_(16, 0), bits_(4) {}
    void insert(int64_t k) {
        if (k == last_) return; // boxes in a row often share their edges in the slower dimensions
        last_ = k;
        const size_t i = slot(k);
        if (keys_[i] == k) return;
        keys_[i] = k;
        if (2 * ++size_ > keys_.size()) grow();
    }
    size_t size() const { return size_; }
    // The edges in ascending order; afterwards position(edge) is its index there.
    std::vector<int64_t> sort() {
        std::vector<int64_t> v;
        v.reserve(size_);
        for (int64_t k : keys_)
            if (k != kNone) v.push_back(k);
        std::sort(v.begin(), v.end());
        for (size_t i = 0; i < v.size(); ++i) pos_[slot(v[i])] = static_cast<uint32_t>(i);
        last_ = kNone;
        return v;
    }
    uint32_t position(int64_t k) {
        if (k != last_) last_ = k, last_pos_ = pos_[slot(k)];
        return last_pos_;
    }

private:
    static constexpr int64_t kNone = std::numeric_limits<int64_t>::min(); // edges are >= 0
    std::vector<int64_t> keys_;
    std::vector<uint32_t> pos_;
    int bits_;
    size_t size_ = 0;
    int64_t last_ = kNone; // the last key inserted or looked up, and its position
    uint32_t last_pos_ = 0;

    size_t slot(int64_t k) const { // Fibonacci hashing: the high bits of the product
        size_t i = static_cast<size_t>((static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull) >> (64 - bits_));
        const size_t mask = keys_.size() - 1;
        while (keys_[i] != kNone && keys_[i] != k) i = (i + 1) & mask;
        return i;
    }
    void grow() {
        std::vector<int64_t> old;
        old.swap(keys_);
        ++bits_;
        keys_.assign(old.size() * 2, kNone);
        pos_.assign(old.size() * 2, 0);
        for (int64_t k : old)
            if (k != kNone) keys_[slot(k)] = k;
    }
};

} // namespace

std::optional<GridIndex> GridIndex::build(const std::vector<const Box *> &boxes, int ndims, size_t max_entries) {
    const size_t n = boxes.size();
    if (n >= std::numeric_limits<uint32_t>::max() || max_entries >= std::numeric_limits<uint32_t>::max())
        return std::nullopt;
    GridIndex g;
    g.nd_ = ndims;
    if (n == 0) return g;
    // Box i spans [range[2 i nd + d], range[(2 i + 1) nd + d]] in dimension d: first its hull's
    // ends (one pass over the boxes, which may lie scattered in memory), then cell indices.
    std::vector<int64_t> range(2 * n * ndims);
    for (size_t i = 0; i < n; ++i)
        for (int d = 0; d < ndims; ++d) {
            const int64_t hi = hull_hi(*boxes[i], d);
            if (hi == std::numeric_limits<int64_t>::max()) return std::nullopt; // hi + 1 would overflow
            range[2 * i * ndims + d] = hull_lo(*boxes[i], d), range[(2 * i + 1) * ndims + d] = hi + 1;
        }
    std::vector<EdgeSet> sets(ndims);
    for (size_t i = 0; i < n; ++i)
        for (int d = 0; d < ndims; ++d) {
            sets[d].insert(range[2 * i * ndims + d]), sets[d].insert(range[(2 * i + 1) * ndims + d]);
            if (sets[d].size() > max_entries + 1) return std::nullopt; // more cells than allowed in d alone
        }
    g.edges_.resize(ndims);
    g.spacing_.resize(ndims);
    g.cell_step_.resize(ndims);
    size_t cells = 1;
    for (int d = ndims - 1; d >= 0; --d) {
        g.edges_[d] = sets[d].sort();
        const std::vector<int64_t> &e = g.edges_[d];
        int64_t spacing = e.size() > 2 ? e[1] - e[0] : 0;
        for (size_t i = 2; spacing > 0 && i + 1 < e.size(); ++i)
            if (e[i] - e[i - 1] != spacing) spacing = 0;
        g.spacing_[d] = spacing;
        g.cell_step_[d] = cells;
        if (__builtin_mul_overflow(cells, g.edges_[d].size() - 1, &cells) || cells > max_entries) return std::nullopt;
    }
    size_t entries = 0;
    for (size_t i = 0; i < n; ++i) {
        int64_t *a = range.data() + 2 * i * ndims, *z = a + ndims;
        size_t spans = 1;
        for (int d = 0; d < ndims; ++d) {
            a[d] = sets[d].position(a[d]);
            z[d] = static_cast<int64_t>(sets[d].position(z[d])) - 1;
            spans *= static_cast<size_t>(z[d] - a[d] + 1); // <= cells: no overflow
        }
        g.replicated_ = g.replicated_ || spans > 1;
        entries += spans;
        if (entries > max_entries) return std::nullopt;
    }
    g.first_.assign(cells + 1, 0);
    for (size_t i = 0; i < n; ++i) {
        const int64_t *a = range.data() + 2 * i * ndims;
        g.for_cells(a, a + ndims, [&](size_t c) { return ++g.first_[c + 1], true; });
    }
    std::partial_sum(g.first_.begin(), g.first_.end(), g.first_.begin());
    g.entries_.resize(entries);
    std::vector<uint32_t> next(g.first_.begin(), g.first_.end() - 1);
    for (size_t i = 0; i < n; ++i) { // in id order: every cell's entries ascend
        const int64_t *a = range.data() + 2 * i * ndims;
        g.for_cells(a, a + ndims, [&](size_t c) { return g.entries_[next[c]++] = static_cast<uint32_t>(i), true; });
    }
    return g;
}

bool GridIndex::cells_met(int d, int64_t lo, int64_t hi, int64_t &a, int64_t &z) const {
    const std::vector<int64_t> &e = edges_[d];
    if (hi < e.front() || lo >= e.back()) return false;
    const auto last = static_cast<int64_t>(e.size()) - 2;
    const int64_t spacing = spacing_[d];
    auto cell_of = [&](int64_t x) -> int64_t { // e.front() <= x < e.back()
        if (spacing > 0) return std::min(last, (x - e.front()) / spacing);
        return std::upper_bound(e.begin(), e.end(), x) - e.begin() - 1;
    };
    a = lo <= e.front() ? 0 : cell_of(lo);
    z = hi >= e.back() ? last : cell_of(hi);
    return true;
}

// ---- BoxSearch ---------------------------------------------------------------------------------

BoxSearch::BoxSearch(const std::vector<const Box *> &boxes, int ndims) {
    grid_ = GridIndex::build(boxes, ndims, 4 * boxes.size() + 4096);
    if (!grid_) tree_.emplace(boxes, ndims);
}

} // namespace dtf::match
