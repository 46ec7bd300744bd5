// transport::Group over an MPI communicator (group.hpp).
#include <algorithm>
#include <climits>
#include <cstring>
#include <iterator>

#include "common/counters.hpp"
#include "transport/mpi_channel.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::transport {

namespace {

// One nonblocking MPI operation; `then` may start the next step of a chain when it completes.
// `keep`: memory the operation reads or writes, kept as long as it: also when its owner gives it up
// before it completed (a collective some other rank never joined), since MPI may still write there.
class MpiPending : public Pending {
public:
    MpiPending(const char *call, std::function<int(MPI_Request *)> start,
               std::function<std::function<int(MPI_Request *)>()> then = nullptr, std::shared_ptr<void> keep = nullptr)
        : call_(call), then_(std::move(then)), keep_(std::move(keep)) {
        check_mpi(start(&req_), call_);
        counters::add(counters::Collectives, 0);
    }
    ~MpiPending() override {
        if (req_ != MPI_REQUEST_NULL && keep_) new std::shared_ptr<void>(std::move(keep_)); // (never freed, see above)
    }
    bool test() override {
        for (;;) {
            if (req_ == MPI_REQUEST_NULL) return true;
            int flag = 0;
            check_mpi(MPI_Test(&req_, &flag, MPI_STATUS_IGNORE), call_);
            if (!flag) return false;
            if (!then_) return true;
            auto next = then_();
            then_ = nullptr;
            if (next) check_mpi(next(&req_), call_);
        }
    }

private:
    const char *call_;
    MPI_Request req_ = MPI_REQUEST_NULL;
    std::function<std::function<int(MPI_Request *)>()> then_;
    std::shared_ptr<void> keep_;
};

// The ranks of `comm` in the communicator `component` (named `component_name` in errors).
std::vector<int> component_ranks_of(MPI_Comm comm, MPI_Comm component, const std::string &component_name) {
    int size = 0;
    MPI_Comm_size(comm, &size);
    MPI_Group group, whole;
    MPI_Comm_group(comm, &group);
    MPI_Comm_group(component, &whole);
    std::vector<int> local(static_cast<size_t>(size)), ranks(static_cast<size_t>(size));
    for (int i = 0; i < size; ++i) local[static_cast<size_t>(i)] = i;
    MPI_Group_translate_ranks(group, size, local.data(), whole, ranks.data());
    MPI_Group_free(&group);
    MPI_Group_free(&whole);
    for (int r : ranks)
        if (r == MPI_UNDEFINED)
            fail(DTF_ERR_ARG, "a communicator given to PnetCDF for a file dtf handles has ranks outside component '%s'",
                 component_name.c_str());
    return ranks;
}

class MpiGroup : public Group {
public:
    MpiGroup(MPI_Comm comm, MPI_Comm component, MpiQueue &queue, const std::string &component_name)
        : MpiGroup(comm, queue, component_ranks_of(comm, component, component_name)) {}
    // (`ranks`: those of `comm` in its component, known already)
    MpiGroup(MPI_Comm comm, MpiQueue &queue, std::vector<int> ranks) : queue_(queue), ranks_(std::move(ranks)) {
        MPI_Comm_rank(comm, &rank_);
        MPI_Comm_size(comm, &size_);
    }
    ~MpiGroup() override {
        if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    }
    std::unique_ptr<Pending> dup(MPI_Comm comm) {
        return std::make_unique<MpiPending>(
            "MPI_Comm_idup", [this, comm](MPI_Request *r) { return MPI_Comm_idup(comm, &comm_, r); },
            [this] {
                MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
                return std::function<int(MPI_Request *)>();
            });
    }
    int rank() const override { return rank_; }
    int size() const override { return size_; }
    const std::vector<int> &component_ranks() const override { return ranks_; }
    std::unique_ptr<Channel> channel() override { return mpi_channel(comm_, queue_); }
    MPI_Comm comm() const { return comm_; }
    std::unique_ptr<Pending> allreduce_max(const int64_t *in, int64_t *out, int n) override {
        // MPI reads `in` and writes the result when the operation progresses: both in a buffer of the
        // operation's own, the result copied to `out` once complete.
        auto buf = std::make_shared<std::vector<int64_t>>(in, in + n);
        buf->resize(2 * static_cast<size_t>(n));
        return std::make_unique<MpiPending>(
            "MPI_Iallreduce",
            [=](MPI_Request *r) {
                return MPI_Iallreduce(buf->data(), buf->data() + n, n, MPI_INT64_T, MPI_MAX, comm_, r);
            },
            [=] {
                std::copy(buf->begin() + n, buf->end(), out);
                return std::function<int(MPI_Request *)>();
            },
            buf);
    }
    std::unique_ptr<Pending> barrier() override {
        return std::make_unique<MpiPending>("MPI_Ibarrier", [=](MPI_Request *r) { return MPI_Ibarrier(comm_, r); });
    }
    // One round for up to kFirst bytes (the size travels with them), a second for the rest.
    std::unique_ptr<Pending> broadcast(int root, std::vector<char> *bytes) override {
        constexpr size_t kFirst = 248;
        auto first = std::make_shared<std::vector<char>>(sizeof(int64_t) + kFirst);
        if (rank_ == root) {
            const int64_t n = static_cast<int64_t>(bytes->size());
            std::memcpy(first->data(), &n, sizeof n);
            std::memcpy(first->data() + sizeof n, bytes->data(), std::min(bytes->size(), kFirst));
        }
        return std::make_unique<MpiPending>(
            "MPI_Ibcast",
            [=](MPI_Request *r) {
                return MPI_Ibcast(first->data(), static_cast<int>(first->size()), MPI_BYTE, root, comm_, r);
            },
            [=]() -> std::function<int(MPI_Request *)> {
                int64_t n = 0;
                std::memcpy(&n, first->data(), sizeof n);
                if (n < 0 || n > INT_MAX)
                    fail(DTF_ERR_UNSUPPORTED, "MPI_Ibcast: %lld bytes", static_cast<long long>(n));
                if (rank_ != root) {
                    bytes->resize(static_cast<size_t>(n));
                    std::memcpy(bytes->data(), first->data() + sizeof n, std::min(static_cast<size_t>(n), kFirst));
                }
                if (static_cast<size_t>(n) <= kFirst) return nullptr;
                return [=](MPI_Request *r) {
                    return MPI_Ibcast(bytes->data() + kFirst, static_cast<int>(n - static_cast<int64_t>(kFirst)),
                                      MPI_BYTE, root, comm_, r);
                };
            },
            first);
    }

private:
    MpiQueue &queue_;
    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0, size_ = 1;
    std::vector<int> ranks_;
};

} // namespace

