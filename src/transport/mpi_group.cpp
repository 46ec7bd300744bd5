// transport::Group over MPI: the sessions of a set of ranks on the communicator they keep (KeptGroups
// in mpi_channel.hpp), their collectives point to point.
#include <algorithm>
#include <iterator>
#include <list>

#include "common/counters.hpp"
#include "transport/mpi_channel.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::transport {

namespace {

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

// A collective of a group session, in steps of point-to-point messages on the session's collective
// tag. A rank sends another at most one message per collective, and starts a collective only once its
// previous one is complete (`after`): so the messages of consecutive collectives between two ranks
// are matched in order, on one tag. It works in buffers of its own, and gives its result to the
// caller's memory only through the caller's Pending (deliver()): a collective whose caller gave up
// still completes (the next one of the session waits for it, as every rank must take part) without
// writing memory the caller has freed.
class Collective {
public:
    Collective(MPI_Comm comm, int tag, const char *call) : comm_(comm), tag_(tag), call_(call) {}
    virtual ~Collective() = default;
    // Whether it is complete (its results in place); starts it once the collective before it is.
    bool test() {
        if (done_) return true;
        if (before_) {
            if (!before_->test()) return false;
            before_.reset();
        }
        for (;;) {
            if (probing_ >= 0 && !probe()) return false;
            int flag = 1;
            if (!requests_.empty())
                check_mpi(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &flag,
                                      MPI_STATUSES_IGNORE), call_);
            if (!flag) return false;
            requests_.clear();
            if ((done_ = step())) return true;
        }
    }
    void after(std::shared_ptr<Collective> before) { before_ = std::move(before); }
    bool in_flight() const { return !requests_.empty() || probing_ >= 0; }
    // Its result to the caller's memory, once complete.
    virtual void deliver() = 0;

protected:
    // Starts the next step's messages, the last step's being complete; true when none is left.
    virtual bool step() = 0;
    void send(int to, const void *data, size_t size) {
        counters::add(counters::CollectiveSent, size);
        requests_.emplace_back();
        check_mpi(MPI_Isend(data, static_cast<int>(size), MPI_BYTE, to, tag_, comm_, &requests_.back()), call_);
    }
    void receive(int from, void *data, size_t size) {
        counters::add(counters::CollectiveReceived, size);
        requests_.emplace_back();
        check_mpi(MPI_Irecv(data, static_cast<int>(size), MPI_BYTE, from, tag_, comm_, &requests_.back()), call_);
    }
    // A message of a size not known ahead from `from`, into `*into` (resized to fit).
    void receive_any_size(int from, std::vector<char> *into) {
        probing_ = from;
        into_ = into;
    }

private:
    bool probe() {
        int flag = 0, size = 0;
        MPI_Message message;
        MPI_Status status;
        check_mpi(MPI_Improbe(probing_, tag_, comm_, &flag, &message, &status), call_);
        if (!flag) return false;
        MPI_Get_count(&status, MPI_BYTE, &size);
        into_->resize(static_cast<size_t>(size));
        counters::add(counters::CollectiveReceived, static_cast<uint64_t>(size));
        requests_.emplace_back();
        check_mpi(MPI_Imrecv(into_->data(), size, MPI_BYTE, &message, &requests_.back()), call_);
        probing_ = -1;
        return true;
    }
    MPI_Comm comm_;
    int tag_;
    const char *call_;
    std::shared_ptr<Collective> before_;
    std::vector<MPI_Request> requests_;
    int probing_ = -1; // the rank whose message of unknown size comes next (receive_any_size)
    std::vector<char> *into_ = nullptr;
    bool done_ = false;
};

