// Unit test of the transfer protocol itself, without MPI: writer and reader components of several
// ranks run in one process, each rank a Runtime::in_process() in its own thread, connected by the
// in-process channels and groups of transport::LoopbackNet. Each rank makes the PnetCDF calls a
// program would (through vfile_call, as the dispatcher does), and the values read are checked
// element by element against the values written. Cases: an M x N transfer matched every cycle, a
// replayed one (no requests after the first cycle, data pushed before dtf_transfer), one replayed
// file of one name (what a replayed cycle costs, by message kind), a pattern change
// under replay on either side (re-matched when the writers still hold the data, a clear error when
// they do not), two files in flight at once, a writer that never comes (a timeout that says who
// waited for what, and only one), a file opened again with NC_WRITE and written back, and one file
// read by two reader components (writer=/readers=), each served on its own. Every case ends with
// every message sent received and used.
#include <pnetcdf.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "config/config.hpp"
#include "pnc/hook.h"
#include "runtime/runtime.hpp"
#include "frontend/files.hpp"
#include "transport/channel.hpp"
#include "transport/data_plane.hpp"

using namespace dtf;
using namespace dtf::runtime;

namespace {
std::atomic<int> failures{0};

void check(bool ok, const std::string &what, int line) {
    if (ok) return;
    std::fprintf(stderr, "test_protocol.cpp:%d: FAILED: %s\n", line, what.c_str());
    ++failures;
}
#define CHECK(cond) check((cond), #cond, __LINE__)

const char *kIni = R"(
[INFO]
ncomp=3
comp_name="model"
comp_name="assim"
comp_name="obs"

[FILE]
filename="%/shared%.nc"
writer="model"
readers="assim obs"

[FILE]
filename="%/matched%.nc"
comp1="model"
comp2="assim"

[FILE]
filename="%/replayed%.nc"
comp1="model"
comp2="assim"
replay_io=1

[FILE]
filename="%/written%.nc"
comp1="model"
comp2="assim"
num_sessions=2
)";

constexpr int kWriter = 0, kReader = 1, kObs = 2;

// Components of `sizes` ranks (the first sizes.size() of the config's) over one LoopbackNet, each
// linked to the others it shares a file with; run() starts every rank in its own thread.
class World {
public:
    explicit World(std::vector<int> sizes, double timeout_s = 30) : sizes_(sizes) {
        config_ = config::parse(kIni, "protocol.ini");
        config::Settings settings;
        settings.timeout_s = timeout_s;
        settings.max_workgroup_size = 1; // every writer rank matches its own writes: several matchers
        const int n = static_cast<int>(sizes.size());
        for (int c = 0; c < n; ++c) components_.push_back(net_.add_group(sizes[static_cast<size_t>(c)]));
        for (int c = 0; c < n; ++c) {
            ranks_.emplace_back();
            for (int r = 0; r < sizes[static_cast<size_t>(c)]; ++r) {
                std::map<int, PeerLink> peers;
                for (int other : config_.peers_of(c)) {
                    if (other >= n) continue;
                    PeerLink &link = peers[other];
                    link.component = other;
                    link.name = config_.components[static_cast<size_t>(other)];
                    link.remote_size = sizes[static_cast<size_t>(other)];
                    link.channel = net_.channel(components_[static_cast<size_t>(c)], r, components_[static_cast<size_t>(other)]);
                    link.data = transport::point_to_point(*link.channel);
                }
                ranks_.back().push_back(Runtime::in_process(config_, settings, c, r, sizes[static_cast<size_t>(c)], std::move(peers)));
            }
        }
    }
    // fn(component, rank, runtime) on every rank at once; then, as dtf_finalize does, the writer
    // sessions still being served (a replayed epoch returns once its data is delivered) are served to
    // the end.
    void run(const std::function<void(int, int, Runtime &)> &fn) {
        std::vector<std::thread> threads;
        for (int c = 0; c < static_cast<int>(sizes_.size()); ++c)
            for (int r = 0; r < sizes_[static_cast<size_t>(c)]; ++r)
                threads.emplace_back([&, c, r] {
                    Runtime &rt = *ranks_[static_cast<size_t>(c)][static_cast<size_t>(r)];
                    fn(c, r, rt);
                    Entry entry;
                    rt.finish_background("the end of the test");
                });
        for (auto &t : threads) t.join();
    }
    // Every message sent was received and used.
    bool all_used() const {
        size_t unused = net_.undelivered();
        for (const auto &component : ranks_)
            for (const auto &rt : component) unused += rt->unused_messages();
        return unused == 0;
    }
    std::shared_ptr<transport::Group> group(int component, int rank) {
        return net_.dup_group(components_[static_cast<size_t>(component)], rank);
    }
    const config::FileRule &rule(const std::string &path) const { return *config_.match(path); }
    // The components `component` exchanges `path` with (the writer's readers, a reader's writer).
    std::vector<int> peers(int component, const std::string &path) const {
        std::vector<int> out;
        for (const auto &name : rule(path).partners(config_.components[static_cast<size_t>(component)]))
            out.push_back(config_.component_index(name));
        return out;
    }
    Runtime &rt(int component, int rank) { return *ranks_[static_cast<size_t>(component)][static_cast<size_t>(rank)]; }

private:
    std::vector<int> sizes_;
    config::Config config_;
    transport::LoopbackNet net_;
    std::vector<int> components_;
    std::vector<std::vector<std::unique_ptr<Runtime>>> ranks_;
};

// One PnetCDF call on virtual file `ncid`, as the dispatcher makes it (args[i] points to the i-th
// parameter); a dtf::Error propagates.
template <class... A> int call(Runtime &rt, int fn, int ncid, A... a) {
    void *args[] = {&ncid, &a...};
    Entry entry;
    VirtualFile *vf = files(rt).virtual_file(ncid);
    if (!vf) fail(DTF_ERR_INTERNAL, "no virtual file %d", ncid);
    return vfile_call(rt, *vf, fn, args);
}

