/*
 * dtf.h - public C API of dtf, the data transfer framework for coupled MPI workflows.
 *
 * A program keeps its PnetCDF code and adds three calls:
 *
 *     MPI_Init(&argc, &argv);
 *     dtf_init("dtf.ini", "model");        // connect to the components named in dtf.ini
 *     ... ncmpi_create / put / ncmpi_close ... dtf_transfer(path, ncid) ...
 *     dtf_finalize();
 *     MPI_Finalize();
 *
 * Every function returns DTF_SUCCESS (0) or one of the DTF_ERR_* codes below; dtf_strerror() gives
 * the generic message and dtf_errmsg() the detailed one (rank, component, file, what was expected).
 * No function aborts the process.
 *
 * PnetCDF calls that dtf intercepts return PnetCDF codes (NC_*), or a DTF_ERR_* code when the failure
 * is dtf's own (a timeout, a lost peer); ncmpi_strerror() knows both.
 */
#ifndef DTF_H
#define DTF_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DTF_VERSION_MAJOR 0
#define DTF_VERSION_MINOR 1
#define DTF_VERSION_PATCH 0
#define DTF_VERSION "0.1.0"

/* The error table: X(name, value, message). One row per code; everything else is derived from it.
 * Values are negative and far below PnetCDF's (which end above -300), so the two never collide. */
#define DTF_ERROR_TABLE(X)                                                                          \
    X(DTF_SUCCESS, 0, "success")                                                                    \
    X(DTF_ERR_ARG, -1001, "invalid argument")                                                       \
    X(DTF_ERR_CONFIG, -1002, "invalid dtf configuration file")                                      \
    X(DTF_ERR_NOT_INIT, -1003, "dtf_init has not been called (or dtf_finalize already was)")       \
    X(DTF_ERR_ALREADY_INIT, -1004, "dtf_init was already called")                                   \
    X(DTF_ERR_TIMEOUT, -1005, "timed out waiting for a peer component (see DTF_TIMEOUT)")           \
    X(DTF_ERR_CONNECT, -1006, "could not connect to a peer component")                              \
    X(DTF_ERR_MPI, -1007, "an MPI call failed")                                                     \
    X(DTF_ERR_UNSUPPORTED, -1008, "operation not supported by dtf for this file")                   \
    X(DTF_ERR_NOMEM, -1009, "out of memory")                                                        \
    X(DTF_ERR_IO, -1010, "file system error")                                                       \
    X(DTF_ERR_PEER, -1011, "a peer component failed or disagrees")                                  \
    X(DTF_ERR_FILE, -1012, "the file is not open or not handled by dtf")                            \
    X(DTF_ERR_INTERNAL, -1013, "internal error in dtf")

#define DTF_ENUM_ENTRY_(name, value, message) name = (value),
enum dtf_error { DTF_ERROR_TABLE(DTF_ENUM_ENTRY_) DTF_ERR_LAST_ = -1013 };
#undef DTF_ENUM_ENTRY_

/* Initialize dtf for this program ("component").
 * Collective over MPI_COMM_WORLD of the calling program; call it after MPI_Init.
 * config_path: the DTF INI file; the environment variable DTF_INI_FILE, when set, overrides it.
 * component_name: this program's name as listed by comp_name= in the config file.
 * Connects (MPI_Comm_connect/MPI_Comm_accept) to every component that shares a [FILE] section with
 * this one; every wait is bounded by DTF_TIMEOUT seconds (default 120). */
int dtf_init(const char *config_path, const char *component_name);

/* Move the data of an open file between the components.
 * Collective over all ranks of both components that opened the file (the communicators given to
 * ncmpi_create/ncmpi_open, or nc_create_par/nc_open_par: ncid is PnetCDF's or netCDF-C's). For files in
 * mode="file" and files dtf does not handle it does nothing and returns DTF_SUCCESS. */
int dtf_transfer(const char *filename, int ncid);

/* Finalize dtf and disconnect from the peer components.
 * Collective over MPI_COMM_WORLD of the calling program; call it before MPI_Finalize. Waits at most
 * DTF_TIMEOUT seconds for the peers. Files still open are reported. */
int dtf_finalize(void);

/* Run this component as an I/O server (what the dtf-ioserver program does between dtf_init and
 * dtf_finalize): write the netCDF files of the [FILE] sections that name it in ioserver=, as the
 * components that write them close their sessions, until every component of those sections has called
 * dtf_finalize. Collective over MPI_COMM_WORLD of the calling program. A file that cannot be written is
 * reported (stderr) and the server goes on; the first such error is returned at the end. */
