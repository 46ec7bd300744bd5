// Stream and persist (persist=1 on a transfer-mode file): the readers get the data over MPI, and the
// writer ranks also write the netCDF file that file mode would have written, with the real PnetCDF,
// from what dtf holds anyway: the header model (definitions in their order, fill settings, the final
// record count) and each rank's writes (values in the variable's type). A closed session's file is
// written once its ranks' output is handed over (queue_persist / flush_persist, persist.hpp), so that
// the files they write in between reach their readers first: the reads do not wait for the disk.
//
// A created session makes the file: create (same mode flags and hints), the definitions, enddef, the
// puts (independent, in rounds: put_values), close. A session opened with NC_WRITE continues the file
// the session before it wrote: open, the definitions it added, its puts. That file must be complete
// by then: when another component wrote it, its root said so (MessageKind::Persisted), and the writer
// waits for that message. What the file cannot be made to match (a continued session that renamed or
// deleted definitions; a session whose redefinitions would lay the file out differently in one
// enddef) fails with DTF_ERR_UNSUPPORTED instead of leaving another file than file mode's.
//
// Aggregated output (GRAPES; aggregators=, subfiles=, aggregate_steps= of the rule): the ranks form
// groups of consecutive ranks (config::aggregator_group); each rank sends its writes to its group's
// first rank, which puts them (in the order they took effect, as without aggregators: put_values);
// only those ranks open the file, together, or each its own subfile (arrange). aggregate_steps=k
// holds a rule's jobs until k are queued (flush_persist).
//
// I/O server (CFIO2; ioserver= of the rule): each writer rank sends its part of the job to one server
// rank instead (ship_job: its writes, the values of large ones as messages of their own; the root's
// also how the file is made) and goes on; the server (serve_io, behind dtf_ioserver) receives them,
// writes the file with write_file and tells the readers.
#include <pnetcdf.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <deque>
#include <set>
#include <tuple>

#include "common/bytes.hpp"
#include "common/clock.hpp"
#include "common/log.hpp"
#include "common/phase.hpp"
#include "match/wire.hpp"
#include "pnc/real.hpp"
#include "runtime/runtime.hpp"
#include "output/persist.hpp"
#include "transport/mpi_channel.hpp"
#include "transport/mpi_util.hpp"
#include "types/convert.hpp"

namespace dtf::runtime {

using pnc::call_real;

namespace {

// The real PnetCDF calls the file is written with; each failure throws, naming the call and the file.
class File {
public:
    File(const std::string &path, int session) : path_(path), session_(session) {}

