// Reason phrases for status codes (RFC 9110 §15).
#include <hotpath/http/status.hpp>

namespace hotpath::http {

std::string_view reason_phrase(status s) noexcept {
    switch (s) {
    case status::continue_:
        return "Continue";
    case status::ok:
        return "OK";
    case status::created:
        return "Created";
    case status::accepted:
        return "Accepted";
    case status::no_content:
        return "No Content";
    case status::moved_permanently:
        return "Moved Permanently";
    case status::found:
        return "Found";
    case status::see_other:
        return "See Other";
    case status::not_modified:
        return "Not Modified";
    case status::temporary_redirect:
        return "Temporary Redirect";
    case status::permanent_redirect:
        return "Permanent Redirect";
    case status::bad_request:
        return "Bad Request";
    case status::unauthorized:
        return "Unauthorized";
    case status::forbidden:
        return "Forbidden";
    case status::not_found:
        return "Not Found";
    case status::method_not_allowed:
        return "Method Not Allowed";
    case status::request_timeout:
        return "Request Timeout";
    case status::conflict:
        return "Conflict";
    case status::length_required:
        return "Length Required";
    case status::content_too_large:
        return "Content Too Large";
    case status::uri_too_long:
        return "URI Too Long";
    case status::unsupported_media_type:
        return "Unsupported Media Type";
    case status::expectation_failed:
        return "Expectation Failed";
    case status::unprocessable_content:
        return "Unprocessable Content";
    case status::too_many_requests:
        return "Too Many Requests";
    case status::request_header_fields_too_large:
        return "Request Header Fields Too Large";
    case status::internal_server_error:
        return "Internal Server Error";
    case status::not_implemented:
        return "Not Implemented";
    case status::bad_gateway:
        return "Bad Gateway";
    case status::service_unavailable:
        return "Service Unavailable";
    case status::gateway_timeout:
        return "Gateway Timeout";
    case status::http_version_not_supported:
        return "HTTP Version Not Supported";
    case status::insufficient_storage:
        return "Insufficient Storage";
    case status::none:
        break;
    }
    return "Unknown";
}

} // namespace hotpath::http
