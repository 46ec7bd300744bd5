#include "transport/mpi_channel.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <exception>
#include <list>

#include "common/counters.hpp"
#include "common/trace.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::transport {

namespace {

int checked_count(size_t size, const char *what) {
    if (size > static_cast<size_t>(INT_MAX))
        fail(DTF_ERR_UNSUPPORTED,
             "%s: one message of %zu bytes exceeds what one MPI message can carry (2 GiB); split the request", what,
             size);
    return static_cast<int>(size);
}

// A message other than a control message (those the runtime traces with their kind), in the trace.
void trace_message(bool sent, int tag, bool data, int peer, size_t size, const char *what) {
    if (!trace::on() || (!data && tag == static_cast<int>(Tag::Control))) return;
    trace::instant(data ? "data" : "control", what ? what : "?",
                   format("\"%s\":%d,\"tag\":%d,\"bytes\":%zu", sent ? "to" : "from", peer, tag, size));
}

class MpiChannel : public Channel {
public:
    MpiChannel(MPI_Comm comm, MpiQueue &queue, int first_tag) : comm_(comm), queue_(queue), first_tag_(first_tag) {
        int inter = 0;
        MPI_Comm_test_inter(comm, &inter);
        if (inter)
            MPI_Comm_remote_size(comm, &remote_size_);
        else
            MPI_Comm_size(comm, &remote_size_);
    }
    int remote_size() const override { return remote_size_; }
    Ticket send(const std::vector<int> &dests, Tag tag, std::vector<char> bytes, const char *what) override {
        return queue_.send(comm_, dests, mpi_tag(tag), data(tag), std::move(bytes), what);
    }
    Ticket send(int dest, Tag tag, const char *data, size_t size, std::shared_ptr<const void> keep,
                const char *what) override {
        return queue_.send(comm_, dest, mpi_tag(tag), this->data(tag), data, size, std::move(keep), what);
    }
    ~MpiChannel() override {
        // Only reached with receives in flight when dtf gave up on a peer: MPI may still fill them.
        for (Arriving &a : arriving_) {
            MPI_Request_free(&a.request);
            new std::vector<char>(std::move(a.bytes)); // deliberately kept
        }
    }
    // Messages are matched as they arrive (a matched probe: the one found is the one received, whatever
    // other threads receive), then received without blocking: a large message whose sender is busy
    // elsewhere (over TCP its bytes move only while the sender is in MPI) is taken once it is complete,
    // instead of spinning in a blocking receive until then. Per sender, in the order it sent them.
    std::optional<Incoming> poll(Tag tag, const char *what) override {
        const int t = mpi_tag(tag);
        for (;;) {
            int flag = 0, size = 0;
            MPI_Message message;
            MPI_Status status;
            check_mpi(MPI_Improbe(MPI_ANY_SOURCE, t, comm_, &flag, &message, &status), what);
            if (!flag) break;
            MPI_Get_count(&status, MPI_BYTE, &size);
            arriving_.push_back(
                Arriving{t, status.MPI_SOURCE, std::vector<char>(static_cast<size_t>(size)), MPI_REQUEST_NULL});
            Arriving &a = arriving_.back();
            check_mpi(MPI_Imrecv(a.bytes.data(), size, MPI_BYTE, &message, &a.request), what);
        }
        std::vector<int> behind; // senders whose earlier message is still arriving
        for (auto it = arriving_.begin(); it != arriving_.end(); ++it) {
            if (it->tag != t || std::find(behind.begin(), behind.end(), it->source) != behind.end()) continue;
            int done = 0;
            check_mpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), what);
            if (!done) {
                behind.push_back(it->source);
                continue;
            }
            Incoming in{it->source, std::move(it->bytes)};
            arriving_.erase(it);
            counters::message(false, data(tag), in.bytes.size());
            trace_message(false, t, data(tag), in.source, in.bytes.size(), what);
            return in;
        }
        return std::nullopt;
    }
    Ticket receive(int source, Tag tag, char *buf, size_t size, const char *what) override {
        return queue_.receive(comm_, source, mpi_tag(tag), data(tag), buf, size, what);
    }
    Ticket receive(int source, Tag tag, const std::vector<Span> &spans, const char *what) override {
        return queue_.receive(comm_, source, mpi_tag(tag), data(tag), spans, what);
    }
    bool progress() override { return queue_.progress(); }
    bool done(Ticket t) const override { return queue_.done(t); }
    void cancel(const std::vector<Ticket> &tickets) override { queue_.cancel(tickets); }
    size_t pending_bytes(const std::vector<Ticket> &tickets) const override { return queue_.pending_bytes(tickets); }

