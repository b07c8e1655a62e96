// HTTP status codes (RFC 9110 §15) and their reason phrases.
#pragma once

#include <cstdint>
#include <string_view>

namespace hotpath::http {

// A status code; any value 100..999 is allowed, the named ones are those the project uses.
enum class status : std::uint16_t {
    none = 0,
    continue_ = 100,
    ok = 200,
    created = 201,
    accepted = 202,
    no_content = 204,
    moved_permanently = 301,
    found = 302,
    see_other = 303,
    not_modified = 304,
    temporary_redirect = 307,
    permanent_redirect = 308,
    bad_request = 400,
    unauthorized = 401,
    forbidden = 403,
    not_found = 404,
    method_not_allowed = 405,
    request_timeout = 408,
    conflict = 409,
    length_required = 411,
    content_too_large = 413,
    uri_too_long = 414,
    unsupported_media_type = 415,
    expectation_failed = 417,
    unprocessable_content = 422,
    too_many_requests = 429,
    request_header_fields_too_large = 431,
    internal_server_error = 500,
    not_implemented = 501,
    bad_gateway = 502,
    service_unavailable = 503,
    gateway_timeout = 504,
    http_version_not_supported = 505,
    insufficient_storage = 507,
};

// The reason phrase for a status ("Not Found"); "Unknown" for codes without one.
std::string_view reason_phrase(status s) noexcept;

constexpr unsigned to_int(status s) noexcept {
    return static_cast<unsigned>(s);
}

// RFC 9110 §6.4.1: 1xx, 204 and 304 responses carry no content.
constexpr bool allows_body(status s) noexcept {
    const unsigned code = to_int(s);
    return code >= 200 && code != 204 && code != 304;
}

} // namespace hotpath::http
