// The in-process channel of channel.hpp (no MPI): for unit tests of the protocol in one process.
#include <algorithm>
#include <cstring>
#include <functional>

#include "common/error.hpp"
#include "transport/channel.hpp"
#include "transport/group.hpp"

namespace dtf::transport {

namespace {

class LoopbackChannel : public Channel {
public:
    LoopbackChannel(LoopbackNet &net, int group, int rank, int remote_group, int remote_size)
        : net_(net), group_(group), rank_(rank), remote_group_(remote_group), remote_size_(remote_size) {}

    int remote_size() const override { return remote_size_; }

    Ticket send(const std::vector<int> &dests, Tag tag, std::vector<char> bytes, const char *what) override {
        auto lock = net_.lock();
        for (int d : dests) {
            if (d < 0 || d >= remote_size_)
                fail(DTF_ERR_INTERNAL, "%s: no rank %d in a group of %d", what, d, remote_size_);
            net_.endpoint(remote_group_, d).inbox[{group_, static_cast<int>(tag)}].push_back({rank_, bytes});
        }
        return next_++; // delivered at once
    }

    Ticket send(int dest, Tag tag, const char *data, size_t size, std::shared_ptr<const void>,
                const char *what) override {
        return send(std::vector<int>{dest}, tag, std::vector<char>(data, data + size), what); // copied at once
    }

    std::optional<Incoming> poll(Tag tag, const char *) override {
        auto lock = net_.lock();
        auto &inbox = net_.endpoint(group_, rank_).inbox;
        auto it = inbox.find({remote_group_, static_cast<int>(tag)});
        if (it == inbox.end() || it->second.empty()) return std::nullopt;
        // Messages wanted by a posted receive belong to it (MPI matches posted receives first).
        for (auto m = it->second.begin(); m != it->second.end(); ++m)
            if (!claimed(m->source, tag)) {
                Incoming in{m->source, std::move(m->bytes)};
                it->second.erase(m);
                return in;
            }
        return std::nullopt;
    }

    Ticket receive(int source, Tag tag, char *buf, size_t size, const char *what) override {
        return receive(source, tag, std::vector<Span>{{buf, size}}, what);
    }
    Ticket receive(int source, Tag tag, const std::vector<Span> &spans, const char *what) override {
        size_t size = 0;
        for (const Span &s : spans) size += s.size;
        receives_.push_back(Receive{next_, source, tag, spans, size, what});
        return next_++;
    }

    bool progress() override {
        auto lock = net_.lock();
        auto &inbox = net_.endpoint(group_, rank_).inbox;
        bool any = false;
        for (auto r = receives_.begin(); r != receives_.end();) {
            auto &queue = inbox[{remote_group_, static_cast<int>(r->tag)}];
            auto m = std::find_if(queue.begin(), queue.end(),
                                  [&](const LoopbackNet::Message &x) { return x.source == r->source; });
            if (m == queue.end()) {
                ++r;
                continue;
            }
            if (m->bytes.size() != r->size)
                fail(DTF_ERR_PEER, "%s: expected %zu bytes from rank %d, got a message of %zu", r->what, r->size,
                     r->source, m->bytes.size());
            size_t at = 0;
            for (const Span &s : r->spans) {
                if (s.size) std::memcpy(s.data, m->bytes.data() + at, s.size);
                at += s.size;
            }
            queue.erase(m);
            r = receives_.erase(r); // done: no longer pending
            any = true;
        }
        return any;
    }

    void cancel(const std::vector<Ticket> &tickets) override {
        receives_.erase(std::remove_if(receives_.begin(), receives_.end(),
                                       [&](const Receive &r) {
                                           return std::find(tickets.begin(), tickets.end(), r.ticket) != tickets.end();
                                       }),
                        receives_.end());
    }

    bool done(Ticket t) const override {
        return std::none_of(receives_.begin(), receives_.end(), [&](const Receive &r) { return r.ticket == t; });
    }

    size_t pending_bytes(const std::vector<Ticket> &tickets) const override {
        size_t n = 0;
        for (const auto &r : receives_)
            if (std::find(tickets.begin(), tickets.end(), r.ticket) != tickets.end()) n += r.size;
        return n;
    }

private:
    struct Receive {
        Ticket ticket;
        int source;
        Tag tag;
        std::vector<Span> spans;
        size_t size;
        const char *what;
    };
    bool claimed(int source, Tag tag) const {
        return std::any_of(receives_.begin(), receives_.end(),
                           [&](const Receive &r) { return r.source == source && r.tag == tag; });
    }

