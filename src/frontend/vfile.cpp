// Transfer mode: creating, opening and closing virtual files, and the define/inquiry calls on them.
#include "frontend/vfile.hpp"
#include "frontend/files.hpp"

#include <pnetcdf.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <utility>

#include "common/counters.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "pnc/args.hpp"
#include "pnc/hook.h"
#include "pnc_info.h"
#include "runtime/runtime.hpp"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using pnc::arg;

namespace {

// PnetCDF's default nc_header_read_chunk_size: how much of a file its root reads at open.
constexpr int64_t kHeaderReadChunk = 262144;

// What ncmpi_inq_file_info gives for the file: the program's hints, then PnetCDF's own (1.12), as
// it reports them for a file without MPI-IO hints of its own. Alignments are 0 until the file's
// layout is set (a created file's first enddef; an opened file reports 0).
MPI_Info file_info(const VirtualFile &vf) {
    std::vector<std::pair<std::string, std::string>> all = vf.hints;
    const bool laid_out = vf.writer && !vf.continued && vf.enddefs > 0;
    const model::Header::Alignment &a = vf.header.alignment();
    const std::string chunk = std::to_string(kHeaderReadChunk), h = std::to_string(laid_out ? a.header : 0),
                      v = std::to_string(laid_out ? a.var : 0), r = std::to_string(laid_out ? a.record : 0);
    const std::pair<const char *, const char *> pnetcdf[] = {
        {"nc_header_align_size", h.c_str()},       {"nc_var_align_size", v.c_str()},
        {"nc_record_align_size", r.c_str()},       {"nc_header_read_chunk_size", chunk.c_str()},
        {"nc_in_place_swap", "auto"},              {"nc_ibuf_size", "16777216"},
        {"pnetcdf_subfiling", "disable"},          {"nc_num_subfiles", "0"}};
    for (const auto &[key, value] : pnetcdf) {
        auto given = std::find_if(all.begin(), all.end(), [&](const auto &e) { return e.first == key; });
        if (given == all.end()) all.emplace_back(key, value);
        else if (laid_out && std::string(key).find("align") != std::string::npos)
            given->second = value; // (those in use)
    }
    return transport::make_info(all);
}

int next_virtual_ncid() {
    static int next = DTF_PNC_VIRTUAL_BASE;
    return next++;
}

// A session of the path this rank wrote may still be served; once it is, the path may be forgotten
// (num_sessions), and the numbering starts again. The path's record after that, if there is one.
const PathCounters *settle_path(Runtime &rt, const std::string &path, int peer, const char *doing) {
    rt.wait_until([&] { return !sessions(rt).serving_session(path); }, [&] {
        const WriterSession *ws = sessions(rt).serving_session(path);
        return format("%s '%s' waited for the readers of the session this rank wrote before to finish reading it%s",
                      doing, path.c_str(), ws ? (" (" + waiting_for(rt, *ws) + ")").c_str() : "");
    }, peer);
    rt.forget_finished(path);
    return rt.find_counters(path);
}

std::unique_ptr<VirtualFile> make_file(Runtime &rt, const std::string &path, const config::FileRule &rule,
                                       const std::vector<int> &peers, std::shared_ptr<transport::Group> group,
                                       bool writer) {
    auto vf = std::make_unique<VirtualFile>();
    vf->path = path;
    vf->rule = &rule;
    vf->peers = peers;
    vf->peer = peers.empty() ? -1 : peers.front(); // (none: an output file)
    const int peer = vf->peer;
    vf->writer = writer;
    vf->group = std::move(group);
    vf->rank = vf->group->rank();
    vf->size = vf->group->size();
    vf->ranks = vf->group->component_ranks();
    const PathCounters *c = settle_path(rt, path, peer, writer ? "creating" : "opening");
    vf->session = (c ? c->closed() : 0) + 1;
    return vf;
}

int finish_open(Runtime &rt, std::unique_ptr<VirtualFile> vf, int *ncidp) {
    vf->ncid = next_virtual_ncid();
    *ncidp = vf->ncid;
    log::debug("%s '%s' (transfer mode, session %d) as virtual ncid %d", vf->writer ? "created" : "opened",
               vf->path.c_str(), vf->session, vf->ncid);
    VirtualFile &file = *(files(rt).virtual_files[vf->ncid] = std::move(vf));
    // Claimed once registered: from now on, apply() sees the other component's FileDefined for the
    // session; one that came before (even during this open's waits) is in the inbox.
    if (file.ws) rt.claim_session(file.path, file.session);
    return NC_NOERR;
}

// The replay plan (replay_io=1) a reader group of `ranks` would read `path` with, for a session of
// writer ranks `writers`.
std::shared_ptr<const ReaderPlan> reader_plan(Runtime &rt, const std::string &path, const std::vector<int> &ranks,
                                              const std::vector<int> &writers) {
    return sessions(rt).reader_plans.find(plan_key(path, ranks), path, &writers, nullptr);
}

} // namespace

// The alignment hints of a file created or opened for writing: its MPI info's, and PNETCDF_HINTS's
// (which PnetCDF takes over the info's), "key=value;..." (0 where neither gives one).
void apply_alignment_hints(model::Header &h, const std::vector<std::pair<std::string, std::string>> &info) {
    std::map<std::string, std::string> hints(info.begin(), info.end());
    if (const char *env = std::getenv("PNETCDF_HINTS")) {
        std::string all(env);
        auto trim = [](std::string x) {
            x.erase(0, x.find_first_not_of(" \t"));
            x.erase(x.find_last_not_of(" \t") + 1);
            return x;
        };
        for (size_t at = 0; at <= all.size();) {
            const size_t end = std::min(all.find(';', at), all.size()), eq = all.find('=', at);
            if (eq < end) hints[trim(all.substr(at, eq - at))] = trim(all.substr(eq + 1, end - eq - 1));
            at = end + 1;
        }
    }
    auto value = [&](const char *key) {
        auto it = hints.find(key);
        return it == hints.end() ? int64_t{0} : std::max<int64_t>(0, std::strtoll(it->second.c_str(), nullptr, 10));
    };
    h.set_alignment_hints(value("nc_header_align_size"), value("nc_var_align_size"), value("nc_record_align_size"));
}