int create(World &w, Runtime &rt, int rank, const std::string &path) {
    Entry entry;
    int ncid = -1;
    CHECK(vfile_create(rt, path, w.rule(path), w.peers(kWriter, path), w.group(kWriter, rank), NC_CLOBBER, &ncid) ==
          NC_NOERR);
    return ncid;
}

int open(World &w, Runtime &rt, int rank, const std::string &path, int component = kReader) {
    Entry entry;
    int ncid = -1;
    CHECK(vfile_open(rt, path, w.rule(path), w.peers(component, path), w.group(component, rank), NC_NOWRITE, &ncid) ==
          NC_NOERR);
    return ncid;
}

int transfer(Runtime &rt, int ncid) {
    Entry entry;
    return session_transfer(rt, *files(rt).virtual_file(ncid));
}

constexpr MPI_Offset kRows = 6, kCols = 10;

double value(int cycle, MPI_Offset i, MPI_Offset j) { return cycle * 1000.0 + static_cast<double>(i * kCols + j); }

// A writer's file created and defined: a 2-D variable `t` of kRows x kCols (*varid). Returns its ncid.
int define_file(World &w, Runtime &rt, int rank, const std::string &path, int *varid) {
    const int ncid = create(w, rt, rank, path);
    int dims[2];
    call(rt, DTF_FN_ncmpi_def_dim, ncid, "y", kRows, &dims[0]);
    call(rt, DTF_FN_ncmpi_def_dim, ncid, "x", kCols, &dims[1]);
    call(rt, DTF_FN_ncmpi_def_var, ncid, "t", NC_DOUBLE, 2, static_cast<const int *>(dims), varid);
    CHECK(call(rt, DTF_FN_ncmpi_enddef, ncid) == NC_NOERR);
    return ncid;
}

// A writer: the variable's rows split among the ranks (the last takes the rest; `split` shifts the
// boundary), one put each. Returns the file's ncid.
int write_file(World &w, Runtime &rt, int rank, int ranks, const std::string &path, int cycle, int split = 0) {
    int varid = -1;
    const int ncid = define_file(w, rt, rank, path, &varid);
    const MPI_Offset per = kRows / ranks + split;
    const MPI_Offset first = rank * per, rows = rank == ranks - 1 ? kRows - first : per;
    std::vector<double> values;
    for (MPI_Offset i = first; i < first + rows; ++i)
        for (MPI_Offset j = 0; j < kCols; ++j) values.push_back(value(cycle, i, j));
    MPI_Offset start[2] = {first, 0}, count[2] = {rows, kCols};
    CHECK(call(rt, DTF_FN_ncmpi_put_vara_double_all, ncid, varid, static_cast<const MPI_Offset *>(start),
               static_cast<const MPI_Offset *>(count), static_cast<const double *>(values.data())) == NC_NOERR);
    return ncid;
}

// A writer's cycle: the file written, dtf_transfer, close.
void write_cycle(World &w, Runtime &rt, int rank, int ranks, const std::string &path, int cycle, int split = 0) {
    const int ncid = write_file(w, rt, rank, ranks, path, cycle, split);
    CHECK(transfer(rt, ncid) == NC_NOERR);
    CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
}

// A reader's block: columns split unevenly among the ranks (`shift` moves the split), every row.
struct Block {
    MPI_Offset start[2], count[2];
};
Block block_of(int rank, int ranks, MPI_Offset shift) {
    const MPI_Offset per = kCols / ranks, first = rank * per + (rank > 0 ? shift : 0);
    const MPI_Offset last = rank == ranks - 1 ? kCols : (rank + 1) * per + shift;
    return Block{{0, first}, {kRows, last - first}};
}

// A reader's gets on an open file: two nonblocking gets (one block in two halves of rows) and, unless
// `one_batch`, one blocking get of a single element, then dtf_transfer; every value checked.
void read_values(Runtime &rt, int ncid, int rank, int ranks, int cycle, MPI_Offset shift = 0, const char *name = "t",
                 bool one_batch = false) {
    int varid = -1;
    CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, name, &varid) == NC_NOERR);
    const Block b = block_of(rank, ranks, shift);
    std::vector<double> got(static_cast<size_t>(b.count[0] * b.count[1]), -1);
    const MPI_Offset half = b.count[0] / 2;
    MPI_Offset s1[2] = {0, b.start[1]}, c1[2] = {half, b.count[1]};
    MPI_Offset s2[2] = {half, b.start[1]}, c2[2] = {b.count[0] - half, b.count[1]};
    int reqs[2];
    CHECK(call(rt, DTF_FN_ncmpi_iget_vara_double, ncid, varid, static_cast<const MPI_Offset *>(s1),
               static_cast<const MPI_Offset *>(c1), got.data(), &reqs[0]) == NC_NOERR);
    CHECK(call(rt, DTF_FN_ncmpi_iget_vara_double, ncid, varid, static_cast<const MPI_Offset *>(s2),
               static_cast<const MPI_Offset *>(c2), got.data() + half * b.count[1], &reqs[1]) == NC_NOERR);
    int statuses[2] = {-1, -1};
    CHECK(call(rt, DTF_FN_ncmpi_wait_all, ncid, 2, static_cast<int *>(reqs), static_cast<int *>(statuses)) == NC_NOERR);
    CHECK(statuses[0] == NC_NOERR && statuses[1] == NC_NOERR);
    if (!one_batch) {
        double one = -1;
        MPI_Offset at[2] = {kRows - 1 - rank, static_cast<MPI_Offset>(rank)}, ones[2] = {1, 1};
        CHECK(call(rt, DTF_FN_ncmpi_get_vara_double_all, ncid, varid, static_cast<const MPI_Offset *>(at),
                   static_cast<const MPI_Offset *>(ones), &one) == NC_NOERR);
        CHECK(one == value(cycle, at[0], at[1]));
    }
    size_t wrong = 0;
    for (MPI_Offset i = 0; i < b.count[0]; ++i)
        for (MPI_Offset j = 0; j < b.count[1]; ++j)
            if (got[static_cast<size_t>(i * b.count[1] + j)] != value(cycle, i, b.start[1] + j)) ++wrong;
    CHECK(wrong == 0);
    CHECK(transfer(rt, ncid) == NC_NOERR);
}