private:
    // The MPI tag of `tag`: itself, or on a group session's channel its slot among the session's tags.
    int mpi_tag(Tag tag) const {
        if (first_tag_ < 0) return static_cast<int>(tag);
        if (group_slot(tag) < 0 || group_slot(tag) >= kGroupTags)
            fail(DTF_ERR_INTERNAL, "tag %#x on a file group's channel", static_cast<unsigned>(tag));
        return first_tag_ + group_slot(tag);
    }
    // Whether messages with `tag` are data (a group's channel carries none).
    bool data(Tag tag) const { return first_tag_ < 0 && static_cast<int>(tag) >= kDataTagFirst; }
    struct Arriving {
        int tag, source;
        std::vector<char> bytes; // (its buffer is where MPI_Imrecv writes: moving the vector keeps it)
        MPI_Request request;
    };
    MPI_Comm comm_;
    MpiQueue &queue_;
    int first_tag_; // -1: tags as they are
    int remote_size_ = 0;
    std::list<Arriving> arriving_; // matched, being received
};

} // namespace

MpiQueue::~MpiQueue() {
    // Only reached with operations pending when dtf gave up on a peer (teardown after an error).
    // Receives are cancelled; a send may still read its buffer, so its buffer is left allocated.
    for (size_t i = 0; i < requests_.size(); ++i) {
        if (ops_[i].receive) MPI_Cancel(&requests_[i]);
        MPI_Request_free(&requests_[i]);
        if (ops_[i].buffer) new std::shared_ptr<std::vector<char>>(std::move(ops_[i].buffer)); // deliberately kept
        if (ops_[i].keep) new std::shared_ptr<const void>(std::move(ops_[i].keep)); // the same
    }
}

void MpiQueue::track(MPI_Request request, Op op) {
    ++remaining_[op.ticket];
    requests_.push_back(request);
    ops_.push_back(std::move(op));
}

Ticket MpiQueue::send(MPI_Comm comm, const std::vector<int> &dests, int tag, bool data, std::vector<char> bytes,
                      const char *what) {
    const int count = checked_count(bytes.size(), what);
    const Ticket t = next_++;
    if (dests.empty()) {
        if (pool_) pool_->give(std::move(bytes));
        return t;
    }
    auto buffer = std::make_shared<std::vector<char>>(std::move(bytes));
    for (int dest : dests) {
        MPI_Request req;
        check_mpi(MPI_Isend(buffer->data(), count, MPI_BYTE, dest, tag, comm, &req), what);
        track(req, Op{t, buffer, buffer->size(), false, what, false, {}, comm});
        counters::message(true, data, buffer->size());
        trace_message(true, tag, data, dest, buffer->size(), what);
    }
    return t;
}

Ticket MpiQueue::send(MPI_Comm comm, int dest, int tag, bool is_data, const char *data, size_t size,
                      std::shared_ptr<const void> keep, const char *what) {
    const Ticket t = next_++;
    MPI_Request req;
    check_mpi(MPI_Isend(data, checked_count(size, what), MPI_BYTE, dest, tag, comm, &req), what);
    track(req, Op{t, nullptr, size, false, what, false, {}, comm, std::move(keep)});
    counters::message(true, is_data, size);
    trace_message(true, tag, is_data, dest, size, what);
    return t;
}

Ticket MpiQueue::receive(MPI_Comm comm, int source, int tag, bool data, char *buf, size_t size, const char *what) {
    const Ticket t = next_++;
    MPI_Request req;
    check_mpi(MPI_Irecv(buf, checked_count(size, what), MPI_BYTE, source, tag, comm, &req), what);
    track(req, Op{t, nullptr, size, true, what, false, {}, comm});
    ops_.back().data = data;
    return t;
}

Ticket MpiQueue::receive(MPI_Comm comm, int source, int tag, bool data, const std::vector<Span> &spans,
                         const char *what) {
    // Adjacent spans merged; one left is a plain receive. More: received whole into a staging buffer
    // and copied into place once complete. (A datatype of their addresses, received in place, saves
    // that copy but makes Open MPI's shared-memory transport move the message in 32 KiB fragments,
    // each waiting for both processes to progress, instead of one single-copy read: the LETKF
    // benchmark in one MPMD launch took 132 ms per transfer cycle that way, 69 ms this way; over
    // TCP, between two jobs, 79 and 76 ms. `bench/letkf.py BUILD --sweep launch`.)
    std::vector<Span> merged;
    size_t size = 0;
    for (const Span &s : spans) {
        if (s.size == 0) continue;
        size += s.size;
        if (!merged.empty() && merged.back().data + merged.back().size == s.data &&
            merged.back().size + s.size <= INT_MAX)
            merged.back().size += s.size;
        else
            merged.push_back(s);
    }
    if (merged.size() <= 1)
        return receive(comm, source, tag, data, merged.empty() ? nullptr : merged[0].data, size, what);
    auto staging = std::make_shared<std::vector<char>>(pool_ ? pool_->take(size) : std::vector<char>(size));
    const Ticket t = receive(comm, source, tag, data, staging->data(), size, what);
    ops_.back().buffer = std::move(staging);
    ops_.back().scatter = std::move(merged);
    return t;
}