int vfile_create(Runtime &rt, const std::string &path, const config::FileRule &rule, const std::vector<int> &peers,
                 std::shared_ptr<transport::Group> group, int cmode, int *ncidp) {
    if (!ncidp) return NC_EINVAL;
    int format = NC_FORMAT_CLASSIC, default_format = NC_FORMAT_CLASSIC;
    if (auto inq = reinterpret_cast<int (*)(int *)>(dtf_pnc_real(DTF_FN_ncmpi_inq_default_format))) {
        transport::Blocking unlocked; // real PnetCDF runs without the runtime lock
        inq(&default_format);
    }
    int rc = model::format_from_cmode(cmode, default_format, &format);
    if (rc != NC_NOERR) return rc;
    auto vf = make_file(rt, path, rule, peers, std::move(group), true);
    vf->cmode = cmode;
    vf->header = model::Header(format);
    vf->ws = open_writer_session(rt, *vf);
    if (SerialOpen::active()) {
        vf->ws->serial = true, vf->ws->serial_readers = rule.serial_readers;
        vf->classic_fills = true; // (netcdf4.cpp sets the fill mode at create, as for a netCDF-4 file)
    }
    return finish_open(rt, std::move(vf), ncidp);
}

namespace {

// ncmpi_open with NC_WRITE: this component continues the file, as the writer of the path's next
// session, from the header of its last one: the session this rank closed last (read or written),
// or, if it took part in none since the path was last forgotten, the session the other component
// writes now, which it joins as a reader that reads nothing. Gets on the file fail (the values of
// the last session are not kept here); the readers of the new session get what it writes, and an
// error for what it does not write of the inherited variables (read_batch).
int continue_file(Runtime &rt, const std::string &path, const config::FileRule &rule, const std::vector<int> &peers,
                  std::shared_ptr<transport::Group> group, int omode, int *ncidp) {
    const std::string context = format("ncmpi_open of '%s' with NC_WRITE (transfer mode)", path.c_str());
    const PathCounters *c = settle_path(rt, path, peers.empty() ? -1 : peers.front(), "opening");
    const bool has = c && c->header;
    const int closed = c ? c->closed() : 0;
    int64_t lacks[2] = {has ? 0 : 1, has ? 1 : 0}; // whether some rank lacks / has the header
    // Opened by the ranks that closed the session whose header this rank keeps (a file read, then written
    // back): each of them keeps it too, so none lacks it (the cycle of a write-back makes no collective here).
    if (!has || c->header_ranks != group->component_ranks()) rt.allreduce_max(*group, lacks, 2, context);
    if (lacks[0] && lacks[1])
        fail(DTF_ERR_UNSUPPORTED, "%s: some of the ranks opening it took part in its last session and others did not; "
             "open it with the communicator it was read or written with", context.c_str());
    // The session it writes: the next one, or the one after the session it joins.
    const int session = closed + 1 + static_cast<int>(lacks[0]);
    if (session > rule.num_sessions)
        fail(DTF_ERR_UNSUPPORTED, "%s: writing it again makes session %d of the file, but %s:%d allows num_sessions=%d "
             "(dtf forgets a file after that many sessions): set num_sessions to the number of times the file is "
             "opened or created per cycle, by both components together", context.c_str(), session,
             rt.config().path.c_str(), rule.line, rule.num_sessions);
    if (lacks[0] && rule.fixed_roles()) // the only writer never reads the file: nothing to continue from
        fail(DTF_ERR_UNSUPPORTED, "%s: this component has written no session of it since dtf last forgot the path "
             "(num_sessions=%d, %s:%d), so there is no header to continue; create it instead", context.c_str(),
             rule.num_sessions, rt.config().path.c_str(), rule.line);
    if (lacks[0]) {
        int ncid = -1, rc = vfile_open(rt, path, rule, peers, group, omode & ~NC_WRITE, &ncid);
        if (rc == NC_NOERR) rc = vfile_call(rt, *files(rt).virtual_file(ncid), DTF_FN_ncmpi_close, nullptr);
        if (rc != NC_NOERR) return rc;
    }
    auto vf = make_file(rt, path, rule, peers, std::move(group), true);
    const PathCounters *now = rt.find_counters(path);
    if (vf->session != session || !now || !now->header)
        fail(DTF_ERR_INTERNAL, "%s: continues session %d, not %d", context.c_str(), vf->session - 1, session - 1);
    vf->header = *now->header;
    vf->header.set_read_only(false);
    if (vf->header.in_indep_mode()) vf->header.end_indep_data();
    vf->header.inq(nullptr, &vf->inherited, nullptr, nullptr);
    vf->continued = true;
    if (std::find(now->persisted.begin(), now->persisted.end(), now->read_stamp) == now->persisted.end())
        vf->persist_after = now->read_stamp; // not in the file yet
    // PnetCDF's root reads the header at open.
    if (vf->rank == 0) vf->get_bytes = std::min<int64_t>(vf->header.file_size(), kHeaderReadChunk);
    // The readers learn the header at the first put, dtf_transfer or close, whichever comes first
    // (announce_definition).
    vf->ws = open_writer_session(rt, *vf);
    if (SerialOpen::active()) {
        vf->classic_fills = true;
        vf->header.set_fill(NC_FILL, nullptr, true); // (netCDF-C's classic library's default at open)
    }
    return finish_open(rt, std::move(vf), ncidp);
}

// Each reader rank waits for the writer's FileDefined of the session, which came to every rank of the
// reader component, or, where the session replays a plan of known readers (ReaderSide::assumed), to each
// reader rank from its own writer rank: no collective.
Definition await_definition(Runtime &rt, VirtualFile &f) {
    const config::FileRule &rule = *f.rule;
    const int peer = f.peer;
    const std::string &peer_name = rt.config().component_name(peer);
    const std::string context = format("ncmpi_open of '%s' (transfer mode, session %d)", f.path.c_str(), f.session);
    return read_definition(
        rt.wait_message([&](const Message &m) { return is_definition(m, f.path, f.session); }, [&] {
            return format("%s waited for component '%s' to define it and begin writing it (its first put, "
                          "dtf_transfer or close)%s", context.c_str(), peer_name.c_str(),
                          rule.replay_io ? " (with replay_io=1 the definition of a file whose last session was "
                                           "replayed or recorded goes to the reader ranks of that session only: "
                                           "if other ranks open it now, set replay_io=0)"
                                         : "");
        }, peer).payload);
}

// The header FileDefined carried (read-only), or the one of the replay plan it names.
void take_definition(Runtime &rt, VirtualFile &f, const Definition &d) {
    const std::string &peer_name = rt.config().component_name(f.peer);
    const bool as_planned = d.planned != 0;
    if (as_planned) {
        if (!f.reader.plan || f.reader.plan->stamp != d.planned)
            fail(DTF_ERR_PEER, "ncmpi_open of '%s' (session %d): component '%s' defined it as in the session it "
                 "recorded its transfer pattern in (stamp %lld), which these reader ranks do not hold", f.path.c_str(),
                 f.session, peer_name.c_str(), static_cast<long long>(d.planned));
        // (decoding it again took 32 us for a 143-variable file; a copy 3 us)
        f.reader.defined = f.reader.plan->defined;
    } else {
        auto decoded = std::make_shared<model::Header>();
        if (model::Header::decode(d.header.data(), d.header.size(), decoded.get()) != NC_NOERR)
            fail(DTF_ERR_PEER, "malformed header of '%s' from component '%s'", f.path.c_str(), peer_name.c_str());
        decoded->set_read_only(true);
        f.reader.defined = std::move(decoded);
    }
}

// Tell every writer rank who reads (it needs the reader ranks to know when all are done), unless the
// writer wrote the session to the file system instead already (fallback=: read there), or it replays
// a plan of known readers, whose readers its ranks took (ReaderSide::assumed).
void say_opened(Runtime &rt, const VirtualFile &f) {
    if (f.rank != leader_of(f.path, f.size) || f.reader.defined_by_own_writer || rt.written(f.reader.writer_stamp))
        return;
    PayloadWriter p;
    p.ints(f.ranks);
    p.i64(f.reader.plan ? f.reader.plan->stamp : 0); // the replay plan this side holds
    p.i64(f.reader.writer_stamp);              // the session's, for the writer ranks that do not know it yet
    std::vector<char> payload = p.take();
    for (int w : f.reader.writer_ranks)
        rt.send(f.peer, w, Message{MessageKind::ReaderOpened, 0, f.session, 0, f.path, payload});
}

} // namespace