    LoopbackNet &net_;
    int group_, rank_, remote_group_, remote_size_;
    std::deque<Receive> receives_; // posted, not yet matched, in posting order
    Ticket next_ = 1;
};

enum Collective { Allreduce = 1, Barrier, Broadcast };

class LoopbackPending : public Pending {
public:
    LoopbackPending(LoopbackNet &net, int group, int round, std::function<void(LoopbackNet::Round &)> finish)
        : net_(net), group_(group), round_(round), finish_(std::move(finish)) {}
    bool test() override {
        if (done_) return true;
        auto lock = net_.lock();
        auto &rounds = net_.rounds(group_);
        LoopbackNet::Round &r = rounds.at(round_);
        if (r.arrived < net_.size(group_)) return false;
        if (finish_) finish_(r);
        if (++r.taken == net_.size(group_)) rounds.erase(round_);
        return done_ = true;
    }

private:
    LoopbackNet &net_;
    int group_, round_;
    std::function<void(LoopbackNet::Round &)> finish_;
    bool done_ = false;
};

class LoopbackGroup : public Group {
public:
    LoopbackGroup(LoopbackNet &net, int group, int rank, int size) : net_(net), group_(group), rank_(rank) {
        for (int r = 0; r < size; ++r) ranks_.push_back(r);
    }
    int rank() const override { return rank_; }
    int size() const override { return static_cast<int>(ranks_.size()); }
    const std::vector<int> &component_ranks() const override { return ranks_; }
    std::unique_ptr<Channel> channel() override { return net_.channel(group_, rank_, group_); }
    std::unique_ptr<Pending> allreduce_max(const int64_t *in, int64_t *out, int n) override {
        return join(Allreduce, [&](LoopbackNet::Round &r) {
            if (r.arrived == 0) r.max.assign(in, in + n);
            if (r.max.size() != static_cast<size_t>(n))
                fail(DTF_ERR_INTERNAL, "loopback: allreduces of different sizes");
            for (int i = 0; i < n; ++i) r.max[static_cast<size_t>(i)] = std::max(r.max[static_cast<size_t>(i)], in[i]);
        }, [out](LoopbackNet::Round &r) { std::copy(r.max.begin(), r.max.end(), out); });
    }
    std::unique_ptr<Pending> barrier() override {
        return join(Barrier, [](LoopbackNet::Round &) {}, nullptr);
    }
    std::unique_ptr<Pending> broadcast(int root, std::vector<char> *bytes) override {
        const bool me = root == rank_;
        return join(Broadcast, [&](LoopbackNet::Round &r) {
            if (me) r.bytes = *bytes;
        }, [bytes, me](LoopbackNet::Round &r) {
            if (!me) *bytes = r.bytes;
        });
    }

private:
    std::unique_ptr<Pending> join(int kind, const std::function<void(LoopbackNet::Round &)> &arrive,
                                  std::function<void(LoopbackNet::Round &)> finish) {
        auto lock = net_.lock();
        const int number = next_++;
        LoopbackNet::Round &r = net_.rounds(group_)[number];
        if (r.arrived > 0 && r.kind != kind) fail(DTF_ERR_INTERNAL, "loopback: ranks started different collectives");
        r.kind = kind;
        arrive(r);
        ++r.arrived;
        return std::make_unique<LoopbackPending>(net_, group_, number, std::move(finish));
    }

    LoopbackNet &net_;
    int group_, rank_;
    std::vector<int> ranks_;
    int next_ = 0; // this rank's collectives so far
};

} // namespace

int LoopbackNet::add_group(int size) {
    auto lock = this->lock();
    groups_.emplace_back(static_cast<size_t>(size));
    return static_cast<int>(groups_.size()) - 1;
}

LoopbackNet::Endpoint &LoopbackNet::endpoint(int group, int rank) {
    if (group < 0 || static_cast<size_t>(group) >= groups_.size() || rank < 0 ||
        static_cast<size_t>(rank) >= groups_[static_cast<size_t>(group)].size())
        fail(DTF_ERR_INTERNAL, "loopback: no rank %d in group %d", rank, group);
    return groups_[static_cast<size_t>(group)][static_cast<size_t>(rank)];
}

std::unique_ptr<Channel> LoopbackNet::channel(int group, int rank, int remote_group) {
    auto lock = this->lock();
    endpoint(group, rank); // checks both
    const int remote_size = static_cast<int>(groups_.at(static_cast<size_t>(remote_group)).size());
    return std::make_unique<LoopbackChannel>(*this, group, rank, remote_group, remote_size);
}

std::unique_ptr<Group> LoopbackNet::dup_group(int group, int rank) {
    int dup, size;
    {
        auto lock = this->lock();
        endpoint(group, rank);
        const size_t n = dups_taken_[{group, rank}]++;
        auto &made = dups_[group];
        if (n == made.size()) {
            groups_.emplace_back(groups_[static_cast<size_t>(group)].size());
            made.push_back(static_cast<int>(groups_.size()) - 1);
        }
        dup = made[n];
        size = static_cast<int>(groups_[static_cast<size_t>(dup)].size());
    }
    return std::make_unique<LoopbackGroup>(*this, dup, rank, size);
}

size_t LoopbackNet::undelivered() const {
    auto lock = this->lock();
    size_t n = 0;
    for (const auto &group : groups_)
        for (const auto &e : group)
            for (const auto &[key, queue] : e.inbox) n += queue.size();
    return n;
}

} // namespace dtf::transport
