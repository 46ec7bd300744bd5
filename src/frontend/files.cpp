// File mode: the hand-off of a real file between components, and the PnetCDF dispatch entry points
// (transfer-mode files are handed to vfile.cpp).
//
// Rule (per path, per rank; counters in PathCounters, updated by notices from the other components):
//   read session  (ncmpi_open without NC_WRITE) waits until the other component (the writer) has
//                 closed one more write session than this rank has closed read sessions;
//   write session (ncmpi_create, or ncmpi_open with NC_WRITE) waits until the other component (every
//                 reader, with writer=/readers=) has closed as many read sessions as this rank has closed
//                 write sessions, so that a file is never overwritten while it is being read (skipped
//                 with write_only=1).
// So A writes, B reads, then B writes and A reads (role reversal) works for any number of cycles, and
// nothing polls the file system. The wait is agreed over the communicator given to open/create: all
// ranks proceed or all return the same error.
#include <dlfcn.h>
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "common/clock.hpp"
#include "common/cwd.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "common/trace.hpp"
#include "pnc/args.hpp"
#include "pnc/hook.h"
#include "pnc_info.h"
#include "pnc/real.hpp"
#include "frontend/files.hpp"
#include "frontend/netcdf4.hpp"
#include "runtime/runtime.hpp"
#include "transport/mpi_util.hpp"

extern "C" {
int dtf_pnc_active_ = 0;
unsigned char dtf_pnc_owned_[DTF_PNC_OWNED_MAX];
}

