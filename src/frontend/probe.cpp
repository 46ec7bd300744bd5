// What a program sees when it looks at a path dtf handles by other means than PnetCDF: MPI-IO opens
// (netCDF-C's nc_open_par reads the file's magic number with MPI_File_open/MPI_File_read_at_all
// before it calls ncmpi_open) and existence checks (stat, access; Fortran's inquire(exist=) and
// Python's os.path.exists end there). It must be what a real file would show, whichever library
// looks, so these hooks know nothing of netCDF-C:
//
//   MPI_File_open, read-only, by a component that reads the file: the same wait as ncmpi_open's
//     (file mode: until the writer has closed the version this rank reads next, then the real file;
//     transfer mode: until the writer has defined it, then a file of the header's bytes alone, each
//     rank's own, made in TMPDIR and unlinked at once). Nothing is taken from dtf's queue: the
//     ncmpi_open that follows does its own wait, which then returns at once. A rank that already
//     took part in a session of a comp1=/comp2= file (it may be about to write it back) waits for
//     nothing and sees the version it knows (vfile_probe: the header of the session it closed).
//   MPI_File_open for writing outside PnetCDF and netCDF-C (HDF5 or MPI-IO called by the program) of
//     a path dtf handles: refused with MPI_ERR_ACCESS and a message, since dtf could never serve it.
//     (Inside netCDF-C's calls, netcdf.cpp, HDF5's opens are dtf's nested calls and pass on.)
//   stat/lstat/fstatat/access/faccessat/euidaccess that find no file: the file exists for a reader
//     named in readers= (the config's promise: its open waits for the writer), and in transfer mode
//     for any component once this rank knows a version (a definition has come, or it closed a
//     session): a read-only regular file of the header's size (0 before its definition). A check
//     never waits, so a program that only probes is never held. With comp1=/comp2= (either may write)
//     a check before the other's definition answers what the file system says.
// Calls from inside dtf (Entry::nested), before dtf_init and on paths the config does not name for
// this component pass straight on; the last is decided without the runtime lock (Runtime::published), so
// that MPI's own threads, which look at files of their own, never wait for dtf.
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

#include "common/export.hpp"
#include "common/cwd.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "mpi/world.h"
#include "frontend/files.hpp"

namespace dtf::runtime {

namespace {

constexpr int kPass = -1; // (not an MPI error code)

template <class F> F next_fn(const char *name) {
    static_assert(sizeof(F) == sizeof(void *));
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// A file of `bytes` for this rank alone, opened read-only over MPI_COMM_SELF and already unlinked.
int open_header_copy(const std::string &path, const std::vector<char> &bytes, MPI_Info info, MPI_File *fh) {
    const char *dir = std::getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/dtf-header-XXXXXX";
    const int fd = mkstemp(name.data());
    if (fd < 0)
        fail(DTF_ERR_INTERNAL, "MPI_File_open of '%s': cannot make a file for its header in %s: %s", path.c_str(),
             name.c_str(), std::strerror(errno));
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
        if (n <= 0) {
            const int err = errno;
            close(fd);
            unlink(name.c_str());
            fail(DTF_ERR_INTERNAL, "MPI_File_open of '%s': writing its header to %s: %s", path.c_str(), name.c_str(),
                 std::strerror(err));
        }
        done += static_cast<size_t>(n);
    }
    close(fd);
    const int rc = PMPI_File_open(MPI_COMM_SELF, name.c_str(), MPI_MODE_RDONLY, info, fh);
    unlink(name.c_str());
    if (rc != MPI_SUCCESS)
        fail(DTF_ERR_MPI, "MPI_File_open of '%s': opening the copy of its header %s: %s", path.c_str(), name.c_str(),
             transport::mpi_error_string(rc).c_str());
    return MPI_SUCCESS;
}

int mpi_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
    Runtime *rt = Runtime::instance();
    Target t;
    if (!rt || !find_target(*rt, filename, &t)) return kPass;
    // While PnetCDF has the file open on this rank (file mode), it opens it again itself: the
    // handle of its independent data mode.
    for (const auto &[key, f] : files(*rt).open_files)
        if (f.path == t.path) return kPass;
    if (amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR | MPI_MODE_CREATE))
        fail(DTF_ERR_CONFIG, "MPI_File_open of '%s' for writing, outside PnetCDF and netCDF-C (HDF5 or MPI-IO "
             "called directly, or netCDF-C's calls not going through dtf: link with -ldtf before -lnetcdf): %s:%d "
             "names it, and dtf handles only files written through PnetCDF or netCDF-C; leave it out of the config",
             t.path.c_str(), rt->config().path.c_str(), t.rule->line);
    const bool writer = t.rule->fixed_roles() && t.rule->writer == rt->self_name();
    if (writer && t.rule->mode == config::Mode::File) return kPass; // (its own file, as it left it)
    const std::string context = format("MPI_File_open of '%s'", t.path.c_str());
    std::shared_ptr<transport::Group> group = rt->group_of(comm, context);
    if (t.rule->mode == config::Mode::Transfer) {
        const std::vector<char> header = vfile_probe(*rt, t.path, *t.rule, t.peers, std::move(group));
        if (header.empty()) return kPass;
        return open_header_copy(t.path, header, info, fh);
    }
    // A reader named in readers= waits for its next version. With comp1=/comp2= the component may be
    // about to write the file (an ncmpi_open with NC_WRITE: a write-back): once it has taken part in
    // a session, the file on disk is a version it knows, as a real file would be, and it goes on.
    const PathCounters *c = rt->find_counters(t.path);
    const bool known = !t.rule->fixed_roles() && c && c->closed() > 0;
    if (!known) rt->on_all(*group, [&] { wait_for_turn(*rt, t, false, "MPI_File_open"); }, context);
    return kPass;
}

