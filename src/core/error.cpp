// The error category behind hotpath::errc.
#include "core/error.hpp"

#include <string>

namespace hotpath {
namespace {

class category final : public std::error_category {
public:
    const char* name() const noexcept override { return "hotpath"; }

    std::string message(int value) const override {
        switch (static_cast<errc>(value)) {
        case errc::ok:
            return "success";
        case errc::bad_request:
            return "malformed HTTP message";
        case errc::uri_too_long:
            return "request line too long";
        case errc::headers_too_large:
            return "header section too large";
        case errc::body_too_large:
            return "body too large";
        case errc::not_implemented:
            return "not implemented";
        case errc::version_not_supported:
            return "HTTP version not supported";
        case errc::timeout:
            return "timed out";
        case errc::closed:
            return "connection closed";
        case errc::shutting_down:
            return "shutting down";
        case errc::handler_failed:
            return "handler failed";
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