int vfile_open(Runtime &rt, const std::string &path, const config::FileRule &rule, const std::vector<int> &peers,
               std::shared_ptr<transport::Group> group, int omode, int *ncidp) {
    if (!ncidp) return NC_EINVAL;
    if (omode & NC_WRITE) return continue_file(rt, path, rule, peers, std::move(group), omode, ncidp);
    auto vf = make_file(rt, path, rule, peers, std::move(group), false);
    VirtualFile &f = *vf;
    Definition d = await_definition(rt, f);
    f.reader.writer_stamp = d.writer_stamp;
    f.reader.writer_ranks = std::move(d.writer_ranks);
    f.reader.matchers = std::move(d.matchers);
    f.inherited = d.inherited;
    f.reader.defined_by_own_writer = !d.to_all;
    f.reader.quiet_writer = f.reader.defined_by_own_writer && !rule.persist && !rule.falls_back();
    if (rule.replay_io) { // the plan of the most similar file read from the same writer ranks
        f.reader.plan_key = plan_key(path, f.ranks);
        f.reader.plan = reader_plan(rt, path, f.ranks, f.reader.writer_ranks);
        if (f.reader.plan) {
            f.reader.plan_since = ++f.reader.plan->found;
            log::debug("reading '%s' (session %d) with the plan of session %d of '%s'", path.c_str(), f.session,
                       f.reader.plan->session, f.reader.plan->path.c_str());
        }
    }
    take_definition(rt, f, d);
    f.header = *f.reader.defined;
    say_opened(rt, f);
    return finish_open(rt, std::move(vf), ncidp);
}

std::vector<char> vfile_probe(Runtime &rt, const std::string &path, const config::FileRule &rule,
                              const std::vector<int> &peers, std::shared_ptr<transport::Group> group) {
    const bool writer = rule.fixed_roles() && rule.writer == rt.self_name();
    if (!writer && rule.fixed_roles() && rt.absent(rt.config().component_index(rule.writer)))
        return {}; // (read from the file system: open_or_create)
    auto probe = make_file(rt, path, rule, peers, std::move(group), writer);
    const VirtualFile &f = *probe;
    const std::string context = format("MPI_File_open of '%s' (transfer mode: a look at its header before "
                                       "ncmpi_open, session %d)", path.c_str(), f.session);
    // Each rank on its own, with the definition it receives itself (as its ncmpi_open does next): no
    // collective, which would make the reader ranks wait for one another at every open.
    auto defined = [&] { return rt.peek([&](const Message &m) { return is_definition(m, path, f.session); }); };
    const PathCounters *c = rt.find_counters(path);
    const Message *m = writer ? nullptr : defined();
    if (!m && c && c->header) return c->header->file_header(); // the version this rank read or wrote last
    if (!m && writer) return std::vector<char>();
    if (!m)
        rt.wait_until([&] { return (m = defined()) != nullptr; }, [&] {
            return format("%s waited for component '%s' to define it and begin writing it (its first put, "
                          "dtf_transfer or close)", context.c_str(), rt.config().component_name(f.peer).c_str());
        }, f.peer);
    Definition d = read_definition(m->payload);
    if (d.planned) {
        auto plan = reader_plan(rt, path, f.ranks, d.writer_ranks);
        if (!plan || plan->stamp != d.planned)
            fail(DTF_ERR_PEER, "%s: component '%s' defined it as in the session it recorded its transfer pattern "
                 "in, which these reader ranks do not hold", context.c_str(),
                 rt.config().component_name(f.peer).c_str());
        return plan->defined->file_header();
    }
    model::Header h;
    if (model::Header::decode(d.header.data(), d.header.size(), &h) != NC_NOERR)
        fail(DTF_ERR_PEER, "%s: malformed header from component '%s'", context.c_str(),
             rt.config().component_name(f.peer).c_str());
    return h.file_header();
}

namespace {

// ncmpi_enddef (or the one ncmpi_close makes in define mode): the fills PnetCDF writes then (of the
// variables defined since define mode was entered), and the header its root writes. (The readers
// learn the header later: announce_definition.)
int writer_enddef(Runtime &rt, VirtualFile &vf, const int64_t *minfree_and_align = nullptr) {
    model::Header &h = vf.header;
    const int64_t *a = minfree_and_align;
    const int rc = a ? h.enddef(a[0], a[1], a[2], a[3]) : h.enddef();
    if (rc != NC_NOERR || !vf.writer) return rc;
    ++vf.enddefs;
    if (h.fills_records()) { // (a rank knows the records it wrote; PnetCDF's collective calls agree on them)
        int64_t numrecs = h.numrecs();
        rt.allreduce_max(*vf.group, &numrecs, 1,
                         format("ncmpi_enddef of '%s' (session %d)", vf.path.c_str(), vf.session));
        h.set_numrecs(numrecs);
    }
    if (!netcdf4_file(vf)) // (whose readers read the fill value where no write came: record_fill)
        for (const model::Header::Region &f : h.enddef_fills()) record_fill(rt, vf, f);
    int64_t size = 0;
    h.inq_layout(&size, nullptr, nullptr);
    if (vf.rank == 0) vf.put_bytes += size; // PnetCDF's root writes the header
    return rc;
}

} // namespace

