// The parts of channel.hpp shared by every channel implementation.
#include "transport/channel.hpp"

namespace dtf::transport {

std::optional<Tag> data_tag(int root_rank, uint32_t serial, int writer_size, int tag_ub) {
    if (writer_size < 1 || root_rank < 0 || root_rank >= writer_size || tag_ub < kDataTagFirst) return std::nullopt;
    // Each root rank gets every writer_size-th tag; its serials go round them.
    const int64_t per_root = (int64_t{tag_ub} - kDataTagFirst + 1) / writer_size;
    if (per_root < 1) return std::nullopt;
    const int64_t tag = kDataTagFirst + root_rank + int64_t{writer_size} * (serial % per_root);
    return static_cast<Tag>(static_cast<int>(tag));
}

} // namespace dtf::transport
