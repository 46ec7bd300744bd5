#include "runtime/stats.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "common/counters.hpp"
#include "common/error.hpp"
#include "common/phase.hpp"

namespace dtf::runtime {

namespace {

// What one rank contributes: times (the largest over the ranks is printed) and counts (summed; the
// message counters also as the largest of one rank).
struct Figures {
    enum Time { Init, Connect, Persist, InDtf, Phase0, NumTimes = Phase0 + phase::Count };
    enum Count {
        Written, Read, NoticesSent, NoticesReceived, Unused, Replayed, Matched, Copied, Referenced,
        RequestsMatched, RequestsReused, PathRecords, PushedEarly, PushedAtTransfer, Ahead, Persisted,
        PersistBytes, Fallbacks, Dropped, Bundled, NumCounts
    };
    double times[NumTimes] = {};
    long counts[NumCounts] = {};
    long long messages[counters::Count] = {}, bytes[counters::Count] = {};
};

Figures mine(const Stats &s) {
    Figures f;
    const phase::Totals t = phase::read(false);
    f.times[Figures::Init] = s.init_s;
    f.times[Figures::Connect] = s.connect_s;
    f.times[Figures::Persist] = s.persist_s;
    for (int p = 0; p < phase::Count; ++p) {
        f.times[Figures::Phase0 + p] = t.seconds[p];
        f.times[Figures::InDtf] += t.seconds[p]; // (phases are exclusive: they add up to the time in dtf)
    }
    const long counts[Figures::NumCounts] = {
        s.sessions_written, s.sessions_read, s.notices_sent, s.notices_received, s.unused_messages,
        s.batches_replayed, s.batches_matched, s.put_bytes_copied, s.put_bytes_referenced, s.requests_matched,
        s.requests_reused, s.path_records, s.pushed_early, s.pushed_at_transfer, s.batches_ahead,
        s.files_persisted, s.persist_bytes, s.fallbacks, s.definitions_dropped, s.batches_bundled};
    std::copy(counts, counts + Figures::NumCounts, f.counts);
    const counters::Totals c = counters::read(false);
    std::copy(c.messages, c.messages + counters::Count, f.messages);
    std::copy(c.bytes, c.bytes + counters::Count, f.bytes);
    return f;
}

std::string amount(long long bytes) {
    if (bytes < 1024) return format("%lld B", bytes);
    const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes) / 1024;
    int u = 0;
    for (; v >= 1024 && u < 3; ++u) v /= 1024;
    return format("%.1f %s", v, units[u]);
}

// The short table: what happened, in words; rows of what did not happen are left out.
std::string table(const std::string &name, int size, const Figures &most, const Figures &sum,
                  const std::string &thread) {
    std::vector<std::pair<std::string, std::string>> rows;
    auto row = [&](const char *what, std::string text) { rows.emplace_back(what, std::move(text)); };
    const long *n = sum.counts;
    row("sessions closed", format("%ld write, %ld read", n[Figures::Written], n[Figures::Read]));
    for (auto [k, what] : {std::pair{counters::DataSent, "data sent"}, {counters::DataReceived, "data received"}})
        if (sum.messages[k])
            row(what, format("%s in %lld messages", amount(sum.bytes[k]).c_str(), sum.messages[k]));
    const int sent = counters::ControlSent, received = counters::ControlReceived;
    row("control messages", format("%lld sent, %lld received (%s, %s)", sum.messages[sent], sum.messages[received],
                                   amount(sum.bytes[sent]).c_str(), amount(sum.bytes[received]).c_str()));
    if (n[Figures::Replayed] || n[Figures::Matched])
        row("get batches", format("%ld replayed, %ld matched", n[Figures::Replayed], n[Figures::Matched]));
    if (n[Figures::Copied] || n[Figures::Referenced])
        row("put values kept", n[Figures::Referenced] ? format("%s copied, %s referenced (buffer_data=0)",
                                                               amount(n[Figures::Copied]).c_str(),
                                                               amount(n[Figures::Referenced]).c_str())
                                                      : amount(n[Figures::Copied]) + " copied");
    if (n[Figures::Persisted])
        row("files written", format("%ld (persist=1), %s of values in %.3f s", n[Figures::Persisted],
                                    amount(n[Figures::PersistBytes]).c_str(), most.times[Figures::Persist]));
    if (n[Figures::Fallbacks]) row("to the file system", format("%ld sessions (fallback=)", n[Figures::Fallbacks]));
    row("dtf_init", format("%.3f s, connecting %.3f s", most.times[Figures::Init], most.times[Figures::Connect]));
    std::vector<std::pair<double, int>> phases;
    for (int p = 0; p < phase::Count; ++p)
        if (most.times[Figures::Phase0 + p] >= 0.0005) phases.emplace_back(most.times[Figures::Phase0 + p], p);
    std::sort(phases.rbegin(), phases.rend());
    std::string where;
    for (const auto &[t, p] : phases) where += format("%s %s %.3f s", where.empty() ? ":" : ",", phase::name(p), t);
    row("time in dtf calls", format("%.3f s%s", most.times[Figures::InDtf], where.c_str()));
    row("progress thread", thread);
    if (n[Figures::Unused])
        row("never used", format("%ld control messages (a dtf bug: DTF_VERBOSE_LEVEL=1 lists them)",
                                 n[Figures::Unused]));
    std::string out = format("[dtf %s] statistics over %d ranks (counts summed over them, times the longest of one "
                             "rank; DTF_PRINT_STATS=2: every count):\n", name.c_str(), size);
    for (const auto &[what, text] : rows)
        out += format("[dtf %s]   %-19s %s\n", name.c_str(), what.c_str(), text.c_str());
    return out;
}

// Every count, on one line (and the message counters on another), for scripts and bug reports.
std::string detail(const std::string &name, int size, const Figures &most, const Figures &sum, const Figures &busiest,
                   const std::string &thread) {
    std::string phases;
    for (int p = 0; p < phase::Count; ++p)
        phases += format(" %s %.3f s", phase::name(p), most.times[Figures::Phase0 + p]);
    const long *n = sum.counts;
    using F = Figures;
    std::string out = format(
        "[dtf %s] stats over %d ranks: dtf_init %.3f s (connect %.3f s); time in dtf by phase (max over ranks):%s; "
        "summed over ranks: %ld write and %ld read sessions closed, %ld notices sent, %ld received, %ld never used; "
        "%ld definitions of files other ranks read dropped at the end; %ld get batches replayed, %ld matched; "
        "%ld replayed batches took their data from an earlier one's message (bundled); replay ahead of "
        "dtf_transfer: %ld get batches posted, %ld of %ld data messages sent; requests served %ld by matching, "
        "%ld with the last session's result; put values: %ld bytes copied, %ld referenced; %ld files written "
        "(persist=1) from %ld bytes of values in %.3f s (max over ranks); %ld sessions went to the file "
        "system (fallback=); progress thread %s; %ld path records kept\n",
        name.c_str(), size, most.times[F::Init], most.times[F::Connect], phases.c_str(), n[F::Written], n[F::Read],
        n[F::NoticesSent], n[F::NoticesReceived], n[F::Unused], n[F::Dropped], n[F::Replayed], n[F::Matched],
        n[F::Bundled], n[F::Ahead], n[F::PushedEarly], n[F::PushedEarly] + n[F::PushedAtTransfer],
        n[F::RequestsMatched], n[F::RequestsReused], n[F::Copied], n[F::Referenced], n[F::Persisted],
        n[F::PersistBytes], most.times[F::Persist], n[F::Fallbacks], thread.c_str(), n[F::PathRecords]);
    std::string line;
    for (int k = 0; k < counters::Count; ++k) {
        const char *sep = k ? "; " : "";
        if (k == counters::CopiedWriting || k == counters::CopiedReading) { // bytes only
            line += format("%s%s %lld bytes, busiest rank %lld", sep, counters::name(k), sum.bytes[k],
                           busiest.bytes[k]);
            continue;
        }
        line += format("%s%s %lld", sep, counters::name(k), sum.messages[k]);
        if (k != counters::Collectives) line += format(" (%lld bytes)", sum.bytes[k]);
        line += format(", busiest rank %lld", busiest.messages[k]);
    }
    return out + format("[dtf %s] messages over %d ranks (dtf_counters_read): %s\n", name.c_str(), size, line.c_str());
}

} // namespace

