// Test of the file groups over MPI (src/transport/mpi_group.cpp, KeptGroups in mpi_channel.hpp), run
// by mpiexec on 7 ranks: sets of 1, 2, 3, 4 and 7 ranks (recursive doubling, a rank folded in, the
// binomial tree), each opening several sessions on one kept communicator. Checks that every
// allreduce, barrier and broadcast gives the right result for every root and size; that two
// sessions' collectives and channel messages never meet, though the ranks start them in different
// orders; that sessions on one set of ranks make one communicator (a duplicate at the first open
// alone, in the collectives counted); and that a group is refused after finish().
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/counters.hpp"
#include "common/error.hpp"
#include "transport/mpi_channel.hpp"

using namespace dtf;
using namespace dtf::transport;

namespace {
int failures = 0;
int world_rank = 0;

void check(bool ok, const std::string &what, int line) {
    if (ok) return;
    std::fprintf(stderr, "rank %d: test_groups.cpp:%d: FAILED: %s\n", world_rank, line, what.c_str());
    ++failures;
}
#define CHECK(cond) check((cond), #cond, __LINE__)

void wait(Pending &p) {
    const double t0 = MPI_Wtime();
    while (!p.test())
        if (MPI_Wtime() - t0 > 30) throw Error(DTF_ERR_TIMEOUT, "test_groups: a collective did not complete in 30 s");
}

int tag_ub() {
    int *ub = nullptr, found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    return found ? *ub : 32767;
}

// The values every rank of `g` gives, and their max, for allreduce number `k`.
int64_t value(const Group &g, int k, int i) { return (g.rank() * 7 + k * 3 + i * 11) % (g.size() + 5) - 2; }

// Allreduces of several lengths, a barrier, and broadcasts from every root of several sizes.
void collectives(Group &g) {
    for (int n : {1, 3, 7}) {
        std::vector<int64_t> in(static_cast<size_t>(n)), out(static_cast<size_t>(n), -99);
        for (int i = 0; i < n; ++i) in[static_cast<size_t>(i)] = value(g, n, i);
        auto op = g.allreduce_max(in.data(), out.data(), n);
        wait(*op);
        for (int i = 0; i < n; ++i) {
            int64_t max = INT64_MIN;
            for (int r = 0; r < g.size(); ++r) max = std::max<int64_t>(max, (r * 7 + n * 3 + i * 11) % (g.size() + 5) - 2);
            CHECK(out[static_cast<size_t>(i)] == max);
        }
    }
    auto b = g.barrier();
    wait(*b);
    for (int root = 0; root < g.size(); ++root)
        for (size_t size : {size_t{0}, size_t{5}, size_t{300}, size_t{200000}}) {
            std::vector<char> bytes;
            if (g.rank() == root)
                for (size_t i = 0; i < size; ++i) bytes.push_back(static_cast<char>(i * 31 + root));
            auto op = g.broadcast(root, &bytes);
            wait(*op);
            bool same = bytes.size() == size;
            for (size_t i = 0; same && i < size; ++i) same = bytes[i] == static_cast<char>(i * 31 + root);
            CHECK(same);
        }
}

// Two sessions of the same ranks: their collectives started in one order on even ranks and in the
// other on odd ones (MPI's collectives on one communicator would mix them up or hang), and a message
// on each one's channel with the same protocol tag, taken by the right session.
void independent(KeptGroups &kept, MPI_Comm comm, MpiQueue &queue) {
    auto a = kept.take(comm, MPI_COMM_WORLD, "test", queue, tag_ub(), wait);
    auto b = kept.take(comm, MPI_COMM_WORLD, "test", queue, tag_ub(), wait);
    const int64_t in_a = a->rank() + 100, in_b = -b->rank();
    int64_t out_a = 0, out_b = 0;
    std::unique_ptr<Pending> pa, pb;
    if (a->rank() % 2 == 0) {
        pa = a->allreduce_max(&in_a, &out_a, 1);
        pb = b->allreduce_max(&in_b, &out_b, 1);
    } else {
        pb = b->allreduce_max(&in_b, &out_b, 1);
        pa = a->allreduce_max(&in_a, &out_a, 1);
    }
    wait(*pb);
    wait(*pa);
    CHECK(out_a == a->size() - 1 + 100);
    CHECK(out_b == 0);
    auto ca = a->channel(), cb = b->channel();
    const int next = (a->rank() + 1) % a->size();
    auto sent_b = cb->send(next, Tag::Meta, std::vector<char>{'b'}, "test");
    auto sent_a = ca->send(next, Tag::Meta, std::vector<char>{'a'}, "test");
    std::optional<Incoming> got_a, got_b;
    const double t0 = MPI_Wtime();
    while ((!got_a || !got_b) && MPI_Wtime() - t0 < 30) {
        ca->progress();
        if (!got_a) got_a = ca->poll(Tag::Meta, "test");
        if (!got_b) got_b = cb->poll(Tag::Meta, "test");
    }
    CHECK(got_a && got_a->bytes == std::vector<char>{'a'});
    CHECK(got_b && got_b->bytes == std::vector<char>{'b'});
    while (!ca->done(sent_a) || !cb->done(sent_b)) ca->progress();
}
} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 7) {
        std::fprintf(stderr, "test_groups: run on 7 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    try {
        MpiQueue queue(nullptr);
        KeptGroups kept;
        // Sets: the whole world (7: the tree), and its ranks split 4 + 3 (recursive doubling; one
        // rank folded in), 2 + 2 + 2 + 1.
        MPI_Comm four_three, pairs;
        MPI_Comm_split(MPI_COMM_WORLD, world_rank < 4, world_rank, &four_three);
        MPI_Comm_split(MPI_COMM_WORLD, world_rank / 2, world_rank, &pairs);
        const auto before = counters::read(false).messages[counters::Collectives];
        for (MPI_Comm comm : {MPI_COMM_WORLD, four_three, pairs})
            for (int session = 0; session < 3; ++session) {
                auto g = kept.take(comm, MPI_COMM_WORLD, "test", queue, tag_ub(), wait);
                int expect = 0;
                MPI_Comm_size(comm, &expect);
                CHECK(g->size() == expect);
                collectives(*g);
            }
        for (MPI_Comm comm : {MPI_COMM_WORLD, four_three, pairs}) independent(kept, comm, queue);
        // Counted: per set of ranks over one rank, its duplicate, then per session of collectives()
        // 3 allreduces, a barrier and 4 broadcasts per root, and independent()'s 2 allreduces.
        int expected = 0;
        for (MPI_Comm comm : {MPI_COMM_WORLD, four_three, pairs}) {
            int n = 0;
            MPI_Comm_size(comm, &n);
            if (n > 1) expected += 1 + 3 * (4 + 4 * n) + 2;
        }
        CHECK(counters::read(false).messages[counters::Collectives] - before == expected);
        // After finish() a group is refused.
        auto late = kept.take(MPI_COMM_WORLD, MPI_COMM_WORLD, "test", queue, tag_ub(), wait);
        kept.finish();
        bool refused = false;
        try {
            late->channel();
        } catch (const Error &e) {
            refused = e.code() == DTF_ERR_INTERNAL;
        }
        CHECK(refused);
        MPI_Comm_free(&four_three);
        MPI_Comm_free(&pairs);
    } catch (const Error &e) {
        std::fprintf(stderr, "rank %d: test_groups: %s\n", world_rank, e.what());
        ++failures;
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (world_rank == 0) std::printf("test_groups: %s (%d failures)\n", all ? "FAILED" : "ok", all);
    MPI_Finalize();
    return all ? 1 : 0;
}
