// What the file-mode dispatch (files.cpp) shares with the probes of paths (probe.cpp).
#pragma once

#include <string>
#include <vector>

#include "config/config.hpp"
#include "runtime/runtime.hpp"

namespace dtf::runtime {

// A path dtf handles for this component.
struct Target {
    std::string path; // normalized absolute path
    const config::FileRule *rule = nullptr;
    std::vector<int> peers; // the components this one exchanges the file with (FileRule::partners)
};

// The rule that makes dtf handle `path` for this component, if any (then fills *t).
bool find_target(Runtime &rt, const char *path, Target *t);

// File mode: wait until this rank may open the file to write it (every reader has read the last
// version) or to read it (the writer has closed one more version than this rank has read); `call`
// names the call for the timeout message.
void wait_for_turn(Runtime &rt, const Target &t, bool writer, const char *call);

// dtf_finalize: the writer turns of this rank that are not over (writer_closes) end now, as at their
// last close: collective over the ranks of each, in the order of their paths.
void end_turns(Runtime &rt);

// The probes (probe.cpp) look at the config without the runtime lock, so that a thread of MPI's own
// that stats a file never waits for dtf: init publishes its config and component, finalize withdraws
// them (nullptr).
void publish_served(const Runtime *rt);

} // namespace dtf::runtime
