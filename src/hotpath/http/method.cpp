// Method names to values and back.
#include <hotpath/http/method.hpp>

namespace hotpath::http {

method to_method(std::string_view token) noexcept {
    switch (token.size()) {
    case 3:
        if (token == "GET") {
            return method::get;
        }
        if (token == "PUT") {
            return method::put;
        }
        break;
    case 4:
        if (token == "POST") {
            return method::post;
        }
        if (token == "HEAD") {
            return method::head;
        }
        break;
    case 5:
        if (token == "PATCH") {
            return method::patch;
        }
        if (token == "TRACE") {
            return method::trace;
        }
        break;
    case 6:
        if (token == "DELETE") {
            return method::del;
        }
        break;
    case 7:
        if (token == "OPTIONS") {
            return method::options;
        }
        if (token == "CONNECT") {
            return method::connect;
        }
        break;
    default:
        break;
    }
    return method::other;
}

std::string_view to_string(method m) noexcept {
    switch (m) {
    case method::get:
        return "GET";
    case method::head:
        return "HEAD";
    case method::post:
        return "POST";
    case method::put:
        return "PUT";
    case method::del:
        return "DELETE";
    case method::patch:
        return "PATCH";
    case method::options:
        return "OPTIONS";
    case method::trace:
        return "TRACE";
    case method::connect:
        return "CONNECT";
    case method::other:
        break;
    }
    return "OTHER";
}

} // namespace hotpath::http