    void check(int rc, const char *call) const {
        if (rc != NC_NOERR)
            fail(rc, "writing '%s' (persist=1, session %d): %s failed: %s", path_.c_str(), session_, call,
                 ncmpi_strerror(rc));
    }
    template <class Fn, class... A> void call(int fn, A... args) {
        check(call_real<Fn>(fn, args...), dtf_pnc_name(fn));
    }
    void create(MPI_Comm comm, int cmode, MPI_Info info) {
        call<int (*)(MPI_Comm, const char *, int, MPI_Info, int *)>(DTF_FN_ncmpi_create, comm, path_.c_str(), cmode,
                                                                    info, &ncid);
    }
    void open(MPI_Comm comm, MPI_Info info) {
        call<int (*)(MPI_Comm, const char *, int, MPI_Info, int *)>(DTF_FN_ncmpi_open, comm, path_.c_str(), NC_WRITE,
                                                                    info, &ncid);
    }
    // Collective. `quiet`: after a failure, whose error is the one reported.
    void close(bool quiet) {
        if (ncid < 0) return;
        const int id = ncid;
        ncid = -1;
        if (!quiet) return call<int (*)(int)>(DTF_FN_ncmpi_close, id);
        call_real<int (*)(int)>(DTF_FN_ncmpi_close, id);
    }
    int ncid = -1;

private:
    std::string path_;
    int session_;
};

void put_att(File &f, int varid, const model::Att &a) {
    f.call<int (*)(int, int, const char *, nc_type, MPI_Offset, const void *)>(
        DTF_FN_ncmpi_put_att, f.ncid, varid, a.name.c_str(), a.type, static_cast<MPI_Offset>(a.len), a.bytes.data());
}

// Whether the file's attribute `name` of `varid` is `a` (type, length and values).
bool same_att(File &f, int varid, const model::Att &a) {
    nc_type type = NC_NAT;
    MPI_Offset len = 0;
    const int rc = call_real<int (*)(int, int, const char *, nc_type *, MPI_Offset *)>(
        DTF_FN_ncmpi_inq_att, f.ncid, varid, a.name.c_str(), &type, &len);
    if (rc != NC_NOERR || type != a.type || len != a.len) return false;
    std::vector<char> bytes(a.bytes.size() + 1);
    f.call<int (*)(int, int, const char *, void *)>(DTF_FN_ncmpi_get_att, f.ncid, varid, a.name.c_str(), bytes.data());
    return std::memcmp(bytes.data(), a.bytes.data(), a.bytes.size()) == 0;
}

// The attributes of `varid` in the model that the file lacks or holds otherwise; the file's
// attributes must be the model's first ones, by name, in order (else the session deleted or renamed
// one, which the file cannot be made to show in the same order).
std::vector<const model::Att *> changed_atts(File &f, int varid, const std::vector<model::Att> &atts, int file_natts,
                                             const std::string &where) {
    std::vector<const model::Att *> out;
    for (int i = 0; i < static_cast<int>(atts.size()); ++i) {
        const model::Att &a = atts[static_cast<size_t>(i)];
        if (i < file_natts) {
            char name[NC_MAX_NAME + 1] = {0};
            f.call<int (*)(int, int, int, char *)>(DTF_FN_ncmpi_inq_attname, f.ncid, varid, i, name);
            if (a.name != name)
                fail(DTF_ERR_UNSUPPORTED,
                     "%s: attribute %d is '%s' in the file and '%s' in this session, which renamed "
                     "or deleted attributes: persist=1 does not reproduce that; write the file anew (ncmpi_create)",
                     where.c_str(), i, name, a.name.c_str());
        }
        if (i >= file_natts || !same_att(f, varid, a)) out.push_back(&a);
    }
    if (file_natts > static_cast<int>(atts.size()))
        fail(DTF_ERR_UNSUPPORTED,
             "%s: this session deleted attributes: persist=1 does not reproduce that; write the file "
             "anew (ncmpi_create)",
             where.c_str());
    return out;
}

// The definitions of `h` the file lacks: all of them for a new file; for a continued one what this
// session added (dimensions, variables, attributes, fill settings of new variables). `own_fills`:
// the session's fills are among its writes (the file of the session's ranks), so PnetCDF fills
// nothing; else (a subfile, which holds the writes of some ranks only) PnetCDF fills the variables in
// fill mode at enddef, as it would in a file of their own.
void define(File &f, const model::Header &h, bool created, bool own_fills, const std::string &where) {
    int ndims = 0, nvars = 0, ngatts = 0, unlim = -1;
    if (!created)
        f.call<int (*)(int, int *, int *, int *, int *)>(DTF_FN_ncmpi_inq, f.ncid, &ndims, &nvars, &ngatts, &unlim);
    if (ndims > static_cast<int>(h.dims().size()) || nvars > static_cast<int>(h.vars().size()))
        fail(DTF_ERR_UNSUPPORTED, "%s: the file has more dimensions or variables than this session", where.c_str());
    // The file's dimensions and variables keep their names in this session (a rename is not reproduced).
    auto same_name = [&](int fn, const char *kind, int i, const std::string &mine) {
        char name[NC_MAX_NAME + 1] = {0};
        f.call<int (*)(int, int, char *)>(fn, f.ncid, i, name);
        if (mine != name)
            fail(DTF_ERR_UNSUPPORTED,
                 "%s: %s %d is '%s' in the file and '%s' in this session (renamed): persist=1 does not reproduce that",
                 where.c_str(), kind, i, name, mine.c_str());
    };
    for (int d = 0; d < ndims; ++d)
        same_name(DTF_FN_ncmpi_inq_dimname, "dimension", d, h.dims()[static_cast<size_t>(d)].name);
    for (int v = 0; v < nvars; ++v)
        same_name(DTF_FN_ncmpi_inq_varname, "variable", v, h.vars()[static_cast<size_t>(v)].name);
    // What changes, worked out before redef (the attribute comparisons read the file).
    std::vector<const model::Att *> gatts = changed_atts(f, NC_GLOBAL, h.global_atts(), ngatts, where);
    std::vector<std::vector<const model::Att *>> vatts(h.vars().size());
    for (int v = 0; v < nvars; ++v) {
        int natts = 0;
        f.call<int (*)(int, int, int *)>(DTF_FN_ncmpi_inq_varnatts, f.ncid, v, &natts);
        vatts[static_cast<size_t>(v)] = changed_atts(f, v, h.vars()[static_cast<size_t>(v)].atts, natts, where);
    }
    for (size_t v = static_cast<size_t>(nvars); v < h.vars().size(); ++v)
        for (const auto &a : h.vars()[v].atts) vatts[v].push_back(&a);
    const bool changes = static_cast<size_t>(ndims) < h.dims().size() || static_cast<size_t>(nvars) < h.vars().size() ||
                         !gatts.empty() ||
                         std::any_of(vatts.begin(), vatts.end(), [](const auto &x) { return !x.empty(); });
    if (!created && !changes) return;
    if (!created) f.call<int (*)(int)>(DTF_FN_ncmpi_redef, f.ncid);
    int old_mode = 0;
    // The file's fill mode first: each variable defined after takes it (then its own, below). (With
    // own_fills, the session's fills at its enddefs and ncmpi_fill_var_rec are writes, in their order:
    // put_values.)
    f.call<int (*)(int, int, int *)>(DTF_FN_ncmpi_set_fill, f.ncid, own_fills ? NC_NOFILL : h.fill_mode(), &old_mode);
    for (size_t d = static_cast<size_t>(ndims); d < h.dims().size(); ++d) {
        int id = -1;
        f.call<int (*)(int, const char *, MPI_Offset, int *)>(DTF_FN_ncmpi_def_dim, f.ncid, h.dims()[d].name.c_str(),
                                                                static_cast<MPI_Offset>(h.dims()[d].len), &id);
    }
    for (size_t v = static_cast<size_t>(nvars); v < h.vars().size(); ++v) {
        const model::Var &var = h.vars()[v];
        int id = -1;
        f.call<int (*)(int, const char *, nc_type, int, const int *, int *)>(
            DTF_FN_ncmpi_def_var, f.ncid, var.name.c_str(), var.type, static_cast<int>(var.dimids.size()),
            var.dimids.data(), &id);
    }
    for (const model::Att *a : gatts) put_att(f, NC_GLOBAL, *a);
    for (size_t v = 0; v < h.vars().size(); ++v)
        for (const model::Att *a : vatts[v]) put_att(f, static_cast<int>(v), *a);
    for (size_t v = static_cast<size_t>(nvars); v < h.vars().size() && !own_fills; ++v)
        f.call<int (*)(int, int, int, const void *)>(DTF_FN_ncmpi_def_var_fill, f.ncid, static_cast<int>(v),
                                                     h.vars()[v].no_fill ? 1 : 0, nullptr);
    f.call<int (*)(int)>(DTF_FN_ncmpi_enddef, f.ncid);
}

// The file laid out as the session's: it may not be where the session redefined the file after its
// first enddef (file mode laid it out in steps, this write in one) or gave ncmpi__enddef free space
// or alignments (this write's enddef has none); the same layout, or an error (never another file).
void check_layout(File &f, const model::Header &h, const std::string &where) {
    MPI_Offset extent = 0;
    int64_t want_extent = 0;
    h.inq_layout(nullptr, &want_extent, nullptr);
    f.call<int (*)(int, MPI_Offset *)>(DTF_FN_ncmpi_inq_header_extent, f.ncid, &extent);
    bool same = extent == want_extent;
    for (size_t v = 0; same && v < h.vars().size(); ++v) {
        MPI_Offset offset = 0;
        int64_t want = 0;
        f.call<int (*)(int, int, MPI_Offset *)>(DTF_FN_ncmpi_inq_varoffset, f.ncid, static_cast<int>(v), &offset);
        same = h.inq_varoffset(static_cast<int>(v), &want) == NC_NOERR && want == offset;
    }
    if (!same)
        fail(DTF_ERR_UNSUPPORTED,
             "%s: written in one step, the file would be laid out otherwise than file mode lays it "
             "out (header extent %lld, file mode's %lld), as the session redefined it after its first enddef or gave "
             "ncmpi__enddef free space or alignments: persist=1 does not reproduce that; define everything before "
             "the first enddef, with ncmpi_enddef",
             where.c_str(), static_cast<long long>(extent), static_cast<long long>(want_extent));
}

void put_one(File &f, const model::Header &h, const WriteRecord &w) {
    const match::Box &b = w.meta.box;
    const nc_type type = h.vars()[static_cast<size_t>(w.meta.varid)].type;
    const MPI_Offset n = b.size();
    std::vector<char> filled; // a fill: its value over the box
    const char *values = w.values();
    if (w.meta.fill) {
        const size_t es = types::type_size(type);
        filled.resize(static_cast<size_t>(n) * es);
        for (MPI_Offset i = 0; i < n; ++i) std::memcpy(filled.data() + static_cast<size_t>(i) * es, values, es);
        values = filled.data();
    }
    if (b.ndims() == 0) {
        f.call<int (*)(int, int, const void *, MPI_Offset, MPI_Datatype)>(
            DTF_FN_ncmpi_put_var, f.ncid, w.meta.varid, static_cast<const void *>(values), n, types::mpi_type(type));
        return;
    }
    const std::vector<MPI_Offset> start(b.start.data(), b.start.data() + b.ndims()),
        count(b.count.data(), b.count.data() + b.ndims()), stride(b.stride.data(), b.stride.data() + b.ndims());
    f.call<int (*)(int, int, const MPI_Offset *, const MPI_Offset *, const MPI_Offset *, const void *, MPI_Offset,
                   MPI_Datatype)>(DTF_FN_ncmpi_put_vars, f.ncid, w.meta.varid, start.data(), count.data(),
                                  stride.data(), static_cast<const void *>(values), n, types::mpi_type(type));
}

// The variables that two ranks of `comm` write in overlapping regions (by the bounding box of each
// rank's writes to the variable), where the order of their writes decides the file's values.
std::vector<bool> shared_vars(MPI_Comm comm, const model::Header &h, const std::vector<const WriteRecord *> &writes) {
    int max_dims = 0; // the most dimensions of any variable
    for (const auto &v : h.vars()) max_dims = std::max(max_dims, static_cast<int>(v.dimids.size()));
    const size_t nvars = h.vars().size(), per = 1 + 2 * static_cast<size_t>(max_dims);
    std::vector<int64_t> mine(nvars * per, 0); // per variable: written, then lo and hi of each dimension
    for (const WriteRecord *wp : writes) {
        const WriteRecord &w = *wp;
        const match::Box &b = w.meta.box;
        if (b.empty()) continue;
        int64_t *v = &mine[static_cast<size_t>(w.meta.varid) * per];
        for (int d = 0; d < b.ndims(); ++d) {
            const int64_t lo = b.start[static_cast<size_t>(d)],
                          hi = lo + (b.count[static_cast<size_t>(d)] - 1) * b.stride[static_cast<size_t>(d)];
            v[1 + d] = v[0] ? std::min(v[1 + d], lo) : lo;
            v[1 + max_dims + d] = v[0] ? std::max(v[1 + max_dims + d], hi) : hi;
        }
        v[0] = 1;
    }
    int size = 1;
    MPI_Comm_size(comm, &size);
    std::vector<int64_t> all(mine.size() * static_cast<size_t>(size));
    {
        transport::Blocking unlocked; // as PnetCDF's own collectives
        transport::check_mpi(MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(),
                                           static_cast<int>(mine.size()), MPI_INT64_T, comm),
                             "MPI_Allgather (persist=1)");
    }
    std::vector<bool> shared(nvars, false);
    for (size_t v = 0; v < nvars; ++v) {
        const int nd = static_cast<int>(h.vars()[v].dimids.size());
        for (int a = 0; a < size && !shared[v]; ++a)
            for (int b = a + 1; b < size && !shared[v]; ++b) {
                const int64_t *x = &all[(static_cast<size_t>(a) * nvars + v) * per],
                              *y = &all[(static_cast<size_t>(b) * nvars + v) * per];
                bool meet = x[0] && y[0];
                for (int d = 0; meet && d < nd; ++d)
                    meet = x[1 + d] <= y[1 + max_dims + d] && y[1 + d] <= x[1 + max_dims + d];
                shared[v] = meet;
            }
    }
    return shared;
}

// The rounds of shared writes (put_values): the (seq, rank) pairs of every rank's writes to shared
// variables, in the order they took effect (match::applies_before), the same list on every rank of `comm`.
std::vector<std::pair<uint64_t, int>> shared_rounds(MPI_Comm comm, const std::vector<const WriteRecord *> &writes,
                                                    const std::vector<bool> &shared) {
    std::vector<int64_t> mine; // this rank's seqs, distinct
    for (const WriteRecord *w : writes)
        if (shared[static_cast<size_t>(w->meta.varid)]) mine.push_back(static_cast<int64_t>(w->meta.seq));
    std::sort(mine.begin(), mine.end());
    mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
    int size = 1, n = static_cast<int>(mine.size());
    MPI_Comm_size(comm, &size);
    std::vector<int> counts(static_cast<size_t>(size)), displs(static_cast<size_t>(size), 0);
    std::vector<int64_t> all;
    {
        transport::Blocking unlocked;
        transport::check_mpi(MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, comm),
                             "MPI_Allgather (persist=1)");
        for (int r = 1; r < size; ++r)
            displs[static_cast<size_t>(r)] = displs[static_cast<size_t>(r) - 1] + counts[static_cast<size_t>(r) - 1];
        all.resize(static_cast<size_t>(displs.back() + counts.back()));
        transport::check_mpi(MPI_Allgatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(),
                                            MPI_INT64_T, comm), "MPI_Allgatherv (persist=1)");
    }
    std::vector<std::pair<uint64_t, int>> rounds;
    for (int r = 0; r < size; ++r)
        for (int i = 0; i < counts[static_cast<size_t>(r)]; ++i)
            rounds.emplace_back(static_cast<uint64_t>(all[static_cast<size_t>(displs[static_cast<size_t>(r)] + i)]), r);
    std::sort(rounds.begin(), rounds.end());
    return rounds;
}