int resume_turn(Runtime &rt, const std::string &path, std::shared_ptr<transport::Group> group, int omode, int *ncidp) {
    if (!ncidp) return NC_EINVAL;
    auto it = files(rt).turns.find(path);
    VirtualFile &f = *it->second.file;
    if (group->component_ranks() != f.ranks)
        fail(DTF_ERR_UNSUPPORTED, "ncmpi_open of '%s' (transfer mode, session %d): other ranks open it than those that "
             "wrote it in this turn (writer_closes=%d, %s:%d): open it with the communicator it was created with",
             path.c_str(), f.session, f.rule->writer_closes, rt.config().path.c_str(), f.rule->line);
    std::unique_ptr<VirtualFile> vf = std::move(it->second.file);
    files(rt).turns.erase(it);
    // As ncmpi_open leaves a file: data mode, collective, NC_NOFILL, read-only without NC_WRITE. Its
    // root reads the header; nothing was put or got through this ncid yet.
    model::Header opened;
    const std::vector<char> encoded = vf->header.encode();
    if (model::Header::decode(encoded.data(), encoded.size(), &opened) != NC_NOERR)
        fail(DTF_ERR_INTERNAL, "'%s': the header of this turn does not decode", path.c_str());
    opened.set_read_only(!(omode & NC_WRITE));
    vf->header = std::move(opened);
    vf->put_bytes = 0;
    vf->get_bytes = vf->rank == 0 ? std::min<int64_t>(vf->header.file_size(), kHeaderReadChunk) : 0;
    vf->ncid = next_virtual_ncid();
    *ncidp = vf->ncid;
    log::debug("opened '%s' again in this component's turn (session %d, %s) as virtual ncid %d", path.c_str(),
               vf->session, omode & NC_WRITE ? "NC_WRITE" : "read-only", vf->ncid);
    files(rt).virtual_files[vf->ncid] = std::move(vf);
    return NC_NOERR;
}

void close_turn(Runtime &rt, std::unique_ptr<VirtualFile> file) {
    VirtualFile &vf = *(files(rt).virtual_files[file->ncid = next_virtual_ncid()] = std::move(file));
    vf.turn_closes = vf.rule->writer_closes - 1; // (this close ends the turn)
    vf.ending_turn = true;
    vfile_call(rt, vf, DTF_FN_ncmpi_close, nullptr);
}

std::shared_ptr<PersistJob> persist_job(Runtime &rt, VirtualFile &vf) {
    auto job = std::make_shared<PersistJob>();
    job->path = vf.path;
    job->session = vf.session;
    job->stamp = vf.ws->stamp;
    job->rule = vf.rule;
    job->header = vf.header;
    job->hints = vf.hints;
    job->cmode = vf.cmode;
    job->continued = vf.continued;
    job->persist_after = vf.persist_after;
    // (the writer's Persisted may have come while this session was being opened, before the runtime
    // knew the file: the path's record has it then)
    const PathCounters *c = rt.find_counters(vf.path);
    if (job->persist_after != 0 && c &&
        std::find(c->persisted.begin(), c->persisted.end(), job->persist_after) != c->persisted.end())
        job->persist_after = 0;
    job->enddefs = vf.enddefs;
    job->readers = vf.peers;
    job->fallback = !vf.gave_up.empty();
    job->rank = vf.rank;
    job->group = vf.group;
    std::shared_ptr<WriterSession> ws = vf.ws;
    job->writes = std::shared_ptr<std::vector<WriteRecord>>(ws, &ws->writes);
    job->await_readers = [&rt, ws](const std::string &where) {
        if (ws->serving)
            rt.wait_until([&] { return !ws->serving; }, [&] { return where + ": " + waiting_for(rt, *ws); },
                          [&] { return blocking_reader(*ws); });
    };
    return job;
}

