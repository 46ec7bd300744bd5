#include "transport/rendezvous.hpp"

#include <mpi.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "transport/mpi_util.hpp"

namespace dtf::transport {

namespace {

class FileBoard final : public Board {
public:
    explicit FileBoard(std::string dir) : dir_(std::move(dir)) {}

    void put(const std::string &key, const std::string &value) override {
        const std::string final_path = path(key);
        const std::string tmp = format("%s.tmp.%d", final_path.c_str(), static_cast<int>(getpid()));
        FILE *f = std::fopen(tmp.c_str(), "w");
        if (!f)
            fail(DTF_ERR_IO, "cannot write rendezvous file '%s': %s (set DTF_GLOBAL_PATH to a writable "
                             "directory both components can see)",
                 tmp.c_str(), std::strerror(errno));
        bool ok = std::fwrite(value.data(), 1, value.size(), f) == value.size();
        ok = (std::fclose(f) == 0) && ok;
        if (!ok || std::rename(tmp.c_str(), final_path.c_str()) != 0) {
            int e = errno;
            std::remove(tmp.c_str());
            fail(DTF_ERR_IO, "cannot write rendezvous file '%s': %s", final_path.c_str(), std::strerror(e));
        }
    }

    std::optional<std::string> get(const std::string &key) override {
        std::ifstream in(path(key), std::ios::binary);
        if (!in) return std::nullopt;
        std::ostringstream s;
        s << in.rdbuf();
        return s.str();
    }

    void remove(const std::string &key) override { std::remove(path(key).c_str()); }

    std::string where() const override { return "directory " + dir_; }

private:
    std::string path(const std::string &key) const { return dir_ + "/.dtf-" + key; }
    std::string dir_;
};

class NameBoard final : public Board {
public:
    void put(const std::string &key, const std::string &value) override {
        remove(key);
        transport::ScopedErrorsReturn errors_return;
        std::string service = service_name(key);
        int rc = MPI_Publish_name(service.c_str(), MPI_INFO_NULL, value.c_str());
        if (rc != MPI_SUCCESS)
            fail(DTF_ERR_CONNECT, "MPI_Publish_name('%s') failed: %s", service.c_str(), mpi_error_string(rc).c_str());
        published_[key] = value;
    }

    std::optional<std::string> get(const std::string &key) override {
        char value[MPI_MAX_PORT_NAME + 1] = {0};
        std::string service = service_name(key);
        transport::ScopedErrorsReturn errors_return;
        if (MPI_Lookup_name(service.c_str(), MPI_INFO_NULL, value) != MPI_SUCCESS) return std::nullopt;
        return std::string(value);
    }

    void remove(const std::string &key) override {
        // Only names this process published can be removed; stale ones of others are left alone,
        // which is fine: the protocol in connect.cpp ignores values it does not expect.
        auto it = published_.find(key);
        if (it == published_.end()) return;
        transport::ScopedErrorsReturn errors_return;
        MPI_Unpublish_name(service_name(key).c_str(), MPI_INFO_NULL, it->second.c_str());
        published_.erase(it);
    }

    std::string where() const override { return "the MPI name service"; }

private:
    static std::string service_name(const std::string &key) { return "dtf." + key; }
    std::map<std::string, std::string> published_; // key -> value (Unpublish needs the value)
};

} // namespace

std::unique_ptr<Board> make_file_board(const std::string &directory) {
    if (access(directory.c_str(), W_OK | X_OK) != 0)
        fail(DTF_ERR_IO, "rendezvous directory '%s' is not writable: %s (set DTF_GLOBAL_PATH)",
             directory.c_str(), std::strerror(errno));
    return std::make_unique<FileBoard>(directory);
}

std::unique_ptr<Board> make_name_board() { return std::make_unique<NameBoard>(); }

} // namespace dtf::transport
