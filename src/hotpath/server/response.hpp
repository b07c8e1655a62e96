// The response a handler fills: http::response plus JSON bodies and RFC 9457 problem details.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/http/response.hpp>
#include <hotpath/server/json_arena.hpp>

#include <coroutine>
#include <cstdint>
#include <string_view>

namespace boost::json {
class value;
}

namespace hotpath {

class response;
class server_connection;
class h2_connection;
class exchange;

// `co_await res.write(piece)`: sends a piece of a streamed response body (see response::write).
class body_write {
public:
    bool await_ready() noexcept;
    void await_suspend(std::coroutine_handle<> waiting) noexcept;
    result<void> await_resume() noexcept;

private:
    friend class response;
    body_write(response& r, std::string_view piece) noexcept : res_(r), piece_(piece) {}
    response& res_;
    std::string_view piece_;
    std::error_code error_;
};

// Reused for the requests its connection's loop serves (see http::response): it belongs to a pooled request
// state (server/request_state.hpp), lent to one connection at a time. Lives on that loop.
class response : public http::response {
public:
    // Serialises `value` as the body, Content-Type application/json, with status `s`.
    void json(const boost::json::value& value, http::status s = http::status::ok);
    // An RFC 9457 problem+json body: {"type":"about:blank","title":<reason>,"status":<code>,"detail":...}.
    void problem(http::status s, std::string_view detail);

    // Streams the body instead of setting it whole: the first write sends the status and fields (with
    // Content-Length when content_length() was set, else chunked; to an HTTP/1.0 client, neither, and the
    // connection closes after), each write sends `piece` (copied; it need not outlive the call). co_await resumes
    // at once while the connection has room (256 KiB of unsent bytes), else once the client has read enough:
    // a slow reader holds its handler, never its loop. Errors are values: errc::closed (the client went away),
    // errc::bad_request (more bytes than content_length()). The body set by text() or body() is not sent. Fewer
    // bytes than content_length() when the handler returns closes the connection (the client sees a short body).
    body_write write(std::string_view piece) noexcept { return body_write(*this, piece); }
    // The length of a streamed body, before its first write.
    void content_length(std::uint64_t bytes) noexcept {
        length_ = bytes;
        has_length_ = true;
    }

private:
    friend class server_connection;
    friend class h2_connection;
    friend class body_write;
    friend class request_state_pool;
    friend struct request_state;
    exchange* exchange_ = nullptr; // what carries the response, while a handler runs
    std::uint64_t length_ = 0;
    bool has_length_ = false;
    friend json_arena& arena_of(response& res);
    json_arena_ptr arena_; // made on the first JSON use (json_storage, json, problem)
};

} // namespace hotpath