namespace {

// fallback=: the writer ranks agree whether any of them gave up the readers (before the close: at a
// dtf_transfer; or while serving them now); if one did, they all write the file, as persist=1 does,
// and the close succeeds. Two agreements, since writer_close is collective: all ranks call it or none.
void close_or_fall_back(Runtime &rt, VirtualFile &vf) {
    const std::string context = format("closing '%s' (session %d)", vf.path.c_str(), vf.session);
    std::string why = agree_gave_up(rt, vf, context);
    if (why.empty()) {
        try {
            writer_close(rt, vf);
        } catch (const Error &e) {
            if (!give_up_readers(rt, vf, e)) throw;
        }
        why = agree_gave_up(rt, vf, context);
    }
    if (why.empty()) return;
    vf.ws->closed = true;
    settle_given_up(rt, *vf.ws);
    queue_persist(rt, persist_job(rt, vf), true);
    if (vf.rank != 0) return;
    ++rt.stats().fallbacks;
    log::notice("'%s' (session %d) went to the file system (fallback=%s, %s:%d): %s", vf.path.c_str(), vf.session,
                vf.rule->fallback_s == config::kFallbackWait ? "wait" : format("%g", vf.rule->fallback_s).c_str(),
                rt.config().path.c_str(), vf.rule->line, why.c_str());
}

// Closed before the writer's turn ended (writer_closes): the file stays as it is, out of reach of its
// ncid, until the writer opens it again (resume_turn) or dtf_finalize ends the turn (close_turn).
// Its requests still pending are dropped, as PnetCDF cancels them at a close.
int suspend(Runtime &rt, VirtualFile &vf) {
    const int rc = vf.header.in_define_mode() ? writer_enddef(rt, vf) : NC_NOERR;
    vf.pending.clear();
    vf.pending_puts.clear();
    vf.bput_buffer = {};
    for (WriteRecord &w : vf.ws->writes) // (buffer_data=0: the program's buffers are its own again)
        if (w.borrowed) {
            const size_t n = static_cast<size_t>(w.meta.box.size()) *
                             types::type_size(vf.header.vars()[static_cast<size_t>(w.meta.varid)].type);
            w.data = rt.buffers().take(n);
            std::memcpy(w.data.data(), w.borrowed, n);
            counters::copied(true, n);
            w.borrowed = nullptr;
        }
    Turn &turn = files(rt).turns[vf.path];
    turn.closes = vf.turn_closes;
    auto it = files(rt).virtual_files.find(vf.ncid);
    turn.file = std::move(it->second);
    files(rt).virtual_files.erase(it); // (vf lives on in the turn)
    log::debug("'%s' closed %d of the %d times of this component's turn (writer_closes)", turn.file->path.c_str(),
               turn.closes, turn.file->rule->writer_closes);
    return rc;
}

// The writer's part of a close (not an abort): a pending enddef, the readers served before closing
// (with the progress thread the session may go on being served after the close; with fallback= they
// may be given up), and with persist=1 the file queued. Serving's failure (`*unserved`) and the
// file's (`*unwritten`) are reported once the close is done.
int close_writer(Runtime &rt, VirtualFile &vf, std::exception_ptr *unserved, std::exception_ptr *unwritten) {
    int rc = NC_NOERR;
    if (vf.header.in_define_mode() && (rc = writer_enddef(rt, vf)) == NC_NOERR) announce_definition(rt, vf);
    note_definition(rt, vf);
    if (vf.rule->falls_back()) {
        close_or_fall_back(rt, vf);
    } else {
        try {
            writer_close(rt, vf);
        } catch (const Error &) {
            *unserved = std::current_exception();
            sessions(rt).forsake(vf.ws);
        }
    }
    if (!vf.rule->persist || rc != NC_NOERR) return rc;
    // The last file these ranks write for now: their files are handed over, write them.
    const auto &ranks = vf.group->component_ranks();
    const auto &open = files(rt).virtual_files;
    const bool last = std::none_of(open.begin(), open.end(), [&](const auto &other) {
        return other.second.get() != &vf && other.second->writer && other.second->group->component_ranks() == ranks;
    });
    try {
        queue_persist(rt, persist_job(rt, vf), last);
    } catch (...) {
        *unwritten = std::current_exception();
    }
    return rc;
}

// This rank's record of the path once a session of it is closed: the session counted, its header
// (for a later open with NC_WRITE, while the path is remembered), what it read last.
void count_closed(Runtime &rt, const VirtualFile &vf, bool abort) {
    PathCounters &c = rt.counters(vf.path);
    ++(vf.writer ? c.my_writes : c.my_reads);
    if (!abort && c.closed() < vf.rule->num_sessions) {
        c.header = std::make_shared<const model::Header>(vf.header);
        c.header_ranks = vf.ranks;
    }
    c.read_stamp = vf.writer ? 0 : vf.reader.writer_stamp;
    if (!vf.writer) c.last_read = vf.reader.writer_stamp;
    ++(vf.writer ? rt.stats().sessions_written : rt.stats().sessions_read);
}

int close_file(Runtime &rt, VirtualFile &vf, bool abort) {
    if (vf.writer && !abort && ++vf.turn_closes < vf.rule->writer_closes) return suspend(rt, vf);
    int rc = NC_NOERR;
    std::exception_ptr unwritten; // persist=1: the file could not be written (reported once the close is done)
    // Serving or fetching failed (e.g. the peer was lost): reported once the close is done, since the
    // file is closed all the same (nothing more can come of it), and a persist=1 file is written.
    std::exception_ptr unserved;
    if (abort) {
        drop_ahead(rt, vf);
    } else if (vf.writer) {
        rc = close_writer(rt, vf, &unserved, &unwritten);
    } else if (!vf.reader.done_sent || !vf.pending.empty()) { // the data not fetched yet
        try {
            rc = session_transfer(rt, vf);
        } catch (const Error &) {
            unserved = std::current_exception();
        }
    }
    // The close's last collective: a writer's agreement in writer_close was (all its ranks are in the
    // close); a reader with replay_io=1 makes none (each rank keeps or drops its plan and tells the
    // writers: end_reader_session); a barrier otherwise.
    if (!vf.writer && vf.rule->replay_io && !abort && !unserved) {
        end_reader_session(rt, vf);
    } else if (!vf.writer || abort || unserved) {
        rt.barrier(*vf.group, format("closing '%s' (session %d)", vf.path.c_str(), vf.session));
    }
    if (vf.ws) vf.ws->finish_due = true; // (past the session's last collective: WriterSession::quiet_end)
    if (!vf.writer) {
        try {
            end_reading(rt, vf, !abort && !unserved);
        } catch (const Error &) {
            unserved = std::current_exception();
        }
        drop_ahead(rt, vf); // (receives posted for data that did not come: a failed session's)
    }
    count_closed(rt, vf, abort);
    const std::string path = vf.path, redefined = vf.reader.redefined_told ? std::string() : vf.reader.redefined;
    const bool forget = !abort; // after ncmpi_abort the peer may still send: keep the record
    files(rt).virtual_files.erase(vf.ncid); // vf is gone after this
    // Forgotten first: then the messages about the path that came already are the next session's
    // (numbered 1 again; e.g. the readers' ReaderOpened, once the other writer ranks passed the
    // barrier above and their root created the next file), which the discard must not take for
    // this session's.
    if (forget) rt.forget_finished(path);
    rt.discard_closed_sessions();
    if (unserved) std::rethrow_exception(unserved);
    if (unwritten) std::rethrow_exception(unwritten);
    // A reader that looked at a definition its writer changed later, and learned it only now (no
    // call said so before).
    if (!redefined.empty() && !abort) throw Error(DTF_ERR_PEER, redefined);
    return rc;
}

// Define-mode calls, answered by the header model exactly as PnetCDF would; on the reader's header
// they return what PnetCDF returns on a read-only file (NC_EPERM...). DTF_PNC_PASS: not one.
int define_call(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    model::Header &h = vf.header;
    switch (fn) {
    case DTF_FN_ncmpi_enddef: return writer_enddef(rt, vf);
    case DTF_FN_ncmpi__enddef: { // (ncid, h_minfree, v_align, v_minfree, r_align)
        const int64_t a[4] = {arg<MPI_Offset>(args, 1), arg<MPI_Offset>(args, 2), arg<MPI_Offset>(args, 3),
                              arg<MPI_Offset>(args, 4)};
        return writer_enddef(rt, vf, a);
    }
    case DTF_FN_ncmpi_redef: return h.redef();
    case DTF_FN_ncmpi_begin_indep_data: return h.begin_indep_data();
    case DTF_FN_ncmpi_end_indep_data: return h.end_indep_data();
    case DTF_FN_ncmpi_sync: case DTF_FN_ncmpi_sync_numrecs: return h.in_define_mode() ? NC_EINDEFINE : NC_NOERR;
    case DTF_FN_ncmpi_flush: return NC_NOERR; // (also in define mode, as PnetCDF 1.12.3)
    case DTF_FN_ncmpi_set_fill: return h.set_fill(arg<int>(args, 1), arg<int *>(args, 2), vf.classic_fills);
    case DTF_FN_ncmpi_def_var_fill:
        return h.def_var_fill(arg<int>(args, 1), arg<int>(args, 2), arg<const void *>(args, 3));
    case DTF_FN_ncmpi_def_dim:
        return h.def_dim(arg<const char *>(args, 1), arg<MPI_Offset>(args, 2), arg<int *>(args, 3));
    case DTF_FN_ncmpi_def_var:
        return h.def_var(arg<const char *>(args, 1), arg<nc_type>(args, 2), arg<int>(args, 3),
                         arg<const int *>(args, 4), arg<int *>(args, 5));
    case DTF_FN_ncmpi_rename_dim: return h.rename_dim(arg<int>(args, 1), arg<const char *>(args, 2));
    case DTF_FN_ncmpi_rename_var: return h.rename_var(arg<int>(args, 1), arg<const char *>(args, 2));
    case DTF_FN_ncmpi_rename_att:
        return h.rename_att(arg<int>(args, 1), arg<const char *>(args, 2), arg<const char *>(args, 3));
    case DTF_FN_ncmpi_del_att: return h.del_att(arg<int>(args, 1), arg<const char *>(args, 2));
    default: return DTF_PNC_PASS;
    }
}

// Inquiries of a variable, answered by the header model exactly as PnetCDF would. DTF_PNC_PASS: not one.
int variable_inquiry(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    model::Header &h = vf.header;
    switch (fn) {
    case DTF_FN_ncmpi_inq_var:
        return h.inq_var(arg<int>(args, 1), arg<char *>(args, 2), arg<nc_type *>(args, 3), arg<int *>(args, 4),
                         arg<int *>(args, 5), arg<int *>(args, 6));
    case DTF_FN_ncmpi_inq_varid: {
        const char *name = arg<const char *>(args, 1);
        int rc = h.inq_varid(name, arg<int *>(args, 2));
        if (rc == NC_ENOTVAR && !vf.writer)
            set_last_error(format("ncmpi_inq_varid on '%s': component '%s' did not define a variable '%s'",
                                  vf.path.c_str(), rt.config().component_name(vf.peer).c_str(),
                                  name ? name : "(null)"));
        return rc;
    }
    case DTF_FN_ncmpi_inq_varname:
        return h.inq_var(arg<int>(args, 1), arg<char *>(args, 2), nullptr, nullptr, nullptr, nullptr);
    case DTF_FN_ncmpi_inq_vartype:
        return h.inq_var(arg<int>(args, 1), nullptr, arg<nc_type *>(args, 2), nullptr, nullptr, nullptr);
    case DTF_FN_ncmpi_inq_varndims:
        return h.inq_var(arg<int>(args, 1), nullptr, nullptr, arg<int *>(args, 2), nullptr, nullptr);
    case DTF_FN_ncmpi_inq_vardimid:
        return h.inq_var(arg<int>(args, 1), nullptr, nullptr, nullptr, arg<int *>(args, 2), nullptr);
    case DTF_FN_ncmpi_inq_varnatts: return h.inq_varnatts(arg<int>(args, 1), arg<int *>(args, 2));
    case DTF_FN_ncmpi_inq_var_fill: return h.inq_var_fill(arg<int>(args, 1), arg<int *>(args, 2), arg<void *>(args, 3));
    default: return DTF_PNC_PASS;
    }
}

// Inquiry calls, answered by the header model exactly as PnetCDF would (a reader's inquiry of the
// record count waits for the writer's final header). DTF_PNC_PASS: not one.
int inquiry_call(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    model::Header &h = vf.header;
    const bool writer = vf.writer;
    switch (fn) {
    case DTF_FN_ncmpi_inq:
        return h.inq(arg<int *>(args, 1), arg<int *>(args, 2), arg<int *>(args, 3), arg<int *>(args, 4));
    case DTF_FN_ncmpi_inq_format: return h.inq_format(arg<int *>(args, 1));
    case DTF_FN_ncmpi_inq_ndims: return h.inq(arg<int *>(args, 1), nullptr, nullptr, nullptr);
    case DTF_FN_ncmpi_inq_nvars: return h.inq(nullptr, arg<int *>(args, 1), nullptr, nullptr);
    case DTF_FN_ncmpi_inq_natts: return h.inq(nullptr, nullptr, arg<int *>(args, 1), nullptr);
    case DTF_FN_ncmpi_inq_unlimdim: return h.inq(nullptr, nullptr, nullptr, arg<int *>(args, 1));
    case DTF_FN_ncmpi_inq_dimid: return h.inq_dimid(arg<const char *>(args, 1), arg<int *>(args, 2));
    case DTF_FN_ncmpi_inq_dim: case DTF_FN_ncmpi_inq_dimname: case DTF_FN_ncmpi_inq_dimlen: {
        int dimid = arg<int>(args, 1);
        if (!writer && dimid == h.unlimdimid() && fn != DTF_FN_ncmpi_inq_dimname) wait_header_final(rt, vf);
        char *name = fn == DTF_FN_ncmpi_inq_dimlen ? nullptr : arg<char *>(args, 2);
        MPI_Offset *len = fn == DTF_FN_ncmpi_inq_dim ? arg<MPI_Offset *>(args, 3)
                          : fn == DTF_FN_ncmpi_inq_dimlen ? arg<MPI_Offset *>(args, 2) : nullptr;
        const int rc = h.inq_dim(dimid, name, reinterpret_cast<int64_t *>(len));
        if (rc == NC_NOERR && writer && len && dimid == h.unlimdimid() && !vf.ws->guesses.empty()) {
            vf.ws->guess_seen = true; // (a count taken from the replay plan: checked at dtf_transfer)
            *len = std::max<MPI_Offset>(*len, vf.ws->guessed_numrecs);
        }
        return rc;
    }
    case DTF_FN_ncmpi_inq_att:
        return h.inq_att(arg<int>(args, 1), arg<const char *>(args, 2), arg<nc_type *>(args, 3),
                         reinterpret_cast<int64_t *>(arg<MPI_Offset *>(args, 4)));
    case DTF_FN_ncmpi_inq_atttype:
        return h.inq_att(arg<int>(args, 1), arg<const char *>(args, 2), arg<nc_type *>(args, 3), nullptr);
    case DTF_FN_ncmpi_inq_attlen:
        return h.inq_att(arg<int>(args, 1), arg<const char *>(args, 2), nullptr,
                         reinterpret_cast<int64_t *>(arg<MPI_Offset *>(args, 3)));
    case DTF_FN_ncmpi_inq_attid: return h.inq_attid(arg<int>(args, 1), arg<const char *>(args, 2), arg<int *>(args, 3));
    case DTF_FN_ncmpi_inq_attname: return h.inq_attname(arg<int>(args, 1), arg<int>(args, 2), arg<char *>(args, 3));
    case DTF_FN_ncmpi_inq_path: {
        int *len = arg<int *>(args, 1);
        char *out = arg<char *>(args, 2);
        if (len) *len = static_cast<int>(vf.path.size());
        if (out) std::memcpy(out, vf.path.c_str(), vf.path.size() + 1);
        return NC_NOERR;
    }
    case DTF_FN_ncmpi_inq_header_size: case DTF_FN_ncmpi_inq_header_extent: case DTF_FN_ncmpi_inq_recsize: {
        int64_t size = 0, extent = 0, recsize = 0;
        int rc = h.inq_layout(&size, &extent, &recsize);
        MPI_Offset *out = arg<MPI_Offset *>(args, 1);
        if (rc == NC_NOERR && out)
            *out = fn == DTF_FN_ncmpi_inq_header_size ? size : fn == DTF_FN_ncmpi_inq_header_extent ? extent : recsize;
        return rc;
    }
    case DTF_FN_ncmpi_inq_varoffset:
        return h.inq_varoffset(arg<int>(args, 1), reinterpret_cast<int64_t *>(arg<MPI_Offset *>(args, 2)));
    case DTF_FN_ncmpi_copy_att: {
        // Between virtual files (or within one); to or from a real file it is not supported.
        VirtualFile *out = files(rt).virtual_file(arg<int>(args, 3));
        if (!out)
            fail(DTF_ERR_UNSUPPORTED, "ncmpi_copy_att between the transfer-mode file '%s' and a file that is not one",
                 vf.path.c_str());
        return h.copy_att(arg<int>(args, 1), arg<const char *>(args, 2), out->header, arg<int>(args, 4));
    }
    case DTF_FN_ncmpi_inq_num_rec_vars: return h.inq_num_rec_vars(arg<int *>(args, 1));
    case DTF_FN_ncmpi_inq_num_fix_vars: return h.inq_num_fix_vars(arg<int *>(args, 1));
    default: return variable_inquiry(rt, vf, fn, args);
    }
}

// Define-mode and inquiry calls.
int header_call(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    const int rc = define_call(rt, vf, fn, args);
    return rc != DTF_PNC_PASS ? rc : inquiry_call(rt, vf, fn, args);
}

// put_att / get_att: typed variants carry the memory type in their name; the generic ones use the
// attribute's own type.
int attribute_call(VirtualFile &vf, int fn, void **args) {
    const char *name = dtf_pnc_name(fn);
    const bool put = std::strncmp(name, "ncmpi_put_att", 13) == 0, get = std::strncmp(name, "ncmpi_get_att", 13) == 0;
    if (!put && !get) return DTF_PNC_PASS;
    static const struct { const char *suffix; nc_type type; } kSuffixes[] = {
        {"_text", NC_CHAR}, {"_schar", NC_BYTE}, {"_uchar", NC_UBYTE}, {"_ubyte", NC_UBYTE}, {"_short", NC_SHORT},
        {"_ushort", NC_USHORT}, {"_int", NC_INT}, {"_uint", NC_UINT}, {"_long", sizeof(long) == 8 ? NC_INT64 : NC_INT},
        {"_float", NC_FLOAT}, {"_double", NC_DOUBLE}, {"_longlong", NC_INT64}, {"_ulonglong", NC_UINT64}};
    nc_type memtype = NC_NAT;
    for (const auto &s : kSuffixes)
        if (std::strcmp(name + 13, s.suffix) == 0) memtype = s.type;
    const int varid = arg<int>(args, 1);
    const char *att = arg<const char *>(args, 2);
    if (get) return vf.header.get_att(varid, att, arg<void *>(args, 3), memtype);
    if (memtype == NC_CHAR) // put_att_text(ncid, varid, name, len, text)
        return vf.header.put_att(varid, att, NC_CHAR, arg<MPI_Offset>(args, 3), arg<const void *>(args, 4), NC_CHAR);
    // put_att(ncid, varid, name, xtype, len, values): generic (memtype = xtype) or typed
    nc_type xtype = arg<nc_type>(args, 3);
    return vf.header.put_att(varid, att, xtype, arg<MPI_Offset>(args, 4), arg<const void *>(args, 5),
                             memtype == NC_NAT ? xtype : memtype);
}

} // namespace

