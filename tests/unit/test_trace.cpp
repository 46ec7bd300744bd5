// Unit test of the event trace (src/common/trace) and the message counters (src/common/counters):
// off, a trace records nothing and writes no file; on, it writes one rank's file as a JSON array
// that ends with a bracket at stop, with the metadata, spans and instants given, names quoted and
// escaped, and a second thread's events under a thread id of their own; a file cut short (no stop)
// holds every event written before, and flush() writes what was buffered. Counters count messages and bytes by kind and reset on read.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "common/counters.hpp"
#include "common/trace.hpp"

#include "check.hpp"

using namespace dtf;

namespace {
std::string slurp(const std::string &path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

size_t count(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}
} // namespace

int main() {
    CHECK(trace::quote("a\"b\\c\nd") == "\"a\\\"b\\\\c\\u000ad\"");

    char tmpl[] = "/tmp/dtf_trace_test.XXXXXX";
    const std::string dir = mkdtemp(tmpl);
    const std::string file = dir + "/out/model.3.json";

    // Off: nothing recorded, no file.
    CHECK(!trace::on());
    {
        trace::Span s("wait", "not traced");
        CHECK(!s.active());
        trace::instant("control", "not traced either");
    }
    trace::stop(); // (no effect)
    CHECK(slurp(file).empty());

    // On: the directory is made, the file named after component and rank.
    trace::start(dir + "/out", "model", 0, 3);
    CHECK(trace::on());
    {
        trace::Span s("pnetcdf", "ncmpi_close");
        CHECK(s.active());
        s.args("\"path\":" + trace::quote("/x/hist.1.nc"));
        trace::instant("control", "send FileDefined", "\"to\":\"assim\"");
    }
    trace::Span unnamed("wait", nullptr);
    CHECK(!unnamed.active());
    std::thread([] { trace::instant("data", "sending data to a reader", "\"to\":1"); }).join();
    // Cut short: what was written so far is whole events (flushed at start; the rest at stop).
    const std::string early = slurp(file);
    CHECK(early.rfind("[\n", 0) == 0);
    CHECK(count(early, "\"process_name\"") == 1 && early.find("\"model rank 3\"") != std::string::npos);
    CHECK(early.find("send FileDefined") == std::string::npos);
    // flush() (an error returned, a wait of a second) writes what is buffered, not closing the array.
    trace::flush();
    const std::string flushed = slurp(file);
    CHECK(flushed.find("\"name\":\"send FileDefined\"") != std::string::npos &&
          flushed.find("sending data to a reader") != std::string::npos && flushed.find("\n]") == std::string::npos);
    trace::stop();
    CHECK(!trace::on());
    const std::string text = slurp(file);
    CHECK(text.size() > 2 && text.substr(text.size() - 3) == "\n]\n");
    CHECK(count(text, "\"ph\":\"X\"") == 1 && text.find("\"name\":\"ncmpi_close\"") != std::string::npos);
    CHECK(text.find("\"dur\":") != std::string::npos && text.find("\"args\":{\"path\":\"/x/hist.1.nc\"}") != std::string::npos);
    CHECK(count(text, "\"ph\":\"i\"") == 2 && text.find("\"name\":\"send FileDefined\"") != std::string::npos);
    CHECK(text.find("\"tid\":1,") != std::string::npos && text.find("\"tid\":2,") != std::string::npos);
    CHECK(count(text, "\"thread_name\"") == 2 && text.find("not traced") == std::string::npos);
    // Every event is one line between the brackets, each but the last ending in a comma.
    std::istringstream lines(text);
    std::string line;
    int events = 0, bad = 0;
    while (std::getline(lines, line)) {
        if (line == "[" || line == "]") continue;
        ++events;
        if (line.front() != '{' || (line.back() != '}' && line.substr(line.size() - 2) != "},")) ++bad;
    }
    CHECK(bad == 0 && events == 8); // 3 metadata of the process, 2 thread names, 1 span, 2 instants
    CHECK(text.find("\"tid\":1,\"name\":\"ncmpi_close\",\"ts\":") != std::string::npos);
    CHECK(text.find("\"tid\":2,\"name\":\"sending data to a reader\",\"ts\":") != std::string::npos);

    // A bad directory: an error naming it, tracing stays off.
    bool threw = false;
    try {
        trace::start("/proc/no/such/dir", "model", 0, 0);
    } catch (const std::exception &e) {
        threw = std::string(e.what()).find("/proc/no/such/dir") != std::string::npos;
    }
    CHECK(threw && !trace::on());

    // Counters: by kind, reset on read.
    counters::read(true);
    counters::message(true, false, 100);
    counters::message(true, true, 4000);
    counters::message(false, true, 4000);
    counters::message(false, true, 10);
    counters::add(counters::Collectives, 0);
    counters::Totals t = counters::read(true);
    CHECK(t.messages[counters::ControlSent] == 1 && t.bytes[counters::ControlSent] == 100);
    CHECK(t.messages[counters::DataSent] == 1 && t.bytes[counters::DataSent] == 4000);
    CHECK(t.messages[counters::DataReceived] == 2 && t.bytes[counters::DataReceived] == 4010);
    CHECK(t.messages[counters::ControlReceived] == 0 && t.messages[counters::Collectives] == 1);
    t = counters::read(false);
    for (int k = 0; k < counters::Count; ++k) CHECK(t.messages[k] == 0 && t.bytes[k] == 0);
    CHECK(std::string(counters::name(counters::DataSent)) == "data sent" && counters::name(counters::Count) == nullptr);

    std::system(("rm -rf " + dir).c_str());
    return unit::check_result("test_trace");
}
