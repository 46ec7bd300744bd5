// Matching of a writer component's put requests with a reader component's get requests on the same
// variables: which elements move from which write to which read, as pieces (plain values: comparable,
// printable; replay keeps them in its plans, session/session.hpp). Pure C++ (no MPI); unit-tested in
// tests/unit/test_match.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "match/box.hpp"

namespace dtf::match {

// A writer rank's put. `id` is unique per rank and increases in the order the rank's writes take
// effect. `seq` says when the write took effect on the file: the number of the file's collective
// calls the writer ranks had made by then (the same on every rank: they make them in the same
// order), so that writes of several ranks to the same elements apply in PnetCDF's order (see
// match()). `fill`: the variable's fill value written over the box (ncmpi_fill_var_rec, or the fill
// of a variable at enddef); no values move for it, a reader writes the fill value itself.
struct WriteReq {
    int rank;
    uint64_t id;
    int varid;
    Box box;
    uint64_t seq = 0;
    bool fill = false;
    bool operator==(const WriteReq &o) const {
        return rank == o.rank && id == o.id && varid == o.varid && box == o.box && seq == o.seq && fill == o.fill;
    }
};

// A reader rank's get. `id` is unique per rank.
struct ReadReq {
    int rank;
    uint64_t id;
    int varid;
    Box box;
    bool operator==(const ReadReq &o) const {
        return rank == o.rank && id == o.id && varid == o.varid && box == o.box;
    }
};

// The elements `region` (= write box ∩ read box, non-empty) move from write (writer, write_id) to
// read (reader, read_id). Pack with for_each_run(write box, region), unpack with
// for_each_run(read box, region).
struct Piece {
    Piece() = default;
    Piece(int writer, uint64_t write_id, int reader, uint64_t read_id, int varid, Box region)
        : write_id(write_id), read_id(read_id), writer(writer), reader(reader), varid(varid),
          region(std::move(region)) {}
    uint64_t write_id = 0, read_id = 0; // (members ordered to pack: a plan holds millions of pieces)
    uint64_t seq = 0;                    // the write's (WriteReq::seq)
    int writer = 0, reader = 0, varid = 0;
    bool fill = false;                   // the write's (WriteReq::fill): the fill value, no data
    Box region;
    bool operator==(const Piece &o) const {
        return writer == o.writer && write_id == o.write_id && reader == o.reader && read_id == o.read_id &&
               varid == o.varid && seq == o.seq && fill == o.fill && region == o.region;
    }
    std::string to_string() const;
};

// Whether piece `a`'s write took effect before `b`'s: by seq, then writer rank, then write id. Where
// pieces of one read overlap, applying them in this order leaves each element as the file would
// hold it: the last write wins, writes ordered by a collective call of the file (a collective put, a
// wait_all, a flush, ...) apply in that order whichever ranks made them, and one rank's writes in
// the order they took effect. PnetCDF leaves undefined what two ranks' overlapping writes within one
// collective call give; there the higher rank wins.
inline bool applies_before(const Piece &a, const Piece &b) {
    if (a.seq != b.seq) return a.seq < b.seq;
    if (a.writer != b.writer) return a.writer < b.writer;
    return a.write_id < b.write_id;
}

// All pieces: for each read, each write of the same varid that intersects it, ordered by
// (reader, read_id, writer, write_id) (not the order they apply in: applies_before).
//
// Throws DTF_ERR_ARG for an invalid box or a (rank, id) pair that occurs twice among the writes or
// among the reads, and DTF_ERR_PEER when requests on one varid disagree on its number of dimensions.
//
// Complexity: the writes of each variable are indexed by the bounding boxes of their boxes
// (match/index.hpp): on the grid their edges cut when that grid has at most ~4 entries per write
// (every regular decomposition: blocks along any dimensions, element-wise, columns, mixed sizes),
// else in a static R-tree. With W writes, R reads, n dimensions and P pieces: O((W + R) n) to group
// and index (requests of a rank mostly arrive in id order; otherwise O(W log W + R log R) to sort),
// plus per read O(n + c log c) on a regular grid (O(n log e) on an irregular one, e edges per
// dimension) or O(n (log W + c) + c log c) in the R-tree, c being the number of writes whose
// bounding box meets the read's. c is the number of pieces of that read whenever writes do not
// interleave; it exceeds it only for strided writes whose bounding boxes overlap (round robin), where
// the R-tree's cost tends to O(R W n) as in brute force. bench/plan_bench measures it
// (docs/PERFORMANCE.md).
std::vector<Piece> match(const std::vector<WriteReq> &writes, const std::vector<ReadReq> &reads);

// Coverage of one read by the regions of its pieces (regions are clipped to `read`; they may overlap,
// as pieces of overlapping writes do).
//
// covered_count: the number of distinct elements of `read` in at least one region. Common case
// (regions pairwise disjoint, checked with the same indexes): O(P (log P + n)). Otherwise it is
// read.size() minus the size of uncovered().
int64_t covered_count(const Box &read, const std::vector<Box> &regions);
int64_t covered_count(const Box &read, const std::vector<Piece> &pieces);

// Drop the fill pieces (Piece::fill) whose region the data pieces of the same read cover whole,
// when each of those took effect after the fill (applies_before): applying the rest leaves every
// element as applying all would. (In fill mode, a netCDF-4 file's default, each variable's enddef
// fill precedes the data that overwrites it.) O(F (D + P log P)) for F fills and D data pieces of a read.
void drop_overwritten_fills(std::vector<Piece> &pieces);

// The elements of `read` in no region (to be filled with the fill value), exactly, as pairwise
// disjoint boxes (empty when fully covered, {read} when there are no regions). Computed by
// subtracting one region after the other from the remaining boxes: O(P U n) with U remaining boxes
// at most; a strided region may split a box into up to min(r, m)+1 boxes per dimension, with r its
// stride relative to the box and m its count. Call it when covered_count() < read.size().
std::vector<Box> uncovered(const Box &read, const std::vector<Box> &regions);
std::vector<Box> uncovered(const Box &read, const std::vector<Piece> &pieces);

} // namespace dtf::match