// A reader's cycle: open, read_values(), close. Returns the error of a failing call, if any.
std::string read_cycle(World &w, Runtime &rt, int rank, int ranks, const std::string &path, int cycle, MPI_Offset shift = 0,
                       int component = kReader) {
    const int ncid = open(w, rt, rank, path, component);
    try {
        read_values(rt, ncid, rank, ranks, cycle, shift);
    } catch (const Error &e) {
        const std::string what = e.what();
        try {
            call(rt, DTF_FN_ncmpi_close, ncid);
        } catch (const Error &again) {
            return what + " / at close: " + again.what();
        }
        return what;
    }
    CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
    return "";
}

// Cycles of one path, 2 writer ranks and 3 reader ranks (M x N, uneven): every value arrives.
void test_matched_cycles() {
    World w({2, 3});
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 3; ++cycle) {
            if (c == kWriter) write_cycle(w, rt, r, 2, "/run/matched.nc", cycle);
            else CHECK(read_cycle(w, rt, r, 3, "/run/matched.nc", cycle).empty());
        }
    });
    long matched = 0, replayed = 0;
    for (int r = 0; r < 3; ++r) matched += w.rt(kReader, r).stats().batches_matched, replayed += w.rt(kReader, r).stats().batches_replayed;
    CHECK(matched == 3 * 3 * 2 && replayed == 0); // 3 cycles x 3 ranks x 2 batches (wait_all, the blocking get)
    CHECK(w.rt(kWriter, 0).stats().sessions_written == 3 && w.rt(kReader, 2).stats().sessions_read == 3);
    CHECK(w.all_used());
}

// replay_io=1 with a new file name every cycle: from the second cycle on, no request is matched,
// the readers take every batch from the plan, and the writers push the data without being asked.
void test_replayed_cycles() {
    World w({2, 3});
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 5; ++cycle) {
            const std::string path = "/run/replayed." + std::to_string(cycle) + ".nc";
            if (c == kWriter) write_cycle(w, rt, r, 2, path, cycle);
            else CHECK(read_cycle(w, rt, r, 3, path, cycle).empty());
        }
    });
    long matched = 0, replayed = 0, requests = 0, pushed = 0;
    for (int r = 0; r < 3; ++r) matched += w.rt(kReader, r).stats().batches_matched, replayed += w.rt(kReader, r).stats().batches_replayed;
    for (int r = 0; r < 2; ++r) {
        const Stats &s = w.rt(kWriter, r).stats();
        requests += s.requests_matched + s.requests_reused;
        pushed += s.pushed_early + s.pushed_at_transfer;
    }
    CHECK(matched == 3 * 2);      // the first cycle only
    CHECK(replayed == 4 * 3 * 2); // every batch of cycles 2..5
    CHECK(requests == 3 * 2 * 2); // each reader batch asks both matchers, in the first cycle only
    CHECK(pushed > 0);
    CHECK(w.all_used());
}

// replay_io=1 where the writers take the plan's readers at once (the file's path per cycle from
// `named`): from the cycle after `first_replayed` a cycle costs a FileDefined to each reader rank from
// its own writer rank (the header left out) and a ReaderDone from each reader rank back: no
// ReaderOpened, no request or plan, no final header (the data carries the writers' verdict), and no
// finish (a collective). Every value checked.
void check_replayed_control(const std::function<std::string(int)> &named, int first_replayed) {
    World w({2, 3});
    using Counts = std::array<long, kMessageKindLast + 1>;
    auto sent = [&](int c, int ranks) {
        Counts n{};
        for (int r = 0; r < ranks; ++r)
            for (size_t k = 0; k < n.size(); ++k) n[k] += w.rt(c, r).stats().sent_by_kind[k];
        return n;
    };
    auto cycles = [&](int first, int last) {
        w.run([&](int c, int r, Runtime &rt) {
            for (int cycle = first; cycle <= last; ++cycle) {
                if (c == kWriter) write_cycle(w, rt, r, 2, named(cycle), cycle);
                else CHECK(read_cycle(w, rt, r, 3, named(cycle), cycle).empty());
            }
        });
    };
    cycles(1, first_replayed); // records the plan (and has the readers confirm it)
    const Counts writer1 = sent(kWriter, 2), reader1 = sent(kReader, 3);
    const int last = first_replayed + 4;
    cycles(first_replayed + 1, last);
    Counts writer = sent(kWriter, 2), reader = sent(kReader, 3);
    for (size_t k = 0; k < writer.size(); ++k) writer[k] -= writer1[k], reader[k] -= reader1[k];
    auto kind = [](MessageKind k) { return static_cast<size_t>(k); };
    CHECK(writer[kind(MessageKind::FileDefined)] == 4 * 3);
    CHECK(writer[kind(MessageKind::HeaderFinal)] == 0);
    CHECK(writer[kind(MessageKind::ReadPlan)] == 0);
    CHECK(reader[kind(MessageKind::ReaderOpened)] == 0);
    CHECK(reader[kind(MessageKind::ReadRequest)] == 0);
    CHECK(reader[kind(MessageKind::ReaderDone)] == 4 * 3);
    long replayed = 0;
    for (int r = 0; r < 3; ++r) replayed += w.rt(kReader, r).stats().batches_replayed;
    CHECK(replayed == (last - 1) * 3 * 2); // every batch of the cycles after the first
    CHECK(w.all_used());
}

// The same file every cycle (a plan of its very path): from the second cycle on.
void test_replayed_same_file() {
    check_replayed_control([](int) { return std::string("/run/replayed.nc"); }, 1);
}

// A file named after the cycle: its readers confirm the plan of the previous name in cycle 2
// (ReaderOpened), and are taken as its readers from cycle 3 on (WriterPlan::followed).
void test_replayed_cycle_names() {
    check_replayed_control([](int cycle) { return "/run/replayed." + std::to_string(cycle) + ".nc"; }, 2);
}

