// The connection state machine: read, parse, route, run the handler, write, and the next request.
#include <hotpath/server/server_connection.hpp>

#include <hotpath/server/access_log.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/server.hpp>
#include <hotpath/server/worker.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

namespace hotpath {

namespace {

// Past this many bytes of unwritten responses, stop reading and handling until the peer reads.
constexpr std::size_t out_high_water_bytes = 256 * 1024;
// Past this many bytes received but not yet handled, stop reading until they are.
constexpr std::size_t in_high_water_bytes = 256 * 1024;
// A streaming route's read buffer: its pieces are at most this much less the head.
constexpr std::size_t stream_buffer_bytes = 64 * 1024;
// After an error response, read and discard for this long so the peer sees the response, not a reset.
constexpr std::chrono::seconds linger_time{2};

constexpr std::string_view continue_response = "HTTP/1.1 100 Continue\r\n\r\n";

std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point from,
                         std::chrono::steady_clock::time_point to) noexcept {
    return to > from ? static_cast<std::uint64_t>((to - from).count()) : 0;
}

// The W3C Server-Timing field of the parts known before the response is written: durations in milliseconds, so
// that curl -v and a browser's developer tools show where the server's time went. No allocation past the
// response's kept field capacity.
void add_server_timing(response& res, const request_time_parts& parts, const time_attribution& waits) {
    char text[256];
    const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    const double total = ms(parts.queue_ns + parts.app_ns + parts.downstream_ns + parts.wait_ns);
    const auto out =
        waits.calls == 0
            ? fmt::format_to_n(text, sizeof(text),
                               "queue;dur={:.3f}, app;dur={:.3f}, downstream;dur={:.3f}, wait;dur={:.3f}, "
                               "total;dur={:.3f}",
                               ms(parts.queue_ns), ms(parts.app_ns), ms(parts.downstream_ns), ms(parts.wait_ns), total)
            : fmt::format_to_n(text, sizeof(text),
                               "queue;dur={:.3f}, app;dur={:.3f}, downstream;dur={:.3f};desc=\"{} "
                               "call{}, at most {} at once\", wait;dur={:.3f}, total;dur={:.3f}",
                               ms(parts.queue_ns), ms(parts.app_ns), ms(parts.downstream_ns), waits.calls,
                               waits.calls == 1 ? "" : "s", waits.max_calls_in_flight, ms(parts.wait_ns), total);
    res.header("Server-Timing", std::string_view(text, std::min(out.size, sizeof(text))));
}

} // namespace

server_connection::server_connection(worker& owner, int fd, bool refuse)
    : owner_(owner), transport_(owner.transports->make(owner.loop, fd, *this)), refuse_(refuse) {
    owner_.link(*this);
    owner_.stats.connections_accepted.add();
    // A new connection must send its first request head within the headers timeout (as Kestrel does).
    timeout_ = timeout_kind::headers;
    deadline_ = owner_.loop.now() + owner_.options.limits.request_headers_timeout;
    const auto& limits = owner_.options.limits;
    response_credit_bytes_ = static_cast<double>(limits.min_response_bytes_per_second) *
                             static_cast<double>(limits.min_response_rate_grace.count());
}

server_connection::~server_connection() {
    release_state();
    owner_.stats.connections_closed.add();
    owner_.unlink(*this);
}

void server_connection::start() {
    transport_->start_reading();
}

bool server_connection::nothing_to_write() const noexcept {
    return !write_pending_ && (state_ == nullptr || state_->out.empty());
}

bool server_connection::idle() const noexcept {
    return phase_ == phase::head && begin_ == end_ && nothing_to_write();
}

// Idle again: the state goes back to the pool (with it the buffers, the head, the response and its JSON arena).
// Nothing refers into it any more: the head's and the handler's views went with the last request.
void server_connection::release_state() noexcept {
    if (state_ == nullptr) {
        return;
    }
    handler_task_.reset(); // a finished handler's frame, returned to the frame allocator
    owner_.states.give(std::exchange(state_, nullptr));
    begin_ = end_ = 0;
}

// Makes room for `bytes` more after end_, moving the unprocessed bytes to the front of a (possibly larger)
// buffer. The head's views point into the buffer, so a move during a body re-parses the head in place.
bool server_connection::ensure_space(std::size_t bytes) {
    request_state& s = *state_;
    if (s.capacity - end_ >= bytes) {
        return true;
    }
    const std::size_t used = end_ - begin_;
    const std::size_t needed = used + bytes;
    if (needed <= s.capacity) {
        std::memmove(s.in.get(), s.in.get() + begin_, used);
    } else {
        std::size_t grown = s.capacity * 2;
        while (grown < needed) {
            grown *= 2;
        }
        std::unique_ptr<char[]> bigger(new char[grown]);
        std::memcpy(bigger.get(), s.in.get() + begin_, used);
        s.in = std::move(bigger);
        s.capacity = grown;
    }
    begin_ = 0;
    end_ = used;
    if (phase_ == phase::body_length || phase_ == phase::body_chunked) {
        s.parser.reset();
        const auto again = s.parser.parse({s.in.get(), head_bytes_}, s.head);
        return again.status == http::parse_status::complete;
    }
    return true;
}

