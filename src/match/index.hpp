// Spatial indexes over the bounding boxes ("hulls") of strided boxes, for the matcher: which of many
// boxes may meet a query box. Two kinds, chosen per set of boxes by BoxSearch:
//   GridIndex  the cells of the grid that the hulls' own edges cut, each listing the hulls that
//              cover it; a query costs O(n log e + k') (e: edges per dimension, k': cell entries
//              met). Built when the hulls are few per cell, as in every regular decomposition
//              (blocks along any dimensions, element-wise, columns, mixed sizes).
//   TreeIndex  a static R-tree (sort-tile-recursive packing); O(log n + k) per query whenever hulls
//              do not overlap much; the fallback for hulls that would replicate into many cells
//              (strided round robin, random overlapping boxes).
// Both report exactly the boxes whose hull meets the query's hull. Pure C++ (no MPI); unit-tested in
// tests/unit/test_match.cpp against brute force.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "match/box.hpp"

namespace dtf::match {

// The bounding box of a non-empty box: the inclusive range [lo, hi] it spans in dimension d.
inline int64_t hull_lo(const Box &b, int d) { return b.start[d]; }
inline int64_t hull_hi(const Box &b, int d) {
    return b.start[d] + (b.count[d] - 1) * b.stride[d];
} // no overflow: valid()

// Static R-tree over the hulls of non-empty boxes, bulk-loaded by sort-tile-recursive packing at
// every level: the entries of a level are ordered in slabs (by hull centre in dimension 0, each slab
// by dimension 1, ...) and groups of kFan consecutive entries become the nodes of the level above,
// whose entries are packed the same way. A query descends only into nodes whose hull meets the query
// box in every dimension. Build: O(n log n) sorting, O(n n_dims) memory.
class TreeIndex {
public:
    TreeIndex(const std::vector<const Box *> &boxes, int ndims);

    // Calls f(id) once for each box whose hull meets that of `b` (non-empty), until f returns false;
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

    template <class T> void pack(Level &l, std::vector<T> &payload) const;
    void tile(const std::vector<int64_t> &centres, std::vector<int> &order, size_t begin, size_t end, int d) const;

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

// The grid whose lines are the edges of the hulls (in dimension d, every lo and hi + 1 of a hull),
// and for each cell the hulls that cover it (every hull is a union of whole cells), in ascending id.
// A query finds, per dimension, the cells its hull meets by binary search, and lists their entries.
class GridIndex {
public:
    // The index, or nullopt when the grid would have more than max_entries cells or cell entries
    // (hulls replicated over many cells), or a hull ends at INT64_MAX. Build: O(n n_dims) hashing
    // plus sorting the distinct edges.
    static std::optional<GridIndex> build(const std::vector<const Box *> &boxes, int ndims, size_t max_entries);

    // Calls f(id) for each box whose hull meets that of `b` (non-empty), until f returns false;
    // false if stopped. A box that spans several of the cells met is reported once per cell
    // (replicated() tells whether any box spans several cells).
    template <class F> bool candidates(const Box &b, F &&f) const {
        if (entries_.empty()) return true;
        int64_t lo_small[8], hi_small[8];
        std::vector<int64_t> large(nd_ > 8 ? 2 * nd_ : 0);
        int64_t *lo = nd_ > 8 ? large.data() : lo_small, *hi = nd_ > 8 ? large.data() + nd_ : hi_small;
        for (int d = 0; d < nd_; ++d)
            if (!cells_met(d, hull_lo(b, d), hull_hi(b, d), lo[d], hi[d])) return true;
        return for_cells(lo, hi, [&](size_t cell) {
            for (uint32_t k = first_[cell]; k < first_[cell + 1]; ++k)
                if (!f(static_cast<int>(entries_[k]))) return false;
            return true;
        });
    }
    bool replicated() const { return replicated_; }

private:
    int nd_ = 0;
    bool replicated_ = false;
    std::vector<std::vector<int64_t>> edges_; // per dimension, ascending: cell i is [edges[i], edges[i+1])
    std::vector<int64_t> spacing_;            // per dimension: edges[i] = edges[0] + i * spacing for all
                                              // but the last edge (a regular grid), else 0
    std::vector<size_t> cell_step_;           // row-major linear cell index = sum of i_d * cell_step_[d]
    std::vector<uint32_t> first_;             // cell c's entries: entries_[first_[c] .. first_[c+1])
    std::vector<uint32_t> entries_;

    // The cells [a, z] of dimension d that meet [lo, hi]; false if none. By division on a regular
    // grid, else by binary search.
    bool cells_met(int d, int64_t lo, int64_t hi, int64_t &a, int64_t &z) const;
    // Calls f(linear cell index) for every cell of the product of [lo[d], hi[d]], until it returns false.
    template <class F> bool for_cells(const int64_t *lo, const int64_t *hi, F &&f) const {
        size_t cell = 0;
        for (int d = 0; d < nd_; ++d) cell += static_cast<size_t>(lo[d]) * cell_step_[d];
        if (nd_ == 0) return f(cell);
        std::vector<int64_t> idx_large(nd_ > 8 ? nd_ : 0);
        int64_t idx_small[8];
        int64_t *idx = nd_ > 8 ? idx_large.data() : idx_small;
        for (int d = 0; d < nd_; ++d) idx[d] = lo[d];
        for (;;) {
            if (!f(cell)) return false;
            int d = nd_ - 1; // odometer, last dimension fastest
            while (d >= 0 && idx[d] == hi[d]) {
                cell -= static_cast<size_t>(idx[d] - lo[d]) * cell_step_[d];
                idx[d] = lo[d];
                --d;
            }
            if (d < 0) return true;
            ++idx[d];
            cell += cell_step_[d];
        }
    }
};

// The index for a set of boxes: a GridIndex when its grid stays within 4 entries per box (+ a few
// thousand), else a TreeIndex. candidates() may report a box more than once (GridIndex).
class BoxSearch {
public:
    BoxSearch(const std::vector<const Box *> &boxes, int ndims);
    template <class F> bool candidates(const Box &b, F &&f) const {
        return grid_ ? grid_->candidates(b, f) : tree_->candidates(b, f);
    }
    bool may_repeat() const { return grid_ && grid_->replicated(); }
    bool is_grid() const { return grid_.has_value(); }

private:
    std::optional<GridIndex> grid_;
    std::optional<TreeIndex> tree_;
};

} // namespace dtf::match