// The writers change the header after their first put: a rename in data mode in cycles 3 and 4, a
// variable added after a redef in cycle 5 (replayed cycles of a file of one name). The definition
// goes to the readers at the first put: in cycle 3 the readers, which looked at the definition they
// had ("t"), get a clear error instead of a mix of the two definitions; from then on the writers give
// it at their dtf_transfer (the pattern changed its definition after its first put), so in cycles 4
// and 5 the readers see the final one from the start, and in cycle 6 (no change) too; cycle 7 gives
// it at the first put again.
void test_header_changes() {
    World w({2, 3});
    const std::string path = "/run/replayed.header.nc";
    std::vector<std::string> errors(3);
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 7; ++cycle) {
            const bool renamed = cycle == 3 || cycle == 4;
            if (c == kWriter) {
                const int ncid = write_file(w, rt, r, 2, path, cycle);
                if (renamed) CHECK(call(rt, DTF_FN_ncmpi_rename_var, ncid, 0, "s") == NC_NOERR);
                if (cycle == 5) {
                    int extra = -1;
                    CHECK(call(rt, DTF_FN_ncmpi_redef, ncid) == NC_NOERR);
                    CHECK(call(rt, DTF_FN_ncmpi_def_var, ncid, "extra", NC_INT, 0, static_cast<const int *>(nullptr),
                               &extra) == NC_NOERR);
                    CHECK(call(rt, DTF_FN_ncmpi_enddef, ncid) == NC_NOERR);
                }
                CHECK(transfer(rt, ncid) == NC_NOERR);
                CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
                continue;
            }
            const int ncid = open(w, rt, r, path);
            int id = -1, nvars = -1;
            if (cycle == 3) { // (read_values looks for "t" in the definition it has)
                try {
                    read_values(rt, ncid, r, 3, cycle);
                    call(rt, DTF_FN_ncmpi_inq_nvars, ncid, &nvars);
                } catch (const Error &e) {
                    errors[static_cast<size_t>(r)] = e.what();
                }
                CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
                continue;
            }
            CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, renamed ? "s" : "t", &id) == NC_NOERR && id == 0);
            CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, renamed ? "t" : "s", &id) == NC_ENOTVAR);
            CHECK(call(rt, DTF_FN_ncmpi_inq_nvars, ncid, &nvars) == NC_NOERR && nvars == (cycle == 5 ? 2 : 1));
            read_values(rt, ncid, r, 3, cycle, 0, renamed ? "s" : "t"); // (ends with dtf_transfer)
            CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
        }
    });
    for (const auto &e : errors)
        CHECK(e.find("'/run/replayed.header.nc' (session 1): component 'model' changed the definition of the file "
                     "after this rank had opened it and looked at it (variable 't' renamed to 's')") != std::string::npos);
    long replayed = 0;
    for (int r = 0; r < 3; ++r) replayed += w.rt(kReader, r).stats().batches_replayed;
    CHECK(replayed > 0);
    CHECK(w.all_used());
}

// The writers change their decomposition under replay in cycle 3, before they dropped any value:
// the session is matched again (right values), and cycle 4 replays the new pattern. Then the readers
// change theirs in cycle 5, after the writers kept only what the plan reads: a clear error on the
// readers, never other values; cycle 6 is matched again.
void test_replay_pattern_changes() {
    World w({2, 3});
    std::vector<std::string> errors(3);
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 6; ++cycle) {
            const std::string path = "/run/replayed." + std::to_string(cycle) + ".nc";
            if (c == kWriter) {
                write_cycle(w, rt, r, 2, path, cycle, cycle >= 3 ? 1 : 0);
                continue;
            }
            const std::string e = read_cycle(w, rt, r, 3, path, cycle, cycle == 5 ? 1 : 0);
            if (cycle == 5) errors[static_cast<size_t>(r)] = e;
            else CHECK(e.empty());
        }
    });
    for (int r = 0; r < 3; ++r) {
        const std::string &e = errors[static_cast<size_t>(r)];
        CHECK(e.find("'/run/replayed.5.nc'") != std::string::npos);
        CHECK(e.find("variable 't'") != std::string::npos);
        // the plan recorded in cycle 3 (matched again there) and replayed in 4
        CHECK(e.find("session 1 of '/run/replayed.3.nc' (2 sessions before this one)") != std::string::npos);
        CHECK(e.find("set replay_io=0 for this file") != std::string::npos);
    }
    long replayed = 0;
    for (int r = 0; r < 3; ++r) replayed += w.rt(kReader, r).stats().batches_replayed;
    // Cycles 2 and 4 replayed (3 ranks x 2 batches each); 3 (the writers changed) and 6 (the
    // readers changed in 5) are matched; in 5 every reader's first batch differs from the plan.
    CHECK(replayed == 6 + 6);
    CHECK(w.all_used());
}

// One reader rank alone leaves a replayed plan of the file's very path in cycle 3 (it reads the first
// of the plan's two batches only: what the writers pushed for the other is taken into scratch). No
// reader rank waits for the others at its close: that rank's ReaderDone says it drops the plan, so
// the writers drop theirs, and cycle 4 is matched again on every rank (had they replayed it, that
// rank, holding no plan, would fail); cycle 5 replays the new plan. Every value checked.
void test_one_reader_leaves() {
    World w({2, 3});
    const std::string path = "/run/replayed.nc";
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 5; ++cycle) {
            if (c == kWriter) {
                write_cycle(w, rt, r, 2, path, cycle);
                continue;
            }
            const int ncid = open(w, rt, r, path);
            read_values(rt, ncid, r, 3, cycle, 0, "t", cycle == 3 && r == 1);
            CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
        }
    });
    long matched = 0, replayed = 0;
    for (int r = 0; r < 3; ++r) matched += w.rt(kReader, r).stats().batches_matched, replayed += w.rt(kReader, r).stats().batches_replayed;
    CHECK(matched == 2 * 3 * 2);           // cycles 1 and 4
    CHECK(replayed == 3 * 2 + 5 + 3 * 2); // cycles 2, 3 (rank 1: one batch) and 5
    CHECK(w.all_used());
}