// This rank's writes, each as its own independent put (PnetCDF's nonblocking puts of one rank,
// combined at wait into one write, can write bytes of the alignment padding next to a small variable
// that file mode leaves zero), in rounds that end in a collective call (every rank reaches each,
// whatever failed before on this one): first the writes to variables no other rank writes in the same
// region, each rank's in its order; then the others, one round per (seq, rank) in the order they took
// effect, so that the file holds what the readers got (match::applies_before). Fills are writes too
// (of the fill value: the file is made without PnetCDF's own fills, see define()).
void put_values(File &f, MPI_Comm comm, const model::Header &h, std::vector<const WriteRecord *> writes) {
    // (an aggregator's or I/O server's writes come from several ranks: in the order they took effect)
    std::stable_sort(writes.begin(), writes.end(), [](const WriteRecord *a, const WriteRecord *b) {
        return std::make_tuple(a->meta.seq, a->meta.rank, a->meta.id) <
               std::make_tuple(b->meta.seq, b->meta.rank, b->meta.id);
    });
    const std::vector<bool> shared = shared_vars(comm, h, writes);
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const bool any_shared = std::find(shared.begin(), shared.end(), true) != shared.end();
    const std::vector<std::pair<uint64_t, int>> rounds =
        any_shared ? shared_rounds(comm, writes, shared) : std::vector<std::pair<uint64_t, int>>{};
    std::exception_ptr failed;
    // round -1: the writes to variables no other rank writes there; then rounds[i]
    for (int round = -1; round < static_cast<int>(rounds.size()); ++round) {
        f.call<int (*)(int)>(DTF_FN_ncmpi_begin_indep_data, f.ncid);
        for (const WriteRecord *wp : writes) try {
            const WriteRecord &w = *wp;
            const bool in = !shared[static_cast<size_t>(w.meta.varid)]
                                ? round < 0
                                : round >= 0 && rounds[static_cast<size_t>(round)] == std::make_pair(w.meta.seq, rank);
            if (in && !failed) put_one(f, h, w);
        } catch (...) {
            if (!failed) failed = std::current_exception();
        }
        f.call<int (*)(int)>(DTF_FN_ncmpi_end_indep_data, f.ncid);
        if (!rounds.empty()) { // (PnetCDF synchronizes the ranks there only in a file with record variables)
            transport::Blocking unlocked;
            transport::check_mpi(MPI_Barrier(comm), "MPI_Barrier (persist=1)");
        }
    }
    if (failed) std::rethrow_exception(failed);
    // A record count that no write reaches (a zero-length put beyond the last record): PnetCDF counts
    // it too, so a zero-length put there makes it the same.
    const int unlim = h.unlimdimid();
    if (unlim < 0) return;
    MPI_Offset numrecs = 0;
    f.call<int (*)(int, int, MPI_Offset *)>(DTF_FN_ncmpi_inq_dimlen, f.ncid, unlim, &numrecs);
    if (numrecs >= h.numrecs()) return;
    for (size_t v = 0; v < h.vars().size(); ++v) {
        if (!h.is_record_var(static_cast<int>(v))) continue;
        std::vector<MPI_Offset> start(h.vars()[v].dimids.size(), 0), count(start.size(), 0);
        start[0] = h.numrecs() - 1;
        f.call<int (*)(int, int, const MPI_Offset *, const MPI_Offset *, const void *, MPI_Offset, MPI_Datatype)>(
            DTF_FN_ncmpi_put_vara_all, f.ncid, static_cast<int>(v), start.data(), count.data(),
            static_cast<const void *>(nullptr), MPI_Offset{0}, types::mpi_type(h.vars()[v].type));
        break;
    }
}

