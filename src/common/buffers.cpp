#include "common/buffers.hpp"

#include <algorithm>

namespace dtf {

std::vector<char> BufferPool::take(size_t n) {
    if (n < kSmall) return std::vector<char>(n);
    in_use_ += n;
    peak_ = std::max(peak_, in_use_);
    // The smallest pooled buffer that fits, unless it would waste more than half of itself; among those,
    // the first given back with n bytes or more. Within its capacity a buffer takes no allocation, but the
    // bytes beyond the size it was given back with are zeroed (std::vector): a take of a size that moves
    // from one session to the next found a shorter buffer first and zeroed a few MB a cycle.
    auto it = free_.lower_bound(n);
    if (it == free_.end() || it->first > 2 * n) return std::vector<char>(n);
    for (auto j = it; j != free_.end() && j->first <= 2 * n; ++j)
        if (j->second.size() >= n) {
            it = j;
            break;
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
    if (pooled_ + cap > peak_) return; // freed here
    pooled_ += cap;
    free_.emplace(cap, std::move(b));
}

void BufferPool::clear() {
    free_.clear();
    pooled_ = in_use_ = peak_ = 0;
}

} // namespace dtf
