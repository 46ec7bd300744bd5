#include "transport/data_plane.hpp"

namespace dtf::transport {

namespace {

class PointToPoint final : public DataPlane {
public:
    explicit PointToPoint(Channel &channel) : channel_(channel) {}
    Ticket offer(int reader, Tag tag, std::vector<char> bytes, const char *what) override {
        return channel_.send(reader, tag, std::move(bytes), what);
    }
    Ticket fetch(int writer, Tag tag, const std::vector<Span> &spans, const char *what) override {
        return channel_.receive(writer, tag, spans, what);
    }

private:
    Channel &channel_;
};

} // namespace

std::unique_ptr<DataPlane> point_to_point(Channel &channel) { return std::make_unique<PointToPoint>(channel); }

} // namespace dtf::transport