// How a closed session's file is made (by its writer ranks, or by an I/O server).
struct FileSpec {
    const std::string &path;
    int session;
    const model::Header &header;
    const std::vector<std::pair<std::string, std::string>> &hints;
    int cmode;
    bool continued;
    int enddefs;
    bool subfile = false; // subfiles=1: one of the aggregators' files (define())
};

// Write it with the real PnetCDF, collective over `comm`: create it (or open it, when the session
// continued the file), the definitions, each rank's `writes`, close. Throws this rank's failure.
void write_file(const FileSpec &spec, MPI_Comm comm, const std::vector<const WriteRecord *> &writes,
                const std::string &where) {
    MPI_Info info = transport::make_info(spec.hints);
    File f(spec.path, spec.session);
    std::exception_ptr failed;
    try { // create and open fail on every rank alike (PnetCDF agrees)
        if (spec.continued) f.open(comm, info);
        else f.create(comm, spec.cmode, info);
    } catch (...) {
        failed = std::current_exception();
    }
    if (info != MPI_INFO_NULL) MPI_Info_free(&info);
    if (failed) std::rethrow_exception(failed);
    try { // the definitions fail alike too (same calls on every rank), a put on its rank only
        define(f, spec.header, !spec.continued, !spec.subfile, where);
        if (!spec.continued) check_layout(f, spec.header, where);
        put_values(f, comm, spec.header, writes);
    } catch (...) {
        failed = std::current_exception();
    }
    f.close(failed != nullptr);
    if (failed) std::rethrow_exception(failed);
}

// The bytes a write keeps: its box's elements, or a fill's value.
size_t value_bytes(const model::Header &h, const WriteRecord &w) {
    return static_cast<size_t>(w.meta.fill ? 1 : w.meta.box.size()) *
           types::type_size(h.vars()[static_cast<size_t>(w.meta.varid)].type);
}

