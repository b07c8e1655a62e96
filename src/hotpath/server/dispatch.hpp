// A request whose head (and buffered body) is here, routed and handed to its handler: the same for every protocol
// that carries it (an HTTP/1.1 connection, an HTTP/2 stream). Internal: not installed.
#pragma once

#include <exception>
#include <string_view>

namespace hotpath {

struct request_state;
struct worker;

namespace dispatch {

// Routes the request in `s` (its head and body in place, its request and response reset, s.req.exchange_ and
// s.res.exchange_ set): true when a handler is to run (s.route is its handler); false when the request is answered
// without one, s.res holding the answer: "OPTIONS *", no route (404), a method the route does not take (405), or an
// overloaded server (503 with Retry-After; see overloaded). `refuse`: the connection is over
// limits.max_connections; set when the drain's time is spent, so that the connection closes after the answer.
bool route(worker& w, request_state& s, bool& refuse);

// Over a limit (see http::limits): s.res holds a 503 with Retry-After, counted, and true.
bool overloaded(worker& w, request_state& s, bool& refuse);

// Runs the handler of s.route: true when it finished now (s.handler_error says whether it failed); false when it
// suspended: `done(self)` is called once it finishes, with s.handler_error set. Counts it in w.handlers_running
// until finished() or abandoned().
bool run(worker& w, request_state& s, void (*done)(void*) noexcept, void* self);

// The handler of `s` is done: uncounted, and a failure (an exception) turned into a 500 problem, or, with a
// streamed response whose status is sent, into an unfinished body (s.stream.out_failed).
void finished(worker& w, request_state& s);

// The handler of `s` is abandoned (its client went away, or its connection is cut): its frame destroyed, which
// cancels what it awaits, and uncounted.
void abandon(worker& w, request_state& s) noexcept;

} // namespace dispatch

} // namespace hotpath
