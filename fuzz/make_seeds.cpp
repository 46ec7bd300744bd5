// Writes the seed corpus of fuzz_wire (fuzz/corpus/wire): one valid encoding of every message kind,
// request list, plan and header, each prefixed by fuzz_wire's selector byte. The corpus in the repo
// is this program's output; the test fuzz.seeds checks that it still is (regenerate with
// `make_seeds fuzz/corpus/wire` after a wire-format change).
#include <pnetcdf.h>

#include <cstdio>
#include <string>
#include <vector>

#include "match/wire.hpp"
#include "model/header.hpp"
#include "runtime/message.hpp"

using namespace dtf;

namespace {

bool write(const std::string &dir, const std::string &name, char selector, const std::vector<char> &bytes) {
    std::string path = dir + "/" + name;
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = std::fwrite(&selector, 1, 1, f) == 1 && std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    return std::fclose(f) == 0 && ok;
}

match::Box box3() { return match::Box{{0, 2, 4}, {1, 3, 5}, {1, 1, 2}}; }

} // namespace

int main(int argc, char **argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: make_seeds DIR\n");
        return 2;
    }
    const std::string dir = argv[1];
    bool ok = true;

    runtime::PayloadWriter p;
    p.ints({0, 1, 2});
    p.bytes({'a', 'b'});
    p.i64(42);
    const std::vector<char> payload = p.take();
    for (uint32_t k = 1; k <= runtime::kMessageKindLast; ++k) {
        runtime::Message m{static_cast<runtime::MessageKind>(k), 1, 3, k == 7 ? 2 : 0, "/data/hist.0001.nc", payload};
        ok &= write(dir, "message-" + std::string(runtime::kind_name(m.kind)), 0, runtime::encode(m));
    }
    std::vector<match::WriteReq> writes{{0, 1, 2, box3()}, {1, 2, 0, match::Box::vara({5}, {10})}, {2, 3, 1, match::Box{}}};
    std::vector<match::ReadReq> reads{{3, 7, 2, box3()}, {0, 8, 0, match::Box::vara({0, 0}, {4, 4})}};
    std::vector<match::Piece> pieces{{1, 2, 3, 7, 2, box3()}, {0, 1, 0, 8, 0, match::Box::vara({1}, {2})}};
    ok &= write(dir, "writes", 1, match::encode(writes));
    ok &= write(dir, "reads", 2, match::encode(reads));
    ok &= write(dir, "pieces", 3, match::encode(pieces));

    model::Header h(NC_FORMAT_64BIT_DATA);
    int time, y, x, v, w;
    h.def_dim("time", NC_UNLIMITED, &time);
    h.def_dim("y", 4, &y);
    h.def_dim("x", 6, &x);
    const int dims[3] = {time, y, x};
    h.def_var("T", NC_FLOAT, 3, dims, &v);
    h.def_var("lon", NC_DOUBLE, 1, &x, &w);
    const float fill = -1;
    h.def_var_fill(v, 0, &fill);
    h.put_att(NC_GLOBAL, "title", NC_CHAR, 4, "seed", NC_CHAR);
    const int ints[2] = {1, 2};
    h.put_att(v, "valid_range", NC_INT, 2, ints, NC_INT);
    h.enddef();
    ok &= write(dir, "header", 4, h.encode());
    ok &= write(dir, "payload", 5, payload);
    if (!ok) std::fprintf(stderr, "make_seeds: cannot write the seeds into %s\n", dir.c_str());
    return ok ? 0 : 1;
}