// What the writers of a record variable do in cycle 5 of record_cycles() (the first four: the same).
enum class Cycle5 { Same, RecordsMoveAsked, RecordsMove, OwnGet };

// 2 writer ranks each put one record of `r(t, x)` with put_vara_double_all (rank r: record r), ask the
// record count, complete nothing with wait_all, dtf_transfer and close; 3 reader ranks read every
// record. PnetCDF agrees on the count at the put and the wait_all: 2 on both writer ranks, every
// cycle. From cycle 3 (the plan of cycle 1 replayed in cycle 2) the writers take those counts from
// the plan, with no collective, and dtf_transfer checks them. In cycle 5 `change`: rank 1 writes
// record 2 instead (the count was 3 there; asked: the session fails at dtf_transfer, saying so; not
// asked: it fails as any put that leaves a plan whose values were packed at the call), or rank 0 gets
// from its own file in the wait_all (that wait fails: the other rank does not join the get). Returns
// the errors of cycle 5 (writers, readers).
std::vector<std::string> record_cycles(Cycle5 change) {
    World w({2, 3});
    const std::string path = "/run/replayed.records.nc";
    std::vector<std::string> errors(2 + 3);
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 5; ++cycle) {
            const bool moved = cycle == 5 && (change == Cycle5::RecordsMove || change == Cycle5::RecordsMoveAsked);
            const MPI_Offset numrecs = moved ? 3 : 2;
            std::string &error = errors[static_cast<size_t>(c == kWriter ? r : 2 + r)];
            if (c != kWriter) {
                const int ncid = open(w, rt, r, path);
                try {
                    int varid = -1, t = -1;
                    MPI_Offset n = -1;
                    CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, "r", &varid) == NC_NOERR);
                    CHECK(call(rt, DTF_FN_ncmpi_inq_dimid, ncid, "t", &t) == NC_NOERR);
                    CHECK(call(rt, DTF_FN_ncmpi_inq_dimlen, ncid, t, &n) == NC_NOERR && n == numrecs);
                    std::vector<double> got(static_cast<size_t>(numrecs * kCols), -1);
                    MPI_Offset start[2] = {0, 0}, count[2] = {numrecs, kCols};
                    CHECK(call(rt, DTF_FN_ncmpi_get_vara_double_all, ncid, varid,
                               static_cast<const MPI_Offset *>(start), static_cast<const MPI_Offset *>(count),
                               got.data()) == NC_NOERR);
                    for (MPI_Offset i = 0; i < numrecs; ++i) // record 1 stays unwritten when rank 1 moves: zeros
                        for (MPI_Offset j = 0; j < kCols; ++j)
                            CHECK(got[static_cast<size_t>(i * kCols + j)] ==
                                  (moved && i == 1 ? 0 : value(cycle, i, j)));
                    CHECK(transfer(rt, ncid) == NC_NOERR);
                } catch (const Error &e) {
                    if (cycle == 5) error = e.what();
                    else CHECK(!"a reader failed before cycle 5");
                }
                try {
                    call(rt, DTF_FN_ncmpi_close, ncid);
                } catch (const Error &) {
                }
                continue;
            }
            const int ncid = create(w, rt, r, path);
            int dims[2], varid = -1;
            call(rt, DTF_FN_ncmpi_def_dim, ncid, "t", MPI_Offset{NC_UNLIMITED}, &dims[0]);
            call(rt, DTF_FN_ncmpi_def_dim, ncid, "x", kCols, &dims[1]);
            call(rt, DTF_FN_ncmpi_def_var, ncid, "r", NC_DOUBLE, 2, static_cast<const int *>(dims), &varid);
            // (as PnetCDF 1.12.3 in define mode; no agreement then)
            CHECK(call(rt, DTF_FN_ncmpi_sync, ncid) == NC_EINDEFINE && call(rt, DTF_FN_ncmpi_flush, ncid) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_sync_numrecs, ncid) == NC_EINDEFINE);
            CHECK(call(rt, DTF_FN_ncmpi_enddef, ncid) == NC_NOERR);
            const MPI_Offset record = moved && r == 1 ? 2 : r;
            std::vector<double> row;
            for (MPI_Offset j = 0; j < kCols; ++j) row.push_back(value(cycle, record, j));
            MPI_Offset start[2] = {record, 0}, count[2] = {1, kCols};
            CHECK(call(rt, DTF_FN_ncmpi_put_vara_double_all, ncid, varid, static_cast<const MPI_Offset *>(start),
                       static_cast<const MPI_Offset *>(count), static_cast<const double *>(row.data())) == NC_NOERR);
            if (!(cycle == 5 && change == Cycle5::RecordsMove)) {
                MPI_Offset n = -1;
                CHECK(call(rt, DTF_FN_ncmpi_inq_dimlen, ncid, dims[0], &n) == NC_NOERR);
                CHECK(n == (moved && r == 0 ? 2 : numrecs)); // (moved: rank 0 sees the plan's 2, found wrong later)
            }
            std::vector<double> own(static_cast<size_t>(kCols), -1);
            int req = NC_REQ_NULL;
            if (cycle == 5 && change == Cycle5::OwnGet && r == 0)
                CHECK(call(rt, DTF_FN_ncmpi_iget_vara_double, ncid, varid, static_cast<const MPI_Offset *>(start),
                           static_cast<const MPI_Offset *>(count), own.data(), &req) == NC_NOERR);
            try {
                CHECK(call(rt, DTF_FN_ncmpi_wait_all, ncid, NC_REQ_ALL, static_cast<int *>(nullptr),
                           static_cast<int *>(nullptr)) == NC_NOERR);
                CHECK(transfer(rt, ncid) == NC_NOERR);
            } catch (const Error &e) {
                if (cycle == 5) error = e.what();
                else CHECK(!"a writer failed before cycle 5");
                if (change == Cycle5::OwnGet) CHECK(transfer(rt, ncid) == NC_NOERR); // (the program goes on)
            }
            try {
                call(rt, DTF_FN_ncmpi_close, ncid);
            } catch (const Error &) {
            }
        }
    });
    if (change == Cycle5::Same || change == Cycle5::OwnGet) CHECK(w.all_used()); // (a failed session: not all)
    return errors;
}

