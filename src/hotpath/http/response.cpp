// Building and serialising responses.
#include <hotpath/http/response.hpp>

#include <hotpath/http/request_head.hpp>

#include <array>
#include <charconv>

namespace hotpath::http {
namespace {

constexpr std::array<bool, 256> make_tchar_table() {
    std::array<bool, 256> t{};
    for (int c = '0'; c <= '9'; ++c) {
        t[c] = true;
    }
    for (int c = 'a'; c <= 'z'; ++c) {
        t[c] = true;
        t[c - 'a' + 'A'] = true;
    }
    for (char c : std::string_view("!#$%&'*+-.^_`|~")) {
        t[static_cast<unsigned char>(c)] = true;
    }
    return t;
}

constexpr auto tchar = make_tchar_table();

bool reserved_field(std::string_view name) noexcept {
    return iequals(name, "server") || iequals(name, "date") || iequals(name, "content-length") ||
           iequals(name, "transfer-encoding") || iequals(name, "connection") || iequals(name, "content-type");
}

void append_number(std::string& out, std::size_t n) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof(buf), n);
    out.append(buf, r.ptr);
}

} // namespace

bool is_token(std::string_view s) noexcept {
    if (s.empty()) {
        return false;
    }
    for (char c : s) {
        if (!tchar[static_cast<unsigned char>(c)]) {
            return false;
        }
    }
    return true;
}

bool response::header(std::string_view name, std::string_view value) {
    if (!is_token(name) || value.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos) {
        return false;
    }
    if (iequals(name, "content-type")) {
        content_type_.assign(value);
        return true;
    }
    if (reserved_field(name)) {
        return false;
    }
    fields_.append(name);
    fields_.append(": ");
    fields_.append(value);
    fields_.append("\r\n");
    return true;
}

void response::text(std::string_view body, std::string_view type) {
    body_.assign(body);
    content_type_.assign(type);
}

void response::body(std::string_view body, std::string_view type) {
    text(body, type);
}

void response::redirect(std::string_view location, http::status s) {
    status_ = s;
    header("Location", location);
}

void response::clear() noexcept {
    status_ = http::status::ok;
    fields_.clear();
    content_type_.clear();
    body_.clear();
}

// The status line, Server, Date, the handler's fields and Content-Type.
void response::append_start(std::string& out, std::string_view date) const {
    const unsigned code = to_int(status_);
    char status_digits[3] = {static_cast<char>('0' + code / 100 % 10), static_cast<char>('0' + code / 10 % 10),
                             static_cast<char>('0' + code % 10)};
    out.append("HTTP/1.1 ");
    out.append(status_digits, 3);
    out.push_back(' ');
    out.append(reason_phrase(status_));
    out.append("\r\nServer: hotpath\r\nDate: ");
    out.append(date);
    out.append("\r\n");
    out.append(fields_);
    if (!content_type_.empty() && allows_body(status_)) {
        out.append("Content-Type: ");
        out.append(content_type_);
        out.append("\r\n");
    }
}

void response::append_connection(std::string& out, connection_field connection) {
    if (connection == connection_field::close) {
        out.append("Connection: close\r\n");
    } else if (connection == connection_field::keep_alive) {
        out.append("Connection: keep-alive\r\n");
    }
    out.append("\r\n");
}

void response::serialize(std::string& out, std::string_view date, connection_field connection, bool head_only) const {
    append_start(out, date);
    const bool has_content = allows_body(status_);
    if (has_content) {
        out.append("Content-Length: ");
        append_number(out, body_.size());
        out.append("\r\n");
    }
    append_connection(out, connection);
    if (has_content && !head_only) {
        out.append(body_);
    }
}

void response::serialize_head(std::string& out, std::string_view date, connection_field connection, streamed framing,
                              std::uint64_t length) const {
    append_start(out, date);
    if (allows_body(status_)) {
        if (framing == streamed::length) {
            out.append("Content-Length: ");
            append_number(out, length);
            out.append("\r\n");
        } else if (framing == streamed::chunked) {
            out.append("Transfer-Encoding: chunked\r\n");
        }
    }
    append_connection(out, connection);
}

} // namespace hotpath::http