namespace {
// Whether every rank of the file makes the call, in the same order: a collective put or get,
// ncmpi_wait_all, ncmpi_flush, a change of mode, ncmpi_fill_var_rec. The writes made by then took
// effect before those made after, whichever ranks made them (WriteReq::seq).
bool collective_call(int fn) {
    switch (fn) {
    case DTF_FN_ncmpi_wait_all: case DTF_FN_ncmpi_flush: case DTF_FN_ncmpi_sync: case DTF_FN_ncmpi_sync_numrecs:
    case DTF_FN_ncmpi_begin_indep_data: case DTF_FN_ncmpi_end_indep_data: case DTF_FN_ncmpi_enddef:
    case DTF_FN_ncmpi__enddef: case DTF_FN_ncmpi_redef: case DTF_FN_ncmpi_fill_var_rec:
        return true;
    default: return dtf_pnc_info(fn)->mode == DTF_PNC_MODE_COLL;
    }
}

// Whether PnetCDF agrees on the record count over the writer ranks after call `fn`, which returned
// `rc` (ncmpi_wait_all agrees in own_gets): a collective put of a record variable (also where it failed
// on this rank only: PnetCDF's other ranks go on with it), ncmpi_sync, ncmpi_sync_numrecs,
// ncmpi_end_indep_data and ncmpi_fill_var_rec once they succeeded.
bool syncs_records(const VirtualFile &vf, int fn, void **args, int rc) {
    if (vf.size == 1 || vf.header.unlimdimid() < 0) return false;
    switch (fn) {
    case DTF_FN_ncmpi_sync: case DTF_FN_ncmpi_sync_numrecs: case DTF_FN_ncmpi_end_indep_data:
    case DTF_FN_ncmpi_fill_var_rec:
        return rc == NC_NOERR;
    default: break;
    }
    const struct dtf_pnc_info *in = dtf_pnc_info(fn);
    if (in->kind == DTF_PNC_KIND_NONE || in->dir != DTF_PNC_DIR_PUT || in->mode != DTF_PNC_MODE_COLL) return false;
    switch (rc) { // (failed alike on every rank: the call's mode or arguments, before any collective)
    case NC_EINDEFINE: case NC_EINDEP: case NC_EPERM: case NC_ENOTVAR: case NC_EBADID: return false;
    default: break;
    }
    return in->multi || vf.header.is_record_var(arg<int>(args, in->varid)); // (mput: a wait_all inside)
}

// The dtf_timers phase of a call on a virtual file (the phases entered inside it take their share).
phase::Phase phase_of(int fn) {
    switch (fn) {
    case DTF_FN_ncmpi_close: case DTF_FN_ncmpi_abort: return phase::Close;
    case DTF_FN_ncmpi_wait: case DTF_FN_ncmpi_wait_all: case DTF_FN_ncmpi_cancel: return phase::Transfer;
    default: break;
    }
    const struct dtf_pnc_info *in = dtf_pnc_info(fn);
    if (in->kind == DTF_PNC_KIND_NONE) return phase::Open;
    return in->dir == DTF_PNC_DIR_PUT ? phase::Pack : phase::Transfer;
}
} // namespace

