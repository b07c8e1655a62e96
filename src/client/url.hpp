// Absolute http:// URLs as the client takes them: host, port and request-target, split once per call.
#pragma once

#include "core/result.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace hotpath::client_detail {

struct url {
    std::string host;        // a reg-name (lower-cased), an IPv4 literal, or an IPv6 literal without brackets
    std::uint16_t port = 80; // explicit, or 80
    std::string host_field;  // the Host field value (RFC 9112 §3.2): host[:port] as written, brackets kept
    std::string target;      // origin-form (RFC 9112 §3.2.1): path-abempty, "/" when empty, plus "?query"
};

// Parses `http://host[:port][/path][?query][#fragment]` (RFC 3986 §3; the fragment is dropped, RFC 9110 §4.2.1).
// Rejected with errc::invalid_url: another scheme (https is not supported: no TLS here), userinfo, an empty
// host, a port over 65535 or not digits, and bytes outside VCHAR anywhere (spaces, controls, non-ASCII).
result<url> parse_url(std::string_view text);

} // namespace hotpath::client_detail
