// The minimal-API route table: app.get("/users/{id}", handler); handlers are plain functions or coroutines.
#pragma once

#include <hotpath/core/task.hpp>
#include <hotpath/http/router.hpp>
#include <hotpath/metrics/source.hpp>
#include <hotpath/server/request.hpp>
#include <hotpath/server/response.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace hotpath {

// A handler is called on the loop that owns the connection, with a request and a response to fill.
// - `void(request&, response&)`: runs to completion before the next request on the connection.
// - `task<void>(request&, response&)`: a coroutine; may co_await timers and I/O on the same loop, and the
//   connection waits for it (later pipelined requests are answered after it, in order).
// An exception escaping either becomes a 500 problem response, counted; the server goes on.
struct handler {
    std::function<void(request&, response&)> sync;
    std::function<task<void>(request&, response&)> async;
    // app.streaming(): runs once the head is here and reads the body as it arrives, up to max_body_bytes.
    bool streams_body = false;
    std::uint64_t max_body_bytes = 0; // 0: no limit
};

// A method a route is registered for: any http::method but `other`, which names no method. Checked at compile
// time: `app.map(http::method::other, ...)` does not compile (app.any serves every method), and neither does a
// method chosen at run time.
class route_method {
public:
    consteval route_method(http::method m) : value_(m) { // implicit, so that map(http::method::get, ...) reads
        if (m == http::method::other) {
            method_other_names_no_method_use_app_any();
        }
    }
    constexpr http::method value() const noexcept { return value_; }

private:
    // Not constexpr: a call to it in the constructor is what makes the misuse a compile error that names it.
    static void method_other_names_no_method_use_app_any() {}
    http::method value_;
};

// Built before the server starts, then shared read-only by every loop. Registering a bad pattern, or the same
// pattern twice for one method, throws std::invalid_argument (see http::router).
class app {
public:
    template <typename F>
    app& map(route_method m, std::string_view pattern, F&& fn) {
        add(m.value(), pattern, make_handler(std::forward<F>(fn)));
        return *this;
    }

    // A route for every method, custom tokens included (request::method_token tells them apart); the route's
    // handlers for single methods come first, and HEAD goes to its GET handler when there is one. Such a route
    // never answers 405. The response to HEAD carries the fields without the body, as for every route.
    template <typename F>
    app& any(std::string_view pattern, F&& fn) {
        add_any(pattern, make_handler(std::forward<F>(fn)));
        return *this;
    }

    // A route whose coroutine handler reads the request body as it arrives (co_await req.read_body(), see
    // request::read_body) instead of once it is whole: for uploads too large to hold, or written on as they come.
    // The handler runs as soon as the head is here. `max_body_bytes` bounds this route's bodies instead of
    // limits.max_body_bytes (0: no limit): a Content-Length over it is answered 413 before the handler runs, a
    // chunked body passing it fails the read with errc::body_too_large.
    template <typename F>
    app& streaming(route_method m, std::string_view pattern, F&& fn, std::uint64_t max_body_bytes) {
        handler h = make_handler(std::forward<F>(fn));
        static_assert(std::is_same_v<std::invoke_result_t<F&, request&, response&>, task<void>>,
                      "a streaming handler is a coroutine: it awaits the body's pieces");
        h.streams_body = true;
        h.max_body_bytes = max_body_bytes;
        add(m.value(), pattern, std::move(h));
        has_streaming_ = true;
        return *this;
    }
    bool has_streaming_routes() const noexcept { return has_streaming_; }

    template <typename F>
    app& get(std::string_view pattern, F&& fn) {
        return map(http::method::get, pattern, std::forward<F>(fn));
    }
    template <typename F>
    app& post(std::string_view pattern, F&& fn) {
        return map(http::method::post, pattern, std::forward<F>(fn));
    }
    template <typename F>
    app& put(std::string_view pattern, F&& fn) {
        return map(http::method::put, pattern, std::forward<F>(fn));
    }
    template <typename F>
    app& del(std::string_view pattern, F&& fn) {
        return map(http::method::del, pattern, std::forward<F>(fn));
    }
    template <typename F>
    app& patch(std::string_view pattern, F&& fn) {
        return map(http::method::patch, pattern, std::forward<F>(fn));
    }

    // Serves the running server's metrics in Prometheus's text format on GET `pattern` (e.g. "/metrics"): per
    // route requests by status class and a duration histogram, connections, bad requests, timeouts, the loops'
    // turns and busy time, the process's CPU, memory and descriptors. Reading them takes no lock from the loops.
    app& metrics(std::string_view pattern);
    // Serves a per-route report as JSON on GET `pattern` (e.g. "/debug/routes"): requests, p50/p95/p99, where the
    // time went (queue, app, downstream, wait, write: mean and share), downstream calls per request and their
    // concurrency, allocations per request when the allocation counter is linked in.
    app& debug_routes(std::string_view pattern);
    // Adds the families of `source` to the page app.metrics() serves, e.g. a client's calls per downstream:
    // `routes.expose(downstream.metrics())`. The app shares ownership of it. Call while setting up the app.
    app& expose(std::shared_ptr<const metrics::source> source);
    const std::vector<std::shared_ptr<const metrics::source>>& exposed() const noexcept { return exposed_; }

    // What metrics call the route of each handler id: its method ("GET"; "ANY" for app.any) and pattern.
    struct route_key {
        std::string method;
        std::string pattern;
    };
    const std::vector<route_key>& route_keys() const noexcept { return keys_; }

    const http::router& routes() const noexcept { return router_; }
    const handler& handler_at(std::uint32_t id) const noexcept { return handlers_[id]; }

private:
    template <typename F>
    static handler make_handler(F&& fn) {
        using result_type = std::invoke_result_t<F&, request&, response&>;
        handler h;
        if constexpr (std::is_same_v<result_type, task<void>>) {
            h.async = std::forward<F>(fn);
        } else {
            static_assert(std::is_void_v<result_type>, "a handler returns void or hotpath::task<void>");
            h.sync = std::forward<F>(fn);
        }
        return h;
    }

    void add(http::method m, std::string_view pattern, handler h);
    void add_any(std::string_view pattern, handler h);

    http::router router_;
    std::vector<handler> handlers_;
    std::vector<route_key> keys_; // by handler id
    std::vector<std::shared_ptr<const metrics::source>> exposed_;
    bool has_streaming_ = false;
};

} // namespace hotpath
