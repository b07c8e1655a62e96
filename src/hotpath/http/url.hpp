// Absolute http:// and https:// URLs (RFC 3986 §3, RFC 9110 §4.2): the one URL type of the client, the load
// generator, probe and the lab.
#pragma once

#include <hotpath/core/result.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace hotpath::http {

enum class scheme : std::uint8_t { http, https };

struct url {
    http::scheme scheme = scheme::http;
    std::string host;         // a reg-name (lower-cased), an IPv4 literal, or an IPv6 literal without its brackets
    std::uint16_t port = 80;  // as written, else the scheme's default (80, 443)
    std::string target = "/"; // origin-form (RFC 9112 §3.2.1): the path ("/" when empty) and "?query"

    bool tls() const noexcept { return scheme == scheme::https; }
    // The Host field's value (RFC 9112 §3.2) and the URL's authority: host[:port], an IPv6 literal in brackets,
    // the port left out when it is the scheme's default.
    std::string authority() const;
    // The URL as it is sent and shown: scheme "://" authority() target.
    std::string text() const;

    friend bool operator==(const url&, const url&) = default;
};

// The scheme's default port: 80 or 443.
constexpr std::uint16_t default_port(http::scheme s) noexcept {
    return s == scheme::https ? 443 : 80;
}

// Parses `scheme://host[:port][/path][?query][#fragment]`, scheme http or https in any case; the fragment is
// dropped, as curl does: it never goes on the wire (RFC 9110 §4.2.4). A port left empty ("host:") is the
// default (RFC 3986 §3.2.3). Refused, with errc::invalid_url and a one-line message naming what is wrong: another
// scheme or none, user information, an empty host, a host with bytes outside RFC 3986's unreserved set, an IPv6
// address that is not in brackets or not hex digits, colons and dots, a port that is not 1..65535 in digits, and
// bytes outside VCHAR anywhere (spaces, controls, non-ASCII: percent-encode them). Allocates the strings.
result<url, problem> parse_url(std::string_view text);

} // namespace hotpath::http