void test_replayed_record_counts() {
    for (const std::string &e : record_cycles(Cycle5::Same)) CHECK(e.empty());
    for (const std::string &e : record_cycles(Cycle5::RecordsMove)) // (refused as any moved put of a packed replay)
        CHECK(e.find("differ from those of") != std::string::npos && e.find("record count") == std::string::npos);
    std::vector<std::string> errors = record_cycles(Cycle5::RecordsMoveAsked);
    for (size_t i = 0; i < 2; ++i) // (the readers fail too: the moved put already told them)
        CHECK(errors[i].find("a record count this session took from") != std::string::npos &&
              errors[i].find("was 2 at its collective call 1, where the writer ranks had written 3 records") !=
                  std::string::npos);
    for (size_t i = 2; i < errors.size(); ++i) CHECK(!errors[i].empty());
    errors = record_cycles(Cycle5::OwnGet);
    CHECK(errors[0].find("this rank gets from the file it writes") != std::string::npos);
    for (size_t i = 1; i < errors.size(); ++i) CHECK(errors[i].empty());
}

// A writer of bputs under replay (the original DTF's benchmark writes most of its analysis so): each
// rank bputs its rows in two halves and completes them with one wait_all. From the cycle whose plan
// the readers confirmed, a bput's values are packed into the data messages at its call, and nothing
// of them is kept (put_bytes_copied stays 0): the values read are right every cycle. With
// `reversed`, the wait_all of cycle 5 lists the requests in the reverse order: the bputs take effect
// elsewhere than their calls packed them, and the writers' dtf_transfer fails saying so (never other
// values), and so do the readers' waits, at once (SessionFailed); returns the writers' errors of that
// cycle, then the readers'.
std::vector<std::string> bput_cycles(bool reversed) {
    World w({2, 3});
    std::vector<std::string> errors(2 + 3);
    std::vector<std::vector<long>> copied(2); // per writer rank: put_bytes_copied after each cycle
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= (reversed ? 5 : 6); ++cycle) {
            const std::string path = "/run/replayed.bput." + std::to_string(cycle) + ".nc";
            if (c != kWriter) {
                const std::string e = read_cycle(w, rt, r, 3, path, cycle);
                CHECK(e.empty() == !(reversed && cycle == 5));
                if (!e.empty()) errors[static_cast<size_t>(2 + r)] = e;
                continue;
            }
            int varid = -1;
            const int ncid = define_file(w, rt, r, path, &varid);
            CHECK(call(rt, DTF_FN_ncmpi_buffer_attach, ncid, MPI_Offset{kRows * kCols * 8}) == NC_NOERR);
            const MPI_Offset per = kRows / 2, first = r * per;
            int reqs[2];
            for (int half = 0; half < 2; ++half) {
                MPI_Offset start[2] = {first + half, 0}, count[2] = {half == 0 ? 1 : per - 1, kCols};
                std::vector<double> values;
                for (MPI_Offset i = start[0]; i < start[0] + count[0]; ++i)
                    for (MPI_Offset j = 0; j < kCols; ++j) values.push_back(value(cycle, i, j));
                CHECK(call(rt, DTF_FN_ncmpi_bput_vara_double, ncid, varid, static_cast<const MPI_Offset *>(start),
                           static_cast<const MPI_Offset *>(count), static_cast<const double *>(values.data()),
                           &reqs[half]) == NC_NOERR);
                values.assign(values.size(), -7); // (a bput's buffer is free at once)
            }
            if (reversed && cycle == 5) std::swap(reqs[0], reqs[1]);
            int statuses[2];
            CHECK(call(rt, DTF_FN_ncmpi_wait_all, ncid, 2, static_cast<int *>(reqs), static_cast<int *>(statuses)) ==
                  NC_NOERR);
            try {
                CHECK(transfer(rt, ncid) == NC_NOERR);
            } catch (const Error &e) {
                errors[static_cast<size_t>(r)] = e.what();
            }
            try {
                call(rt, DTF_FN_ncmpi_buffer_detach, ncid);
                call(rt, DTF_FN_ncmpi_close, ncid);
            } catch (const Error &) {
            }
            copied[static_cast<size_t>(r)].push_back(rt.stats().put_bytes_copied);
        }
    });
    if (!reversed) {
        for (const auto &c : copied) {
            CHECK(c.front() == kRows / 2 * kCols * 8); // cycle 1 (matched): copied whole at the call
            CHECK(c.back() == c[c.size() - 2]);        // cycle 6: packed at the call, nothing copied
        }
        CHECK(w.all_used());
    }
    return errors;
}

void test_replayed_bputs() {
    bput_cycles(false);
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> errors = bput_cycles(true);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10)); // (DTF_TIMEOUT here: 30 s)
    for (size_t i = 0; i < errors.size(); ++i) {
        const std::string &e = errors[i];
        CHECK(e.find("'/run/replayed.bput.5.nc'") != std::string::npos);
        CHECK(e.find("took effect as write") != std::string::npos);
        CHECK(e.find("set replay_io=0 for this file") != std::string::npos);
        if (i >= 2) CHECK(e.find("component 'model' failed the session: writer rank") != std::string::npos);
    }
}

