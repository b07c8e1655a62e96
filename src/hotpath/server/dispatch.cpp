// Routing and running a handler, whatever carries the request.
#include <hotpath/server/dispatch.hpp>

#include <hotpath/server/app.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/worker.hpp>

#include <fmt/format.h>

#include <chrono>

namespace hotpath::dispatch {

bool route(worker& w, request_state& s, bool& refuse) {
    if (s.head.path == "*") {
        // "OPTIONS *" (RFC 9110 §9.3.7) asks about the server, not a resource: it is here, nothing to add.
        s.res.status(http::status::no_content);
        s.route = w.route_stats.index_of(route_table_metrics::server_options);
        return false;
    }
    const auto match = w.routes.routes().match(s.head.method, s.head.path, s.params());
    if (refuse) {
        s.route = match.status == http::route_status::found ? match.handler
                                                            : w.route_stats.index_of(route_table_metrics::no_route);
        overloaded(w, s, refuse);
        return false;
    }
    if (match.status == http::route_status::not_found) {
        s.route = w.route_stats.index_of(route_table_metrics::no_route);
        s.res.problem(http::status::not_found, "no route matches the request path");
        return false;
    }
    if (match.status == http::route_status::method_not_allowed) {
        s.route = w.route_stats.index_of(route_table_metrics::method_not_allowed);
        s.res.header("Allow", match.allow);
        s.res.problem(http::status::method_not_allowed, "the route does not accept this method");
        return false;
    }
    s.route = match.handler;
    return !overloaded(w, s, refuse);
}

bool overloaded(worker& w, request_state& s, bool& refuse) {
    const auto& limits = w.options.limits;
    const std::int64_t drain_deadline = w.drain_deadline_ns->load(std::memory_order_relaxed);
    std::string_view why;
    if (refuse) {
        w.stats.refused_connections.add();
        why = "the server is at its connection limit";
    } else if (limits.max_requests_in_flight != 0 && w.handlers_running >= limits.max_requests_in_flight) {
        w.stats.refused_in_flight.add();
        why = "the server is at its limit of requests in flight";
    } else if (drain_deadline != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= drain_deadline) {
        // Stopping, and the drain's time is spent, yet this loop is still dispatching: its handlers block it (each
        // request of a long turn's batch would run after the deadline). Refused, so that the stop ends.
        w.stats.refused_draining.add();
        refuse = true; // and the connection closes after the answer
        why = "the server is shutting down";
    } else {
        return false;
    }
    char seconds[24];
    const auto out = fmt::format_to_n(seconds, sizeof(seconds), "{}", limits.retry_after.count());
    s.res.header("Retry-After", std::string_view(seconds, out.size));
    s.res.problem(http::status::service_unavailable, why);
    return true;
}

bool run(worker& w, request_state& s, void (*done)(void*) noexcept, void* self) {
    const handler& h = w.routes.handler_at(s.route);
    ++w.handlers_running;
    s.handler_counted = true;
    s.handler_error = nullptr;
    s.aborted.reset();
    // The one place where a handler's exception is caught; coroutine bodies hand theirs over as task::error().
    w.running_handler.store(w.running_now(s.route), std::memory_order_relaxed);
    s.timing.running = &w.running_handler; // each end of its waits names it again
    s.timing.turns = &w.loop.stats().turns;
    s.timing.route = s.route;
    try {
        if (h.sync) {
            h.sync(s.req, s.res);
        } else {
            s.handler_task = h.async(s.req, s.res);
            s.handler_task.attribute_to(&s.timing); // its client calls and sleeps say when it waits
            if (!s.handler_task.start(done, self)) {
                w.running_handler.store(w.running_now(worker::no_handler), std::memory_order_relaxed);
                return false; // suspended: done(self) resumes its carrier
            }
            s.handler_error = s.handler_task.error();
        }
    } catch (...) {
        s.handler_error = std::current_exception();
    }
    w.running_handler.store(w.running_now(worker::no_handler), std::memory_order_relaxed);
    return true;
}

void finished(worker& w, request_state& s) {
    if (s.handler_counted) {
        s.handler_counted = false;
        --w.handlers_running;
    }
    if (!s.handler_error) {
        return;
    }
    w.stats.handler_exceptions.add();
    if (s.stream.out != request_state::stream_state::framing::none) {
        s.stream.out_failed = true; // the status is sent: the client sees an unfinished body instead
    } else {
        s.res.clear();
        s.res.problem(http::status::internal_server_error, "the handler failed");
    }
}

void abandon(worker& w, request_state& s) noexcept {
    w.stats.requests_abandoned.add();
    s.aborted.cancel();
    s.stream.reader = {};
    s.stream.writer = {};
    s.handler_task.reset();
    if (s.handler_counted) {
        s.handler_counted = false;
        --w.handlers_running;
    }
}

} // namespace hotpath::dispatch
