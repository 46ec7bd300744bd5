// Planning micro-benchmark: the matcher's work for one batch (match() of all reads against all
// writes of a variable, then the readers' coverage check of every read), on one core, for
// decompositions of a 3-D variable from 10^3 to 10^6 requests per side. No MPI, no I/O.
//
// usage: plan_bench [--max N] [--min N] [--case NAME] [--reps R] [--csv FILE]
//   --max N   largest number of requests per side (default 1000000; sizes 10^3, 10^4, ... up to N)
//   --min N   smallest size (default 1000)
//   --case C  only the case named C (e.g. "blocks read as elements")
//   --reps R  timed repetitions per size; the one of median total time is reported (default 3)
//   --csv F   also write case,writes,reads,pieces,match_s,cover_s rows to F
//
// Each case checks its result (number of pieces, every element of every read covered exactly
// once); a wrong plan fails the run, so the benchmark cannot report the speed of a broken matcher.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "match/match.hpp"

using namespace dtf::match;

namespace {

constexpr int kWriters = 64, kReaders = 64; // ranks of each side; requests are dealt out in blocks

struct Case {
    std::string name;
    std::vector<WriteReq> writes;
    std::vector<ReadReq> reads;
    size_t want_pieces;
};

// The boxes of block shape `b` tiling an array of shape `a` (a multiple of b), in row-major order.
std::vector<Box> tiles(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
    std::vector<Box> v;
    for (int64_t i = 0; i < a[0]; i += b[0])
        for (int64_t j = 0; j < a[1]; j += b[1])
            for (int64_t k = 0; k < a[2]; k += b[2]) v.push_back(Box::vara({i, j, k}, b));
    return v;
}

// Requests over `ranks` ranks: rank r gets the r-th contiguous share (ids 0, 1, ... per rank), or,
// with `cyclic`, every ranks-th box (element-wise round robin, as a transposed decomposition gives).
template <class Req> std::vector<Req> deal(const std::vector<Box> &boxes, int ranks, bool cyclic) {
    std::vector<Req> v;
    v.reserve(boxes.size());
    const size_t share = (boxes.size() + ranks - 1) / ranks;
    for (size_t i = 0; i < boxes.size(); ++i) {
        const int rank = static_cast<int>(cyclic ? i % ranks : i / share);
        const uint64_t id = cyclic ? i / ranks : i % share;
        v.push_back(Req{rank, id, 0, boxes[i]});
    }
    return v;
}

// The cases for about n requests per side (g^3 = n boxes per side, g = cube root of n).
std::vector<Case> cases(size_t n) {
    const int64_t g = std::llround(std::cbrt(static_cast<double>(n)));
    std::vector<Case> v;
    {   // 4x4x4 blocks read as 8x4x2 blocks: every read meets two writes.
        const std::vector<int64_t> a{4 * g, 4 * g, 4 * g};
        v.push_back({"blocks", deal<WriteReq>(tiles(a, {4, 4, 4}), kWriters, false),
                     deal<ReadReq>(tiles(a, {8, 4, 2}), kReaders, false), 0});
        v.back().want_pieces = 2 * v.back().reads.size();
    }
    {   // Element-wise: every element is one put (round robin over writer ranks) and one get.
        const std::vector<int64_t> a{g, g, g};
        const std::vector<Box> e = tiles(a, {1, 1, 1});
        v.push_back({"element-wise", deal<WriteReq>(e, kWriters, true), deal<ReadReq>(e, kReaders, false), e.size()});
    }
    {   // Element-wise puts read as 4x4x4 blocks (n/64 reads of 64 pieces each).
        const std::vector<int64_t> a{g, g, g};
        const std::vector<int64_t> a4{g / 4 * 4, g / 4 * 4, g / 4 * 4};
        v.push_back({"elements read as blocks", deal<WriteReq>(tiles(a, {1, 1, 1}), kWriters, true),
                     deal<ReadReq>(tiles(a4, {4, 4, 4}), kReaders, false), 0});
        v.back().want_pieces = v.back().reads.size() * 64;
    }
    {   // 4x4x4 blocks read element by element.
        const std::vector<int64_t> a{4 * g, 4 * g, 4 * g};
        const std::vector<int64_t> b{g, g, g}; // the first 1/64 of the array, element by element
        v.push_back({"blocks read as elements", deal<WriteReq>(tiles(a, {4, 4, 4}), kWriters, false),
                     deal<ReadReq>(tiles(b, {1, 1, 1}), kReaders, true), 0});
        v.back().want_pieces = v.back().reads.size();
    }
    {   // g^2 columns along dimension 2 written, read as g^2 columns along dimension 0 (n/g requests
        // per side; every read meets g writes).
        const std::vector<int64_t> a{g, g, g};
        v.push_back({"columns across", deal<WriteReq>(tiles(a, {1, 1, g}), kWriters, false),
                     deal<ReadReq>(tiles(a, {g, 1, 1}), kReaders, false), static_cast<size_t>(g * g * g)});
    }
    return v;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Timing {
    size_t pieces;
    double match_s, cover_s;
};

// match(), then every read's coverage, as the matcher and the readers compute them for one batch.
// Fails if a read is not exactly covered.
Timing plan_once(const Case &c) {
    auto t0 = std::chrono::steady_clock::now();
    const std::vector<Piece> pieces = match(c.writes, c.reads);
    Timing t{pieces.size(), seconds_since(t0), 0};
    size_t at = 0; // pieces are in (reader, read id) order: walk them alongside the sorted reads
    std::vector<const ReadReq *> reads; // (the reader knows its reads: this order is not timed)
    for (const ReadReq &r : c.reads) reads.push_back(&r);
    std::sort(reads.begin(), reads.end(), [](const ReadReq *x, const ReadReq *y) {
        return std::make_pair(x->rank, x->id) < std::make_pair(y->rank, y->id);
    });
    t0 = std::chrono::steady_clock::now();
    std::vector<Box> regions;
    for (const ReadReq *r : reads) {
        regions.clear();
        while (at < pieces.size() && pieces[at].reader == r->rank && pieces[at].read_id == r->id)
            regions.push_back(pieces[at++].region);
        if (covered_count(r->box, regions) != r->box.size()) {
            std::fprintf(stderr, "plan_bench: %s: read (rank %d, id %llu) %s is not fully covered\n", c.name.c_str(),
                         r->rank, static_cast<unsigned long long>(r->id), r->box.to_string().c_str());
            std::exit(1);
        }
    }
    t.cover_s = seconds_since(t0);
    return t;
}

} // namespace

int main(int argc, char **argv) {
    size_t max = 1000000, min = 1000;
    const char *only = nullptr;
    int reps = 3;
    const char *csv_path = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--max") && i + 1 < argc) max = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--min") && i + 1 < argc) min = std::strtoull(argv[++i], nullptr, 10);
        else if (!std::strcmp(argv[i], "--case") && i + 1 < argc) only = argv[++i];
        else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc) csv_path = argv[++i];
        else {
            std::fprintf(stderr, "usage: %s [--max N] [--min N] [--case NAME] [--reps R] [--csv FILE]\n", argv[0]);
            return 2;
        }
    }
    if (reps < 1 || min < 1000 || max < min) {
        std::fprintf(stderr, "plan_bench: --reps must be >= 1 and 1000 <= --min <= --max\n");
        return 2;
    }
    FILE *csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
    if (csv_path && !csv) {
        std::fprintf(stderr, "plan_bench: cannot write %s\n", csv_path);
        return 1;
    }
    if (csv) std::fprintf(csv, "case,writes,reads,pieces,match_s,cover_s\n");
    std::printf("%-24s %8s %8s %8s %9s %9s %9s\n", "case", "writes", "reads", "pieces", "match s", "cover s",
                "total s");
    try {
        for (size_t n = 1000; n <= max; n *= 10)
            for (const Case &c : n < min ? std::vector<Case>{} : cases(n)) {
                if (only && c.name != only) continue;
                std::vector<Timing> t;
                for (int r = 0; r < reps; ++r) {
                    t.push_back(plan_once(c));
                    if (t.back().pieces != c.want_pieces) {
                        std::fprintf(stderr, "plan_bench: %s: %zu pieces, expected %zu\n", c.name.c_str(),
                                     t.back().pieces, c.want_pieces);
                        return 1;
                    }
                }
                std::sort(t.begin(), t.end(), [](const Timing &a, const Timing &b) {
                    return a.match_s + a.cover_s < b.match_s + b.cover_s;
                });
                const Timing &m = t[t.size() / 2]; // the repetition of median total time
                std::printf("%-24s %8zu %8zu %8zu %9.4f %9.4f %9.4f\n", c.name.c_str(), c.writes.size(),
                            c.reads.size(), m.pieces, m.match_s, m.cover_s, m.match_s + m.cover_s);
                std::fflush(stdout);
                if (csv)
                    std::fprintf(csv, "%s,%zu,%zu,%zu,%.6f,%.6f\n", c.name.c_str(), c.writes.size(), c.reads.size(),
                                 m.pieces, m.match_s, m.cover_s);
            }
    } catch (const dtf::Error &e) {
        std::fprintf(stderr, "plan_bench: %s\n", e.what());
        return 1;
    }
    if (csv) std::fclose(csv);
    return 0;
}