// An MPI communicator made for one write (MPI_Comm_split), freed with it.
struct Comm {
    MPI_Comm comm = MPI_COMM_NULL;
    Comm() = default;
    Comm(const Comm &) = delete;
    Comm &operator=(const Comm &) = delete;
    ~Comm() {
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
};

void split(MPI_Comm comm, int color, int key, Comm *out) {
    transport::Blocking unlocked;
    transport::check_mpi(MPI_Comm_split(comm, color, key, &out->comm), "MPI_Comm_split (persist=1, aggregators=)");
}

// What one rank writes to one file: its own writes, or with aggregators=, an aggregator's: the writes
// of its group's ranks (put_values orders them), the others' values in
// `received`; the ranks that are not aggregators write nothing.
struct Output {
    bool writes_file = true;
    int group = 0;                    // aggregator group (subfiles=1: which subfile)
    MPI_Comm writers = MPI_COMM_NULL; // the ranks that write (the file, or with subfiles=1 each its own)
    MPI_Comm comm = MPI_COMM_NULL;    // the ranks that write the file together
    Comm split_group, split_writers;
    std::vector<const WriteRecord *> writes;
    std::vector<WriteRecord> others;            // the group's other ranks' writes (values in `received`)
    std::vector<std::vector<char>> received;
};

constexpr size_t kChunk = size_t{1} << 30; // bytes per message (MPI counts are int)

// Send `bytes` to rank `to` of `comm`: the size, then the bytes in chunks.
void send_bytes(MPI_Comm comm, int to, const std::vector<char> &bytes) {
    transport::Blocking unlocked;
    int64_t n = static_cast<int64_t>(bytes.size());
    transport::check_mpi(MPI_Send(&n, 1, MPI_INT64_T, to, 0, comm), "MPI_Send (persist=1, aggregators=)");
    for (size_t at = 0; at < bytes.size(); at += kChunk)
        transport::check_mpi(
            MPI_Send(bytes.data() + at, static_cast<int>(std::min(kChunk, bytes.size() - at)), MPI_BYTE, to, 1, comm),
            "MPI_Send (persist=1, aggregators=)");
}

std::vector<char> recv_bytes(MPI_Comm comm, int from) {
    transport::Blocking unlocked;
    int64_t n = 0;
    transport::check_mpi(MPI_Recv(&n, 1, MPI_INT64_T, from, 0, comm, MPI_STATUS_IGNORE),
                         "MPI_Recv (persist=1, aggregators=)");
    std::vector<char> bytes(static_cast<size_t>(n));
    for (size_t at = 0; at < bytes.size(); at += kChunk)
        transport::check_mpi(MPI_Recv(bytes.data() + at, static_cast<int>(std::min(kChunk, bytes.size() - at)),
                                      MPI_BYTE, from, 1, comm, MPI_STATUS_IGNORE),
                             "MPI_Recv (persist=1, aggregators=)");
    return bytes;
}

// Values of a write at least this large go to the I/O server as a message of their own, straight from
// dtf's copy (ship_job), rather than copied into the part's message: each rank's hand-off then
// copies nothing, and Open MPI's shared-memory transport moves each one with a single-copy read.
constexpr size_t kSentApart = size_t{64} << 10;

// What comes before the values in pack_writes(): the writes' metadata (match::encode), then for each
// its flags (2: its values come apart, not after the head); *values: the bytes of values after it.
std::vector<char> writes_head(const model::Header &h, const std::vector<WriteRecord> &writes, size_t apart,
                              size_t *values) {
    std::vector<match::WriteReq> metas;
    metas.reserve(writes.size());
    *values = 0;
    for (const WriteRecord &w : writes) metas.push_back(w.meta);
    const std::vector<char> m = match::encode(metas);
    ByteWriter out;
    out.i64(static_cast<int64_t>(m.size()));
    out.raw(m.data(), m.size());
    for (const WriteRecord &w : writes) {
        const size_t n = value_bytes(h, w);
        out.i32(n >= apart ? 2 : 0);
        if (n < apart) *values += n;
    }
    return out.take();
}

// A rank's writes for its aggregator: the head, then the values.
std::vector<char> pack_writes(const model::Header &h, const std::vector<WriteRecord> &writes) {
    size_t total = 0;
    std::vector<char> bytes = writes_head(h, writes, SIZE_MAX, &total);
    bytes.reserve(bytes.size() + total);
    for (const WriteRecord &w : writes) bytes.insert(bytes.end(), w.values(), w.values() + value_bytes(h, w));
    return bytes;
}

// p.bytes() of the head and the values of the writes below `apart` bytes (copied once); the caller
// sends the others' values apart, in order.
void pack_writes(PayloadWriter &p, const model::Header &h, const std::vector<WriteRecord> &writes, size_t apart) {
    size_t total = 0;
    const std::vector<char> head = writes_head(h, writes, apart, &total);
    p.bytes_header(head.size() + total);
    p.raw(head.data(), head.size());
    for (const WriteRecord &w : writes)
        if (const size_t n = value_bytes(h, w); n < apart) p.raw(w.values(), n);
}

// The writes of pack_writes(), their values referring to `bytes`; those whose values come apart get a
// buffer of their size in `data`, and their positions in *out are added to *apart (nullptr: none may).
void unpack_writes(const model::Header &h, const std::vector<char> &bytes, std::vector<WriteRecord> *out,
                   std::vector<size_t> *apart, const std::string &where) {
    auto bad = [&] {
        fail(DTF_ERR_INTERNAL, "%s: malformed writes from a rank of the aggregator group", where.c_str());
    };
    ByteReader in(bytes.data(), bytes.size());
    int64_t mlen = 0;
    if (!in.i64(&mlen) || mlen < 0 || static_cast<uint64_t>(mlen) > in.left()) bad();
    const size_t meta_at = bytes.size() - in.left();
    std::vector<match::WriteReq> metas = match::decode_writes(bytes.data() + meta_at, static_cast<size_t>(mlen));
    size_t at = meta_at + static_cast<size_t>(mlen) + 4 * metas.size();
    if (at > bytes.size()) bad();
    ByteReader flags(bytes.data() + meta_at + static_cast<size_t>(mlen), 4 * metas.size());
    for (size_t i = 0; i < metas.size(); ++i) {
        int32_t flag = 0;
        flags.i32(&flag);
        WriteRecord w;
        w.meta = std::move(metas[i]);
        if (w.meta.varid < 0 || static_cast<size_t>(w.meta.varid) >= h.vars().size() || (flag & ~2) != 0) bad();
        const size_t n = value_bytes(h, w);
        if (flag & 2) {
            if (!apart) bad();
            apart->push_back(out->size());
            w.data.resize(n);
        } else {
            if (n > bytes.size() - at) bad();
            w.borrowed = bytes.data() + at;
            at += n;
        }
        out->push_back(std::move(w));
    }
}

// Who writes what of `writes` (aggregators=, subfiles=): collective over `comm`.
void arrange(Output *o, MPI_Comm comm, const config::FileRule &rule, const model::Header &h,
             const std::vector<WriteRecord> &writes, const std::string &where) {
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    o->comm = o->writers = comm;
    if (rule.aggregators < 1 || (rule.aggregators >= size && !rule.subfiles)) { // every rank writes its own
        for (const WriteRecord &w : writes) o->writes.push_back(&w);
        return;
    }
    o->group = config::aggregator_group(rank, size, rule.aggregators);
    const int first = config::aggregator_rank(o->group, size, rule.aggregators);
    o->writes_file = rank == first;
    split(comm, o->group, rank, &o->split_group);
    int members = 1;
    MPI_Comm_size(o->split_group.comm, &members);
    if (!o->writes_file) {
        send_bytes(o->split_group.comm, 0, pack_writes(h, writes));
    } else {
        for (int m = 1; m < members; ++m) o->received.push_back(recv_bytes(o->split_group.comm, m));
        for (const auto &bytes : o->received) unpack_writes(h, bytes, &o->others, nullptr, where);
        for (const WriteRecord &w : writes) o->writes.push_back(&w);
        for (const WriteRecord &w : o->others) o->writes.push_back(&w);
    }
    split(comm, o->writes_file ? 0 : MPI_UNDEFINED, rank, &o->split_writers);
    o->writers = o->split_writers.comm;
    o->comm = rule.subfiles ? MPI_COMM_SELF : o->writers;
}

// How a file is made, as the writer root tells its I/O server (read_part reads it).
void describe_file(PayloadWriter &w, const model::Header &header, int cmode, bool continued, int enddefs, int64_t after,
                   bool fallback, const std::vector<int> &readers,
                   const std::vector<std::pair<std::string, std::string>> &hints) {
    w.bytes(header.encode());
    w.i32(cmode);
    w.i32(continued ? 1 : 0);
    w.i32(enddefs);
    w.i64(after);
    w.i32(fallback ? 1 : 0);
    w.ints(readers);
    w.i32(static_cast<int32_t>(hints.size()));
    for (const auto &[key, value] : hints) w.str(key), w.str(value);
}

// Once a session's file of component `writer` is written (its root, or its I/O server's root): tell
// every rank of its reader components that are still there (Persisted), and, when the readers were
// given up (fallback=), that they read it there (FileWritten); for a reader that never connected, put
// that on the board (Runtime::disk_key), where it finds it if it starts later in this run.
void announce_written(Runtime &rt, int writer, const std::string &path, int session, int64_t stamp,
                      const std::vector<int> &readers, bool fallback) {
    PayloadWriter p;
    p.i64(stamp);
    const std::vector<char> payload = p.take();
    for (int reader : readers) {
        if (fallback && rt.absent(reader) && !rt.run_id().empty())
            rt.board().put(rt.disk_key(writer, reader, path, rt.next_disk_session(writer, reader, path)),
                           rt.run_id());
        if (rt.lost(reader)) continue; // (it takes no message)
        rt.notify(reader, Message{MessageKind::Persisted, 0, session, 0, path, payload});
        if (fallback) rt.notify(reader, Message{MessageKind::FileWritten, 0, session, 0, path, payload});
    }
}

// ioserver=: this rank's part of `job` to its I/O server rank (the writer ranks in groups of
// consecutive ranks, one per server rank, as aggregators= groups them): its writes, and from the root
// how the file is made. Nothing waits: the message goes out in progress(), and the server writes the
// file, orders it after the session it continues, and tells the readers (Persisted).
void ship_job(Runtime &rt, PersistJob &job, const std::string &where, double t0) {
    const int server = rt.config().component_index(job.rule->ioserver);
    if (!rt.connected_to(server))
        fail(DTF_ERR_INTERNAL, "%s: not connected to the I/O server '%s'", where.c_str(), job.rule->ioserver.c_str());
    const int size = job.group->size(), to = config::aggregator_group(job.rank, size, rt.peer(server).remote_size);
    PayloadWriter p;
    p.i64(job.stamp);
    p.i32(size);
    p.i32(job.rank);
    p.i32(job.rank == 0 ? 1 : 0);
    if (job.rank == 0)
        describe_file(p, job.header, job.cmode, job.continued, job.enddefs, job.persist_after, job.fallback,
                      job.readers, job.hints);
    pack_writes(p, job.header, *job.writes, kSentApart);
    rt.send(server, to, Message{MessageKind::PersistData, 0, job.session, 0, job.path, p.take()});
    // The large values after it, in place, on the session's data tag (the server receives them once it
    // writes the file); the session's writes stay until the last is sent, then the copies made for the
    // file alone go.
    auto writes = std::shared_ptr<const void>(nullptr, [kept = job.writes](const void *) {
        for (WriteRecord &w : *kept)
            if (w.persist_copy) std::vector<char>().swap(w.data);
    });
    const transport::Tag tag = rt.data_tag(rt.self(), job.stamp);
    for (const WriteRecord &w : *job.writes) {
        const size_t n = value_bytes(job.header, w);
        rt.stats().persist_bytes += static_cast<long>(n);
        if (n >= kSentApart)
            rt.peer_link(server).channel->send(to, tag, w.values(), n, writes, "sending values to the I/O server");
    }
    rt.stats().persist_s += now_s() - t0;
    log::debug("%s: sent to I/O server '%s' rank %d", where.c_str(), job.rule->ioserver.c_str(), to);
}

// Write the file of `job` (collective over its group), then tell its readers.
void write_job(Runtime &rt, PersistJob &job) {
    phase::Scope timer(phase::Close);
    const double t0 = now_s();
    const std::string where = format("writing '%s' (persist=1, %s:%d, session %d)", job.path.c_str(),
                                     rt.config().path.c_str(), job.rule->line, job.session);
    const MPI_Comm comm = transport::mpi_comm_of(*job.group);
    if (comm == MPI_COMM_NULL)
        fail(DTF_ERR_UNSUPPORTED, "%s: the file's ranks are not an MPI communicator", where.c_str());
    if (!job.rule->ioserver.empty()) return ship_job(rt, job, where, t0);
    // The readers first: a session the progress thread still serves (buffer_data=1) is served before
    // a byte of its file is written, which would otherwise hold the runtime lock and the core the
    // serving needs. A reader that does not take its data in DTF_TIMEOUT does not keep the file from
    // being written (its session goes on being served, and a lost reader is reported as usual).
    if (job.await_readers) try {
        job.await_readers(where);
    } catch (const Error &e) {
        log::warn("%s; written all the same", e.what());
    }
    // A continued session: the session before it must be in the file (its writer says so).
    if (job.persist_after != 0)
        rt.wait_until([&] { return job.persist_after == 0; }, [&] {
            return format("%s waited for component '%s' to write the session before it to the file", where.c_str(),
                          rt.config().component_name(job.readers.front()).c_str());
        }, job.readers.front());
    // The values go to the aggregators (agreed over every rank); a rank that is not one is done then.
    Output out;
    rt.on_all(*job.group, [&] { arrange(&out, comm, *job.rule, job.header, *job.writes, where); }, where);
    if (out.writes_file) transport::on_all(out.writers, [&] {
        const std::string path = job.rule->subfiles ? config::subfile_path(job.path, out.group) : job.path;
        write_file(
            {path, job.session, job.header, job.hints, job.cmode, job.continued, job.enddefs, job.rule->subfiles},
            out.comm, out.writes, where);
    });
    log::debug("%s: done", where.c_str());
    for (const WriteRecord &w : *job.writes)
        rt.stats().persist_bytes += static_cast<long>(value_bytes(job.header, w));
    for (WriteRecord &w : *job.writes) // the copies made for the file alone (the session is served)
        if (w.persist_copy) rt.buffers().give(std::move(w.data));
    rt.stats().persist_s += now_s() - t0;
    if (job.rank != 0) return;
    ++rt.stats().files_persisted;
    announce_written(rt, rt.self(), job.path, job.session, job.stamp, job.readers, job.fallback);
}

} // namespace

