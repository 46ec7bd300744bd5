// The session layer's shared parts: plan keys, the runtime's part of the layer (Sessions: the writer
// sessions progress() steps, the plans, the memos) and dtf_transfer on a session. The roles are in
// writer.cpp and reader.cpp; the protocol is described in docs/ARCHITECTURE.md.
#include <pnetcdf.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <limits>

#include "common/phase.hpp"
#include "runtime/runtime.hpp"
#include "session/session.hpp"

namespace dtf::runtime {

std::string plan_key(const std::string &path, const std::vector<int> &ranks) {
    // The path with every run of digits as '#' (hist.0001.nc and hist.0002.nc share a plan), and the
    // component ranks of the file's communicator (each ensemble member's files have their own).
    std::string key;
    for (size_t i = 0; i < path.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(path[i])))
            key += path[i];
        else if (i == 0 || !std::isdigit(static_cast<unsigned char>(path[i - 1])))
            key += '#';
    key += '|';
    for (int r : ranks) key += std::to_string(r) + ',';
    return key;
}

int name_distance(const std::string &a, const std::string &b) {
    auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    int differ = 0;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (digit(a[i]) && digit(b[j])) {
            const size_t i0 = i, j0 = j;
            while (i < a.size() && digit(a[i])) ++i;
            while (j < b.size() && digit(b[j])) ++j;
            if (a.compare(i0, i - i0, b, j0, j - j0) != 0) ++differ;
        } else if (a[i] == b[j] && !digit(a[i])) {
            ++i, ++j;
        } else {
            return std::numeric_limits<int>::max();
        }
    }
    return i == a.size() && j == b.size() ? differ : std::numeric_limits<int>::max();
}

std::vector<size_t> bundle_heads(const std::vector<size_t> &sizes, size_t max) {
    std::vector<size_t> heads(sizes.size());
    size_t open = 0, total = 0; // the bundle messages may join, and its bytes so far
    bool any = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
        if (any && total + sizes[i] <= max) {
            heads[i] = open;
            total += sizes[i];
            continue;
        }
        heads[i] = open = i;
        total = sizes[i];
        any = sizes[i] <= max; // (a larger message travels alone, and the next one begins anew)
    }
    return heads;
}

size_t bundle_max(Runtime &rt, int peer) { return rt.peer_link(peer).in_launch ? kBundleMax : kBundleMaxJobs; }

int session_transfer(Runtime &rt, FileSession &fs) {
    phase::Scope timer(phase::Transfer);
    if (fs.writer && fs.peers.empty()) return NC_NOERR; // an output file
    return fs.writer ? writer_transfer(rt, fs) : reader_transfer(rt, fs);
}

namespace {
const bool g_registered = Runtime::register_part(Sessions::kSlot, [] { return std::unique_ptr<Part>(new Sessions); });
} // namespace

void Sessions::serve(const std::shared_ptr<WriterSession> &ws) {
    if (std::find(serving.begin(), serving.end(), ws) == serving.end()) serving.push_back(ws);
}

void Sessions::start_early(const std::shared_ptr<WriterSession> &ws) {
    if (std::find(early.begin(), early.end(), ws) == early.end()) early.push_back(ws);
}

void Sessions::forsake(const std::shared_ptr<WriterSession> &ws) {
    serving.erase(std::remove(serving.begin(), serving.end(), ws), serving.end());
    early.erase(std::remove(early.begin(), early.end(), ws), early.end());
    ws->serving = false;
}

bool Sessions::serving_key(const std::string &plan_key, const std::function<bool(const WriterSession &)> &which) const {
    for (const auto &ws : serving)
        if (ws->plan_key == plan_key && which(*ws)) return true;
    return false;
}

const WriterSession *Sessions::serving_session(const std::string &path, int session) const {
    for (const auto &ws : serving)
        if (ws->path == path && (session == 0 || ws->session == session)) return ws.get();
    return nullptr;
}

int Sessions::writes_unopened(const std::string &path, int session) const {
    const WriterSession *ws = serving_session(path, session);
    return ws ? !ws->any_reader_known() : -1;
}

bool Sessions::step(Runtime &rt) {
    bool happened = false;
    // Replayed data that became complete (or whose readers confirmed the plan) leaves now. A failure
    // stays with the session, reported at its dtf_transfer.
    for (size_t i = 0; i < early.size();) {
        WriterSession &ws = *early[i];
        bool more;
        try {
            more = push_early(rt, ws);
        } catch (const Error &e) {
            if (!ws.error) ws.error = std::make_unique<Error>(e);
            more = false;
        }
        if (more) ++i;
        else early.erase(early.begin() + static_cast<long>(i));
    }
    // Step the writer sessions being served. A failure stays with its session and is reported by the
    // next call on it (or, once the file is closed, here and at dtf_finalize).
    for (size_t i = 0; i < serving.size();) {
        std::shared_ptr<WriterSession> ws = serving[i];
        bool served;
        try {
            served = runtime::step(rt, *ws);
        } catch (const Error &e) {
            ws->serving = false;
            ws->error = std::make_unique<Error>(e);
            if (ws.use_count() == 2) rt.report_detached(e); // its file is closed
            served = true;
        }
        if (served) {
            serving.erase(serving.begin() + static_cast<long>(i));
            if (ws->closed && ws->error) writer_plans.drop(ws->plan_key, ws->plan);
            else if (ws->closed) end_writer_session(rt, *ws);
            if (ws->closed) rt.forget_finished(ws->path);
            happened = true;
        } else {
            ++i;
        }
    }
    return happened;
}

void Sessions::finish(Runtime &rt, const char *who) {
    while (!serving.empty()) {
        const WriterSession *first = serving.front().get();
        auto what = [&] { return std::string(who) + ": " + waiting_for(rt, *first); };
        rt.wait_until([&] {
            if (serving.empty() || serving.front().get() != first) return true;
            rt.check_contested(first->path, first->session, what);
            return false;
        }, what, [&] { return blocking_reader(*first); });
    }
}

} // namespace dtf::runtime
