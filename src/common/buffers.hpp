// Byte buffers recycled across sessions. A cyclic workflow moves the same sizes every cycle, and
// fresh memory costs a page fault per 4 KiB on first touch (about 1 GB/s on our machines, several
// times slower than copying into memory that is already mapped; see bench/letkf_io.c), so the buffers
// of one session are kept for the next. Bounded: the pool never holds more than twice the bytes dtf had
// in use at once (once: a cycle that uses a 1.6 and a 1 MB buffer one after the other kept one of them,
// shortened it for the one and zeroed 0.6 MB to lengthen it again for the other, every cycle). Not
// thread-safe by itself: used under the runtime lock (Entry).
#pragma once

#include <cstddef>
#include <map>
#include <vector>

namespace dtf {

class BufferPool {
public:
    // A buffer of n bytes, contents unspecified.
    std::vector<char> take(size_t n);
    // Return a buffer (from take() or not); it may be kept for a later take().
    void give(std::vector<char> &&buf);
    void clear();

private:
    // Below this a fresh buffer costs little (within one page), so it is not pooled. Once 64 KiB: every
    // smaller take was a malloc and a memset, and a replayed cycle of small blocks makes dozens of them.
    static constexpr size_t kSmall = 4 << 10;
    std::multimap<size_t, std::vector<char>> free_; // by capacity
    size_t pooled_ = 0, in_use_ = 0, peak_ = 0;
};

} // namespace dtf
