// The URL splitter: scheme, authority (host, port), path and query; checks every byte once.
#include <hotpath/http/url.hpp>

#include <hotpath/http/request_head.hpp>

#include <algorithm>

namespace hotpath::http {

namespace {

problem bad(std::string message) {
    return {errc::invalid_url, std::move(message)};
}

bool reg_name_byte(char c) noexcept {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '~';
}

bool ipv6_byte(char c) noexcept {
    return c == ':' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

} // namespace

std::string url::authority() const {
    std::string a;
    a.reserve(host.size() + 8);
    if (host.find(':') != std::string::npos) {
        a.append("[").append(host).append("]");
    } else {
        a.append(host);
    }
    if (port != default_port(scheme)) {
        a.append(":").append(std::to_string(port));
    }
    return a;
}

std::string url::text() const {
    return (tls() ? "https://" : "http://") + authority() + target;
}

result<url, problem> parse_url(std::string_view text) {
    url out;
    const auto colon_slashes = text.find("://");
    if (colon_slashes == std::string_view::npos) {
        return bad("'" + std::string(text) + "' is not an absolute URL: it must start with http:// or https://");
    }
    const std::string_view scheme_text = text.substr(0, colon_slashes);
    if (iequals(scheme_text, "http")) {
        out.scheme = scheme::http;
    } else if (iequals(scheme_text, "https")) {
        out.scheme = scheme::https;
    } else {
        return bad("the URL's scheme '" + std::string(scheme_text) + "' is not http or https");
    }
    out.port = default_port(out.scheme);
    for (const char c : text) {
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
            return bad("the URL has spaces, control characters or non-ASCII bytes; percent-encode them");
        }
    }
    text.remove_prefix(colon_slashes + 3);
    text = text.substr(0, text.find('#'));
    const std::size_t authority_end = text.find_first_of("/?");
    const std::string_view authority = text.substr(0, authority_end);
    const std::string_view rest =
        authority_end == std::string_view::npos ? std::string_view{} : text.substr(authority_end);
    if (authority.find('@') != std::string_view::npos) {
        return bad("user information in the URL is not supported: '" + std::string(authority) + "'");
    }
    if (authority.empty()) {
        return bad("the URL has no host");
    }

    std::string_view host = authority;
    std::string_view port;
    bool port_given = false;
    if (host.front() == '[') { // IP-literal (RFC 3986 §3.2.2)
        const auto close = host.find(']');
        // An IPv6 address has a colon: "[1]" or "[1.2.3.4]" would be written back without brackets, as IPv4.
        if (close == std::string_view::npos || close == 1 ||
            host.substr(1, close - 1).find(':') == std::string_view::npos ||
            !std::all_of(host.begin() + 1, host.begin() + static_cast<std::ptrdiff_t>(close), ipv6_byte)) {
            return bad("bad IPv6 address in the URL: '" + std::string(authority) + "' (e.g. http://[::1]:8080/)");
        }
        const std::string_view after = host.substr(close + 1);
        host = host.substr(1, close - 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                return bad("bad IPv6 address in the URL: '" + std::string(authority) + "' (e.g. http://[::1]:8080/)");
            }
            port = after.substr(1);
            port_given = true;
        }
    } else {
        if (const auto colon = host.rfind(':'); colon != std::string_view::npos) {
            port = host.substr(colon + 1);
            host = host.substr(0, colon);
            port_given = true;
            if (host.find(':') != std::string_view::npos) {
                return bad("an IPv6 address in a URL goes in brackets: http://[" + std::string(authority) + "]/");
            }
        }
        if (host.empty()) {
            return bad("the URL has no host");
        }
        if (!std::all_of(host.begin(), host.end(), reg_name_byte)) {
            return bad("bad host in the URL: '" + std::string(host) + "'");
        }
    }
    if (port_given && !port.empty()) { // "host:" is the default port (RFC 3986 §3.2.3)
        unsigned value = 0;
        bool digits = port.size() <= 5;
        for (const char c : port) {
            digits = digits && c >= '0' && c <= '9';
            value = value * 10 + static_cast<unsigned>(c - '0');
        }
        if (!digits || value == 0 || value > 65535) {
            return bad("bad port in the URL: '" + std::string(port) + "' (1 to 65535)");
        }
        out.port = static_cast<std::uint16_t>(value);
    }
    out.host.resize(host.size());
    std::transform(host.begin(), host.end(), out.host.begin(),
                   [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; });
    out.target.clear();
    if (rest.empty() || rest.front() == '?') {
        out.target = "/";
    }
    out.target.append(rest);
    return out;
}

} // namespace hotpath::http