void server_connection::on_transport_data(std::string_view bytes) {
    owner_.stats.bytes_received.add(bytes.size());
    if (closed_ || phase_ == phase::closing) {
        return; // lingering close: discard
    }
    if (state_ == nullptr) {
        state_ = owner_.states.take();
    }
    request_state& s = *state_;
    s.received_at = owner_.loop.turn_started();
    if (timeout_ == timeout_kind::idle) {
        timeout_ = timeout_kind::headers;
        deadline_ = owner_.loop.now() + owner_.options.limits.request_headers_timeout;
    } else if (timeout_ == timeout_kind::body_rate) {
        body_received_ += bytes.size();
    }
    if (phase_ == phase::handler && s.stream.in && !s.stream.in_complete) {
        // A body streamed to the handler: what fits after the unread pieces, the rest kept until it asks.
        const std::size_t fit = s.overflow.empty() ? std::min(bytes.size(), s.capacity - end_) : 0;
        std::memcpy(s.in.get() + end_, bytes.data(), fit);
        end_ += fit;
        if (fit < bytes.size()) {
            s.overflow.append(bytes.substr(fit));
        }
        stream_reading();
        resume_reader();
        return;
    }
    if (phase_ == phase::handler) {
        // The handler holds views into the buffer: append only where nothing moves.
        if (s.overflow.empty() && s.capacity - end_ >= bytes.size()) {
            std::memcpy(s.in.get() + end_, bytes.data(), bytes.size());
            end_ += bytes.size();
        } else {
            s.overflow.append(bytes);
        }
    } else {
        if (!ensure_space(bytes.size())) {
            fail(http::status::internal_server_error, "the request head could not be kept");
            return;
        }
        std::memcpy(s.in.get() + end_, bytes.data(), bytes.size());
        end_ += bytes.size();
    }
    if (end_ - begin_ + s.overflow.size() > in_high_water_bytes + owner_.options.limits.max_header_bytes &&
        phase_ != phase::body_length && phase_ != phase::body_chunked) {
        reading_paused_ = true;
        transport_->stop_reading();
    }
    if (phase_ != phase::handler) {
        do_process();
    }
}

void server_connection::on_transport_end(std::error_code) {
    if (closed_) {
        return;
    }
    peer_ended_ = true;
    if (phase_ == phase::handler) {
        state_->aborted.cancel(); // no one is left to read the answer: the handler's calls may stop
        if (state_->stream.in && !state_->stream.in_complete) {
            fail_body(errc::closed);
            resume_reader(); // last: the handler may finish (and close) from here
            return;
        }
    }
    // Nothing owed (a lingering close is done, too): close now. Otherwise finish the responses owed first, an error's
    // answer among them: a client that half-closed after its request still reads them (its last request may have
    // been refused while an earlier response was being written).
    if (phase_ != phase::handler && nothing_to_write()) {
        close();
    }
}

void server_connection::take_overflow() {
    request_state& s = *state_;
    if (s.overflow.empty()) {
        return;
    }
    if (ensure_space(s.overflow.size())) {
        std::memcpy(s.in.get() + end_, s.overflow.data(), s.overflow.size());
        end_ += s.overflow.size();
    }
    s.overflow.clear();
}

// Handles every complete request in the buffer, in order, then writes all their responses at once. Runs with a
// state (bytes arrived, a handler finished, or a write did); gives it back when that leaves the connection idle.
void server_connection::do_process() {
    request_state& s = *state_;
    if (phase_ != phase::handler) {
        take_overflow(); // never under a running handler: the buffer may move, and it holds views into it
    }
    while (!closed_ && s.out.size() < out_high_water_bytes) {
        if (phase_ == phase::head && !do_head()) {
            break;
        }
        if ((phase_ == phase::body_length || phase_ == phase::body_chunked) && !do_body()) {
            break;
        }
        if (phase_ != phase::ready) {
            break;
        }
        do_dispatch();
    }
    if (closed_) {
        return;
    }
    do_write();
    const bool wants_bytes = phase_ == phase::head || phase_ == phase::body_length || phase_ == phase::body_chunked;
    // Draining and idle, or every answer written to a peer that has ended (so the rest of a request, if any, can
    // no longer come): nothing is left to do.
    if ((owner_.draining && idle()) || (peer_ended_ && wants_bytes && nothing_to_write())) {
        close();
        return;
    }
    arm_read_timeout();
    if (s.out.size() >= out_high_water_bytes && !reading_paused_) {
        reading_paused_ = true;
        transport_->stop_reading();
    } else if (wants_bytes && reading_paused_ && s.out.size() < out_high_water_bytes &&
               (phase_ != phase::head || end_ - begin_ < in_high_water_bytes)) {
        // A body is kept whole before its handler runs (up to limits.max_body_bytes), so however much of it
        // is buffered, the rest must be read; in the head phase, that much buffered means complete
        // requests wait for their turn.
        reading_paused_ = false;
        transport_->start_reading();
    }
    if (idle()) {
        release_state();
    }
}