// Two replayed files in flight at once on the same links: from the second cycle on the writers
// push both files' data without being asked, and the readers, holding both open, read the second
// file first. Each gets its own values (the data tags of the two sessions keep their messages
// apart; with one tag the first file's messages, of the same sizes, would fill the second's gets).
void test_two_files_in_flight() {
    World w({2, 2});
    auto path = [](char file, int cycle) { return format("/run/replayed.%c.%d.nc", file, cycle); };
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 3; ++cycle) {
            if (c == kWriter) {
                write_cycle(w, rt, r, 2, path('a', cycle), cycle);
                write_cycle(w, rt, r, 2, path('b', cycle), cycle + 100);
                continue;
            }
            // (In the first cycle the writers serve each file until it is read: in their order.)
            const int a = open(w, rt, r, path('a', cycle));
            if (cycle == 1) read_values(rt, a, r, 2, cycle);
            const int b = open(w, rt, r, path('b', cycle));
            read_values(rt, b, r, 2, cycle + 100);
            if (cycle > 1) read_values(rt, a, r, 2, cycle);
            CHECK(call(rt, DTF_FN_ncmpi_close, b) == NC_NOERR && call(rt, DTF_FN_ncmpi_close, a) == NC_NOERR);
        }
    });
    long replayed = 0;
    for (int r = 0; r < 2; ++r) replayed += w.rt(kReader, r).stats().batches_replayed;
    CHECK(replayed == 2 * 2 * 2 * 2); // cycles 2 and 3, both files, both ranks, both batches
    CHECK(w.all_used());
}

// A writer component that never creates the file: the reader's open times out and says who waited
// for whom, and for what; a second open does not wait again (one timeout per lost peer).
void test_missing_writer_times_out() {
    World w({1, 1}, 0.5);
    std::string error, again;
    w.run([&](int c, int r, Runtime &rt) {
        if (c != kReader) return;
        for (std::string *out : {&error, &again}) {
            try {
                open(w, rt, r, "/run/matched.nc");
            } catch (const Error &e) {
                *out = e.what();
                CHECK(e.code() == (out == &error ? DTF_ERR_TIMEOUT : DTF_ERR_PEER));
            }
        }
    });
    CHECK(error.find("ncmpi_open of '/run/matched.nc' (transfer mode, session 1) waited for component 'model' to "
                     "define it") != std::string::npos);
    CHECK(error.find("DTF_TIMEOUT=0.5") != std::string::npos);
    CHECK(again.find("but component 'model' already failed to answer for DTF_TIMEOUT=0.5 s") != std::string::npos);
}
// ncmpi_open of component `comp` (the other is the peer).
int open_as(World &w, Runtime &rt, int comp, int rank, const std::string &path, int omode) {
    Entry entry;
    int ncid = -1;
    CHECK(vfile_open(rt, path, w.rule(path), {1 - comp}, w.group(comp, rank), omode, &ncid) == NC_NOERR);
    return ncid;
}

int get_rows(Runtime &rt, int ncid, const char *var, MPI_Offset first, MPI_Offset rows, std::vector<double> *out) {
    int varid = -1;
    CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, var, &varid) == NC_NOERR);
    out->assign(static_cast<size_t>(rows * kCols), -1);
    MPI_Offset start[2] = {first, 0}, count[2] = {rows, kCols};
    return call(rt, DTF_FN_ncmpi_get_vara_double_all, ncid, varid, static_cast<const MPI_Offset *>(start),
                static_cast<const MPI_Offset *>(count), out->data());
}

