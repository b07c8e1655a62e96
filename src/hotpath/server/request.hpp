// The request a handler sees: method, path, fields, path and query parameters, body; views, no copies.
#pragma once

#include <hotpath/core/cancel.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/http/request_head.hpp>
#include <hotpath/http/router.hpp>

#include <coroutine>
#include <string_view>

namespace hotpath {

namespace net {
class loop;
}
struct worker;
class response;
class request;
class server_connection;
class h2_connection;
class exchange;

// `co_await req.read_body()`: the next piece of the request body (see request::read_body).
class body_read {
public:
    bool await_ready() noexcept;
    void await_suspend(std::coroutine_handle<> waiting) noexcept;
    result<std::string_view> await_resume() noexcept;

private:
    friend class request;
    explicit body_read(request& r) noexcept : req_(r) {}
    request& req_;
};

// Every string_view returned stays valid until the handler's response is complete (the connection keeps
// the bytes in its read buffer until then). A request belongs to its connection's loop.
class request {
public:
    http::method method() const noexcept { return head_->method; }
    std::string_view method_token() const noexcept { return head_->method_token; }
    std::string_view target() const noexcept { return head_->target; }
    std::string_view path() const noexcept { return head_->path; }
    std::string_view query() const noexcept { return head_->query; }
    // The protocol's version: 1.1 or 1.0, or 2.0 for a request that came over HTTP/2 (as Kestrel's HttpRequest.Protocol
    // says "HTTP/2").
    unsigned version_major() const noexcept { return head_->version_major; }
    unsigned version_minor() const noexcept { return head_->version_minor; }
    // The host the client asked for: the Host field, or the authority of an absolute-form target.
    std::string_view host() const noexcept { return head_->host; }

    // The first field named `name` (case-insensitive); empty when absent.
    std::string_view header(std::string_view name) const noexcept { return head_->find(name); }
    // The path parameter `{name}` of the matched route; empty when the route has none by that name.
    std::string_view param(std::string_view name) const noexcept { return params_.find(name); }
    // The first query parameter `name` as sent (not percent-decoded); empty when absent. `has_query_param`
    // tells an absent parameter from an empty one.
    std::string_view query_param(std::string_view name) const noexcept;
    bool has_query_param(std::string_view name) const noexcept;
    // The whole body (chunked coding already removed). Empty on a route registered with app.streaming(): there the
    // body is read with read_body() as it arrives.
    std::string_view body() const noexcept { return body_; }
    // `co_await req.read_body()`: the next piece of the body, chunked coding removed; an empty piece at its end. A
    // piece stays valid until the next read_body(). On a streaming route (app.streaming) pieces come as they
    // arrive, and the connection reads no further than the handler takes (back-pressure: a piece not yet asked
    // for stops reading); "Expect: 100-continue" is answered on the first call, so a handler may refuse a body
    // before the client sends it. Elsewhere the first call gives the whole body at once. Errors are values:
    // errc::body_too_large (over the route's limit), errc::bad_request (malformed chunked coding),
    // errc::timeout (slower than limits.min_body_bytes_per_second), errc::closed (the client went away); the
    // response is then that status's problem, whatever the handler sets, and the connection closes.
    body_read read_body() noexcept { return body_read(*this); }

    const http::request_head& head() const noexcept { return *head_; }
    // The event loop serving this request.
    net::loop& loop() const noexcept { return *loop_; }
    // Cancelled when the client goes away (EOF or error on its connection) or the server aborts the
    // connection while the handler runs; hand it to downstream calls (client's call_options::cancel) so they
    // stop instead of finishing work no one will read. Like ASP.NET Core's HttpContext.RequestAborted.
    cancel_signal& aborted() const noexcept { return *aborted_; }

private:
    friend class server_connection;
    friend class h2_connection;
    friend class body_read;
    friend struct request_state;
    const http::request_head* head_ = nullptr;
    exchange* exchange_ =
        nullptr;             // what carries the request (its connection, or its HTTP/2 stream), while a handler runs
    bool body_read_ = false; // read_body() gave the whole body (a route that does not stream)
    http::route_params params_;
    std::string_view body_;
    net::loop* loop_ = nullptr;
    cancel_signal* aborted_ = nullptr;
    const worker* worker_ = nullptr; // the loop's share of the server, for app.metrics()
    friend void write_metrics(request& req, response& res);
    friend void write_route_report(request& req, response& res);
};

} // namespace hotpath