namespace dtf::runtime {

using pnc::real;

namespace {

void set_owned(int ncid, bool owned) {
    if (ncid >= 0 && ncid < DTF_PNC_OWNED_MAX) __atomic_store_n(&dtf_pnc_owned_[ncid], owned ? 1 : 0, __ATOMIC_RELEASE);
}

const bool g_registered = Runtime::register_part(Files::kSlot, [] { return std::unique_ptr<Part>(new Files); });

} // namespace

bool Files::has_open(const std::string &path) const {
    for (const auto &[ncid, vf] : virtual_files)
        if (vf->path == path) return true;
    return false;
}

int Files::writes_unopened(const std::string &path, int session) const {
    for (const auto &[ncid, vf] : virtual_files)
        if (vf->ws && vf->path == path && vf->session == session) return !vf->ws->any_reader_known();
    return -1;
}

void Files::persisted(int64_t stamp) {
    for (auto &[ncid, vf] : virtual_files)
        if (vf->persist_after == stamp) vf->persist_after = 0;
}

void Files::finalizing(Runtime &rt) { end_turns(rt); }

void Files::forget_open(Runtime &rt) {
    for (auto &[key, f] : open_files) {
        log::warn("dtf_finalize: '%s' (ncid %d) is still open; dtf no longer tracks it", f.path.c_str(), f.ncid);
        if (key.first) set_owned(f.ncid, false); // (PnetCDF's)
    }
    open_files.clear();
    for (auto &[ncid, vf] : virtual_files) {
        log::warn("dtf_finalize: '%s' (transfer mode, ncid %d) is still open; its data is dropped", vf->path.c_str(),
                  ncid);
        if (vf->ws) sessions(rt).forsake(vf->ws);
    }
    virtual_files.clear();
}

namespace {
// A filename= with neither '%' nor '/' is a part of the file name (config::part_of_name): rank 0 says so
// once per rule, at the first file it handles whose name is more than the pattern.
void note_part_of_name(Runtime &rt, const Target &t) {
    const std::string name = t.path.substr(t.path.rfind('/') + 1);
    if (rt.component_rank() != 0 || !config::part_of_name(t.rule->pattern) || name == t.rule->pattern ||
        !files(rt).parts_told.insert(t.rule).second)
        return;
    log::notice("'%s' is handled by filename=\"%s\" (%s:%d): a pattern with neither '%%' nor '/' matches every file "
                "whose name contains it, as in the original DTF (one with '%%', such as '%s%%', matches whole names)",
                name.c_str(), t.rule->pattern.c_str(), rt.config().path.c_str(), t.rule->line,
                t.rule->pattern.c_str());
}
} // namespace

bool find_target(Runtime &rt, const char *path, Target *t) {
    if (!path) return false;
    t->path = config::normalize_path(path, current_dir());
    t->rule = rt.config().match(t->path);
    if (!t->rule) return false;
    note_part_of_name(rt, *t);
    const std::string &me = rt.self_name();
    if (!t->rule->involves(me)) {
        log::debug("'%s' matches %s:%d but this component is not in it; passing through", t->path.c_str(),
                   rt.config().path.c_str(), t->rule->line);
        return false;
    }
    for (const std::string &name : t->rule->partners(me)) t->peers.push_back(rt.config().component_index(name));
    return true;
}

namespace {

// writer=/readers=: only the writer writes the file, only the readers read it.
void check_role(Runtime &rt, const Target &t, bool writer, const char *call) {
    const config::FileRule &r = *t.rule;
    if (!r.fixed_roles() || writer == (r.writer == rt.self_name())) return;
    std::string readers;
    for (const auto &name : r.readers) readers += (readers.empty() ? "'" : ", '") + name + "'";
    fail(DTF_ERR_CONFIG, "%s of '%s'%s: %s:%d names '%s' as its writer and %s as its readers, so component '%s' may "
         "only %s", call, t.path.c_str(), writer && std::strstr(call, "_open") ? " with NC_WRITE" : "",
         rt.config().path.c_str(), r.line, r.writer.c_str(), readers.c_str(), rt.self_name().c_str(),
         writer ? "open it for reading" : "create it or open it with NC_WRITE");
}

} // namespace

void wait_for_turn(Runtime &rt, const Target &t, bool writer, const char *call) {
    PathCounters &c = rt.counters(t.path);
    auto name = [&](int component) { return rt.config().component_name(component).c_str(); };
    if (writer && t.rule->write_only) return;
    if (writer) {
        // Every reader has read the last version: in a session of its ranks, or with serial_readers=
        // (default: all) of its processes one by one (a serial file).
        auto serial_done = [&](int p) {
            const auto it = c.serial_reads.find(p);
            if (it == c.serial_reads.end()) return 0;
            const auto n = it->second.find(c.my_writes);
            return n == it->second.end() ? 0 : n->second;
        };
        auto lagging = [&] {
            for (int p : t.peers)
                if (c.peer_reads[p] < c.my_writes && serial_done(p) < rt.serial_readers(t.rule->serial_readers, p))
                    return p;
            return -1;
        };
        rt.wait_until([&] { return lagging() < 0; }, [&] {
            const int p = lagging() < 0 ? t.peers.front() : lagging();
            const std::string serial = c.serial_reads.count(p)
                ? format("; %d of its processes closed it serially, of the %d that read each version (serial_readers=, "
                         "%s:%d)", serial_done(p), rt.serial_readers(t.rule->serial_readers, p),
                         rt.config().path.c_str(), t.rule->line)
                : std::string();
            return format("%s of '%s' waited for component '%s' to finish reading version %d of it before "
                          "overwriting it (it has closed %d read sessions%s)",
                          call, t.path.c_str(), name(p), c.my_writes, c.peer_reads[p], serial.c_str());
        }, [&] { return lagging() < 0 ? t.peers.front() : lagging(); });
    } else {
        rt.wait_until([&] { return c.peer_writes > c.my_reads; }, [&] {
            return format("%s of '%s' waited for component '%s' to close write session %d of it (it has closed "
                          "%d; file mode, %s:%d)",
                          call, t.path.c_str(), name(t.peers.front()), c.my_reads + 1, c.peer_writes,
                          rt.config().path.c_str(), t.rule->line);
        }, t.peers.front());
    }
}

namespace {

// A reader that started after its writer went on without it (Runtime::absent; the writer wrote every
// session of the file for it to the file system): wait until the board says this session's file is
// written (announce_written), then read it there. Sessions pair up in order: the n-th open of the path
// reads the n-th session written.
void wait_on_disk(Runtime &rt, const Target &t, transport::Group &group, const std::string &context) {
    const int from = rt.config().component_index(t.rule->writer);
    const int n = rt.next_disk_session(from, rt.self(), t.path);
    const std::string key = rt.disk_key(from, rt.self(), t.path, n);
    rt.on_all(group, [&] {
        double next = 0;
        bool written = false;
        rt.wait_until([&] {
            if (now_s() >= next) { // (a look at the board every 50 ms at most)
                const auto run = rt.board().get(key);
                written = run && *run == rt.run_id();
                next = now_s() + 0.05;
            }
            return written;
        }, [&] {
            return format("%s waited for component '%s', which went on without this component, to write session %d "
                          "of it to the file system", context.c_str(), t.rule->writer.c_str(), n);
        });
    }, context);
    if (group.rank() == 0)
        log::notice("reading '%s' (session %d) from the file system: component '%s' went on without this component "
                    "and wrote it there", t.path.c_str(), n, t.rule->writer.c_str());
}

// A session of the file closed on every rank of `group`: once every rank has closed (so the data is in
// the file), the other components hear of it (`serial`: one process read it; its writer counts those).
void closed(Runtime &rt, const std::string &path, bool writer, transport::Group &group, const std::vector<int> &peers,
            bool serial = false) {
    rt.barrier(group, format("closing '%s'", path.c_str()));
    PathCounters &c = rt.counters(path);
    const int session = writer ? ++c.my_writes : ++c.my_reads;
    ++(writer ? rt.stats().sessions_written : rt.stats().sessions_read);
    if (group.rank() == 0)
        for (int peer : peers)
            rt.notify(peer, Message{writer ? MessageKind::ClosedWrite : MessageKind::ClosedRead, rt.self(), session,
                                    serial && !writer ? kSerialSession : 0, path, {}});
}

} // namespace

thread_local bool SerialOpen::active_ = false;

int open_or_create(Runtime &rt, const OpenCall &open, int *ncidp) {
    Target t;
    if (!find_target(rt, open.path, &t)) return DTF_PNC_PASS;
    const bool create = open.create;
    const char *call = open.name;
    const int mode = open.mode;
    if (!open.pnetcdf && t.rule->mode == config::Mode::Transfer) {
        if (open.serial && (t.rule->persist || t.rule->falls_back()))
            fail(DTF_ERR_UNSUPPORTED, "%s of '%s' by one process: %s:%d serves it in transfer mode with %s, which dtf "
                 "does not build for serial files yet: leave it out, or serve the file in file mode (mode=\"file\")",
                 call, t.path.c_str(), rt.config().path.c_str(), t.rule->line,
                 t.rule->persist ? "persist=1" : "fallback=");
        if (create && (mode & NC_NETCDF4) && (t.rule->persist || t.rule->falls_back()))
            fail(DTF_ERR_UNSUPPORTED, "%s of '%s' as a netCDF-4 (HDF5) file: %s:%d serves it in transfer mode with %s, "
                 "which dtf does not build for netCDF-4 files yet (it would write a CDF-5 file): leave it out, or "
                 "serve the file in file mode (mode=\"file\")", call, t.path.c_str(), rt.config().path.c_str(),
                 t.rule->line, t.rule->persist ? "persist=1" : "fallback=");
        return kNetcdfTransfer; // (netcdf.cpp makes the call; netCDF-C calls PnetCDF, and dtf serves it there)
    }
    phase::Scope timer(phase::Open);
    const std::string context = format("%s of '%s'", call, t.path.c_str());
    // Within this component's turn on the file (writer_closes), it opens the file as its own, either way.
    const bool in_turn = files(rt).turns.count(t.path) != 0;
    const bool writer = create || (mode & NC_WRITE) || in_turn;
    if (in_turn && create)
        fail(DTF_ERR_UNSUPPORTED, "%s of '%s': this component creates it again while its turn on it lasts "
             "(it closed it %d of the %d times writer_closes= says, %s:%d): open it instead, or set writer_closes to "
             "the number of times it closes this version", call, t.path.c_str(), files(rt).turns.at(t.path).closes,
             t.rule->writer_closes, rt.config().path.c_str(), t.rule->line);
    // The writer of a writer=/readers= file reading it outside a turn of this rank's (after its last
    // close, or a file another of its ranks wrote): in file mode it is on disk, read as plain PnetCDF
    // reads it (no one waits, no one is told); in transfer mode it is not there.
    const bool own_read = !writer && t.rule->fixed_roles() && t.rule->writer == rt.self_name();
    if (own_read && t.rule->mode == config::Mode::Transfer)
        fail(DTF_ERR_UNSUPPORTED, "ncmpi_open of '%s' for reading: this component writes it (%s:%d), and in transfer "
             "mode it reads it back only within its turn on it, on the ranks that wrote it (writer_closes=, now %d: "
             "its turn ends at that close); it cannot read a file after its last close or one another of its ranks "
             "wrote: set writer_closes= to the number of times it closes the file, or mode=\"file\"", t.path.c_str(),
             rt.config().path.c_str(), t.rule->line, t.rule->writer_closes);
    if (own_read) return DTF_PNC_PASS;
    if (!in_turn) check_role(rt, t, writer, call);
    std::shared_ptr<transport::Group> group = rt.group_of(open.comm, context);
    if (!writer && t.rule->fixed_roles() && rt.absent(rt.config().component_index(t.rule->writer))) {
        wait_on_disk(rt, t, *group, context);
        return DTF_PNC_PASS; // a file on disk: plain PnetCDF reads it
    }
    flush_persist(rt, group.get(), t.rule, !writer); // files of persist=1 sessions closed before
    if (t.rule->mode == config::Mode::Transfer) {
        const int rc = in_turn ? resume_turn(rt, t.path, std::move(group), mode, ncidp)
                       : create ? vfile_create(rt, t.path, *t.rule, t.peers, group, mode, ncidp)
                                : vfile_open(rt, t.path, *t.rule, t.peers, group, mode, ncidp);
        if (rc != NC_NOERR) return rc;
        VirtualFile &vf = *files(rt).virtual_file(*ncidp);
        vf.hints = transport::info_entries(open.info);
        if (vf.writer && !vf.header.read_only()) apply_alignment_hints(vf.header, vf.hints);
        return rc;
    }
    if (!in_turn) rt.on_all(*group, [&] { wait_for_turn(rt, t, writer, call); }, context);
    int rc;
    {
        transport::Blocking unlocked; // the library runs without the runtime lock
        rc = open.real(ncidp);
    }
    if (rc != NC_NOERR) return rc;
    OpenFile f;
    f.ncid = *ncidp;
    f.path = t.path;
    f.rule = t.rule;
    f.peers = t.peers;
    f.writer = writer;
    f.group = std::move(group);
    f.serial = open.serial;
    files(rt).open_files[{open.pnetcdf, f.ncid}] = f;
    if (open.pnetcdf) set_owned(f.ncid, true);
    log::debug("%s '%s' (ncid %d) for %s", call, t.path.c_str(), f.ncid, writer ? "writing" : "reading");
    return rc;
}

int close_file(Runtime &rt, bool pnetcdf, int ncid, bool abort, const std::function<int()> &real_close) {
    auto it = files(rt).open_files.find({pnetcdf, ncid});
    if (it == files(rt).open_files.end()) return DTF_PNC_PASS;
    phase::Scope timer(phase::Close);
    OpenFile f = it->second;
    files(rt).open_files.erase(it);
    if (pnetcdf) set_owned(ncid, false);
    int rc;
    {
        transport::Blocking unlocked; // the library runs without the runtime lock
        rc = real_close();
    }
    if (rc != NC_NOERR || abort) {
        log::warn("'%s' was %s; the other component is not told", f.path.c_str(),
                  rc != NC_NOERR ? "not closed cleanly" : "aborted");
        return rc;
    }
    if (f.writer && f.rule->writer_closes > 1) { // the turn goes on until its last close
        Turn &turn = files(rt).turns[f.path];
        if (++turn.closes < f.rule->writer_closes) {
            turn.group = f.group;
            turn.peers = f.peers;
            return rc;
        }
        files(rt).turns.erase(f.path);
    }
    closed(rt, f.path, f.writer, *f.group, f.peers, f.serial);
    return rc;
}

void end_turns(Runtime &rt) {
    // (by path: the same order on every rank)
    while (!files(rt).turns.empty()) {
        auto it = files(rt).turns.begin();
        const std::string path = it->first;
        if (it->second.file) { // transfer mode: closed for the last time
            Turn turn = std::move(it->second);
            files(rt).turns.erase(it);
            close_turn(rt, std::move(turn.file));
            continue;
        }
        Turn turn = std::move(it->second);
        files(rt).turns.erase(it);
        closed(rt, path, true, *turn.group, turn.peers);
    }
}

std::string bypassing_dtf(const char *function) {
    Dl_info used{}, own{};
    void *fn = dlsym(RTLD_DEFAULT, function);
    if (!fn || !dladdr(fn, &used) || !dladdr(reinterpret_cast<void *>(&dtf_pnc_path_call), &own) ||
        used.dli_fbase == own.dli_fbase)
        return {};
    return used.dli_fname && *used.dli_fname ? used.dli_fname : "another library";
}

} // namespace dtf::runtime