void queue_persist(Runtime &rt, std::shared_ptr<PersistJob> job, bool write_now) {
    const std::shared_ptr<transport::Group> group = job->group; // (the job may go once written)
    // Values still in the user's buffers (buffer_data=0) are copied where they outlive the close: the
    // program owns its buffers again once it returns. (Such a session was served before: nothing else
    // reads them.) A file these ranks write now is written from the buffers themselves; the sends to
    // an I/O server may still be under way when the close returns.
    // The copies of a file these ranks write come from the runtime's pool and go back to it once
    // written: a cycle copies the same sizes again, into memory already mapped (a fresh page costs a
    // fault; this copy delays the hand-off of the files closed after it). Those for an I/O server are
    // freed when their sends complete, which may be outside the runtime lock the pool needs.
    auto own = [&rt](PersistJob &j) {
        for (WriteRecord &w : *j.writes)
            if (w.borrowed) {
                const size_t n = value_bytes(j.header, w);
                if (j.rule->ioserver.empty()) {
                    w.data = rt.buffers().take(n);
                    std::memcpy(w.data.data(), w.borrowed, n);
                } else {
                    w.data.assign(w.borrowed, w.borrowed + n);
                }
                w.borrowed = nullptr;
                w.persist_copy = true;
            }
    };
    if (!write_now || !job->rule->ioserver.empty()) own(*job);
    persist_queue(rt).jobs.push_back(std::move(job));
    std::exception_ptr failed;
    if (write_now) try {
        flush_persist(rt, group.get(), nullptr, true);
    } catch (...) {
        failed = std::current_exception();
    }
    for (const auto &j : persist_queue(rt).jobs) own(*j); // left queued (aggregate_steps=, or not due)
    if (failed) std::rethrow_exception(failed);
}

