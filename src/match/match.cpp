#include "match/match.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <utility>

#include "common/error.hpp"
#include "match/index.hpp"

namespace dtf::match {

namespace {

using ull = unsigned long long;

template <class Req> void check_requests(const std::vector<Req> &reqs, const char *kind) {
    std::string why;
    for (const Req &q : reqs)
        if (!valid(q.box, &why))
            fail(DTF_ERR_ARG, "%s (rank %d, id %llu, varid %d): %s", kind, q.rank, static_cast<ull>(q.id),
                 q.varid, why.c_str());
}

// Stable sort of `keys` by the int that `field` gives: by counting when the values span little more
// than there are keys (ranks and varids do), else by comparison.
template <class Key, class Field> void stable_sort_by(std::vector<Key> &keys, Field field) {
    if (keys.size() < 2) return;
    const auto [lo, hi] = std::minmax_element(keys.begin(), keys.end(),
                                              [&](const Key &a, const Key &b) { return field(a) < field(b); });
    const int64_t min = field(*lo), span = static_cast<int64_t>(field(*hi)) - min + 1;
    if (span == 1) return;
    if (span > static_cast<int64_t>(keys.size()) + 1024) {
        std::stable_sort(keys.begin(), keys.end(), [&](const Key &a, const Key &b) { return field(a) < field(b); });
        return;
    }
    std::vector<size_t> at(static_cast<size_t>(span) + 1, 0);
    for (const Key &k : keys) ++at[static_cast<size_t>(field(k) - min) + 1];
    std::partial_sum(at.begin(), at.end(), at.begin());
    std::vector<Key> sorted(keys.size());
    for (const Key &k : keys) sorted[at[static_cast<size_t>(field(k) - min)]++] = k;
    keys.swap(sorted);
}

// Indices of `reqs` sorted by (rank, id), or by (varid, rank, id) if by_varid; DTF_ERR_ARG if a
// (rank, id) pair repeats. Sorts dense keys (the requests themselves are large and scattered): by
// rank (counting), then each rank's ids unless they ascend already (a rank's requests usually do).
template <class Req> std::vector<int> sorted_order(const std::vector<Req> &reqs, const char *kind, bool by_varid) {
    struct Key {
        int rank;
        uint64_t id;
        int varid, index;
    };
    std::vector<Key> keys(reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i)
        keys[i] = Key{reqs[i].rank, reqs[i].id, reqs[i].varid, static_cast<int>(i)};
    stable_sort_by(keys, [](const Key &k) { return k.rank; });
    auto by_id = [](const Key &a, const Key &b) { return a.id < b.id; };
    for (size_t first = 0, last; first < keys.size(); first = last) {
        for (last = first + 1; last < keys.size() && keys[last].rank == keys[first].rank;) ++last;
        if (!std::is_sorted(keys.begin() + first, keys.begin() + last, by_id))
            std::sort(keys.begin() + first, keys.begin() + last, by_id);
    }
    for (size_t i = 1; i < keys.size(); ++i)
        if (keys[i - 1].rank == keys[i].rank && keys[i - 1].id == keys[i].id)
            fail(DTF_ERR_ARG, "two %ss of rank %d have id %llu", kind, keys[i].rank, static_cast<ull>(keys[i].id));
    if (by_varid) stable_sort_by(keys, [](const Key &k) { return k.varid; });
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
    std::optional<BoxSearch> index;
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
    if (v.index->may_repeat()) scratch.erase(std::unique(scratch.begin(), scratch.end()), scratch.end());
    for (int id : scratch) {
        const WriteReq &w = *v.nonempty[id];
        Piece &p = out.emplace_back(); // the region is computed in place: a plan holds millions
        if (!intersect(w.box, r.box, p.region)) {
            out.pop_back();
            continue;
        }
        p.writer = w.rank, p.write_id = w.id, p.reader = r.rank, p.read_id = r.id, p.varid = r.varid;
        p.seq = w.seq, p.fill = w.fill;
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
    Box common; // scratch
    if (boxes.size() <= 16) { // a few pieces (the usual read): every pair, no index to build
        for (size_t i = 0; i < boxes.size(); ++i)
            for (size_t j = i + 1; j < boxes.size(); ++j)
                if (intersect(boxes[i], boxes[j], common)) return false;
        return true;
    }
    std::vector<const Box *> ptrs;
    for (const Box &b : boxes) ptrs.push_back(&b);
    const BoxSearch index(ptrs, boxes[0].ndims());
    for (size_t i = 0; i < boxes.size(); ++i) {
        const bool ok = index.candidates(boxes[i], [&](int j) {
            return static_cast<size_t>(j) <= i || !intersect(boxes[i], boxes[j], common);
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
    return format("reader %d read %llu <- writer %d write %llu%s seq %llu var %d %s", reader, static_cast<ull>(read_id),
                  writer, static_cast<ull>(write_id), fill ? " (fill)" : "", static_cast<ull>(seq), varid,
                  region.to_string().c_str());
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

void drop_overwritten_fills(std::vector<Piece> &pieces) {
    if (std::none_of(pieces.begin(), pieces.end(), [](const Piece &p) { return p.fill; })) return;
    std::map<std::pair<int, uint64_t>, std::vector<const Piece *>> data_of; // by (reader, read id)
    for (const auto &p : pieces)
        if (!p.fill) data_of[{p.reader, p.read_id}].push_back(&p);
    std::vector<char> drop(pieces.size(), 0);
    for (size_t i = 0; i < pieces.size(); ++i) {
        const Piece &f = pieces[i];
        const auto it = f.fill ? data_of.find({f.reader, f.read_id}) : data_of.end();
        if (it == data_of.end()) continue;
        std::vector<Box> regions;
        bool after = true;
        for (const Piece *d : it->second) {
            after = after && applies_before(f, *d);
            regions.push_back(d->region);
        }
        drop[i] = after && covered_count(f.region, regions) == f.region.size();
    }
    size_t k = 0;
    for (size_t i = 0; i < pieces.size(); ++i)
        if (!drop[i]) pieces[k++] = std::move(pieces[i]);
    pieces.resize(k);
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
