// The error category behind hotpath::errc.
#include <hotpath/core/error.hpp>

#include <string>

namespace hotpath {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "hotpath"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
        case errc::bad_request:
            return "malformed HTTP message";
        case errc::timeout:
            return "timed out";
        case errc::closed:
            return "connection closed";
        case errc::refused:
            return "connection refused";
        case errc::reset:
            return "connection reset by peer";
        case errc::connect_timeout:
            return "connect timed out";
        case errc::malformed_response:
            return "malformed response";
        case errc::response_too_large:
            return "response too large";
        case errc::invalid_url:
            return "invalid URL";
        case errc::resolve_failed:
            return "host name did not resolve";
        case errc::cancelled:
            return "cancelled";
        case errc::unexpected_status:
            return "unexpected status";
        case errc::invalid_json:
            return "invalid JSON";
        case errc::body_too_large:
            return "request body over the size limit";
        case errc::invalid_address:
            return "not an IP address or a host name (an address is needed, e.g. 127.0.0.1, ::1 or localhost)";
        case errc::overloaded:
            return "overloaded: the queue is full";
        case errc::invalid_value:
            return "invalid value";
        case errc::not_supported:
            return "not supported";
        }
        return "unknown hotpath error";
    }
};

} // namespace

const std::error_category& error_category() noexcept {
    static const category instance;
    return instance;
}

} // namespace hotpath