bool server_connection::do_head() {
    if (begin_ == end_) {
        return false;
    }
    request_state& s = *state_;
    const auto r = s.parser.parse({s.in.get() + begin_, end_ - begin_}, s.head);
    if (r.status == http::parse_status::incomplete) {
        return false;
    }
    if (r.status == http::parse_status::error) {
        fail(r.error, "the request is malformed or over a limit");
        return false;
    }
    if (s.head.method == http::method::connect) {
        // RFC 9110 §9.3.6: CONNECT asks for a tunnel, which only a proxy opens.
        fail(http::status::not_implemented, "this server does not open tunnels (CONNECT)");
        return false;
    }
    head_bytes_ = r.consumed;
    body_bytes_ = 0;
    chunk_pos_ = head_bytes_;
    continue_sent_ = false;
    s.stream.reset();
    const auto& limits = owner_.options.limits;
    if (s.head.framing != http::body_framing::none && owner_.routes.has_streaming_routes()) {
        // A streaming route's handler runs now, with the body still to come.
        const auto match = owner_.routes.routes().match(s.head.method, s.head.path, s.req.params_);
        if (match.status == http::route_status::found && owner_.routes.handler_at(match.handler).streams_body) {
            return start_streaming_body(owner_.routes.handler_at(match.handler));
        }
    }
    switch (s.head.framing) {
    case http::body_framing::none:
        request_bytes_ = head_bytes_;
        phase_ = phase::ready;
        return true;
    case http::body_framing::content_length:
        if (s.head.content_length > limits.max_body_bytes) {
            fail(http::status::content_too_large, "the request body is over the size limit");
            return false;
        }
        phase_ = phase::body_length;
        break;
    case http::body_framing::chunked:
        s.chunked.reset();
        phase_ = phase::body_chunked;
        break;
    case http::body_framing::until_close: // responses only: the request parser never yields it
        fail(http::status::bad_request, "the request body has no length");
        return false;
    }
    timeout_ = timeout_kind::body_rate;
    body_started_ = owner_.loop.now();
    body_received_ = end_ - begin_ - head_bytes_;
    return true;
}

// The head of a request for a streaming route is here: its handler runs next, and the body goes to it in pieces.
bool server_connection::start_streaming_body(const handler& h) {
    request_state& s = *state_;
    s.stream.in = true;
    if (s.head.framing == http::body_framing::content_length) {
        if (h.max_body_bytes != 0 && s.head.content_length > h.max_body_bytes) {
            fail(http::status::content_too_large, "the request body is over the size limit");
            return false;
        }
        s.stream.in_left = s.head.content_length;
        s.stream.in_complete = s.stream.in_left == 0;
        phase_ = phase::body_length;
    } else {
        s.chunked.reset(h.max_body_bytes);
        phase_ = phase::body_chunked;
    }
    // Room for the pieces to come, made now: once the handler runs, the buffer never moves (the head's views).
    if (!ensure_space(stream_buffer_bytes)) {
        fail(http::status::internal_server_error, "the request head could not be kept");
        return false;
    }
    timeout_ = s.stream.in_complete ? timeout_kind::none : timeout_kind::body_rate;
    body_started_ = owner_.loop.now();
    body_received_ = end_ - begin_ - head_bytes_;
    phase_ = phase::ready;
    return true;
}

bool server_connection::do_body() {
    request_state& s = *state_;
    if (phase_ == phase::body_length) {
        const std::size_t length = s.head.content_length;
        const std::size_t have = end_ - begin_ - head_bytes_;
        if (have >= length) {
            body_bytes_ = length;
            request_bytes_ = head_bytes_ + length;
            phase_ = phase::ready;
            return true;
        }
        // Room for the whole body at once, so it is read straight into place.
        if (!ensure_space(length - have)) {
            fail(http::status::internal_server_error, "the request head could not be kept");
            return false;
        }
    } else {
        char* base = s.in.get() + begin_;
        const auto r =
            s.chunked.decode(base + chunk_pos_, end_ - begin_ - chunk_pos_, base + head_bytes_ + body_bytes_);
        chunk_pos_ += r.consumed;
        body_bytes_ += r.produced;
        if (r.status == http::chunk_status::error) {
            fail(r.error, r.error == http::status::content_too_large ? "the request body is over the size limit"
                                                                     : "the chunked body is malformed");
            return false;
        }
        if (r.status == http::chunk_status::done) {
            request_bytes_ = chunk_pos_;
            phase_ = phase::ready;
            return true;
        }
        // All input was consumed: the framing bytes behind the decoded body are dead, so the next read lands
        // right after the body. The buffer holds the decoded body plus one read, however much framing
        // (tiny chunks, long extensions) the body came with.
        end_ = begin_ + head_bytes_ + body_bytes_;
        chunk_pos_ = head_bytes_ + body_bytes_;
    }
    // RFC 9110 §10.1.1: tell a client that waits for it to send the body.
    if (s.head.expect_continue && !continue_sent_ && s.head.version_minor == 1) {
        continue_sent_ = true;
        s.out.append(continue_response);
    }
    return false;
}

