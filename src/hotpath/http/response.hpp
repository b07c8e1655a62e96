// An HTTP/1.1 response being built by a handler, and its serialisation onto the wire (RFC 9112 §4, §6).
#pragma once

#include <hotpath/http/status.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace hotpath::http {

// How the serialised response ends the connection's keep-alive state.
enum class connection_field : std::uint8_t {
    none,       // HTTP/1.1 persistent: nothing to say
    keep_alive, // HTTP/1.0 client asked for keep-alive: "Connection: keep-alive"
    close,      // the server closes after this response: "Connection: close"
};

// Owned by a connection and reused for every request on it: clear() keeps the buffers' capacity, so
// building a response allocates nothing in steady state. Not thread-safe; lives on one loop.
class response {
public:
    http::status status() const noexcept { return status_; }
    void status(http::status s) noexcept { status_ = s; }
    void status(unsigned code) noexcept { status_ = static_cast<http::status>(code); }

    // Adds a header field. Returns false (and adds nothing) when the name is not a token or the value holds
    // CR, LF or NUL: a handler cannot split the response. Server, Date, Content-Length, Transfer-Encoding
    // and Connection are set by the server and refused here.
    bool header(std::string_view name, std::string_view value);
    void content_type(std::string_view value) { content_type_.assign(value); }
    std::string_view content_type() const noexcept { return content_type_; }

    // Sets the body (copied) and its content type.
    void text(std::string_view body, std::string_view type = "text/plain; charset=utf-8");
    void body(std::string_view body, std::string_view type);
    // The body buffer, for handlers that write in place; set content_type() too.
    std::string& body() noexcept { return body_; }
    const std::string& body() const noexcept { return body_; }

    // A redirect with `Location: location` (302 Found by default) and an empty body.
    void redirect(std::string_view location, http::status s = http::status::found);

    // Calls f(name, value) for each field the handler added, in order, names as the handler wrote them: what another
    // framing than HTTP/1.1's (HTTP/2's header block) is built from.
    template <typename F>
    void for_each_field(F&& f) const {
        std::string_view rest = fields_;
        while (!rest.empty()) {
            const std::size_t colon = rest.find(':');
            const std::size_t end = rest.find("\r\n", colon);
            f(rest.substr(0, colon), rest.substr(colon + 2, end - colon - 2));
            rest.remove_prefix(end + 2);
        }
    }

    // Resets to a fresh 200 with no fields and no body, keeping capacity.
    void clear() noexcept;

    // Appends the whole response to `out`: status line, Server, Date (`date` is an IMF-fixdate), the
    // handler's fields, Content-Type, Content-Length, Connection as asked, then the body unless `head_only`
    // (a HEAD request: same fields, no content, RFC 9110 §9.3.2).
    void serialize(std::string& out, std::string_view date, connection_field connection, bool head_only) const;

    // How a body written in pieces after serialize_head is framed.
    enum class streamed : std::uint8_t {
        length,      // Content-Length: the length given
        chunked,     // Transfer-Encoding: chunked (HTTP/1.1)
        until_close, // neither: the body ends when the connection closes (HTTP/1.0)
    };
    // Appends the status line and fields of a response whose body follows in pieces, framed as `framing` says
    // (`length` with streamed::length). A status that has no content (1xx, 204, 304) gets no framing field.
    void serialize_head(std::string& out, std::string_view date, connection_field connection, streamed framing,
                        std::uint64_t length) const;

private:
    void append_start(std::string& out, std::string_view date) const;
    static void append_connection(std::string& out, connection_field connection);

    http::status status_ = http::status::ok;
    std::string fields_; // "name: value\r\n" lines added by the handler
    std::string content_type_;
    std::string body_;
};

// True when `s` is a non-empty RFC 9110 token (tchar only).
bool is_token(std::string_view s) noexcept;

} // namespace hotpath::http