// The largest power of two <= n (n >= 1).
int floor_pow2(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

// A rank's place in the binomial tree over `size` ranks rooted at `root`: in ranks relative to the
// root, the children of a rank are the rank plus each power of two below its lowest set bit (the
// root: below `size`), its parent the rank less that bit. Real ranks here.
struct BinomialTree {
    int parent = -1; // -1: the root
    std::vector<int> children;
    BinomialTree(int rank, int size, int root) {
        const int me = (rank - root + size) % size, low = me == 0 ? size : (me & -me);
        auto real = [&](int relative) { return (relative + root) % size; };
        for (int mask = 1; mask < low && me + mask < size; mask <<= 1) children.push_back(real(me + mask));
        if (me != 0) parent = real(me - low);
    }
};

// out[i] = max over the ranks of in[i] (none: a barrier). Up to 4 ranks by recursive doubling among
// the first p2 ranks (p2: the largest power of two <= size), each rank beyond them folded into
// rank - p2 first and told the result after: log2(p2) exchanges on the critical path. Over more ranks
// up a binomial tree to `root` and the result down it: 2 (size - 1) messages instead of p2 log2(p2)
// (a reader group of 16 ranks: 30 instead of 64), in twice the hops; the root, which sends most,
// changes from session to session.
class AllreduceMax : public Collective {
public:
    AllreduceMax(MPI_Comm comm, int tag, int rank, int size, int root, const int64_t *in, int64_t *out, int n)
        : Collective(comm, tag, n > 0 ? "an allreduce (dtf's, point to point)" : "a barrier (dtf's, point to point)"),
          mine_(in, in + n), theirs_(static_cast<size_t>(n)), out_(out) {
        if (size > 4) { // up the tree, then the result down
            const BinomialTree tree(rank, size, root);
            for (int c : tree.children) steps_.push_back({-1, c, true});
            if (tree.parent >= 0) steps_.push_back({tree.parent, tree.parent, false});
            for (int c : tree.children) steps_.push_back({c, -1, false});
            return;
        }
        const int p2 = floor_pow2(size);
        if (rank >= p2) {
            steps_.push_back({rank - p2, rank - p2, false});
            return;
        }
        if (rank < size - p2) steps_.push_back({-1, rank + p2, true});
        for (int mask = 1; mask < p2; mask <<= 1) steps_.push_back({rank ^ mask, rank ^ mask, true});
        if (rank < size - p2) steps_.push_back({rank + p2, -1, false});
    }

private:
    struct Step {
        int to, from; // -1: none
        bool fold;    // what comes is folded in (max), else it is the result
    };
    bool step() override {
        if (next_ > 0 && steps_[next_ - 1].from >= 0) { // the step just complete
            if (steps_[next_ - 1].fold)
                for (size_t i = 0; i < mine_.size(); ++i) mine_[i] = std::max(mine_[i], theirs_[i]);
            else
                mine_ = theirs_;
        }
        if (next_ == steps_.size()) return true;
        const Step &s = steps_[next_++];
        const size_t bytes = mine_.size() * sizeof(int64_t);
        if (s.to >= 0) send(s.to, mine_.data(), bytes);
        if (s.from >= 0) receive(s.from, theirs_.data(), bytes);
        return false;
    }
    void deliver() override { std::copy(mine_.begin(), mine_.end(), out_); }
    std::vector<Step> steps_;
    size_t next_ = 0;
    std::vector<int64_t> mine_, theirs_;
    int64_t *out_;
};

// `*bytes` of rank `root` to every rank, down a binomial tree rooted there: ceil(log2(size)) hops.
class Broadcast : public Collective {
public:
    Broadcast(MPI_Comm comm, int tag, int rank, int size, int root, std::vector<char> *bytes)
        : Collective(comm, tag, "a broadcast (dtf's, point to point)"), tree_(rank, size, root), bytes_(bytes) {
        if (tree_.parent < 0) data_ = *bytes;
    }
    void deliver() override {
        if (tree_.parent >= 0) bytes_->swap(data_);
    }

private:
    bool step() override {
        if (stage_ == 0 && tree_.parent >= 0) { // first from the parent
            receive_any_size(tree_.parent, &data_);
            stage_ = 1;
            return false;
        }
        if (stage_ == 2) return true;
        stage_ = 2;
        for (int c : tree_.children) send(c, data_.data(), data_.size()); // then to the children
        return false;
    }
    const BinomialTree tree_;
    int stage_ = 0;
    std::vector<char> *bytes_;
    std::vector<char> data_; // what goes down the tree: the root's copy, or what came from the parent
};

// A Pending of a collective. One given up with messages in flight is left allocated (MPI may still
// write its buffers); one not started yet goes on in the group's chain.
class CollectivePending : public Pending {
public:
    explicit CollectivePending(std::shared_ptr<Collective> op) : op_(std::move(op)) {}
    ~CollectivePending() override {
        if (op_->in_flight()) new std::shared_ptr<Collective>(std::move(op_)); // (never freed, see above)
    }
    bool test() override {
        if (delivered_) return true;
        if (!op_->test()) return false;
        op_->deliver();
        return delivered_ = true;
    }

private:
    std::shared_ptr<Collective> op_;
    bool delivered_ = false;
};

} // namespace

struct KeptGroups::Set {
    std::vector<int> ranks; // the component ranks of the communicator's ranks
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0, size = 1;
    uint64_t sessions = 0; // groups taken so far
};

