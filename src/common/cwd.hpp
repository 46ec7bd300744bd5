// The current working directory, against which relative file paths are normalized.
#pragma once

#include <unistd.h>

#include <string>

namespace dtf {
inline std::string current_dir() {
    char buf[4096];
    return getcwd(buf, sizeof buf) ? std::string(buf) : std::string("/");
}
} // namespace dtf