void server_connection::do_dispatch() {
    request_state& s = *state_;
    owner_.stats.requests.add();
    s.dispatched_at = std::chrono::steady_clock::now();
    s.timing.start();
    s.req.worker_ = &owner_;
    s.req.connection_ = this;
    s.req.body_read_ = false;
    s.res.connection_ = this;
    s.res.has_length_ = false;
    // A streamed body is still arriving: its rate is watched while the handler reads it.
    timeout_ = s.stream.in && !s.stream.in_complete ? timeout_kind::body_rate : timeout_kind::none;
    s.req.body_ = {s.in.get() + begin_ + head_bytes_, body_bytes_};
    s.res.clear();
    if (s.res.arena_ != nullptr) {
        reset_json_arena(*s.res.arena_);
    }

    if (s.head.path == "*") {
        // "OPTIONS *" (RFC 9110 §9.3.7) asks about the server, not a resource: it is here, nothing to add.
        s.res.status(http::status::no_content);
        s.route = owner_.route_stats.index_of(route_table_metrics::server_options);
        finish_request();
        return;
    }
    const auto match = owner_.routes.routes().match(s.head.method, s.head.path, s.req.params_);
    if (refuse_) {
        s.route = match.status == http::route_status::found
                      ? match.handler
                      : owner_.route_stats.index_of(route_table_metrics::no_route);
        overloaded(s);
        finish_request();
        return;
    }
    if (match.status == http::route_status::not_found) {
        s.route = owner_.route_stats.index_of(route_table_metrics::no_route);
        s.res.problem(http::status::not_found, "no route matches the request path");
        finish_request();
        return;
    }
    if (match.status == http::route_status::method_not_allowed) {
        s.route = owner_.route_stats.index_of(route_table_metrics::method_not_allowed);
        s.res.header("Allow", match.allow);
        s.res.problem(http::status::method_not_allowed, "the route does not accept this method");
        finish_request();
        return;
    }

    const handler& h = owner_.routes.handler_at(match.handler);
    s.route = match.handler;
    if (overloaded(s)) {
        finish_request();
        return;
    }
    phase_ = phase::handler;
    ++owner_.handlers_running;
    handler_counted_ = true;
    s.aborted.reset();
    // The one place where a handler's exception is caught; coroutine bodies hand theirs over as
    // task::error() (see finish_handler).
    std::exception_ptr error;
    owner_.running_handler.store(owner_.running_now(match.handler), std::memory_order_relaxed);
    s.timing.running = &owner_.running_handler; // each end of its waits names it again
    s.timing.turns = &owner_.loop.stats().turns;
    s.timing.route = match.handler;
    try {
        if (h.sync) {
            h.sync(s.req, s.res);
        } else {
            handler_task_ = h.async(s.req, s.res);
            handler_task_.attribute_to(&s.timing); // its client calls and sleeps say when it waits
            if (!handler_task_.start(&server_connection::on_handler_done, this)) {
                owner_.running_handler.store(owner_.running_now(worker::no_handler), std::memory_order_relaxed);
                return; // suspended: on_handler_done resumes the connection
            }
            error = handler_task_.error();
        }
    } catch (...) {
        error = std::current_exception();
    }
    owner_.running_handler.store(owner_.running_now(worker::no_handler), std::memory_order_relaxed);
    finish_handler(error);
}

void server_connection::on_handler_done(void* self) noexcept {
    auto* c = static_cast<server_connection*>(self);
    c->finish_handler(c->handler_task_.error());
    if (!c->closed_) {
        c->do_process();
    }
}

