// Unit test of the per-phase timers (src/common/phase): off costs nothing and counts nothing; on,
// phases are exclusive (a nested phase pauses its parent), bytes and calls are counted, read(true)
// resets. Only lower bounds of sleeps are relied on, never upper bounds of time.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "common/phase.hpp"

#include "check.hpp"

using namespace dtf;

namespace {
void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
} // namespace

int main() {
    CHECK(std::string(phase::name(phase::Match)) == "match");
    CHECK(phase::name(phase::Count) == nullptr && phase::name(-1) == nullptr);

    // Off: nothing is counted.
    {
        phase::Scope s(phase::Transfer);
        phase::add_bytes(phase::Transfer, 100);
        sleep_ms(2);
    }
    phase::Totals t = phase::read(false);
    for (int p = 0; p < phase::Count; ++p) CHECK(t.seconds[p] == 0 && t.bytes[p] == 0 && t.calls[p] == 0);

    // On: Transfer 5 ms, then Wait 10 ms inside it, then Match 5 ms inside the Wait, then 5 ms more of Transfer.
    phase::enable(true);
    const double t0 = now();
    {
        phase::Scope transfer(phase::Transfer);
        sleep_ms(5);
        {
            phase::Scope wait(phase::Wait);
            sleep_ms(10);
            phase::Scope match(phase::Match);
            phase::add_bytes(phase::Match, 7);
            sleep_ms(5);
        }
        sleep_ms(5);
    }
    const double wall = now() - t0;
    t = phase::read(true);
    CHECK(t.seconds[phase::Transfer] >= 0.010);
    CHECK(t.seconds[phase::Wait] >= 0.010);
    CHECK(t.seconds[phase::Match] >= 0.005);
    const double sum = t.seconds[phase::Transfer] + t.seconds[phase::Wait] + t.seconds[phase::Match];
    CHECK(sum <= wall + 1e-6); // exclusive: nothing counted twice
    CHECK(t.calls[phase::Transfer] == 1 && t.calls[phase::Wait] == 1 && t.calls[phase::Match] == 1);
    CHECK(t.bytes[phase::Match] == 7 && t.bytes[phase::Transfer] == 0);
    CHECK(t.seconds[phase::Open] == 0 && t.calls[phase::Close] == 0);

    // read(true) reset everything.
    t = phase::read(false);
    for (int p = 0; p < phase::Count; ++p) CHECK(t.seconds[p] == 0 && t.bytes[p] == 0 && t.calls[p] == 0);

    // Turning the timers off inside a scope leaves the scope's accounting consistent.
    {
        phase::Scope open(phase::Open);
        phase::enable(false);
        sleep_ms(1);
    }
    t = phase::read(true);
    CHECK(t.calls[phase::Open] == 1 && t.seconds[phase::Open] >= 0.001);
    {
        phase::Scope close(phase::Close); // off again: not counted
    }
    CHECK(phase::read(false).calls[phase::Close] == 0);

    return unit::check_result("test_phase");
}