int dtf_ioserver(void);

/* Per-phase timers: where this rank's time inside dtf goes, for benchmarks and tuning.
 * Off by default, and then they cost one branch per dtf call; DTF_PRINT_STATS=1 turns them on too (and
 * prints them at dtf_finalize). Phases are exclusive (a phase entered inside another pauses it), so
 * they add up to the time spent inside dtf calls on this rank, in all threads:
 *   OPEN      create/open and define mode of files dtf handles (in file mode: waiting for the writer)
 *   MATCH     matching read requests against writes (writer side)
 *   PACK      copying data: puts, packing pieces for a reader, unpacking and converting on the reader
 *   TRANSFER  the rest of dtf_transfer and of completing gets (protocol, posting messages)
 *   WAIT      waiting for the peer component or the network
 *   CLOSE     ncmpi_close of files dtf handles, except what it spends in the phases above
 * Bytes: PACK counts bytes copied, TRANSFER bytes sent plus received; the other phases count none. */
enum dtf_phase {
    DTF_PHASE_OPEN,
    DTF_PHASE_MATCH,
    DTF_PHASE_PACK,
    DTF_PHASE_TRANSFER,
    DTF_PHASE_WAIT,
    DTF_PHASE_CLOSE,
    DTF_NUM_PHASES
};

/* Turn the timers on (on != 0) or off. Local; may be called at any time, also before dtf_init. */
int dtf_timers(int on);

/* This process's totals since the timers were last reset: seconds[DTF_NUM_PHASES] and
 * bytes[DTF_NUM_PHASES] (either may be NULL). Resets them to zero when reset != 0. Local. */
int dtf_timers_read(double *seconds, long long *bytes, int reset);

/* Name of a phase ("open", "match", ...); NULL when out of range. */
const char *dtf_phase_name(int phase);

/* Message counters: what dtf's protocol costs in messages and bytes, and how often it copies the values
 * it moves, for benchmarks and tuning. Always on (one atomic add per message or copy). Every
 * point-to-point message dtf sends or receives over MPI counts once: as data (the packed values a
 * writer rank sends a reader rank), as control (headers, requests, plans, orders, notices, write
 * metadata) or as a message of one of dtf's collectives over a file's ranks (allreduces, broadcasts
 * and barriers of opens, waits, collective puts, dtf_transfer and close, sent point to point on a
 * communicator those ranks keep). The collectives also count as calls (with the communicator's
 * duplicate at the first open by a set of ranks, whose messages inside MPI are not seen), with no
 * bytes. Copies: the bytes of values dtf itself writes into memory besides MPI (no messages), on a
 * writer's side (values kept at a put, packed into a message) and on a reader's (a message unpacked,
 * values converted or scattered into the user's buffer, elements no write covered zeroed or filled). */
enum dtf_count {
    DTF_COUNT_CONTROL_SENT,
    DTF_COUNT_CONTROL_RECEIVED,
    DTF_COUNT_DATA_SENT,
    DTF_COUNT_DATA_RECEIVED,
    DTF_COUNT_COLLECTIVES,
    DTF_COUNT_COLLECTIVE_SENT,
    DTF_COUNT_COLLECTIVE_RECEIVED,
    DTF_COUNT_COPIED_WRITING,
    DTF_COUNT_COPIED_READING,
    DTF_NUM_COUNTS
};

/* This process's counts since they were last reset: messages[DTF_NUM_COUNTS] and bytes[DTF_NUM_COUNTS]
 * (either may be NULL). Resets them to zero when reset != 0. Local; may be called at any time. */
int dtf_counters_read(long long *messages, long long *bytes, int reset);

/* Name of a count ("control sent", ...); NULL when out of range. */
const char *dtf_count_name(int count);

/* A duplicate of the inter-communicator dtf connected to component `component` (local group: this
 * program's MPI_COMM_WORLD; remote group: the other program's), for applications that exchange data
 * of their own with a peer. Collective over both programs, which name each other (it calls MPI_Comm_dup
 * on the inter-communicator); free it with
 * MPI_Comm_free before dtf_finalize. DTF_ERR_ARG when no [FILE] section links the two components. */
int dtf_intercomm(const char *component, MPI_Comm *comm);

/* Generic message of a DTF_ERR_* code (or of a PnetCDF code, delegated to ncmpi_strerror).
 * Local; never NULL. */
const char *dtf_strerror(int code);

/* The detailed message of the last error raised on the calling thread ("" when none).
 * Local; valid until the next dtf call on this thread. */
const char *dtf_errmsg(void);

#ifdef __cplusplus
}
#endif

#endif /* DTF_H */