void MpiQueue::cancel(const std::vector<Ticket> &tickets) {
    for (size_t i = 0; i < ops_.size(); ++i) {
        Op &op = ops_[i];
        if (!op.receive || op.cancelled || std::find(tickets.begin(), tickets.end(), op.ticket) == tickets.end())
            continue;
        MPI_Cancel(&requests_[i]); // completes in progress(), cancelled or filled
        op.cancelled = true;
        if (--remaining_[op.ticket] == 0) remaining_.erase(op.ticket);
    }
}

void MpiQueue::abandon(MPI_Comm comm) {
    for (size_t i = 0; i < ops_.size(); ++i) {
        Op &op = ops_[i];
        if (op.comm != comm || op.cancelled) continue;
        if (op.receive) MPI_Cancel(&requests_[i]);
        op.cancelled = true;
        if (--remaining_[op.ticket] == 0) remaining_.erase(op.ticket);
    }
}

bool MpiQueue::progress() {
    if (requests_.empty()) return false;
    indices_.resize(requests_.size());
    statuses_.resize(requests_.size());
    int n = 0;
    const int rc =
        MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &n, indices_.data(), statuses_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) check_mpi(rc, "MPI_Testsome");
    if (n == MPI_UNDEFINED || n == 0) return false;
    // (A failure is thrown once the completed requests are dropped below: MPI freed them already.)
    std::exception_ptr failed;
    for (int k = 0; k < n && !failed; ++k) {
        const Op &op = ops_[static_cast<size_t>(indices_[static_cast<size_t>(k)])];
        const MPI_Status &st = statuses_[static_cast<size_t>(k)];
        if (op.cancelled) continue;
        try {
            if (rc == MPI_ERR_IN_STATUS) check_mpi(st.MPI_ERROR, op.what);
            if (!op.receive) continue;
            int got = 0;
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (static_cast<size_t>(got) != op.size)
                fail(DTF_ERR_PEER, "%s: expected %zu bytes from rank %d, got a message of %d", op.what, op.size,
                     st.MPI_SOURCE, got);
        } catch (const Error &) {
            failed = std::current_exception();
            continue;
        }
        counters::message(false, op.data, op.size);
        trace_message(false, st.MPI_TAG, op.data, st.MPI_SOURCE, op.size, op.what);
        const char *from = op.buffer ? op.buffer->data() : nullptr;
        for (const Span &s : op.scatter) {
            std::memcpy(s.data, from, s.size);
            from += s.size;
        }
        if (op.data && !op.scatter.empty()) counters::copied(false, op.size);
    }
    // Drop the completed requests (MPI set them to MPI_REQUEST_NULL), keeping the order of the rest.
    size_t out = 0;
    for (size_t i = 0; i < requests_.size(); ++i) {
        if (requests_[i] != MPI_REQUEST_NULL) {
            if (out != i) {
                requests_[out] = requests_[i];
                ops_[out] = std::move(ops_[i]);
            }
            ++out;
            continue;
        }
        Op &op = ops_[i];
        if (!op.cancelled && --remaining_[op.ticket] == 0) remaining_.erase(op.ticket);
        if (op.buffer && op.buffer.use_count() == 1 && pool_) pool_->give(std::move(*op.buffer));
    }
    requests_.resize(out);
    ops_.resize(out);
    if (failed) std::rethrow_exception(failed);
    return true;
}

std::string MpiQueue::describe_pending() const {
    std::string out;
    size_t shown = 0;
    for (const Op &op : ops_) {
        if (op.cancelled) continue;
        if (shown++ == 3) return out + ", ...";
        out += (out.empty() ? "" : ", ") + std::string(op.what ? op.what : "?");
    }
    return out;
}

size_t MpiQueue::pending_bytes(const std::vector<Ticket> &tickets) const {
    size_t n = 0;
    for (const Op &op : ops_)
        for (Ticket t : tickets)
            if (op.ticket == t) n += op.size;
    return n;
}

std::unique_ptr<Channel> mpi_channel(MPI_Comm comm, MpiQueue &queue, int first_tag) {
    return std::make_unique<MpiChannel>(comm, queue, first_tag);
}

} // namespace dtf::transport