void flush_persist(Runtime &rt, const transport::Group *group, const config::FileRule *rule, bool reading) {
    auto &jobs = persist_queue(rt).jobs;
    auto mine = [&](const PersistJob &j) { return !group || j.group->component_ranks() == group->component_ranks(); };
    // aggregate_steps=k: a rule's files wait until k of its sessions are closed (or dtf_finalize). A
    // read open writes them too where the other component may continue the file (comp1/comp2): it
    // could be waiting for them while this one waits for its data.
    auto held = [&](const PersistJob &j) {
        const int k = j.rule->aggregate_steps;
        if (k <= 1 || !group || (reading && !j.rule->fixed_roles())) return false;
        const auto same_rule = [&](const auto &o) { return mine(*o) && o->rule == j.rule; };
        return std::count_if(jobs.begin(), jobs.end(), same_rule) < k;
    };
    auto due = [&](const PersistJob &j) { return !j.writing && mine(j) && !held(j); };
    if (std::none_of(jobs.begin(), jobs.end(),
                     [&](const auto &j) { return due(*j) && (reading || !group || j->rule == rule); }))
        return;
    // Every job of those ranks, in the order they closed (the same on each rank). They stay in the
    // list while they are written, where the Persisted message a continued one waits for finds them.
    std::vector<std::shared_ptr<PersistJob>> writing;
    for (auto &j : jobs)
        if (due(*j)) writing.push_back(j);
    for (auto &j : writing) j->writing = true;
    std::exception_ptr failed;
    for (const auto &job : writing) {
        try { // one failure does not keep the other files from being written
            write_job(rt, *job);
        } catch (...) {
            if (!failed) failed = std::current_exception();
        }
        jobs.erase(std::find(jobs.begin(), jobs.end(), job));
    }
    if (failed) std::rethrow_exception(failed);
}

namespace {
const bool g_registered =
    Runtime::register_part(PersistQueue::kSlot, [] { return std::unique_ptr<Part>(new PersistQueue); });
} // namespace

void PersistQueue::finish(Runtime &rt, const char *) { end_persist(rt); }

void end_persist(Runtime &rt) {
    flush_persist(rt, nullptr, nullptr, false);
    if (rt.component_rank() != 0) return;
    std::set<int> servers;
    for (const auto &rule : rt.config().files)
        if (!rule.ioserver.empty() && rule.involves(rt.self_name()))
            servers.insert(rt.config().component_index(rule.ioserver));
    for (int server : servers) rt.send(server, 0, Message{MessageKind::PersistDone, 0, 0, 0, rt.self_name(), {}});
}

namespace {

// One writer rank's part of a session's file at the I/O server (ship_job).
struct Shipment {
    int from = -1;  // the writer component
    int source = -1; // the writer rank that sent it (its rank in the component)
    std::string path;
    int session = 0;
    int64_t stamp = 0;
    int writers = 0, writer_rank = 0;
    bool described = false; // the root's: how the file is made
    model::Header header;
    int cmode = 0, enddefs = 0;
    bool continued = false;
    int64_t after = 0; // the session it continues, when its file is not written yet
    bool fallback = false; // PersistJob::fallback
    std::vector<int> readers;
    std::vector<std::pair<std::string, std::string>> hints;
    std::vector<char> writes; // pack_writes()
};

// `with_writes`: also the writes (else only what the description says, for the other server ranks).
Shipment read_part(const Message &m, bool with_writes) {
    Shipment p;
    p.from = m.from_component;
    p.source = m.source;
    p.path = m.path;
    p.session = m.session;
    PayloadReader r(m.payload, "persist-data");
    p.stamp = r.i64();
    p.writers = r.i32();
    p.writer_rank = r.i32();
    p.described = r.i32() != 0;
    if (p.described) {
        const std::vector<char> header = r.bytes();
        if (model::Header::decode(header.data(), header.size(), &p.header) != NC_NOERR)
            fail(DTF_ERR_PEER, "malformed header of '%s' from component %d (persist-data)", p.path.c_str(), p.from);
        p.cmode = r.i32();
        p.continued = r.i32() != 0;
        p.enddefs = r.i32();
        p.after = r.i64();
        p.fallback = r.i32() != 0;
        p.readers = r.ints(1 << 16);
        for (int n = r.i32(); n > 0; --n) {
            std::string key = r.str();
            p.hints.emplace_back(std::move(key), r.str());
        }
    }
    if (with_writes) p.writes = r.bytes();
    return p;
}

// The description of a root's part, without its writes (what the server root tells its other ranks).
std::vector<char> description(const Shipment &p) {
    PayloadWriter part; // as ship_job writes it, without the writes
    part.i64(p.stamp);
    part.i32(p.writers);
    part.i32(p.writer_rank);
    part.i32(1);
    describe_file(part, p.header, p.cmode, p.continued, p.enddefs, p.after, p.fallback, p.readers, p.hints);
    PayloadWriter w;
    w.i32(p.from);
    w.str(p.path);
    w.i32(p.session);
    w.bytes(part.take());
    return w.take();
}

Shipment from_description(const std::vector<char> &bytes) {
    PayloadReader r(bytes, "I/O server job");
    Message m;
    m.from_component = r.i32();
    m.path = r.str();
    m.session = r.i32();
    m.payload = r.bytes();
    return read_part(m, false);
}

// The values the writer ranks sent apart from their parts (ship_job), into the records' buffers: in
// each rank's order, on the session's data tag. When the wait fails the buffers are left to the
// runtime, since MPI may still fill a receive it had begun.
void receive_apart(Runtime &rt, const Shipment &job, std::vector<WriteRecord> &records,
                   const std::vector<size_t> &apart, const std::vector<int> &sources, const std::string &where) {
    if (apart.empty()) return;
    transport::Channel &channel = *rt.peer_link(job.from).channel;
    const transport::Tag tag = rt.data_tag(job.from, job.stamp);
    std::vector<transport::Ticket> tickets;
    for (size_t i = 0; i < apart.size(); ++i) {
        std::vector<char> &data = records[apart[i]].data;
        tickets.push_back(
            channel.receive(sources[i], tag, data.data(), data.size(), "receiving values for the I/O server"));
    }
    try {
        rt.wait_until([&] { return channel.done(tickets); }, [&] {
            return format("%s waited for %zu bytes of values from its writer ranks", where.c_str(),
                          channel.pending_bytes(tickets));
        }, job.from);
    } catch (...) {
        channel.cancel(tickets);
        for (size_t i : apart) rt.keep_until_finalize(std::move(records[i].data));
        throw;
    }
}

int64_t stamp_of(const Message &m) { return PayloadReader(m.payload, "persist-data").i64(); }

bool is_described(const Message &m) {
    PayloadReader r(m.payload, "persist-data");
    r.i64(), r.i32(), r.i32();
    return r.i32() != 0;
}

// The server root's choice of the next file to write (empty: none, the clients are done), to every
// server rank. The other ranks wait here as long as the root waits for work, so they wait as it does:
// taking the messages that come meanwhile (the clients' parts) and sleeping between looks, instead
// of spinning in MPI_Bcast on a core the clients may need.
std::vector<char> broadcast(Runtime &rt, MPI_Comm comm, std::vector<char> bytes) {
    auto bcast = [&](void *buf, int count, MPI_Datatype type) {
        MPI_Request req;
        transport::check_mpi(MPI_Ibcast(buf, count, type, 0, comm, &req), "MPI_Ibcast (I/O server)");
        Backoff backoff(50e-6, 5e-3);
        for (int done = 0;;) {
            transport::check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test (I/O server)");
            if (done) return;
            rt.progress();
            rt.idle(backoff.next());
        }
    };
    int64_t n = static_cast<int64_t>(bytes.size());
    bcast(&n, 1, MPI_INT64_T);
    if (n > INT32_MAX)
        fail(DTF_ERR_UNSUPPORTED, "I/O server: a file's description of %lld bytes", static_cast<long long>(n));
    bytes.resize(static_cast<size_t>(n));
    bcast(bytes.data(), static_cast<int>(n), MPI_BYTE);
    return bytes;
}


// What the I/O server's root knows of its clients and their files.
struct Clients {
    std::set<int> all;         // the components of the files it writes
    std::set<int> finished;    // those whose root said PersistDone, or that never connected or died
    std::set<int64_t> written; // the sessions in their files (stamps)
    std::deque<Shipment> waiting;  // described files, in the order they came
};

// The I/O server's root: the description of the next file to write, the first whose writer root's
// part came and that continues no file left to write; empty once every client is done. It waits as
// long as its clients run (no DTF_TIMEOUT: a model may compute for hours between its outputs).
std::vector<char> next_file(Runtime &rt, Clients &c) {
    Backoff backoff(50e-6, 5e-3);
    for (;;) {
        rt.progress();
        while (auto m = rt.take([](const Message &m) { return m.kind == MessageKind::PersistDone; }))
            c.finished.insert(m->from_component);
        while (auto m = rt.take([](const Message &m) { return m.kind == MessageKind::PersistData && is_described(m); }))
            c.waiting.push_back(read_part(*m, true));
        auto ready = std::find_if(c.waiting.begin(), c.waiting.end(),
                                  [&](const Shipment &p) { return p.after == 0 || c.written.count(p.after); });
        if (ready != c.waiting.end()) {
            std::rotate(c.waiting.begin(), ready, ready + 1); // to the front, the others in order
            return description(c.waiting.front());
        }
        // A client that died hands no more files over (an ensemble member): the others go on. (A file
        // of it whose parts did not all come fails when written, naming it.)
        for (int comp : c.all)
            if (rt.gone(comp) && c.finished.insert(comp).second)
                log::notice("dtf_ioserver '%s': component '%s' was lost; the server goes on without it",
                            rt.self_name().c_str(), rt.config().component_name(comp).c_str());
        if (c.finished.size() >= c.all.size()) {
            if (!c.waiting.empty())
                fail(DTF_ERR_PEER, "dtf_ioserver: session %d of '%s' continues a session that was never "
                     "written to the file, and its writers are done", c.waiting.front().session,
                     c.waiting.front().path.c_str());
            return {};
        }
        rt.idle(backoff.next());
    }
}

// Collective over the server's ranks: each takes the parts of `job` its writer ranks send (ship_job;
// the root's first came with the description), and they write the file.
void write_served(Runtime &rt, Shipment &job, MPI_Comm comm, const std::string &where) {
    const int rank = rt.component_rank();
    int size = 1;
    MPI_Comm_size(comm, &size);
    std::vector<Shipment> parts;
    int expected = 0;
    for (int r = 0; r < job.writers; ++r) expected += config::aggregator_group(r, job.writers, size) == rank;
    if (rank == 0) {
        parts.emplace_back();
        parts.back().writer_rank = job.writer_rank;
        parts.back().source = job.source;
        parts.back().writes = std::move(job.writes);
    }
    while (static_cast<int>(parts.size()) < expected) {
        Message m = rt.wait_message([&](const Message &m) {
            return m.kind == MessageKind::PersistData && m.from_component == job.from && stamp_of(m) == job.stamp;
        }, [&] {
            return format("%s waited for the writes of %d of its writer ranks", where.c_str(),
                          expected - static_cast<int>(parts.size()));
        }, job.from);
        parts.push_back(read_part(m, true));
    }
    std::sort(parts.begin(), parts.end(),
              [](const Shipment &a, const Shipment &b) { return a.writer_rank < b.writer_rank; });
    std::vector<WriteRecord> records;
    std::vector<size_t> apart;
    std::vector<int> sources;
    for (const Shipment &p : parts) {
        unpack_writes(job.header, p.writes, &records, &apart, where);
        sources.resize(apart.size(), p.source); // (the sender of the ones it added)
    }
    receive_apart(rt, job, records, apart, sources, where);
    std::vector<const WriteRecord *> writes;
    for (const WriteRecord &w : records) {
        writes.push_back(&w);
        rt.stats().persist_bytes += static_cast<long>(value_bytes(job.header, w));
    }
    write_file({job.path, job.session, job.header, job.hints, job.cmode, job.continued, job.enddefs}, comm, writes,
               where);
}

} // namespace

