// The one byte encoding of everything dtf sends between processes (control messages and their
// payloads, request and piece lists, the netCDF header model): little-endian integers and
// length-prefixed byte strings, read back with bounds checks. Pure C++, no MPI.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace dtf {

// FNV-1a, 64 bits: a stable hash of a string (the same in every process and build).
inline uint64_t fnv1a(const std::string &s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

class ByteWriter {
public:
    explicit ByteWriter(size_t reserve = 0) { out_.reserve(reserve); }
    // `bytes` (1 .. 8) low-order bytes of v, least significant first.
    void le(uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    }
    void u16(uint16_t v) { le(v, 2); }
    void u32(uint32_t v) { le(v, 4); }
    void u64(uint64_t v) { le(v, 8); }
    void i32(int32_t v) { le(static_cast<uint32_t>(v), 4); }
    void i64(int64_t v) { le(static_cast<uint64_t>(v), 8); }
    void raw(const void *p, size_t n) {
        const char *c = static_cast<const char *>(p);
        out_.insert(out_.end(), c, c + n);
    }
    // n bytes appended uninitialized, returned for the caller to fill (e.g. converted values).
    char *extend(size_t n) {
        out_.resize(out_.size() + n);
        return out_.data() + out_.size() - n;
    }
    void reserve_more(size_t n) { out_.reserve(out_.size() + n); }
    size_t size() const { return out_.size(); }
    std::vector<char> take() { return std::move(out_); }

private:
    std::vector<char> out_;
};

// Reads what ByteWriter wrote. A read past the end fails (returns false, reads nothing); the caller
// says what was malformed, with pos() and left() if it likes.
class ByteReader {
public:
    ByteReader(const char *data, size_t size) : p_(reinterpret_cast<const unsigned char *>(data)), size_(size) {}
    bool le(int bytes, uint64_t *v) {
        if (left() < static_cast<size_t>(bytes)) return false;
        uint64_t x = 0;
        for (int i = 0; i < bytes; ++i) x |= static_cast<uint64_t>(p_[pos_ + i]) << (8 * i);
        pos_ += static_cast<size_t>(bytes);
        *v = x;
        return true;
    }
    bool u32(uint32_t *v) { return narrow(4, v); }
    bool u64(uint64_t *v) { return le(8, v); }
    bool i32(int32_t *v) {
        uint32_t u;
        if (!u32(&u)) return false;
        *v = static_cast<int32_t>(u);
        return true;
    }
    bool i64(int64_t *v) {
        uint64_t u;
        if (!u64(&u)) return false;
        *v = static_cast<int64_t>(u);
        return true;
    }
    bool raw(void *out, size_t n) {
        if (left() < n) return false;
        if (n > 0) std::memcpy(out, p_ + pos_, n);
        pos_ += n;
        return true;
    }
    // The next n bytes, consumed, or nullptr if fewer are left.
    const char *view(size_t n) {
        if (left() < n) return nullptr;
        const char *at = reinterpret_cast<const char *>(p_ + pos_);
        pos_ += n;
        return at;
    }
    size_t left() const { return size_ - pos_; }
    size_t pos() const { return pos_; }
    size_t size() const { return size_; }

private:
    template <class T> bool narrow(int bytes, T *v) {
        uint64_t x;
        if (!le(bytes, &x)) return false;
        *v = static_cast<T>(x);
        return true;
    }
    const unsigned char *p_;
    size_t size_, pos_ = 0;
};

} // namespace dtf