// Over a limit (see http::limits): the request is answered 503 with Retry-After without running its handler, and
// counted. On a connection over limits.max_connections, the response closes it (finish_request).
bool server_connection::overloaded(request_state& s) {
    const auto& limits = owner_.options.limits;
    const std::int64_t drain_deadline = owner_.drain_deadline_ns->load(std::memory_order_relaxed);
    std::string_view why;
    if (refuse_) {
        owner_.stats.refused_connections.add();
        why = "the server is at its connection limit";
    } else if (limits.max_requests_in_flight != 0 && owner_.handlers_running >= limits.max_requests_in_flight) {
        owner_.stats.refused_in_flight.add();
        why = "the server is at its limit of requests in flight";
    } else if (drain_deadline != 0 && std::chrono::steady_clock::now().time_since_epoch().count() >= drain_deadline) {
        // Stopping, and the drain's time is spent, yet this loop is still dispatching: its handlers block it (each
        // request of a long turn's batch would run after the deadline). Refused, so that the stop ends.
        owner_.stats.refused_draining.add();
        refuse_ = true; // and the connection closes after the answer
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

void server_connection::finish_handler(const std::exception_ptr& error) {
    if (handler_counted_) {
        handler_counted_ = false;
        --owner_.handlers_running;
    }
    if (error) {
        owner_.stats.handler_exceptions.add();
        if (state_->stream.out != request_state::stream_state::framing::none) {
            state_->stream.out_failed = true; // the status is sent: the client sees an unfinished body instead
        } else {
            state_->res.clear();
            state_->res.problem(http::status::internal_server_error, "the handler failed");
        }
    }
    finish_request();
}

void server_connection::finish_request() {
    request_state& s = *state_;
    auto& st = s.stream;
    using framing = request_state::stream_state::framing;
    // A streamed body: the piece the handler held goes, so that what follows the body starts right after the head;
    // a body not read to its end is still on the wire, and the connection cannot go on.
    const bool body_unread = st.in && !st.in_complete;
    if (st.in) {
        drop_piece();
        st.reader = {};
        if (st.in_error != errc{} && st.out == framing::none) {
            // The body failed: whatever the handler answered, the client hears why.
            const errc e = st.in_error;
            s.res.clear();
            if (e == errc::body_too_large) {
                s.res.problem(http::status::content_too_large, "the request body is over the size limit");
            } else if (e == errc::timeout) {
                s.res.problem(http::status::request_timeout, "the request body is arriving too slowly");
            } else {
                s.res.problem(http::status::bad_request, e == errc::bad_request ? "the chunked body is malformed"
                                                                                : "the request body did not arrive");
            }
            if (e != errc::timeout) {
                owner_.stats.bad_requests.add();
            }
        }
    }
    bool keep = s.head.keep_alive && !owner_.draining && !refuse_ && !body_unread && st.in_error == errc{};
    if (st.out != framing::none) {
        keep = keep && st.out_keep && !st.out_failed &&
               (st.out != framing::length || st.out_left == 0 || st.out_head_only);
    }
    const auto field =
        !keep ? http::connection_field::close
              : (s.head.version_minor == 0 ? http::connection_field::keep_alive : http::connection_field::none);
    // Where its time went (see request_time_parts): the handler's wall time less its waits is its own.
    const auto finished = std::chrono::steady_clock::now();
    s.timing.finish();
    request_time_parts parts;
    parts.queue_ns = elapsed_ns(s.received_at, s.dispatched_at);
    const std::uint64_t handler_ns = elapsed_ns(s.dispatched_at, finished);
    const std::uint64_t waited_ns = std::min(s.timing.waited_ns, handler_ns);
    parts.downstream_ns = std::min(s.timing.downstream_ns, waited_ns);
    parts.wait_ns = waited_ns - parts.downstream_ns;
    parts.app_ns = handler_ns - waited_ns;
    if (owner_.options.server_timing) {
        add_server_timing(s.res, parts, s.timing);
    }
    const std::size_t out_before = s.out.size();
    std::size_t streamed = 0;
    if (st.out == framing::none) {
        s.res.serialize(s.out, owner_.loop.http_date(), field, s.head.method == http::method::head);
    } else {
        if (st.out == framing::chunked && !st.out_head_only && !st.out_failed) {
            s.out.append("0\r\n\r\n");
        }
        streamed = st.out_bytes;
    }
    parts.write_ns = elapsed_ns(finished, std::chrono::steady_clock::now());
    const unsigned status_class = std::min(http::to_int(s.res.status()) / 100, 5u);
    owner_.stats.responses_by_class[status_class].add();
    owner_.route_stats.at(s.route).record(status_class, parts, s.timing);
    if (owner_.log_ring != nullptr) {
        log_access(parts, s.out.size() - out_before + streamed);
    }

    if (st.in) {
        request_bytes_ = head_bytes_; // the body's bytes are gone, piece by piece
    }
    begin_ += request_bytes_;
    if (begin_ == end_) {
        begin_ = end_ = 0;
    }
    s.parser.reset();
    if (!keep) {
        phase_ = phase::closing;
        linger_ = begin_ != end_ || body_unread; // pipelined requests we will not answer, or the body's rest
        return;
    }
    phase_ = phase::head;
    timeout_ = timeout_kind::none; // armed by do_process once the responses are written
}

// The request's line for the access log, put in this loop's ring (dropped and counted when the ring is full).
void server_connection::log_access(const request_time_parts& parts, std::size_t response_bytes) noexcept {
    access_record* r = owner_.log_ring->reserve();
    if (r == nullptr) {
        return;
    }
    const request_state& s = *state_;
    r->unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    r->route = s.route;
    r->status = static_cast<std::uint16_t>(http::to_int(s.res.status()));
    r->version_minor = s.head.version_minor;
    r->calls = s.timing.calls;
    r->response_bytes = response_bytes;
    r->parts = parts;
    r->method_length = static_cast<std::uint8_t>(std::min(s.head.method_token.size(), access_record::max_method_bytes));
    std::memcpy(r->method, s.head.method_token.data(), r->method_length);
    const std::size_t target = std::min(s.head.target.size(), access_record::max_target_bytes);
    r->target_length = static_cast<std::uint16_t>(target);
    r->target_cut = target < s.head.target.size();
    std::memcpy(r->target, s.head.target.data(), target);
    if (peer_ == nullptr) {
        peer_.reset(new (std::nothrow) peer_address());
        sockaddr_storage peer{};
        socklen_t length = sizeof(peer);
        if (peer_ != nullptr &&
            ::getpeername(transport_->native_handle(), reinterpret_cast<sockaddr*>(&peer), &length) == 0) {
            if (peer.ss_family == AF_INET) {
                peer_->family = AF_INET;
                std::memcpy(peer_->bytes, &reinterpret_cast<const sockaddr_in&>(peer).sin_addr, 4);
            } else if (peer.ss_family == AF_INET6) {
                peer_->family = AF_INET6;
                std::memcpy(peer_->bytes, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, 16);
            }
        }
    }
    r->peer_family = peer_ != nullptr ? peer_->family : 0;
    if (peer_ != nullptr) {
        std::memcpy(r->peer_address, peer_->bytes, sizeof(r->peer_address));
    }
    owner_.log_ring->commit();
}

// Waiting for the client again, with every response written: the keep-alive timeout when nothing of the next
// request is here, else the headers timeout for the rest of its head.
void server_connection::arm_read_timeout() {
    if (phase_ != phase::head || timeout_ != timeout_kind::none || !nothing_to_write()) {
        return;
    }
    const auto& limits = owner_.options.limits;
    if (begin_ == end_ && state_->overflow.empty()) {
        timeout_ = timeout_kind::idle;
        deadline_ = owner_.loop.now() + limits.keep_alive_timeout;
    } else {
        timeout_ = timeout_kind::headers;
        deadline_ = owner_.loop.now() + limits.request_headers_timeout;
    }
}

// Answers a request the connection could not accept (malformed, or over a limit), then closes.
void server_connection::fail(http::status code, std::string_view detail) {
    owner_.stats.bad_requests.add();
    answer_and_close(code, detail);
}

// Answers `code` and closes (RFC 9112 §9.6: a message whose framing is in doubt leaves the connection unusable).
// Runs with a state: some bytes of a request are here.
void server_connection::answer_and_close(http::status code, std::string_view detail) {
    request_state& s = *state_;
    owner_.stats.responses_by_class[std::min(http::to_int(code) / 100, 5u)].add();
    s.res.clear();
    if (s.res.arena_ != nullptr) {
        reset_json_arena(*s.res.arena_);
    }
    s.res.problem(code, detail);
    // The head may not have parsed: a request that opens with HEAD gets no body either (RFC 9110 §9.3.2).
    const bool head_only = std::string_view(s.in.get() + begin_, end_ - begin_).starts_with("HEAD ");
    s.res.serialize(s.out, owner_.loop.http_date(), http::connection_field::close, head_only);
    phase_ = phase::closing;
    linger_ = true; // the rest of the request (a body, more requests) may still be on its way
    timeout_ = timeout_kind::none;
    do_write();
}

void server_connection::do_write() {
    if (write_pending_ || closed_) {
        return;
    }
    request_state& s = *state_;
    if (s.out.empty()) {
        if (phase_ == phase::closing) {
            do_linger();
        }
        return;
    }
    std::swap(s.out, s.writing);
    write_pending_ = true;
    owner_.stats.bytes_sent.add(s.writing.size());
    transport_->write(s.writing);
}

void server_connection::on_transport_written(std::error_code error) {
    write_pending_ = false;
    state_->writing.clear(); // a write in flight keeps the state
    if (closed_) {
        return;
    }
    if (error) {
        close();
        return;
    }
    if (!state_->out.empty()) {
        do_write();
        resume_writer();
        return;
    }
    if (phase_ == phase::closing) {
        do_linger();
        return;
    }
    if (resume_writer()) {
        return;
    }
    do_process();
}

void server_connection::do_linger() {
    if (timeout_ == timeout_kind::linger) {
        return;
    }
    // RFC 9112 §9.6: close in stages only when the client may still be sending, so that it reads the
    // response instead of a reset; after a normal "Connection: close" response, close at once (as nginx).
    if (peer_ended_ || !linger_) {
        close();
        return;
    }
    transport_->shutdown_send();
    timeout_ = timeout_kind::linger;
    deadline_ = owner_.loop.now() + linger_time;
    begin_ = end_ = 0;
    state_->overflow.clear();
    reading_paused_ = false;
    transport_->start_reading();
}

// The minimum response rate (Kestrel's MinResponseDataRate, measured as progress): while responses wait to be
// sent, the client owes limits.min_response_bytes_per_second and pays with every byte it acknowledges. It may fall
// behind by the grace period's worth of bytes, and no further; its credit never exceeds that, so however fast it
// read before, a stall is noticed after the grace period. In other words, over any span during which responses
// wait, the client must take at least rate × (span − grace) bytes. Measured from the first tick that sees a write
// waiting; a tick with nothing left to send restores the full credit. Only the tick does this (a system call per
// connection with a write waiting): nothing is added to the write path.
bool server_connection::response_too_slow(net::clock::time_point now) noexcept {
    const auto& limits = owner_.options.limits;
    const auto rate = static_cast<double>(limits.min_response_bytes_per_second);
    const double allowance = rate * static_cast<double>(limits.min_response_rate_grace.count());
    if (!write_pending_) {
        response_credit_bytes_ = allowance;
        writing_at_tick_ = false;
        return false;
    }
    const std::uint64_t acknowledged = transport_->bytes_acknowledged();
    if (writing_at_tick_) {
        const std::chrono::duration<double> owed_for = now - last_tick_;
        response_credit_bytes_ =
            std::min(allowance, response_credit_bytes_ + static_cast<double>(acknowledged - acknowledged_at_tick_) -
                                    rate * owed_for.count());
    }
    acknowledged_at_tick_ = acknowledged;
    last_tick_ = now;
    writing_at_tick_ = true;
    return response_credit_bytes_ < 0;
}

void server_connection::on_tick(net::clock::time_point now) {
    const auto& limits = owner_.options.limits;
    if (limits.min_response_bytes_per_second != 0 && response_too_slow(now)) {
        // The client stopped taking its responses: nothing more can be said to it.
        owner_.stats.response_timeouts.add();
        close();
        return;
    }
    switch (timeout_) {
    case timeout_kind::none:
        return;
    case timeout_kind::headers:
        if (now >= deadline_) {
            owner_.stats.header_timeouts.add();
            if (begin_ != end_) {
                answer_and_close(http::status::request_timeout, "the request head did not arrive in time");
            } else {
                close();
            }
        }
        return;
    case timeout_kind::idle:
        if (now >= deadline_) {
            owner_.stats.idle_timeouts.add();
            close();
        }
        return;
    case timeout_kind::body_rate: {
        if (reading_paused_) {
            // Not reading (its responses are not being taken): the rate is measured afresh once reading resumes.
            body_started_ = now;
            body_received_ = 0;
            return;
        }
        const auto elapsed = now - body_started_;
        if (elapsed > limits.min_body_rate_grace) {
            const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
            if (body_received_ < limits.min_body_bytes_per_second * static_cast<std::uint64_t>(seconds)) {
                owner_.stats.body_timeouts.add();
                if (phase_ == phase::handler) {
                    // Streamed to a running handler: its read fails, and the response says 408 (finish_request).
                    fail_body(errc::timeout);
                    resume_reader();
                } else {
                    answer_and_close(http::status::request_timeout, "the request body is arriving too slowly");
                }
            }
        }
        return;
    }
    case timeout_kind::linger:
        if (now >= deadline_) {
            close();
        }
        return;
    }
}

void server_connection::drain() {
    if (idle()) {
        close();
    }
    // Otherwise finish_request sees owner_.draining and answers with "Connection: close".
}

void server_connection::abort() {
    close();
}

void server_connection::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    timeout_ = timeout_kind::none;
    if (phase_ == phase::handler) {
        // Abandon a suspended handler: destroying its frame cancels what it awaits.
        state_->aborted.cancel();
        state_->stream.reader = {};
        state_->stream.writer = {};
        handler_task_.reset();
    }
    if (handler_counted_) {
        handler_counted_ = false;
        --owner_.handlers_running;
    }
    transport_->close();
}

// --- Bodies streamed to and from a handler ---------------------------------------------------------------------

// Drops the piece the handler held (and, chunked, the framing decoded so far): what is left moves to right after
// the head, and what waited in the overflow follows it as far as the buffer allows (it never grows).
void server_connection::drop_piece() noexcept {
    request_state& s = *state_;
    char* const base = s.in.get();
    char* const body = base + begin_ + head_bytes_;
    const bool chunked = s.head.framing == http::body_framing::chunked;
    char* const from = chunked ? base + begin_ + chunk_pos_ : body + s.stream.piece;
    const std::size_t rest = static_cast<std::size_t>(base + end_ - from);
    if (from != body) {
        std::memmove(body, from, rest);
        end_ = begin_ + head_bytes_ + rest;
    }
    chunk_pos_ = head_bytes_;
    s.stream.piece = 0;
    if (!s.overflow.empty() && end_ < s.capacity) {
        const std::size_t n = std::min(s.overflow.size(), s.capacity - end_);
        std::memcpy(base + end_, s.overflow.data(), n);
        end_ += n;
        s.overflow.erase(0, n);
    }
    stream_reading();
}

// Back-pressure on a streamed body: read while the buffer has room, stop when it is full (the handler has not
// taken what is there).
void server_connection::stream_reading() noexcept {
    const request_state& s = *state_;
    if (!s.stream.in || s.stream.in_complete || s.stream.in_error != errc{} || closed_) {
        return;
    }
    const bool room = s.overflow.empty() && end_ < s.capacity;
    if (room && reading_paused_) {
        reading_paused_ = false;
        transport_->start_reading();
    } else if (!room && !reading_paused_) {
        reading_paused_ = true;
        transport_->stop_reading();
    }
}

void server_connection::fail_body(errc error) noexcept {
    request_state& s = *state_;
    s.stream.in_error = error;
    if (timeout_ == timeout_kind::body_rate) {
        timeout_ = timeout_kind::none;
    }
    if (!reading_paused_ && !closed_) {
        reading_paused_ = true; // the rest of the body is of no use; the connection closes after the response
        transport_->stop_reading();
    }
}

// Whether the next read_body() has its answer: a piece, the end, or an error. Drops the previous piece first.
bool server_connection::body_piece_ready() noexcept {
    request_state& s = *state_;
    auto& st = s.stream;
    if (!st.in) {
        return true; // the whole body, read before the handler ran
    }
    drop_piece();
    if (st.in_error != errc{} || st.in_complete) {
        return true;
    }
    if (!continue_sent_ && s.head.expect_continue && s.head.version_minor == 1) {
        // RFC 9110 §10.1.1: the handler wants the body; a client that waits for it may send it now.
        continue_sent_ = true;
        s.out.append(continue_response);
        do_write();
    }
    char* const base = s.in.get() + begin_;
    if (s.head.framing == http::body_framing::content_length) {
        const std::size_t have = end_ - begin_ - head_bytes_;
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(have, st.in_left));
        if (n == 0) {
            return false;
        }
        st.piece = n;
        st.in_left -= n;
    } else {
        const auto r = s.chunked.decode(base + chunk_pos_, end_ - begin_ - chunk_pos_, base + head_bytes_);
        chunk_pos_ += r.consumed;
        if (r.status == http::chunk_status::error) {
            fail_body(r.error == http::status::content_too_large ? errc::body_too_large : errc::bad_request);
            return true;
        }
        st.piece = r.produced;
        if (r.status != http::chunk_status::done && r.produced == 0) {
            drop_piece(); // only framing so far: make room for more
            return false;
        }
        if (r.status != http::chunk_status::done) {
            return true;
        }
        st.in_left = 0;
    }
    if (st.in_left == 0) {
        st.in_complete = true;
        if (timeout_ == timeout_kind::body_rate) {
            timeout_ = timeout_kind::none;
        }
    }
    return true;
}

