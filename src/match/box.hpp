// Strided N-D boxes: the region of a netCDF variable that one put or get request touches, their exact
// intersection, and the element addressing used to pack and unpack buffers laid out as a box.
// Pure C++ (no MPI); unit-tested in tests/unit/test_match.cpp.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "match/dims.hpp"

namespace dtf::match {

// Largest number of dimensions a box may have (netCDF allows NC_MAX_VAR_DIMS = 1024).
constexpr int kMaxDims = 1024;

// The elements start[d] + i*stride[d], 0 <= i < count[d], in every dimension d (the Cartesian
// product). A 0-D box (all vectors empty) is the single element of a scalar variable. A `vara`
// request has stride 1 everywhere. Element order is row-major (last dimension fastest); a buffer
// "laid out as" a box holds its size() elements densely in that order.
struct Box {
    Dims start, count, stride;

    // A box with stride 1 in every dimension.
    static Box vara(Dims start, Dims count);

    int ndims() const { return static_cast<int>(start.size()); }
    // Number of elements: product of counts (1 for 0-D, 0 if any count is 0). Saturates at
    // INT64_MAX for boxes that are not valid().
    int64_t size() const;
    bool empty() const; // size() == 0
    // Whether `index` (ndims() coordinates) is an element of this box.
    bool contains(const std::vector<int64_t> &index) const;
    // "[start:count:stride, ...]" per dimension, "[]" for 0-D.
    std::string to_string() const;

    bool operator==(const Box &o) const {
        return start == o.start && count == o.count && stride == o.stride;
    }
    bool operator!=(const Box &o) const { return !(*this == o); }
};

// Whether `b` is well formed: equal vector lengths, ndims <= kMaxDims, start >= 0, count >= 0,
// stride >= 1, last index start + (count-1)*stride and size() representable in int64_t. On failure
// *why (if given) says which dimension and why. Every other function assumes valid boxes.
bool valid(const Box &b, std::string *why = nullptr);

// The elements common to `a` and `b` (same ndims, else DTF_ERR_ARG), as a box, or nullopt when
// there are none. Per dimension the common elements form an arithmetic progression with step
// lcm(a.stride, b.stride) (solved exactly with the Chinese remainder theorem, no overflow). A
// dimension of the result with count 1 keeps that step as its stride when it fits in int64_t, else
// stride 1. intersect(a, a) == a.
std::optional<Box> intersect(const Box &a, const Box &b);
// The same into `out` (the matcher's pieces are built in place): true if they meet, else false and
// `out` unchanged.
bool intersect(const Box &a, const Box &b, Box &out);

// Whether every element of `sub` is an element of `outer` (an empty sub of the same ndims is).
bool subset(const Box &sub, const Box &outer);

// Row-major offset of element `index` within `outer`'s element order (index must be an element).
int64_t offset_in(const Box &outer, const std::vector<int64_t> &index);

namespace detail {
// How the elements of `sub` map into `outer`: `nruns` runs of `len` elements, each an arithmetic
// progression with step `step` in outer's order and contiguous in sub's order. The runs are
// enumerated by an odometer over `loop_count` (slowest first); advancing index d moves the outer
// offset by `loop_step[d]`, wrapping it back by `loop_rewind[d]` = loop_step[d]*(loop_count[d]-1).
struct Runs {
    int64_t first = 0; // outer offset of sub's first element
    int64_t step = 1;  // outer offset increment within a run (1 when len == 1)
    int64_t len = 0;
    int64_t nruns = 0; // 0 when sub is empty
    Dims loop_count, loop_step, loop_rewind; // (inline up to Dims::kInline loops: no allocation per copy)
};
// Throws DTF_ERR_ARG when sub is not a subset of outer.
Runs runs(const Box &outer, const Box &sub);
} // namespace detail

// Calls f(outer_offset, outer_step, sub_offset, len) for the elements of `sub` (a subset of `outer`,
// else DTF_ERR_ARG) in row-major order, one call per maximal run: the sub elements sub_offset ..
// sub_offset+len-1 (contiguous in sub's order) are the outer elements outer_offset + k*outer_step,
// 0 <= k < len. Offsets count elements in row-major order of the box. Trailing dimensions are merged
// into one run whenever the progression continues (e.g. sub == outer gives one run of size() with
// step 1). Cost: O(ndims) setup plus O(1) amortized per run; no allocation per element or run.
// (The innermost loop is a plain loop, the odometer turns once per row of runs: rows of a few
// elements, such as a halo's interior, are common, and the per-run bookkeeping weighed on them.)
template <class F> void for_each_run(const Box &outer, const Box &sub, F &&f) {
    const detail::Runs r = detail::runs(outer, sub);
    if (r.nruns == 0) return;
    const int nloop = static_cast<int>(r.loop_count.size());
    if (nloop == 0) { // one run
        f(r.first, r.step, int64_t{0}, r.len);
        return;
    }
    const int inner = nloop - 1;
    const int64_t n_inner = r.loop_count[inner], step_inner = r.loop_step[inner];
    Dims idx(static_cast<size_t>(inner), 0);
    int64_t off = r.first, sub_off = 0; // off: the first run of the current row
    for (;;) {
        int64_t o = off;
        for (int64_t i = 0; i < n_inner; ++i, o += step_inner, sub_off += r.len) f(o, r.step, sub_off, r.len);
        int d = inner - 1; // odometer over the outer loops
        while (d >= 0 && ++idx[d] == r.loop_count[d]) {
            idx[d] = 0;
            off -= r.loop_rewind[d];
            --d;
        }
        if (d < 0) return;
        off += r.loop_step[d];
    }
}

// Copy the elements of `sub` (a subset of `outer`) between a buffer laid out as `outer` and a dense
// buffer laid out as `sub` (elements of `es` bytes): packing (to_dense) or unpacking.
inline void copy_region(const Box &outer, char *outer_buf, const Box &sub, char *dense, size_t es, bool to_dense) {
    for_each_run(outer, sub, [&](int64_t off, int64_t step, int64_t sub_off, int64_t len) {
        char *o = outer_buf + static_cast<size_t>(off) * es, *d = dense + static_cast<size_t>(sub_off) * es;
        if (step == 1) {
            std::memcpy(to_dense ? d : o, to_dense ? o : d, static_cast<size_t>(len) * es);
            return;
        }
        for (int64_t i = 0; i < len; ++i, o += step * static_cast<int64_t>(es), d += es)
            std::memcpy(to_dense ? d : o, to_dense ? o : d, es);
    });
}

} // namespace dtf::match