// The analysis write-back (num_sessions=2): the writers create and write t; the readers open the
// file again with NC_WRITE (in cycle 1 without having read it: they join the first session reading
// nothing; later after reading it), add a variable u, write t but its last row and the upper half of
// u; the first writers read that back. What the second session wrote arrives, u's unwritten half is
// u's fill (zeros: no fill mode), t's last row (the file keeps the first session's values there) is
// refused; the component that opened the file for writing reads back what it wrote (collective),
// not that last row, and not with an independent get of its 3 ranks. An NC_WRITE open of a
// file whose rule allows one session says why it cannot be done.
void test_write_back() {
    World w({2, 3});
    std::vector<std::string> refused(2), own_get(3), one_session(3);
    w.run([&](int c, int r, Runtime &rt) {
        if (c == kReader) {
            try {
                Entry entry;
                int ncid;
                vfile_open(rt, "/run/matched.9.nc", w.rule("/run/matched.9.nc"), {kWriter}, w.group(kReader, r), NC_WRITE, &ncid);
            } catch (const Error &e) {
                one_session[static_cast<size_t>(r)] = e.what();
            }
        }
        for (int cycle = 1; cycle <= 3; ++cycle) {
            const std::string path = "/run/written." + std::to_string(cycle) + ".nc";
            if (c == kWriter) {
                write_cycle(w, rt, r, 2, path, cycle);
                const int ncid = open_as(w, rt, kWriter, r, path, NC_NOWRITE);
                std::vector<double> t, u;
                const MPI_Offset first = r * 2, rows = r == 0 ? 2 : 3; // rows 0-1 and 2-4 (not the last)
                CHECK(get_rows(rt, ncid, "t", first, rows, &t) == NC_NOERR);
                CHECK(get_rows(rt, ncid, "u", first, rows, &u) == NC_NOERR);
                size_t wrong = 0;
                for (MPI_Offset i = 0; i < rows; ++i)
                    for (MPI_Offset j = 0; j < kCols; ++j) {
                        const size_t at = static_cast<size_t>(i * kCols + j);
                        wrong += t[at] != value(cycle + 50, first + i, j);
                        wrong += u[at] != (first + i < kRows / 2 ? value(cycle + 60, first + i, j) : 0.0);
                    }
                CHECK(wrong == 0);
                std::vector<double> last;
                CHECK(get_rows(rt, ncid, "t", kRows - 1, 1, &last) == DTF_ERR_UNSUPPORTED);
                if (cycle == 1) refused[static_cast<size_t>(r)] = last_error();
                CHECK(transfer(rt, ncid) == NC_NOERR);
                CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
                continue;
            }
            if (cycle > 1) CHECK(read_cycle(w, rt, r, 3, path, cycle).empty());
            const int ncid = open_as(w, rt, kReader, r, path, NC_WRITE);
            int t = -1, u = -1, dims[2];
            CHECK(call(rt, DTF_FN_ncmpi_inq_varid, ncid, "t", &t) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_inq_dimid, ncid, "y", &dims[0]) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_inq_dimid, ncid, "x", &dims[1]) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_redef, ncid) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_def_var, ncid, "u", NC_DOUBLE, 2, static_cast<const int *>(dims), &u) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_enddef, ncid) == NC_NOERR);
            const Block b = block_of(r, 3, 0);
            std::vector<double> tv, uv;
            for (MPI_Offset i = 0; i < kRows; ++i)
                for (MPI_Offset j = b.start[1]; j < b.start[1] + b.count[1]; ++j) {
                    tv.push_back(value(cycle + 50, i, j));
                    uv.push_back(value(cycle + 60, i, j));
                }
            MPI_Offset tc[2] = {kRows - 1, b.count[1]}, uc[2] = {kRows / 2, b.count[1]};
            CHECK(call(rt, DTF_FN_ncmpi_put_vara_double_all, ncid, t, static_cast<const MPI_Offset *>(b.start),
                       static_cast<const MPI_Offset *>(tc), static_cast<const double *>(tv.data())) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_put_vara_double_all, ncid, u, static_cast<const MPI_Offset *>(b.start),
                       static_cast<const MPI_Offset *>(uc), static_cast<const double *>(uv.data())) == NC_NOERR);
            // It reads back what it wrote (collective: the values are with the ranks that wrote them), but
            // not what the last session left in the file; an independent get there is refused.
            double one = -1;
            MPI_Offset first[2] = {0, 0}, last[2] = {kRows - 1, 0};
            CHECK(call(rt, DTF_FN_ncmpi_get_var1_double_all, ncid, t, static_cast<const MPI_Offset *>(first), &one) == NC_NOERR);
            CHECK(one == value(cycle + 50, 0, 0));
            CHECK(call(rt, DTF_FN_ncmpi_get_var1_double_all, ncid, t, static_cast<const MPI_Offset *>(last), &one) ==
                  DTF_ERR_UNSUPPORTED);
            CHECK(call(rt, DTF_FN_ncmpi_begin_indep_data, ncid) == NC_NOERR);
            try {
                call(rt, DTF_FN_ncmpi_get_var1_double, ncid, t, static_cast<const MPI_Offset *>(first), &one);
            } catch (const Error &e) {
                if (cycle == 1) own_get[static_cast<size_t>(r)] = e.what();
            }
            CHECK(call(rt, DTF_FN_ncmpi_end_indep_data, ncid) == NC_NOERR);
            CHECK(transfer(rt, ncid) == NC_NOERR);
            CHECK(call(rt, DTF_FN_ncmpi_close, ncid) == NC_NOERR);
        }
    });
    for (const auto &e : refused)
        CHECK(e.find("a get on '/run/written.1.nc' (session 2) of variable 't' [5:1:1, 0:10:1]: component 'assim' "
                     "opened the file with NC_WRITE and did not write all of these elements") != std::string::npos);
    for (const auto &e : own_get)
        CHECK(e.find("a get on '/run/written.1.nc' (transfer mode, session 2), which this component writes: an "
                     "independent get there may read values that the 2 other writer ranks wrote") != std::string::npos);
    for (const auto &e : one_session)
        CHECK(e.find("ncmpi_open of '/run/matched.9.nc' with NC_WRITE (transfer mode): writing it again makes "
                     "session 2 of the file, but protocol.ini:") != std::string::npos &&
              e.find("allows num_sessions=1") != std::string::npos);
    CHECK(w.rt(kWriter, 0).stats().sessions_written == 3 && w.rt(kWriter, 0).stats().sessions_read == 3);
    CHECK(w.rt(kReader, 0).stats().sessions_written == 3 && w.rt(kReader, 0).stats().sessions_read == 3);
    CHECK(w.rt(kReader, 0).path_records() == 0); // forgotten after 2 sessions
    CHECK(w.rt(kWriter, 1).path_records() == 0);
    CHECK(w.all_used());
}
} // namespace

// One file, two readers (writer=/readers=): the writer (2 ranks) serves the assimilation (3 ranks)
// and the observation operator (2 ranks, other blocks) each on its own, so that a reader may open the
// file only after the other has closed it: in odd cycles obs waits for the assimilation, in even ones
// the other way round (a writer that served its readers together would wait for the late one while
// it waits for the other: a timeout). The writer's dtf_transfer (no progress thread here) returns once
// both are done, and the next cycle's create of the same path waits for that; every value checked.
void test_two_readers() {
    World w({2, 3, 2});
    std::atomic<int> closed[2][5] = {}; // [assim, obs][cycle]: ranks that closed the cycle's file
    w.run([&](int c, int r, Runtime &rt) {
        for (int cycle = 1; cycle <= 4; ++cycle) {
            if (c == kWriter) {
                write_cycle(w, rt, r, 2, "/run/shared.nc", cycle);
                continue;
            }
            const int me = c == kReader ? 0 : 1, ranks = c == kReader ? 3 : 2;
            if ((cycle % 2 == 1) == (c == kObs)) // wait for the other reader to be done with this cycle
                while (closed[1 - me][cycle] < (me == 0 ? 2 : 3)) std::this_thread::yield();
            CHECK(read_cycle(w, rt, r, ranks, "/run/shared.nc", cycle, c == kObs ? 1 : 0, c).empty());
            ++closed[me][cycle];
        }
    });
    CHECK(w.rt(kWriter, 0).stats().sessions_written == 4);
    CHECK(w.rt(kReader, 2).stats().sessions_read == 4 && w.rt(kObs, 1).stats().sessions_read == 4);
    CHECK(w.all_used());
}

int main() {
    if (const char *v = std::getenv("DTF_VERBOSE_LEVEL")) log::set_level(std::atoi(v)); // to follow the messages
    test_matched_cycles();
    test_two_readers();
    test_replayed_cycles();
    test_replayed_same_file();
    test_replayed_cycle_names();
    test_replay_pattern_changes();
    test_one_reader_leaves();
    test_replayed_bputs();
    test_replayed_record_counts();
    test_header_changes();
    test_two_files_in_flight();
    test_missing_writer_times_out();
    test_write_back();
    if (failures) {
        std::fprintf(stderr, "test_protocol: %d check(s) failed\n", failures.load());
        return 1;
    }
    std::printf("test_protocol: all checks passed\n");
    return 0;
}
