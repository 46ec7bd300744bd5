// The front end's state in the runtime (Files: the files open here, virtual or not, and the writer
// turns), and what the file-mode dispatch (files.cpp) shares with the probes of paths (probe.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "frontend/vfile.hpp"
#include "runtime/runtime.hpp"
#include "transport/group.hpp"

namespace dtf::runtime {

// A writer's turn on a path that lasts several closes (FileRule::writer_closes), between them: how
// many times this rank closed the file in it so far; in transfer mode the file itself, as it was
// closed (its session goes on at the next open); in file mode the ranks that closed it and the
// components that hear of the turn's end.
struct Turn {
    int closes = 0;
    std::unique_ptr<VirtualFile> file;
    std::shared_ptr<transport::Group> group;
    std::vector<int> peers;
};

// A file dtf handles that is open on this rank.
struct OpenFile {
    int ncid = -1;
    std::string path; // normalized absolute path
    const config::FileRule *rule = nullptr;
    std::vector<int> peers; // the components it is exchanged with (the writer's readers, a reader's writer)
    bool writer = false;
    bool serial = false; // by one process, without a communicator (netCDF-C's nc_open, nc_create)
    std::shared_ptr<transport::Group> group; // over a dup of the communicator given to the open or create
};

// A call that opens or creates a file (PnetCDF's or netCDF-C's), and the library's own to make it.
struct OpenCall {
    const char *name; // "ncmpi_create", "nc_open_par", ...
    bool create;
    bool pnetcdf; // PnetCDF's call (else netCDF-C's, whose files in transfer mode PnetCDF's calls serve)
    bool serial;  // one process's, without a communicator (comm is MPI_COMM_SELF)
    MPI_Comm comm;
    const char *path;
    int mode;
    MPI_Info info;
    std::function<int(int *ncidp)> real;
};

// The front end's part of the runtime (Runtime::part): the files open on this rank, and the writer
// turns not over.
struct Files : Part {
    static constexpr int kSlot = 0;
    // File mode, by library (true: opened by PnetCDF's call, false: by netCDF-C's, netcdf.cpp) and ncid.
    std::map<std::pair<bool, int>, OpenFile> open_files;
    std::map<int, std::unique_ptr<VirtualFile>> virtual_files; // transfer mode, by virtual ncid
    // The writer turns of this rank that are not over, by path (end_turns ends them at dtf_finalize).
    std::map<std::string, Turn> turns;
    // The filename= rules matched as a part of a file name that rank 0 said so of (note_part_of_name).
    std::set<const config::FileRule *> parts_told;

    // A file-mode file open here by either library's ncid (PnetCDF's first), or null.
    const OpenFile *open_file(int ncid) const {
        for (bool pnetcdf : {true, false})
            if (auto it = open_files.find({pnetcdf, ncid}); it != open_files.end()) return &it->second;
        return nullptr;
    }
    VirtualFile *virtual_file(int ncid) {
        auto it = virtual_files.find(ncid);
        return it == virtual_files.end() ? nullptr : it->second.get();
    }
    bool has_open(const std::string &path) const override;
    int writes_unopened(const std::string &path, int session) const override;
    void persisted(int64_t stamp) override;
    // dtf_finalize: end_turns.
    void finalizing(Runtime &rt) override;
    // dtf_finalize with files still open: dtf forgets them (their data is dropped).
    void forget_open(Runtime &rt) override;
};
inline Files &files(Runtime &rt) { return rt.part<Files>(); }

// A path dtf handles for this component.
struct Target {
    std::string path; // normalized absolute path
    const config::FileRule *rule = nullptr;
    std::vector<int> peers; // the components this one exchanges the file with (FileRule::partners)
};

// The rule that makes dtf handle `path` for this component, if any (then fills *t).
bool find_target(Runtime &rt, const char *path, Target *t);

// The files of `open.path` as the config says (file mode: this component's turn, then the library's
// call; transfer mode: a virtual file, or for netCDF-C's calls kNetcdfTransfer: netcdf.cpp makes the
// call, whose PnetCDF calls are served), or DTF_PNC_PASS when dtf does not handle the path here.
constexpr int kNetcdfTransfer = 0x7ff0beef;
int open_or_create(Runtime &rt, const OpenCall &open, int *ncidp);
// A file-mode file's close or abort (`real_close`), and the other components told; DTF_PNC_PASS for a
// file dtf does not handle.
int close_file(Runtime &rt, bool pnetcdf, int ncid, bool abort, const std::function<int()> &real_close);

// netCDF-C's serial open or create (nc_open, nc_create) of a path served in transfer mode, made by
// netcdf.cpp as a parallel one over MPI_COMM_SELF while this lasts: the writer's session is serial
// (WriterSession::serial: its reader processes each open it alone).
class SerialOpen {
public:
    SerialOpen() { active_ = true; }
    ~SerialOpen() { active_ = false; }
    SerialOpen(const SerialOpen &) = delete;
    SerialOpen &operator=(const SerialOpen &) = delete;
    static bool active() { return active_; }

private:
    static thread_local bool active_;
};

// File mode: wait until this rank may open the file to write it (every reader has read the last
// version) or to read it (the writer has closed one more version than this rank has read); `call`
// names the call for the timeout message.
void wait_for_turn(Runtime &rt, const Target &t, bool writer, const char *call);

// dtf_finalize: the writer turns of this rank that are not over (writer_closes) end now, as at their
// last close: collective over the ranks of each, in the order of their paths.
void end_turns(Runtime &rt);
// The library the program's calls of `function` (ncmpi_create: PnetCDF's; nc_open: netCDF-C's) go to
// when it is not libdtf (linked with -lpnetcdf or -lnetcdf before -ldtf: they never come through
// dtf), else "".
std::string bypassing_dtf(const char *function);

} // namespace dtf::runtime