void server_connection::wait_body_piece(std::coroutine_handle<> reader) noexcept {
    request_state& s = *state_;
    s.stream.reader = reader;
    s.stream.reader_since_ns = time_attribution::now_ns();
    s.timing.begin_wait(wait_kind::client, s.stream.reader_since_ns);
}

// Resumes a handler awaiting a piece once it has its answer. Last in its caller: the handler may finish and the
// connection close from here.
void server_connection::resume_reader() noexcept {
    request_state& s = *state_;
    if (!s.stream.reader || !body_piece_ready()) {
        return;
    }
    const auto reader = std::exchange(s.stream.reader, {});
    s.timing.end_wait(wait_kind::client, s.stream.reader_since_ns, time_attribution::now_ns());
    reader.resume();
}

result<std::string_view> server_connection::take_body_piece() noexcept {
    request_state& s = *state_;
    if (!s.stream.in) {
        if (s.req.body_read_) {
            return std::string_view{};
        }
        s.req.body_read_ = true;
        return s.req.body_;
    }
    if (s.stream.in_error != errc{}) {
        return s.stream.in_error;
    }
    return std::string_view(s.in.get() + begin_ + head_bytes_, s.stream.piece);
}

// The first piece of a streamed response: its status and fields go out, framed by what is known of its length.
void server_connection::start_response_stream() {
    request_state& s = *state_;
    auto& st = s.stream;
    using framing = request_state::stream_state::framing;
    st.out = s.res.has_length_ ? framing::length : s.head.version_minor >= 1 ? framing::chunked : framing::until_close;
    st.out_left = s.res.length_;
    st.out_head_only = s.head.method == http::method::head || !http::allows_body(s.res.status());
    st.out_keep = s.head.keep_alive && !owner_.draining && !refuse_ && st.out != framing::until_close;
    const auto field =
        !st.out_keep ? http::connection_field::close
                     : (s.head.version_minor == 0 ? http::connection_field::keep_alive : http::connection_field::none);
    const auto as = st.out == framing::length    ? http::response::streamed::length
                    : st.out == framing::chunked ? http::response::streamed::chunked
                                                 : http::response::streamed::until_close;
    const std::size_t before = s.out.size();
    s.res.serialize_head(s.out, owner_.loop.http_date(), field, as, s.res.length_);
    st.out_bytes += s.out.size() - before;
}