void print_statistics(MPI_Comm world, const std::string &component, const Stats &stats, const std::string &thread,
                      int level) {
    const Figures f = mine(stats);
    Figures most, sum, busiest;
    MPI_Reduce(f.times, most.times, Figures::NumTimes, MPI_DOUBLE, MPI_MAX, 0, world);
    MPI_Reduce(f.counts, sum.counts, Figures::NumCounts, MPI_LONG, MPI_SUM, 0, world);
    MPI_Reduce(f.messages, sum.messages, counters::Count, MPI_LONG_LONG, MPI_SUM, 0, world);
    MPI_Reduce(f.bytes, sum.bytes, counters::Count, MPI_LONG_LONG, MPI_SUM, 0, world);
    MPI_Reduce(f.messages, busiest.messages, counters::Count, MPI_LONG_LONG, MPI_MAX, 0, world);
    MPI_Reduce(f.bytes, busiest.bytes, counters::Count, MPI_LONG_LONG, MPI_MAX, 0, world);
    int rank = 0, size = 1;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    if (rank != 0) return;
    std::string out = table(component, size, most, sum, thread);
    if (level >= 2) out += detail(component, size, most, sum, busiest, thread);
    std::fputs(out.c_str(), stderr);
    std::fflush(stderr);
}

} // namespace dtf::runtime
