// Rendezvous boards: where separately launched components leave each other the MPI port to connect
// to. A board is a tiny key/value store with replace semantics; two implementations:
//   FileBoard     files in a shared directory (DTF_GLOBAL_PATH, default: the config file's directory),
//                 written atomically (write + rename)
//   NameBoard     MPI's name service (MPI_Publish_name / MPI_Lookup_name), used when one is running
// The connection protocol on top of it (connect.cpp) makes stale entries from a crashed run harmless.
#pragma once

#include <memory>
#include <optional>
#include <string>

namespace dtf::transport {

class Board {
public:
    virtual ~Board() = default;
    virtual void put(const std::string &key, const std::string &value) = 0; // replace
    virtual std::optional<std::string> get(const std::string &key) = 0;
    virtual void remove(const std::string &key) = 0;
    virtual std::string where() const = 0; // for messages: "directory /x" or "the MPI name service"
};

std::unique_ptr<Board> make_file_board(const std::string &directory);
std::unique_ptr<Board> make_name_board();

} // namespace dtf::transport