namespace {
int dispatch(Runtime &rt, VirtualFile &vf, int fn, void **args);
} // namespace

int vfile_call(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    phase::Scope timer(phase_of(fn));
    if (vf.writer && collective_call(fn)) ++vf.ws->seq; // (the writes it makes take effect after the others)
    if (fn == DTF_FN_ncmpi_close || fn == DTF_FN_ncmpi_abort) return dispatch(rt, vf, fn, args); // (vf is gone)
    if (vf.writer) {
        const int rc = dispatch(rt, vf, fn, args);
        if (syncs_records(vf, fn, args, rc))
            agree_records(rt, vf, false, format("%s on '%s' (session %d)", dtf_pnc_name(fn), vf.path.c_str(),
                                                vf.session));
        return rc;
    }
    // A reader's call looks at the header; once the definition it looked at turned out not to be the
    // file's (final_definition), the calls fail saying so (the one that learned it once it is done;
    // the close once the file is closed, if no call said so before).
    vf.reader.looked = true;
    if (vf.reader.redefined.empty()) {
        const int rc = dispatch(rt, vf, fn, args);
        if (vf.reader.redefined.empty()) return rc;
    }
    const bool told = std::exchange(vf.reader.redefined_told, true);
    throw Error(DTF_ERR_PEER, vf.reader.redefined, told); // (printed once)
}

