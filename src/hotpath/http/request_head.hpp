// A parsed HTTP/1.x request head: views into the connection's read buffer, no ownership.
#pragma once

#include <hotpath/http/limits.hpp>
#include <hotpath/http/method.hpp>

#include <array>
#include <cstdint>
#include <string_view>

namespace hotpath::http {

// One header field as sent; value has leading and trailing whitespace (OWS) removed (RFC 9112 §5).
struct field {
    std::string_view name;
    std::string_view value;
};

// How the body is framed (RFC 9112 §6.3). `until_close` occurs only in responses.
enum class body_framing : std::uint8_t { none, content_length, chunked, until_close };

// All string_views point into the buffer the head was parsed from and stay valid while that buffer is
// neither modified nor moved (the connection keeps it until the response to this request is written).
struct request_head {
    http::method method = http::method::other;
    std::string_view method_token;  // as sent, e.g. "GET"
    std::string_view target;        // request-target as sent (RFC 9112 §3.2)
    std::string_view path;          // origin- and absolute-form: the path, before '?' ("/" when empty);
                                    // asterisk- and authority-form ("*", "host:port"): the whole target
    std::string_view query;         // after '?', without it; empty when none
    std::uint8_t version_major = 1; // 2 for a request that came over HTTP/2 (its minor is then 0)
    std::uint8_t version_minor = 1; // HTTP/1.<minor>; only 0 and 1 are accepted

    std::array<field, max_fields_capacity> fields{};
    std::size_t field_count = 0;

    // Derived from the fields while parsing.
    body_framing framing = body_framing::none;
    std::uint64_t content_length = 0; // valid when framing == content_length
    bool keep_alive = true;           // HTTP/1.1 default unless "Connection: close"; 1.0 only with "keep-alive"
    bool expect_continue = false;     // "Expect: 100-continue"
    std::string_view host;            // the Host field value, or the authority of an absolute-form target
                                      // (RFC 9112 §3.2.2); empty when absent (allowed on 1.0 only)

    // The first field named `name` (case-insensitive), or an empty view when absent.
    std::string_view find(std::string_view name) const noexcept;
};

// ASCII case-insensitive equality for field names and tokens.
bool iequals(std::string_view a, std::string_view b) noexcept;

} // namespace hotpath::http
