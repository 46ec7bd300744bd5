// Unit test of the buffer pool (src/common/buffers): which pooled buffer a take gets. A std::vector
// zeroes what it grows by, so a take should neither grow a buffer when one given back at least as long
// fits, nor shorten a longer one when a shorter one fits (the next take of the longer size would then
// grow it), and it should not waste a buffer more than twice as long. Buffers from 4 KiB are pooled.
#include <cstdio>
#include <vector>

#include "common/buffers.hpp"

#include "check.hpp"

using namespace dtf;

namespace {
constexpr size_t kMB = 1 << 20;
} // namespace

int main() {
    {   // two buffers of one capacity, given back 1.6 and 1 MB long: each take gets the one of its size
        BufferPool pool;
        std::vector<char> a = pool.take(16 * kMB / 10), b = pool.take(16 * kMB / 10);
        const char *pa = a.data(), *pb = b.data();
        b.resize(kMB);
        pool.give(std::move(a));
        pool.give(std::move(b));
        std::vector<char> x = pool.take(kMB);
        CHECK(x.data() == pb && x.size() == kMB);
        std::vector<char> y = pool.take(16 * kMB / 10);
        CHECK(y.data() == pa && y.size() == 16 * kMB / 10);
    }
    {   // none long enough: the longest one, which grows least
        BufferPool pool;
        std::vector<char> c = pool.take(2 * kMB), d = pool.take(2 * kMB);
        const char *pd = d.data();
        c.resize(kMB / 2);
        d.resize(3 * kMB / 2);
        pool.give(std::move(c));
        pool.give(std::move(d));
        std::vector<char> x = pool.take(16 * kMB / 10);
        CHECK(x.data() == pd && x.size() == 16 * kMB / 10);
    }
    {   // a buffer more than twice as long as the take is left for a longer one; a take below the pooled
        // sizes is a buffer of its own size
        BufferPool pool;
        std::vector<char> big = pool.take(4 * kMB);
        const char *pbig = big.data();
        pool.give(std::move(big));
        std::vector<char> small = pool.take(kMB);
        CHECK(small.data() != pbig && small.size() == kMB);
        std::vector<char> again = pool.take(4 * kMB);
        CHECK(again.data() == pbig);
        std::vector<char> tiny = pool.take(100);
        CHECK(tiny.size() == 100);
    }
    {   // small blocks are pooled too: a 60 KiB buffer comes back as it was given (neither a fresh
        // allocation nor zeroed), as a replayed cycle of small messages takes it again
        BufferPool pool;
        std::vector<char> m = pool.take(60 << 10);
        const char *pm = m.data();
        m.assign(m.size(), 'x');
        pool.give(std::move(m));
        std::vector<char> again = pool.take(60 << 10);
        CHECK(again.data() == pm && again.size() == (60u << 10) && again.front() == 'x' && again.back() == 'x');
    }
    return unit::check_result("test_buffers");
}
