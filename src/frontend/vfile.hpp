// The front end's virtual file: a served file opened in transfer mode, as the program's calls see
// it (its virtual ncid, its nonblocking requests, the writer's turn and persist=1 state) over the
// session the protocol runs (session/session.hpp); the front end's tables in the runtime (Files);
// and the entry points of the dispatch (files.cpp) into transfer mode.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.hpp"
#include "model/header.hpp"
#include "model/write_record.hpp"
#include "output/persist.hpp"
#include "runtime/runtime.hpp"
#include "session/session.hpp"
#include "transport/group.hpp"
#include "types/layout.hpp"

namespace dtf::runtime {

// An iput whose values are taken at wait: where they are and how they are laid out.
struct DeferredPut {
    int varid;
    std::vector<match::Box> boxes;
    types::MemLayout layout;
    const void *buf;
    nc_type xtype;
};

struct VirtualFile : FileSession {
    int ncid = -1;
    int64_t numrecs_counted = 0; // rank 0: the record count whose header write put_bytes counts
    // The hints given to ncmpi_create/ncmpi_open (ncmpi_inq_file_info returns them with PnetCDF's).
    std::vector<std::pair<std::string, std::string>> hints;
    bool continued = false; // writer: opened with NC_WRITE (not created)
    // Writer of a serial file (netCDF-C's nc_create, nc_open with NC_WRITE), which netCDF-C's classic
    // library would write: filled by default, nc_set_fill in data mode too, and, in fill mode, a put
    // that adds records fills them in every record variable first (NC3's NCvnrecs).
    bool classic_fills = false;
    int turn_closes = 0;    // writer: closes of the file in this turn so far (FileRule::writer_closes)
    int cmode = 0;          // writer: the mode flags given to ncmpi_create (persist=1 creates the file so)
    int enddefs = 0;        // writer: enddefs in this session
    // Whether the header carries the netCDF-4 mark (model/netcdf4_mark.h), looked up at the first get
    // or fill (-1 before: netcdf4_file): the mark is put before the first enddef and never removed.
    int netcdf4 = -1;
    int64_t persist_after = 0; // continued, persist=1: the stamp of the session it continues, written by another
                               // component, while its file is not complete (0 once it is: Persisted)
    struct PendingPut {
        std::vector<WriteRecord> records; // one per box (several for varn); bput: copied at once
        int status;
        int64_t numrecs; // the record count once this put takes effect
        // iput: the values are taken at wait (the caller may not touch the buffer before), so that a
        // replayed session copies only what is read.
        std::optional<DeferredPut> deferred;
    };
    std::map<int, PendingPut> pending_puts; // writer: iput/bput not yet waited for, by request id
    // ncmpi_buffer_attach's buffer as PnetCDF 1.12.3 accounts for it (dtf copies a bput's values at
    // the call and never uses it): a bput holds its bytes in the variable's type from its post; one
    // completed or cancelled gives them back once every bput posted after it did too.
    struct BputBuffer {
        MPI_Offset size = 0;                          // attached (0: none)
        std::vector<std::pair<int, MPI_Offset>> held; // (request id, bytes), in post order
        std::vector<int> given_back;                  // completed or cancelled, not at the end yet
        MPI_Offset used() const {
            MPI_Offset n = 0;
            for (const auto &h : held) n += h.second;
            return n;
        }
        void give_back(int id) { // (a request that holds nothing: nothing)
            if (std::none_of(held.begin(), held.end(), [id](const auto &h) { return h.first == id; })) return;
            given_back.push_back(id);
            while (!held.empty()) {
                const auto last = std::find(given_back.begin(), given_back.end(), held.back().first);
                if (last == given_back.end()) break;
                given_back.erase(last);
                held.pop_back();
            }
        }
    } bput_buffer;
    int next_request = 1;          // ids of nonblocking requests given to the user
};

// Entry points used by the dispatcher (files.cpp). All throw dtf::Error or return PnetCDF codes.
// `group`: the ranks that create or open it (Runtime::group_of the user's communicator).
// `peers`: the components this one exchanges the file with (config::FileRule::partners).
int vfile_create(Runtime &rt, const std::string &path, const config::FileRule &rule, const std::vector<int> &peers,
                 std::shared_ptr<transport::Group> group, int cmode, int *ncidp);
int vfile_open(Runtime &rt, const std::string &path, const config::FileRule &rule, const std::vector<int> &peers,
               std::shared_ptr<transport::Group> group, int omode, int *ncidp);
// A file created or opened for writing: the alignment hints it was given (its MPI info's `hints`,
// and PNETCDF_HINTS's, which PnetCDF takes over them), which shape its layout at enddef.
void apply_alignment_hints(model::Header &h, const std::vector<std::pair<std::string, std::string>> &hints);
// The writer opens again a file it closed before its turn ended (writer_closes; Files::turns): the
// file as it left it, its session going on: read-only (its gets read what it wrote: read_own) or with
// NC_WRITE. `group`: the ranks that open it, which must be those that wrote it.
int resume_turn(Runtime &rt, const std::string &path, std::shared_ptr<transport::Group> group, int omode, int *ncidp);
// dtf_finalize: a file whose turn did not end closed as at its last close (files.cpp, end_turns).
void close_turn(Runtime &rt, std::unique_ptr<VirtualFile> file);
// What a real file at `path` would begin with for this rank now (MPI_File_open's probe, probe.cpp),
// decided by each rank of `group` alone (no collective): the bytes PnetCDF writes at the start of the
// file (Header::file_header) for the session the next read-only open would read, as its writer defined
// it (waiting for that definition, as vfile_open does, when this rank knows no version of the file
// yet), or for the last session this rank closed (a later version has not come yet: a real file would
// still hold that one).
// Nothing is taken from the queue. Empty: no virtual file here (the component is the file's writer
// and holds no header, or a reader whose writer went on without it): the file system answers.
std::vector<char> vfile_probe(Runtime &rt, const std::string &path, const config::FileRule &rule,
                              const std::vector<int> &peers, std::shared_ptr<transport::Group> group);
// Any ncmpi_* call on a virtual ncid (args as in hook.h).
int vfile_call(Runtime &rt, VirtualFile &vf, int fn, void **args);
// The calls vfile_call hands on (vdispatch.cpp): puts and gets; ncmpi_wait_all (`all`) and
// ncmpi_wait; ncmpi_cancel; ncmpi_fill_var_rec.
int vfile_data_call(Runtime &rt, VirtualFile &vf, int fn, void **args);
int vfile_wait(Runtime &rt, VirtualFile &vf, bool all, int count, int *reqs, int *statuses);
int vfile_cancel(Runtime &rt, VirtualFile &vf, int num, int *reqs, int *statuses);
int vfile_fill_record(Runtime &rt, VirtualFile &vf, int varid, MPI_Offset recno);
// Writer: a fill of the variable's fill value over `f`, taking effect now (rank 0 records it; no
// values move for it: readers write the fill value themselves). None in a netCDF-4 file, whose
// readers read what no write covered as the fill value anyway (set_unwritten, as HDF5 gives it).
void record_fill(Runtime &rt, VirtualFile &vf, const model::Header::Region &f);
// Whether the file carries the netCDF-4 mark (model/netcdf4_mark.h; VirtualFile::netcdf4).
bool netcdf4_file(VirtualFile &vf);
// persist=1: the job that writes the file of the session closing now (vfile.cpp: the writer's
// close), for queue_persist.
std::shared_ptr<PersistJob> persist_job(Runtime &rt, VirtualFile &vf);

} // namespace dtf::runtime