std::error_code server_connection::write_body_piece(std::string_view piece) {
    if (closed_ || peer_ended_) {
        return errc::closed;
    }
    request_state& s = *state_;
    auto& st = s.stream;
    using framing = request_state::stream_state::framing;
    if (st.out == framing::none) {
        start_response_stream();
    }
    if (st.out_head_only || piece.empty()) {
        do_write();
        return {};
    }
    const std::size_t before = s.out.size();
    if (st.out == framing::chunked) {
        char size[24];
        const auto end = fmt::format_to_n(size, sizeof(size), "{:x}\r\n", piece.size());
        s.out.append(size, end.size);
        s.out.append(piece);
        s.out.append("\r\n");
    } else {
        if (st.out == framing::length) {
            if (piece.size() > st.out_left) {
                return errc::bad_request;
            }
            st.out_left -= piece.size();
        }
        s.out.append(piece);
    }
    st.out_bytes += s.out.size() - before;
    do_write();
    return {};
}

bool server_connection::write_room() const noexcept {
    return closed_ || state_->out.size() < out_high_water_bytes;
}

void server_connection::wait_write_room(std::coroutine_handle<> writer) noexcept {
    request_state& s = *state_;
    s.stream.writer = writer;
    s.stream.writer_since_ns = time_attribution::now_ns();
    s.timing.begin_wait(wait_kind::client, s.stream.writer_since_ns);
}