namespace {

int dispatch(Runtime &rt, VirtualFile &vf, int fn, void **args) {
    switch (fn) {
    case DTF_FN_ncmpi_close: return close_file(rt, vf, false);
    case DTF_FN_ncmpi_abort: return close_file(rt, vf, true);
    case DTF_FN_ncmpi_wait: case DTF_FN_ncmpi_wait_all:
        return vfile_wait(rt, vf, fn == DTF_FN_ncmpi_wait_all, arg<int>(args, 1), arg<int *>(args, 2),
                          arg<int *>(args, 3));
    // bput values are copied at once: the attached buffer is only accounted for, never used.
    case DTF_FN_ncmpi_buffer_attach:
        if (vf.bput_buffer.size > 0) return NC_EPREVATTACHBUF;
        if (arg<MPI_Offset>(args, 1) <= 0) return NC_ENULLBUF;
        vf.bput_buffer.size = arg<MPI_Offset>(args, 1);
        return NC_NOERR;
    case DTF_FN_ncmpi_buffer_detach:
        if (vf.bput_buffer.size == 0) return NC_ENULLABUF;
        if (!vf.bput_buffer.held.empty()) return NC_EPENDINGBPUT;
        vf.bput_buffer = {};
        return NC_NOERR;
    case DTF_FN_ncmpi_inq_buffer_size: case DTF_FN_ncmpi_inq_buffer_usage: {
        if (vf.bput_buffer.size == 0) return NC_ENULLABUF;
        MPI_Offset *out = arg<MPI_Offset *>(args, 1);
        if (out) *out = fn == DTF_FN_ncmpi_inq_buffer_size ? vf.bput_buffer.size : vf.bput_buffer.used();
        return NC_NOERR;
    }
    case DTF_FN_ncmpi_cancel:
        return vfile_cancel(rt, vf, arg<int>(args, 1), arg<int *>(args, 2), arg<int *>(args, 3));
    case DTF_FN_ncmpi_fill_var_rec: return vfile_fill_record(rt, vf, arg<int>(args, 1), arg<MPI_Offset>(args, 2));
    // As PnetCDF counts them: the bytes of the puts and gets in the variables' types; the root has
    // written the header at every enddef, and read the file's first 256 KiB (its header read chunk)
    // at open.
    case DTF_FN_ncmpi_inq_put_size: case DTF_FN_ncmpi_inq_get_size: {
        MPI_Offset *out = arg<MPI_Offset *>(args, 1);
        if (!out) return NC_NOERR;
        if (fn == DTF_FN_ncmpi_inq_put_size) *out = vf.put_bytes;
        else
            *out = vf.get_bytes +
                   (!vf.writer && vf.rank == 0 ? std::min<int64_t>(vf.header.file_size(), kHeaderReadChunk) : 0);
        return NC_NOERR;
    }
    case DTF_FN_ncmpi_inq_file_info: case DTF_FN_ncmpi_get_file_info: { // (the latter: its old name)
        MPI_Info *out = arg<MPI_Info *>(args, 1);
        if (out) *out = file_info(vf);
        return NC_NOERR;
    }
    case DTF_FN_ncmpi_inq_nreqs: {
        int *n = arg<int *>(args, 1);
        if (n) *n = static_cast<int>(vf.pending.size() + vf.pending_puts.size());
        return NC_NOERR;
    }
    default: break;
    }
    if (dtf_pnc_info(fn)->kind != DTF_PNC_KIND_NONE) return vfile_data_call(rt, vf, fn, args);
    int rc = header_call(rt, vf, fn, args);
    if (rc == DTF_PNC_PASS) rc = attribute_call(vf, fn, args);
    if (rc == DTF_PNC_PASS)
        fail(DTF_ERR_UNSUPPORTED, "%s on '%s' is not supported in transfer mode", dtf_pnc_name(fn), vf.path.c_str());
    return rc;
}

} // namespace

} // namespace dtf::runtime