void serve_io(Runtime &rt) {
    const config::Config &config = rt.config();
    const MPI_Comm comm = rt.component_comm();
    const int rank = rt.component_rank();
    Clients c;
    for (const auto &rule : config.files)
        if (rule.ioserver == rt.self_name())
            for (const auto &name : rule.parties()) c.all.insert(config.component_index(name));
    if (c.all.empty())
        fail(DTF_ERR_CONFIG, "dtf_ioserver: no [FILE] section of %s names component '%s' in ioserver=",
             config.path.c_str(), rt.self_name().c_str());
    for (int comp : c.all) // (a reader of fallback= files only: Config::may_go_without)
        if (rt.lost(comp)) c.finished.insert(comp);
    std::unique_ptr<Error> first_failure;
    for (;;) {
        std::vector<char> choice;
        if (rank == 0) try {
            choice = next_file(rt, c);
        } catch (const Error &e) { // the end, for every server rank (the failure is reported below)
            if (!first_failure) first_failure = std::make_unique<Error>(e);
            choice.clear();
        }
        choice = broadcast(rt, comm, std::move(choice));
        if (choice.empty()) break;
        Shipment job = rank == 0 ? std::move(c.waiting.front()) : from_description(choice);
        if (rank == 0) c.waiting.pop_front();
        const std::string where = format("dtf_ioserver '%s' writing '%s' (session %d of component '%s')",
                                         rt.self_name().c_str(), job.path.c_str(), job.session,
                                         config.component_name(job.from).c_str());
        const double t0 = now_s();
        try {
            transport::on_all(comm, [&] { write_served(rt, job, comm, where); });
            rt.stats().persist_s += now_s() - t0;
            log::debug("%s: done", where.c_str());
            if (rank != 0) continue;
            c.written.insert(job.stamp);
            ++rt.stats().files_persisted;
            announce_written(rt, job.from, job.path, job.session, job.stamp, job.readers, job.fallback);
        } catch (const Error &e) { // reported, and the server goes on with the next file
            if (!e.quiet()) std::fprintf(stderr, "[dtf %s:%d] error: %s\n", rt.self_name().c_str(), rank, e.what());
            if (!first_failure) first_failure = std::make_unique<Error>(e);
        }
    }
    // Every server rank goes on without the clients that died (dtf_finalize does not wait for them),
    // as its root did.
    for (int comp : c.all) rt.gone(comp);
    if (first_failure) throw *first_failure;
}

} // namespace dtf::runtime