// Resumes a handler awaiting room to write once the client has taken enough. True when it did (the handler may
// have finished and the connection closed since).
bool server_connection::resume_writer() noexcept {
    request_state& s = *state_;
    if (!s.stream.writer || s.out.size() >= out_high_water_bytes) {
        return false;
    }
    const auto writer = std::exchange(s.stream.writer, {});
    s.timing.end_wait(wait_kind::client, s.stream.writer_since_ns, time_attribution::now_ns());
    writer.resume();
    return true;
}

// The awaitables, on the connection of the request or response they belong to.
bool body_read::await_ready() noexcept {
    return req_.connection_->body_piece_ready();
}
void body_read::await_suspend(std::coroutine_handle<> waiting) noexcept {
    req_.connection_->wait_body_piece(waiting);
}
result<std::string_view> body_read::await_resume() noexcept {
    return req_.connection_->take_body_piece();
}

bool body_write::await_ready() noexcept {
    error_ = res_.connection_->write_body_piece(piece_);
    return error_ || res_.connection_->write_room();
}
void body_write::await_suspend(std::coroutine_handle<> waiting) noexcept {
    res_.connection_->wait_write_room(waiting);
}
result<void> body_write::await_resume() noexcept {
    if (error_) {
        return error_;
    }
    return {};
}

// The transport reports from a fresh handler with nothing in flight, so nothing refers to this any more.
void server_connection::on_transport_closed() {
    delete this;
}

} // namespace hotpath
