// The minimal-API route table: app.get("/users/{id}", handler); handlers are plain functions or coroutines.
#pragma once

#include "core/task.hpp"
#include "http/router.hpp"
#include "server/request.hpp"
#include "server/response.hpp"

#include <cstdint>
#include <functional>
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
};

// Built before the server starts, then shared read-only by every loop.
class app {
public:
    template <typename F>
    app& map(http::method m, std::string_view pattern, F&& fn) {
        using result_type = std::invoke_result_t<F&, request&, response&>;
        handler h;
        if constexpr (std::is_same_v<result_type, task<void>>) {
            h.async = std::forward<F>(fn);
        } else {
            static_assert(std::is_void_v<result_type>, "a handler returns void or hotpath::task<void>");
            h.sync = std::forward<F>(fn);
        }
        add(m, pattern, std::move(h));
        return *this;
    }

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

    const http::router& routes() const noexcept { return router_; }
    const handler& handler_at(std::uint32_t id) const noexcept { return handlers_[id]; }

private:
    void add(http::method m, std::string_view pattern, handler h);

    http::router router_;
    std::vector<handler> handlers_;
};

} // namespace hotpath
