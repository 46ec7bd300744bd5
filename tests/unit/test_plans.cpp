// Unit test of the replay plans' shelf (src/session/session.hpp PlanShelf): which plan a session finds;
// and of how a replay groups a plan's small data messages (bundle_heads).
// A reader rank of an ensemble reads one file per member each cycle, every member's from other writer
// ranks, under one name pattern: it must find each member's plan again however many members there are
// (a shelf that kept 64 per pattern found none past that), each line's plan must be replaced by the
// next cycle's, and the oldest must go past the cap.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "session/session.hpp"

#include "check.hpp"

using namespace dtf::runtime;

namespace {

struct Plan {
    std::string path;
    std::vector<int> ranks;
    const std::vector<int> &peers() const { return ranks; }
};
using Shelf = PlanShelf<Plan>;

std::string member_file(int member, int cycle) {
    char name[64];
    std::snprintf(name, sizeof name, "out/hist.m%05d.c%04d.nc", member, cycle);
    return name;
}

Shelf::Ptr plan(int member, int cycle) {
    return std::make_shared<const Plan>(Plan{member_file(member, cycle), {2 * member, 2 * member + 1}});
}

} // namespace

int main() {
    const std::string key = "out/hist.m#.c#.nc|0,1,";
    {   // 3000 members, each file found again in the next cycle among its own writers' plans
        Shelf shelf;
        const int members = 3000;
        for (int m = 0; m < members; ++m) shelf.keep(key, nullptr, plan(m, 1));
        CHECK(shelf.count(key) == static_cast<size_t>(members));
        int found = 0;
        for (int m = 0; m < members; ++m) {
            const std::vector<int> peers = plan(m, 2)->ranks;
            int distance = -1;
            const Shelf::Ptr p = shelf.find(key, member_file(m, 2), &peers, &distance);
            if (p && p->path == member_file(m, 1) && distance == 1) ++found;
            shelf.keep(key, p, plan(m, 2)); // (the line's next file replaces it)
        }
        CHECK(found == members);
        CHECK(shelf.count(key) == static_cast<size_t>(members));
        const std::vector<int> peers = plan(7, 2)->ranks;
        int distance = -1;
        const Shelf::Ptr same = shelf.find(key, member_file(7, 2), &peers, &distance);
        CHECK(same && same->path == member_file(7, 2) && distance == 0);
        const std::vector<int> nobody{-1};
        CHECK(shelf.find(key, member_file(7, 3), &nobody, nullptr) == nullptr);
    }
    {   // without peers: the nearest name, ties to the newest line; a path's plan replaced in place
        Shelf shelf;
        shelf.keep(key, nullptr, plan(1, 1));
        shelf.keep(key, nullptr, plan(2, 1));
        shelf.keep(key, nullptr, plan(3, 5));
        auto nearest = [&](const std::string &path, int *distance) {
            const Shelf::Ptr p = shelf.find(key, path, nullptr, distance);
            return p ? p->path : std::string();
        };
        int distance = -1;
        CHECK(nearest(member_file(3, 6), &distance) == member_file(3, 5) && distance == 1);
        CHECK(nearest(member_file(9, 1), &distance) == member_file(2, 1) && distance == 1);
        shelf.keep(key, nullptr, plan(1, 1)); // (in place: the tie still goes to member 2's)
        CHECK(shelf.count(key) == 3);
        CHECK(nearest(member_file(9, 1), nullptr) == member_file(2, 1));
        CHECK(shelf.find("other|", member_file(1, 1), nullptr, nullptr) == nullptr);
    }
    {   // without peers (a writer's lookup), two members a cycle: member 0's next file renews its line in
        // place, and member 1's next file, as near to that renewed plan as to its own line's, finds its own
        Shelf shelf;
        shelf.keep(key, nullptr, plan(0, 1));
        shelf.keep(key, nullptr, plan(1, 1));
        for (int cycle = 2; cycle <= 4; ++cycle)
            for (int m = 0; m < 2; ++m) {
                const Shelf::Ptr p = shelf.find(key, member_file(m, cycle), nullptr, nullptr);
                CHECK(p && p->path == member_file(m, cycle - 1));
                shelf.keep(key, p, plan(m, cycle));
            }
        CHECK(shelf.count(key) == 2);
    }
    {   // past the cap the oldest goes; a dropped plan is not found again
        Shelf shelf;
        const int lines = static_cast<int>(Shelf::kPerKey) + 2;
        for (int m = 0; m < lines; ++m) shelf.keep(key, nullptr, plan(m, 1));
        CHECK(shelf.count(key) == Shelf::kPerKey);
        const std::vector<int> first = plan(0, 1)->ranks, third = plan(2, 1)->ranks;
        CHECK(shelf.find(key, member_file(0, 2), &first, nullptr) == nullptr);
        const Shelf::Ptr p = shelf.find(key, member_file(2, 2), &third, nullptr);
        CHECK(p && p->path == member_file(2, 1));
        shelf.drop(key, p);
        CHECK(shelf.find(key, member_file(2, 2), &third, nullptr) == nullptr);
        CHECK(shelf.count(key) == Shelf::kPerKey - 1);
    }
    // A replay's bundles (bundle_heads): small messages go together while they add up to the link's bundle size.
    for (const size_t max : {kBundleMax, kBundleMaxJobs}) {
        using V = std::vector<size_t>;
        const size_t third = max / 3;
        CHECK(bundle_heads({}, max).empty());
        CHECK(bundle_heads({10}, max) == V{0});
        CHECK(bundle_heads({third, third, third, third}, max) == (V{0, 0, 0, 3}));
        CHECK(bundle_heads({max, 1, 1}, max) == (V{0, 1, 1}));           // full: the next one begins anew
        CHECK(bundle_heads({1, max + 1, 1, 1}, max) == (V{0, 1, 2, 2})); // a larger one travels alone
        CHECK(bundle_heads({0, 0, max, 0}, max) == (V{0, 0, 0, 0}));     // (empty messages: no bytes)
        CHECK(bundle_heads({max - 1, 2}, max) == (V{0, 1}));
    }
    {   // between jobs, the messages of letkf_io's netCDF-4 default size (a 64 KiB level, 1 MiB fields) go as one
        using V = std::vector<size_t>;
        const size_t level = 64 << 10, field = 1 << 20;
        CHECK(bundle_heads({level, level, field, field}, kBundleMax) == (V{0, 1, 2, 3}));
        CHECK(bundle_heads({level, level, field, field}, kBundleMaxJobs) == (V{0, 0, 0, 0}));
    }
    return dtf::unit::check_result("unit.plans");
}