bool served(const char *path) {
    const std::shared_ptr<const Runtime::Published> s = Runtime::published();
    if (!s || !path) return false;
    const config::FileRule *rule = s->config.match(config::normalize_path(path, current_dir()));
    return rule && rule->involves(s->self);
}

// Whether `path`, which the file system does not have, exists for this rank (see the top), and the
// size a real file would have now.
bool virtual_exists(const char *path, int64_t *size) {
    if (Entry::nested() || !served(path)) return false;
    try {
        Entry entry;
        Runtime *rt = Runtime::instance();
        Target t;
        if (!rt || !find_target(*rt, path, &t)) return false;
        const config::FileRule &r = *t.rule;
        const bool reader = r.fixed_roles() && r.writer != rt->self_name();
        *size = 0;
        if (r.mode != config::Mode::Transfer) return reader;
        const PathCounters *c = rt->find_counters(t.path);
        const int session = (c ? c->closed() : 0) + 1;
        const Message *m = rt->peek([&](const Message &msg) { return is_definition(msg, t.path, session); });
        if (m) {
            model::Header h;
            const std::vector<char> bytes = defined_header(*m);
            if (model::Header::decode(bytes.data(), bytes.size(), &h) == NC_NOERR) *size = h.file_size();
        } else if (c && c->header) {
            *size = c->header->file_size();
        }
        return reader || m || (c && c->header);
    } catch (...) {
        return false; // (a look at a path never fails because of dtf)
    }
}

template <class Stat> void fill_stat(Stat *st, int64_t size) {
    std::memset(st, 0, sizeof *st);
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_uid = geteuid();
    st->st_gid = getegid();
    st->st_size = size;
    st->st_blksize = 4096;
    st->st_blocks = (size + 511) / 512;
    timespec now{};
    clock_gettime(CLOCK_REALTIME, &now);
    st->st_atim = st->st_mtim = st->st_ctim = now;
}

// After a look at `path` that found nothing (rc != 0, errno ENOENT): the answer for a file only dtf has.
template <class Stat> int missing(int rc, const char *path, Stat *st) {
    if (rc == 0 || errno != ENOENT) return rc;
    const int err = errno;
    int64_t size = 0;
    if (!virtual_exists(path, &size)) {
        errno = err;
        return rc;
    }
    if (st) fill_stat(st, size);
    return 0;
}

// The same for access(path, mode): a look for existence or reading (F_OK, R_OK).
int may_exist(int rc, const char *path, int mode) {
    return mode & (W_OK | X_OK) ? rc : missing(rc, path, static_cast<struct stat *>(nullptr));
}

bool at_cwd(int dirfd, const char *path) { return dirfd == AT_FDCWD || (path && path[0] == '/'); }

} // namespace

} // namespace dtf::runtime

using dtf::runtime::at_cwd;
using dtf::runtime::may_exist;
using dtf::runtime::missing;
using dtf::runtime::next_fn;

extern "C" {

DTF_API int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
    comm = dtf_world_(comm);
    if (!dtf::runtime::Entry::nested() && dtf::runtime::served(filename)) {
        int rc = dtf::runtime::kPass;
        const int code = dtf::guard([&] {
            dtf::runtime::Entry entry;
            rc = dtf::runtime::mpi_open(comm, filename, amode, info, fh);
            return 0;
        });
        if (code != 0) return code == DTF_ERR_CONFIG ? MPI_ERR_ACCESS : MPI_ERR_OTHER;
        if (rc != dtf::runtime::kPass) return rc;
    }
    return PMPI_File_open(comm, filename, amode, info, fh);
}

// The stat family, with struct stat and struct stat64; fstatat only for a path the caller's working
// directory resolves (AT_FDCWD or absolute).
#define DTF_PROBE_STAT(name, Stat)                                                                  \
    DTF_API int name(const char *path, Stat *st) noexcept {                                         \
        static auto real = next_fn<int (*)(const char *, Stat *)>(#name);                          \
        return missing(real(path, st), path, st);                                                   \
    }
#define DTF_PROBE_STATAT(name, Stat)                                                                \
    DTF_API int name(int dirfd, const char *path, Stat *st, int flags) noexcept {                   \
        static auto real = next_fn<int (*)(int, const char *, Stat *, int)>(#name);                 \
        const int rc = real(dirfd, path, st, flags);                                                \
        return at_cwd(dirfd, path) ? missing(rc, path, st) : rc;                                    \
    }
DTF_PROBE_STAT(stat, struct stat)
DTF_PROBE_STAT(lstat, struct stat)
DTF_PROBE_STATAT(fstatat, struct stat)
DTF_PROBE_STAT(stat64, struct stat64)
DTF_PROBE_STAT(lstat64, struct stat64)
DTF_PROBE_STATAT(fstatat64, struct stat64)
#undef DTF_PROBE_STAT
#undef DTF_PROBE_STATAT

// The access family: only a look for existence or reading (a virtual file is read-only).
DTF_API int access(const char *path, int mode) noexcept {
    static auto real = next_fn<int (*)(const char *, int)>("access");
    return may_exist(real(path, mode), path, mode);
}
DTF_API int faccessat(int dirfd, const char *path, int mode, int flags) noexcept {
    static auto real = next_fn<int (*)(int, const char *, int, int)>("faccessat");
    const int rc = real(dirfd, path, mode, flags);
    return at_cwd(dirfd, path) ? may_exist(rc, path, mode) : rc;
}
DTF_API int euidaccess(const char *path, int mode) noexcept {
    static auto real = next_fn<int (*)(const char *, int)>("euidaccess");
    return may_exist(real(path, mode), path, mode);
}
DTF_API int eaccess(const char *path, int mode) noexcept { return euidaccess(path, mode); }

} // extern "C"
