// The client's URL splitter (RFC 3986 §3 subset: http scheme, authority, path, query).
#include "client/url.hpp"

#include "core/error.hpp"
#include "http/request_head.hpp"

#include <algorithm>

namespace hotpath::client_detail {

result<url> parse_url(std::string_view text) {
    constexpr std::string_view scheme = "http://";
    if (!http::iequals(text.substr(0, scheme.size()), scheme)) {
        return make_error_code(errc::invalid_url);
    }
    for (const char c : text) {
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
            return make_error_code(errc::invalid_url);
        }
    }
    text.remove_prefix(scheme.size());
    if (const auto hash = text.find('#'); hash != std::string_view::npos) {
        text = text.substr(0, hash);
    }
    const std::size_t authority_end = std::min(text.find('/'), text.find('?'));
    const std::string_view authority = text.substr(0, authority_end);
    std::string_view rest = authority_end == std::string_view::npos ? std::string_view{} : text.substr(authority_end);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
        return make_error_code(errc::invalid_url);
    }

    url out;
    std::string_view host = authority;
    std::string_view port;
    if (host.front() == '[') { // IP-literal (RFC 3986 §3.2.2)
        const auto close = host.find(']');
        if (close == std::string_view::npos || close == 1) {
            return make_error_code(errc::invalid_url);
        }
        const std::string_view after = host.substr(close + 1);
        host = host.substr(1, close - 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return make_error_code(errc::invalid_url);
            }
            port = after.substr(1);
        }
        for (const char c : host) {
            if (!(c == ':' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
                return make_error_code(errc::invalid_url);
            }
        }
    } else {
        if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
            port = host.substr(colon + 1);
            host = host.substr(0, colon);
        }
        if (host.empty()) {
            return make_error_code(errc::invalid_url);
        }
        for (const char c : host) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                            c == '.' || c == '_' || c == '~';
            if (!ok) {
                return make_error_code(errc::invalid_url);
            }
        }
    }
    if (authority.back() == ':') {
        port = {}; // "host:" means the default port (RFC 3986 §3.2.3)
    }
    if (!port.empty()) {
        unsigned value = 0;
        if (port.size() > 5) {
            return make_error_code(errc::invalid_url);
        }
        for (const char c : port) {
            if (c < '0' || c > '9') {
                return make_error_code(errc::invalid_url);
            }
            value = value * 10 + static_cast<unsigned>(c - '0');
        }
        if (value == 0 || value > 65535) {
            return make_error_code(errc::invalid_url);
        }
        out.port = static_cast<std::uint16_t>(value);
    }
    out.host.reserve(host.size());
    for (const char c : host) {
        out.host.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    out.host_field =
        authority.back() == ':' ? std::string(authority.substr(0, authority.size() - 1)) : std::string(authority);
    if (rest.empty() || rest.front() == '?') {
        out.target = "/";
    }
    out.target.append(rest);
    return out;
}

} // namespace hotpath::client_detail
