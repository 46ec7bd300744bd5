// Wire encoding of request lists and plans, as exchanged between ranks and components. Every decode
// validates the whole message (header, counts, ndims, boxes, trailing bytes) and throws
// dtf::Error(DTF_ERR_PEER, reason) on malformed input; it never reads past `size` and never
// allocates more than the input can describe.
//
// Format (all integers little-endian, fixed width):
//   header   u32 magic "DTFM" | u16 version | u16 kind (1 writes, 2 reads, 3 pieces) | u64 records
//   request  i32 rank | i32 varid | u64 id | [writes: u64 order] | u32 ndims | ndims x (i64 start,
//            i64 count, i64 stride)
//   piece    i32 writer | i32 reader | i32 varid | u32 ndims | u64 write_id | u64 read_id | u64 order |
//            box as above
//   order    the write's seq in the low 63 bits, its fill flag in the top bit
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "match/match.hpp"

namespace dtf::match {

constexpr uint32_t kWireMagic = 0x4d465444; // bytes 'D' 'T' 'F' 'M'
constexpr uint16_t kWireVersion = 2;
enum class WireKind : uint16_t { Writes = 1, Reads = 2, Pieces = 3 };

std::vector<char> encode(const std::vector<WriteReq> &writes);
std::vector<char> encode(const std::vector<ReadReq> &reads);
std::vector<char> encode(const std::vector<Piece> &pieces);

std::vector<WriteReq> decode_writes(const char *data, size_t size);
std::vector<ReadReq> decode_reads(const char *data, size_t size);
std::vector<Piece> decode_pieces(const char *data, size_t size);

inline std::vector<WriteReq> decode_writes(const std::vector<char> &m) { return decode_writes(m.data(), m.size()); }
inline std::vector<ReadReq> decode_reads(const std::vector<char> &m) { return decode_reads(m.data(), m.size()); }
inline std::vector<Piece> decode_pieces(const std::vector<char> &m) { return decode_pieces(m.data(), m.size()); }

} // namespace dtf::match