MPI_Comm mpi_comm_of(const Group &group) {
    const auto *g = dynamic_cast<const MpiGroup *>(&group);
    return g ? g->comm() : MPI_COMM_NULL;
}

std::unique_ptr<Group> mpi_group(MPI_Comm comm, MPI_Comm component, MpiQueue &queue, const std::string &component_name,
                                 std::unique_ptr<Pending> *ready) {
    auto group = std::make_unique<MpiGroup>(comm, component, queue, component_name);
    *ready = group->dup(comm);
    return group;
}

std::unique_ptr<Group> SpareGroups::take(MPI_Comm comm, MPI_Comm component, const std::string &component_name,
                                         std::unique_ptr<Pending> *ready) {
    const std::vector<int> ranks = component_ranks_of(comm, component, component_name);
    for (Chain &chain : chains_) {
        if (chain.ranks != ranks || chain.spares.empty()) continue;
        Spare spare = std::move(chain.spares.front());
        chain.spares.pop_front();
        *ready = std::move(spare.ready);
        return std::move(spare.group);
    }
    return nullptr;
}

void SpareGroups::refill(const Group &group, MPI_Comm comm, MPI_Comm component, MpiQueue &queue,
                         const std::string &component_name, const std::function<void(Pending &)> &wait) {
    auto chain = std::find_if(chains_.begin(), chains_.end(),
                              [&](const Chain &c) { return c.ranks == group.component_ranks(); });
    if (chain == chains_.end()) {
        Chain fresh{group.component_ranks(), {}, {}, 0};
        for (size_t i = 0; i < kDepth; ++i) { // one after the other: one duplicate of `comm` at a time
            auto seed = std::make_unique<MpiGroup>(comm, component, queue, component_name);
            auto ready = seed->dup(comm);
            fresh.seeds.push_back(Spare{std::move(seed), std::move(ready)});
            try {
                wait(*fresh.seeds.back().ready);
            } catch (...) {
                abandon(fresh.seeds.back());
                throw;
            }
        }
        chains_.push_back(std::move(fresh));
        chain = std::prev(chains_.end());
    }
    while (chain->spares.size() < kDepth) {
        const MPI_Comm parent = mpi_comm_of(*chain->seeds[chain->started++ % kDepth].group);
        auto spare = std::make_unique<MpiGroup>(parent, queue, chain->ranks);
        auto ready = spare->dup(parent);
        chain->spares.push_back(Spare{std::move(spare), std::move(ready)});
    }
}

// A duplicate under way is MPI's to write: its group and operation are left allocated.
void SpareGroups::abandon(Spare &s) {
    s.group.release();
    s.ready.release();
}

SpareGroups::~SpareGroups() {
    for (Chain &chain : chains_) { // (only when finish() was not reached)
        for (Spare &s : chain.seeds) abandon(s);
        for (Spare &s : chain.spares) abandon(s);
    }
}

void SpareGroups::finish(const std::function<void(Pending &)> &wait) {
    std::list<Chain> chains = std::move(chains_);
    chains_.clear();
    std::unique_ptr<Error> first;
    auto settle = [&](Spare &s) {
        try {
            wait(*s.ready);
        } catch (const Error &e) {
            if (!first) first = std::make_unique<Error>(e);
            abandon(s);
        }
    };
    for (Chain &chain : chains) {
        for (Spare &s : chain.spares) settle(s);
        chain.spares.clear(); // frees the duplicates (the spares' first: their parents are the seeds)
        for (Spare &s : chain.seeds) settle(s);
    }
    chains.clear();
    if (first) throw *first;
}

} // namespace dtf::transport