using dtf::runtime::Runtime;

// A PnetCDF function that PnetCDF calls from inside another while dtf runs it (Entry::nested())
// belongs to that call: it goes to the real PnetCDF.
namespace {
// Whether a call on a virtual file is a span of the trace: every call but the inquiries and the
// definitions, which only touch the local header (a trace of them would be most of its events).
bool traced(int fn) {
    const char *name = dtf_pnc_name(fn);
    for (const char *local : {"ncmpi_inq", "ncmpi_def_", "ncmpi_put_att", "ncmpi_get_att", "ncmpi_rename_",
                              "ncmpi_copy_att", "ncmpi_del_att"})
        if (std::strncmp(name, local, std::strlen(local)) == 0) return false;
    return true;
}

extern "C" int dtf_pnc_path_call(int fn, void **args) {
    if (dtf::runtime::Entry::nested()) return DTF_PNC_PASS;
    dtf::runtime::Entry entry;
    Runtime *rt = Runtime::instance();
    if (!rt) return DTF_PNC_PASS;
    if (fn != DTF_FN_ncmpi_create && fn != DTF_FN_ncmpi_open) return DTF_PNC_PASS;
    dtf::trace::Span span("pnetcdf", dtf_pnc_name(fn));
    using dtf::pnc::arg;
    if (const char *path = arg<const char *>(args, 1); span.active() && path)
        span.args("\"path\":" + dtf::trace::quote(path));
    const MPI_Comm comm = arg<MPI_Comm>(args, 0);
    const char *path = arg<const char *>(args, 1);
    const int mode = arg<int>(args, 2);
    const MPI_Info info = arg<MPI_Info>(args, 3);
    using OpenFn = int (*)(MPI_Comm, const char *, int, MPI_Info, int *);
    auto open = [&](int *ncidp) { return dtf::pnc::real<OpenFn>(fn)(comm, path, mode, info, ncidp); }; // (may throw)
    const dtf::runtime::OpenCall call{dtf_pnc_name(fn), fn == DTF_FN_ncmpi_create, true, false, comm, path, mode, info,
                                      open};
    return dtf::guard([&] { return dtf::runtime::open_or_create(*rt, call, arg<int *>(args, 4)); });
}

// A call on a virtual ncid (inside an Entry).
int virtual_call(Runtime *rt, int fn, int ncid, void **args) {
    // As PnetCDF 1.12.3: a nonblocking call's request id is NC_REQ_NULL unless the call succeeds
    // (and posts a request), so that a program may wait for a list of ids some of whose calls failed.
    if (const struct dtf_pnc_info *in = dtf_pnc_info(fn); in && in->req >= 0 && !in->multi)
        if (int *req = dtf::pnc::arg<int *>(args, in->req)) *req = NC_REQ_NULL;
    dtf::runtime::VirtualFile *vf = rt ? files(*rt).virtual_file(ncid) : nullptr;
    if (!vf) return NC_EBADID;
    dtf::trace::Span span("pnetcdf", dtf::trace::on() && traced(fn) ? dtf_pnc_name(fn) : nullptr);
    return dtf::guard([&] { return dtf::runtime::vfile_call(*rt, *vf, fn, args); });
}
} // namespace

