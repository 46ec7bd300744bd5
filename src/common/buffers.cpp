#include "common/buffers.hpp"

#include <algorithm>
#include <iterator>

namespace dtf {

std::vector<char> BufferPool::take(size_t n) {
    if (n < kSmall) return std::vector<char>(n);
    in_use_ += n;
    peak_ = std::max(peak_, in_use_);
    // A pooled buffer that fits, unless it would waste more than half of itself. Within its capacity a
    // buffer takes no allocation, but the bytes beyond the size it was given back with are zeroed
    // (std::vector), and a take shorter than that size loses the rest for the next take. So among those
    // that fit: the one given back with the fewest bytes but n or more, else the one given back with the
    // most (a take of 1 MB that shortened the 1.6 MB buffer of the message taken next zeroed 0.6 MB a cycle).
    // One given back with exactly n bytes ends the search: a replayed cycle takes the sizes of the last.
    auto it = free_.lower_bound(n);
    if (it == free_.end() || it->first > 2 * n) return std::vector<char>(n);
    for (auto j = std::next(it); it->second.size() != n && j != free_.end() && j->first <= 2 * n; ++j) {
        const size_t have = it->second.size(), size = j->second.size();
        if (have >= n ? size >= n && size < have : size > have) it = j;
    }
    std::vector<char> buf = std::move(it->second);
    pooled_ -= it->first;
    free_.erase(it);
    buf.resize(n);
    return buf;
}

void BufferPool::give(std::vector<char> &&buf) {
    const size_t cap = buf.capacity();
    std::vector<char> b = std::move(buf);
    if (cap < kSmall) return;
    in_use_ -= std::min(in_use_, b.size());
    if (pooled_ + cap > 2 * peak_) return; // freed here (bounded: buffers.hpp)
    pooled_ += cap;
    free_.emplace(cap, std::move(b));
}

void BufferPool::clear() {
    free_.clear();
    pooled_ = in_use_ = peak_ = 0;
}

} // namespace dtf
