// What a component did, counted on each rank, and the statistics dtf_finalize prints from them
// (DTF_PRINT_STATS; the terms are defined in docs/USER-GUIDE.md, section 3.1).
#pragma once

#include <mpi.h>

#include <string>

#include "runtime/message.hpp"

namespace dtf::runtime {

struct Stats {
    double init_s = 0, connect_s = 0;
    long sessions_written = 0, sessions_read = 0, notices_sent = 0, notices_received = 0, unused_messages = 0;
    long batches_replayed = 0, batches_matched = 0; // reader batches served from a plan / by matching
    long pushed_early = 0, pushed_at_transfer = 0;  // writer: replayed data messages sent before / at dtf_transfer
    long batches_ahead = 0; // reader: replayed batches posted before the writers' final header came
    long batches_bundled = 0; // reader: replayed batches whose data came in an earlier one's message (bundle_max)
    long put_bytes_copied = 0, put_bytes_referenced = 0; // values kept by writes: copied, or in the user's buffer
    long requests_matched = 0, requests_reused = 0; // matcher: read requests matched / answered from the memo
    long path_records = 0; // at dtf_finalize: paths this rank still keeps a record of (forget_finished)
    long files_persisted = 0; // persist=1: files written (counted by each file's rank 0)
    long persist_bytes = 0;   // persist=1: bytes of values this rank gave to the files written
    double persist_s = 0;     // persist=1: seconds this rank spent writing files (with aggregators=: gathering too)
    long fallbacks = 0;       // fallback=: sessions whose file was written because the readers were lost or late
    long definitions_dropped = 0; // at dtf_finalize: FileDefined of sessions other ranks read, not withdrawn yet
    long sent_by_kind[kMessageKindLast + 1] = {}; // control messages sent (to each rank), by MessageKind
};

// Collective over `world` (the component's ranks); its rank 0 prints. `level` 1: a short table of what
// happened, rows of features not used left out; 2: also every count, on two lines (the statistics and
// the message counters of dtf_counters_read). `thread`: whether the progress thread ran, and why not.
void print_statistics(MPI_Comm world, const std::string &component, const Stats &stats, const std::string &thread,
                      int level);

} // namespace dtf::runtime
