// Time, deadlines and polling backoff. Every wait in dtf is bounded by a Deadline and polls with a
// Backoff that starts at microseconds (so short waits stay short) and never sleeps long.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace dtf {

inline double now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

class Deadline {
public:
    explicit Deadline(double timeout_s) : start_(now_s()), timeout_(timeout_s) {}
    bool expired() const { return now_s() - start_ >= timeout_; }
    double elapsed() const { return now_s() - start_; }
    double timeout() const { return timeout_; }

private:
    double start_, timeout_;
};

class Backoff {
public:
    explicit Backoff(double first_s = 20e-6, double max_s = 5e-3) : delay_(first_s), max_(max_s) {}
    void sleep() { std::this_thread::sleep_for(std::chrono::duration<double>(next())); }
    // The next delay (and grow it), for callers that wait in their own way.
    double next() {
        const double d = delay_;
        delay_ = std::min(delay_ * 1.5, max_);
        return d;
    }

private:
    double delay_, max_;
};

} // namespace dtf
