// Parsers of the Content-Length and Connection field values, shared by the request and response parsers.
#include <hotpath/http/field_values.hpp>

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/request_head.hpp>

namespace hotpath::http {

bool parse_content_length(std::string_view value, std::uint64_t& out) noexcept {
    if (value.empty()) {
        return false;
    }
    std::uint64_t n = 0;
    for (const char c : value) {
        if (c < '0' || c > '9') {
            return false;
        }
        const auto digit = static_cast<std::uint64_t>(c - '0');
        if (n > (max_content_length - digit) / 10) {
            return false;
        }
        n = n * 10 + digit;
    }
    out = n;
    return true;
}

void scan_connection(std::string_view value, bool& close, bool& keep_alive) noexcept {
    while (!value.empty()) {
        const std::size_t comma = value.find(',');
        const std::string_view option = char_class::trim_ows(value.substr(0, comma));
        if (iequals(option, "close")) {
            close = true;
        } else if (iequals(option, "keep-alive")) {
            keep_alive = true;
        }
        if (comma == std::string_view::npos) {
            break;
        }
        value.remove_prefix(comma + 1);
    }
}

} // namespace hotpath::http
