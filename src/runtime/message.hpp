// Control messages between components about shared files. One versioned envelope for all kinds;
// encoding and validation live here, without MPI, so that a malformed message gives an error instead
// of a crash and the decoder can be unit-tested and fuzzed.
//
//   file mode      ClosedWrite / ClosedRead    "I closed my write/read session N of path P" (epoch
//                                kSerialSession: one process read it, a serial file)
//   transfer mode  FileDefined   writer root -> every reader-component rank (replaying a plan of known
//                                readers: each writer rank -> its own reader ranks): the sessions it
//                                withdraws, stamp, header (or "the plan's") + writer ranks + matchers
//                  ReaderOpened  reader leader -> every writer-file rank (not when replaying a plan of
//                                known readers): the reader ranks of the session, the replay plan they
//                                hold, and the session's stamp (FileDefined's)
//                  HeaderFinal   writer root (or leader) -> reader-file ranks at dtf_transfer: the
//                                session's stamp, final header (numrecs; only that when the rest is
//                                FileDefined's); replaying a plan of known readers, only to the
//                                readers whose data does not end with the writers' verdict, each from
//                                the writer rank of its first data
//                  ReadRequest   reader rank -> each matcher: a batch of get requests
//                  ReadPlan      matcher -> reader rank: the pieces of that batch its writers will send
//                  ReaderDone    reader rank -> each matcher: no more requests in this transfer epoch,
//                                whether a reader left the replayed plan (and whether a replay would
//                                bring it no verdict with its data); replaying a plan of this very
//                                path, the reader leader for all ranks at the close (with their ranks
//                                and plan) -> the writer leader, or the matchers
//                  Persisted     writer root (or its I/O server's root) -> every reader-component rank
//                                (persist=1, fallback=): the session stamped so is in the file (a
//                                session continuing it may write)
//                  FileWritten   writer root (or its I/O server's root) -> every reader-component
//                                rank, after Persisted (fallback=): the readers were given up and the
//                                session stamped so is in the file instead; read it there
//                  SessionFailed writer leader -> every reader-component rank, when the writers' agreement
//                                at dtf_transfer fails a replayed session (its puts left the plan after
//                                values were dropped): the stamp and the reason; the readers' waits end
//   I/O server     PersistData   writer rank -> one I/O server rank (ioserver=): its part of a closed
//                                session's file (its writes; the writer root's also the header)
//                  PersistDone   every component's root -> the I/O server's root, at dtf_finalize (path:
//                                its name): no more files from it
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.hpp"

namespace dtf::runtime {

// The epoch of a ClosedRead of a session one process read (a serial file, netCDF-C's nc_open): the
// writer counts those processes (FileRule::serial_readers).
constexpr int32_t kSerialSession = 1;

enum class MessageKind : uint32_t {
    ClosedWrite = 1,
    ClosedRead = 2,
    FileDefined = 3,
    ReaderOpened = 4,
    HeaderFinal = 5,
    ReadRequest = 6,
    ReadPlan = 7,
    ReaderDone = 8,
    Persisted = 9,
    PersistData = 10,
    PersistDone = 11,
    FileWritten = 12,
    SessionFailed = 13,
    Finalizing = 14, // every rank of the sender came to dtf_finalize (path: its name): nothing more comes from it
};
constexpr uint32_t kMessageKindLast = 14;

struct Message {
    MessageKind kind;
    int32_t from_component;
    int32_t session; // 1-based session number of the path (per writer component)
    int32_t epoch;   // transfer epoch within the session, or batch number; 0 when unused
    std::string path;
    std::vector<char> payload;
    int source = -1; // on receipt: the sender's rank in its component (not sent)
};

constexpr uint32_t kMessageMagic = 0x4454460f; // "DTF" + wire version 15 (little-endian; values sent apart)

std::vector<char> encode(const Message &m);
// The same, taking the payload's buffer: the envelope goes in front of the payload in place when the
// buffer has room for it (kEnvelopeMax more bytes of capacity), else the payload is copied.
std::vector<char> encode(Message &&m);
constexpr size_t kEnvelopeMax = 32 + 4096; // the envelope's header and the longest path
// nullopt (and a reason in *why) when the bytes are not a valid message of this wire version.
std::optional<Message> decode(const char *data, size_t size, std::string *why);
const char *kind_name(MessageKind kind);

// Helpers to build and read payloads: little sequences of int32/int64/bytes (common/bytes.hpp).
class PayloadWriter {
public:
    void i32(int32_t v) { out_.i32(v); }
    void i64(int64_t v) { out_.i64(v); }
    void bytes(const std::vector<char> &b) {
        i64(static_cast<int64_t>(b.size()));
        out_.raw(b.data(), b.size());
    }
    void ints(const std::vector<int> &v) {
        i32(static_cast<int32_t>(v.size()));
        for (int x : v) i32(x);
    }
    void str(const std::string &s) {
        i64(static_cast<int64_t>(s.size()));
        out_.raw(s.data(), s.size());
    }
    // What bytes() writes, from pieces: the length, then each piece with raw() (reserved at once, with
    // room for the envelope: encode() puts it in front without copying the payload).
    void bytes_header(size_t n) {
        i64(static_cast<int64_t>(n));
        out_.reserve_more(n + kEnvelopeMax);
    }
    void raw(const void *p, size_t n) { out_.raw(p, n); }
    std::vector<char> take() { return out_.take(); }

private:
    ByteWriter out_;
};

// Throws dtf::Error(DTF_ERR_PEER) naming `what` when the payload is shorter than claimed.
class PayloadReader {
public:
    PayloadReader(const std::vector<char> &p, const char *what) : in_(p.data(), p.size()), what_(what) {}
    int32_t i32();
    int64_t i64();
    std::vector<char> bytes();
    std::vector<int> ints(int32_t max_count);
    std::string str() {
        const std::vector<char> b = bytes();
        return std::string(b.begin(), b.end());
    }

private:
    [[noreturn]] void truncated(const char *item) const;
    ByteReader in_;
    const char *what_;
};

// FileDefined's payload begins with the sessions its sender withdraws (Runtime::withdraw): their
// count, then each one's path and session number; then the session's stamp, whether it went to every
// rank of the reader component (1) or to the root of the readers of the plan it replays (0), whether
// the header is that plan's (1: the plan's stamp follows) or here (0: the header), the writer ranks,
// the matchers and the number of inherited variables.
void write_withdrawn(PayloadWriter &p, const std::vector<std::pair<std::string, int>> &sessions);
// The stamp of the writer session a HeaderFinal is about (its payload's first item; 0 if malformed).
int64_t header_final_stamp(const Message &m);
std::vector<std::pair<std::string, int>> withdrawn_sessions(PayloadReader &r);

} // namespace dtf::runtime
