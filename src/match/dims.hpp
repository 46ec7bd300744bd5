// Dims: the per-dimension values of a box (starts, counts or strides). Most netCDF variables have at
// most four dimensions, and the matcher creates one box per piece (10^6 and more per batch), so the
// values of up to kInline dimensions live inside the object; more go to the heap. Otherwise it
// behaves like the std::vector<int64_t> it replaces. Pure C++ (no MPI).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace dtf::match {

class Dims {
public:
    static constexpr size_t kInline = 4;

    Dims() = default;
    Dims(std::initializer_list<int64_t> v) { assign(v.begin(), v.end()); }
    Dims(const std::vector<int64_t> &v) {
        assign(v.data(), v.data() + v.size());
    } // NOLINT: implicit, as the vector it replaces
    Dims(size_t n, int64_t value) { assign(n, value); }
    Dims(const Dims &o) { copy(o); }
    Dims(Dims &&o) noexcept { take(o); }
    ~Dims() { release(); }
    Dims &operator=(const Dims &o) {
        if (this != &o) copy(o);
        return *this;
    }
    Dims &operator=(Dims &&o) noexcept {
        if (this != &o) take(o);
        return *this;
    }

    size_t size() const { return n_; }
    bool empty() const { return n_ == 0; }
    int64_t *data() { return cap_ ? heap_ : inline_; }
    const int64_t *data() const { return cap_ ? heap_ : inline_; }
    int64_t &operator[](size_t i) { return data()[i]; }
    const int64_t &operator[](size_t i) const { return data()[i]; }
    int64_t *begin() { return data(); }
    int64_t *end() { return data() + n_; }
    const int64_t *begin() const { return data(); }
    const int64_t *end() const { return data() + n_; }
    int64_t &back() { return data()[n_ - 1]; }
    const int64_t &back() const { return data()[n_ - 1]; }

    void clear() { n_ = 0; }
    // New elements are zero (or `value`), as with std::vector.
    void resize(size_t n, int64_t value = 0) {
        reserve(n);
        if (n > n_) std::fill(data() + n_, data() + n, value);
        n_ = static_cast<uint32_t>(n);
    }
    void assign(size_t n, int64_t value) {
        n_ = 0;
        resize(n, value);
    }
    void push_back(int64_t v) {
        if (n_ == capacity()) reserve(n_ < kInline ? kInline : 2 * n_);
        data()[n_++] = v;
    }

    bool operator==(const Dims &o) const { return n_ == o.n_ && std::equal(begin(), end(), o.begin()); }
    bool operator!=(const Dims &o) const { return !(*this == o); }
    std::vector<int64_t> vec() const { return std::vector<int64_t>(begin(), end()); }

private:
    // 40 bytes for up to kInline values (a plan holds one box, three Dims, per piece).
    uint32_t n_ = 0, cap_ = 0; // cap_: heap capacity, 0 while the values are inline
    union {
        int64_t inline_[kInline] = {};
        int64_t *heap_;
    };

    size_t capacity() const { return cap_ ? cap_ : kInline; }
    void release() {
        if (cap_) delete[] heap_;
        cap_ = 0;
    }
    void reserve(size_t n) {
        if (n <= capacity()) return;
        auto *p = new int64_t[n];
        std::copy(begin(), end(), p);
        release();
        heap_ = p, cap_ = static_cast<uint32_t>(n);
    }
    void assign(const int64_t *first, const int64_t *last) {
        n_ = 0;
        reserve(static_cast<size_t>(last - first));
        std::copy(first, last, data());
        n_ = static_cast<uint32_t>(last - first);
    }
    void copy(const Dims &o) {
        if (o.cap_) return assign(o.begin(), o.end());
        release();
        n_ = o.n_;
        std::copy(o.inline_, o.inline_ + kInline, inline_); // a fixed size: no call, no branch
    }
    void take(Dims &o) {
        release();
        n_ = o.n_, cap_ = o.cap_;
        if (cap_)
            heap_ = o.heap_;
        else
            std::copy(o.inline_, o.inline_ + kInline, inline_);
        o.n_ = 0, o.cap_ = 0;
    }
};

} // namespace dtf::match