extern "C" int dtf_pnc_ncid_call(int fn, int ncid, void **args) {
    if (dtf::runtime::Entry::nested()) return DTF_PNC_PASS;
    dtf::runtime::Entry entry;
    Runtime *rt = Runtime::instance();
    if (ncid >= DTF_PNC_VIRTUAL_BASE) return virtual_call(rt, fn, ncid, args);
    if (!rt || (fn != DTF_FN_ncmpi_close && fn != DTF_FN_ncmpi_abort)) return DTF_PNC_PASS;
    dtf::trace::Span span("pnetcdf", dtf_pnc_name(fn));
    return dtf::guard([&] {
        return dtf::runtime::close_file(*rt, true, ncid, fn == DTF_FN_ncmpi_abort,
                                        [&] { return dtf::pnc::real<int (*)(int)>(fn)(ncid); });
    });
}

// netCDF-4's nc_put_vara and nc_get_vara on a virtual file: the PnetCDF call netCDF-C's PnetCDF path
// would make (ncmpi_put_vara_<type>, _all unless the file is in independent mode, which that path keeps
// as netCDF-C's access mode), made here without the path's own inquiries and conversions.
int dtf::runtime::nc4::vara(int ncid, int varid, const size_t *start, const size_t *count, void *value, int memtype,
                            bool put) {
#define DTF_VARA(type) {{DTF_FN_ncmpi_get_vara_##type, DTF_FN_ncmpi_get_vara_##type##_all}, \
                        {DTF_FN_ncmpi_put_vara_##type, DTF_FN_ncmpi_put_vara_##type##_all}}
    static const int kVara[][2][2] = { // by memtype (NC_BYTE .. NC_UINT64), put, collective
        DTF_VARA(schar), DTF_VARA(text),  DTF_VARA(short),  DTF_VARA(int),      DTF_VARA(float),
        DTF_VARA(double), DTF_VARA(uchar), DTF_VARA(ushort), DTF_VARA(uint), DTF_VARA(longlong),
        DTF_VARA(ulonglong)};
#undef DTF_VARA
    static_assert(NC_BYTE == 1 && NC_UINT64 == NC_BYTE + std::size(kVara) - 1);
    if (ncid < DTF_PNC_VIRTUAL_BASE || memtype < NC_BYTE || memtype > NC_UINT64 || Entry::nested())
        return DTF_PNC_PASS;
    Entry entry;
    Runtime *rt = Runtime::instance();
    VirtualFile *vf = rt ? files(*rt).virtual_file(ncid) : nullptr;
    constexpr int kMaxDims = 1024; // netCDF-C's NC_MAX_VAR_DIMS (PnetCDF's is INT_MAX)
    int ndims = 0;
    if (!vf || vf->header.inq_var(varid, nullptr, nullptr, &ndims, nullptr, nullptr) != NC_NOERR || ndims > kMaxDims)
        return DTF_PNC_PASS;
    MPI_Offset s[kMaxDims], c[kMaxDims];
    std::copy(start, start + ndims, s);
    std::copy(count, count + ndims, c);
    const int fn = kVara[memtype - NC_BYTE][put][!vf->header.in_indep_mode()];
    MPI_Offset *sp = s, *cp = c;
    void *args[] = {&ncid, &varid, &sp, &cp, &value};
    return virtual_call(rt, fn, ncid, args);
}
