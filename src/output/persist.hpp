// persist=1 (persist.cpp): a closed writer session's file written with the real PnetCDF, from its
// final header and its write records, by the writer's ranks, aggregators= or an I/O server; the queue
// of such files, and the I/O server's side.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "model/header.hpp"
#include "model/write_record.hpp"
#include "runtime/runtime.hpp"
#include "transport/group.hpp"

namespace dtf::runtime {

using model::WriteRecord;

// What a closed writer session needs to write its file: the final header, how the file was created,
// and the session's writes (all kept: replay does not drop values then).
struct PersistJob {
    std::string path;
    int session = 0;
    int64_t stamp = 0; // the writer session's (its data tag; the readers' Persisted names it)
    const config::FileRule *rule = nullptr;
    model::Header header;
    std::vector<std::pair<std::string, std::string>> hints;
    int cmode = 0;
    bool continued = false;
    int64_t persist_after = 0; // the virtual file's (frontend/vfile.hpp)
    int enddefs = 0;
    std::vector<int> readers;
    bool fallback = false; // fallback=: written because the readers were given up (then told: FileWritten)
    int rank = 0;
    std::shared_ptr<transport::Group> group;
    // The session's writes (values in the user's buffers copied if kept past the close); the pointer
    // keeps the session that holds them.
    std::shared_ptr<std::vector<model::WriteRecord>> writes;
    // Waits while the progress thread still serves the session's readers (throws DTF_ERR_TIMEOUT, or
    // DTF_ERR_PEER, saying what it waited for; `where`: what for); none once they are served.
    std::function<void(const std::string &where)> await_readers;
    bool writing = false; // flush_persist is writing it (it stays in PersistQueue::jobs until written)
};

// The output side's part of the runtime (Runtime::part): persist=1's closed sessions whose file is
// still to be written, in the order they closed.
struct PersistQueue : Part {
    static constexpr int kSlot = 2;
    std::vector<std::shared_ptr<PersistJob>> jobs;
    void persisted(int64_t stamp) override {
        for (auto &job : jobs)
            if (job->persist_after == stamp) job->persist_after = 0;
    }
    // dtf_finalize: end_persist.
    void finish(Runtime &rt, const char *who) override;
};
inline PersistQueue &persist_queue(Runtime &rt) { return rt.part<PersistQueue>(); }

// At the writer's close: the session's file is to be written (PersistQueue::jobs). Writing it
// waits until these ranks close the last file they have open for writing (then their output is
// handed to its readers), open a dtf file for reading, create (or open with NC_WRITE) the next file
// of the same rule, or call dtf_finalize, whichever comes first; flush_persist() writes them
// (collective over each job's group, in the order the sessions closed), then tells the readers
// (MessageKind::Persisted). A rule with aggregate_steps=k keeps its jobs until k are queued (or
// dtf_finalize); with aggregators= the groups' first ranks write what their group wrote; with
// ioserver= the ranks send their parts to the I/O server, which writes the file. `write_now`: these
// ranks' files are written before it returns (the last file they write is closing). Values the
// program's buffers still hold (buffer_data=0) are copied for the files left queued only.
void queue_persist(Runtime &rt, std::shared_ptr<PersistJob> job, bool write_now);
// The jobs of the ranks of `group` (all jobs: nullptr) that a call of `rule` (reading: any) must
// write first.
void flush_persist(Runtime &rt, const transport::Group *group, const config::FileRule *rule, bool reading);
// dtf_finalize: the files still to be written (flush_persist), then, from the component's root, the
// end to each I/O server that writes files of this component (MessageKind::PersistDone).
void end_persist(Runtime &rt);
// dtf_ioserver: write the files the components send (ioserver=; MessageKind::PersistData) until all
// of them are done; collective over the component. Throws the first failure once done.
void serve_io(Runtime &rt);

} // namespace dtf::runtime