namespace {

// A session of a kept communicator's ranks: its own tags on it (KeptGroups).
class SessionGroup : public Group {
public:
    SessionGroup(std::shared_ptr<const KeptGroups::Set> set, int first_tag, MpiQueue &queue)
        : set_(std::move(set)), first_tag_(first_tag), queue_(queue) {}
    int rank() const override { return set_->rank; }
    int size() const override { return set_->size; }
    const std::vector<int> &component_ranks() const override { return set_->ranks; }
    std::unique_ptr<Channel> channel() override { return mpi_channel(comm(), queue_, first_tag_); }
    MPI_Comm comm() const {
        if (set_->comm == MPI_COMM_NULL) fail(DTF_ERR_INTERNAL, "a file group used after dtf_finalize");
        return set_->comm;
    }
    std::unique_ptr<Pending> allreduce_max(const int64_t *in, int64_t *out, int n) override {
        return start(std::make_shared<AllreduceMax>(comm(), tag(), rank(), size(), root(), in, out, n));
    }
    std::unique_ptr<Pending> barrier() override {
        return start(std::make_shared<AllreduceMax>(comm(), tag(), rank(), size(), root(), nullptr, nullptr, 0));
    }
    std::unique_ptr<Pending> broadcast(int root, std::vector<char> *bytes) override {
        return start(std::make_shared<Broadcast>(comm(), tag(), rank(), size(), root, bytes));
    }

private:
    int tag() const { return first_tag_ + group_slot(Tag::Collective); }
    int root() const { return (first_tag_ / kGroupTags) % size(); } // (spread by session)
    std::unique_ptr<Pending> start(std::shared_ptr<Collective> op) {
        if (size() > 1) counters::add(counters::Collectives, 0); // (over one rank nothing travels)
        if (last_) op->after(std::move(last_));
        last_ = op;
        op->test(); // (its first messages leave now)
        return std::make_unique<CollectivePending>(std::move(op));
    }
    std::shared_ptr<const KeptGroups::Set> set_;
    int first_tag_;
    MpiQueue &queue_;
    std::shared_ptr<Collective> last_; // the last collective started: the next waits for it
};

// The duplicate of a set's communicator, made at its first open.
class Duplicate : public Pending {
public:
    Duplicate(MPI_Comm comm, MPI_Comm *out) : out_(out) {
        check_mpi(MPI_Comm_idup(comm, out, &request_), kCall);
        int size = 0;
        MPI_Comm_size(comm, &size);
        if (size > 1) counters::add(counters::Collectives, 0);
    }
    bool test() override {
        if (request_ == MPI_REQUEST_NULL) return true;
        int flag = 0;
        check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), kCall);
        if (flag) MPI_Comm_set_errhandler(*out_, MPI_ERRORS_RETURN);
        return flag != 0;
    }
    bool in_flight() const { return request_ != MPI_REQUEST_NULL; }

private:
    static constexpr const char *kCall = "MPI_Comm_idup";
    MPI_Comm *out_;
    MPI_Request request_ = MPI_REQUEST_NULL;
};

} // namespace

MPI_Comm mpi_comm_of(const Group &group) {
    const auto *g = dynamic_cast<const SessionGroup *>(&group);
    return g ? g->comm() : MPI_COMM_NULL;
}

std::unique_ptr<Group> KeptGroups::take(MPI_Comm comm, MPI_Comm component, const std::string &component_name,
                                        MpiQueue &queue, int tag_ub, const std::function<void(Pending &)> &wait) {
    std::vector<int> ranks = component_ranks_of(comm, component, component_name);
    auto set = std::find_if(sets_.begin(), sets_.end(), [&](const auto &s) { return s->ranks == ranks; });
    if (set == sets_.end()) {
        auto fresh = std::make_shared<Set>();
        fresh->ranks = std::move(ranks);
        MPI_Comm_rank(comm, &fresh->rank);
        MPI_Comm_size(comm, &fresh->size);
        Duplicate dup(comm, &fresh->comm);
        try {
            wait(dup);
        } catch (...) {
            if (dup.in_flight()) new std::shared_ptr<Set>(std::move(fresh)); // (MPI's to write: never freed)
            throw;
        }
        sets_.push_back(std::move(fresh));
        set = std::prev(sets_.end());
    }
    const uint64_t windows = static_cast<uint64_t>(tag_ub) / kGroupTags;
    const int first_tag = static_cast<int>(((*set)->sessions++ % windows) * kGroupTags);
    return std::make_unique<SessionGroup>(*set, first_tag, queue);
}

KeptGroups::~KeptGroups() = default;

void KeptGroups::finish() {
    for (auto &set : sets_)
        if (set->comm != MPI_COMM_NULL) MPI_Comm_free(&set->comm);
    sets_.clear();
}

} // namespace dtf::transport
