// The connection state machine: read, parse, route, run the handler, write, and the next request.
#include <hotpath/server/server_connection.hpp>

#include <hotpath/server/app.hpp>
#include <hotpath/server/dispatch.hpp>
#include <hotpath/server/h2_connection.hpp>
#include <hotpath/server/request_observer.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/server.hpp>
#include <hotpath/server/worker.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>

namespace hotpath {

namespace {

// Past this many bytes received but not yet handled, stop reading until they are.
constexpr std::size_t in_high_water_bytes = 256 * 1024;
// A streaming route's read buffer: its pieces are at most this much less the head.
constexpr std::size_t stream_buffer_bytes = 64 * 1024;
// After an error response, read and discard for this long so the peer sees the response, not a reset.
constexpr std::chrono::seconds linger_time{2};

} // namespace

server_connection::server_connection(worker& owner, int fd, bool refuse)
    : owner_(owner), transport_(owner.transports->make(owner.loop, fd, *this)), refuse_(refuse),
      may_be_h2_(owner.options.http2), timeouts_(owner.options.limits, owner.loop.now()) {
    owner_.link(*this);
    owner_.stats.connections_accepted.add();
    if (owner_.tls != nullptr) {
        handshaking_ = true;
        ++owner_.handshakes;
        timeouts_.wait_handshake(owner_.options.limits, owner_.loop.now());
    }
}

server_connection::~server_connection() {
    handshake_over();
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
    state_->handler_task.reset(); // a finished handler's frame, returned to the frame allocator
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
    if (phase_ == phase::body) {
        s.parser.reset();
        const auto again = s.parser.parse({s.in.get(), head_bytes_}, s.head);
        return again.status == http::parse_status::complete;
    }
    return true;
}

void server_connection::on_transport_data(std::string_view bytes) {
    owner_.stats.bytes_received.add(bytes.size());
    if (h2_ != nullptr) {
        h2_->on_data(bytes);
        return;
    }
    if (closed_ || phase_ == phase::closing) {
        return; // lingering close: discard
    }
    if (state_ == nullptr) {
        state_ = owner_.states.take();
    }
    request_state& s = *state_;
    s.received_at = owner_.loop.turn_started();
    timeouts_.received(owner_.options.limits, owner_.loop.now(), bytes.size());
    if (phase_ == phase::handler && s.stream.in && !s.body.complete()) {
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
        phase_ != phase::body) {
        reading_paused_ = true;
        transport_->stop_reading();
    }
    if (phase_ != phase::handler) {
        do_process();
    }
}

void server_connection::handshake_over() noexcept {
    if (handshaking_) {
        handshaking_ = false;
        --owner_.handshakes;
    }
}

void server_connection::on_transport_ready() {
    if (!handshaking_) {
        return;
    }
    handshake_over();
    owner_.stats.tls_handshakes.add();
    const auto* tls = dynamic_cast<const net::tls_transport*>(transport_.get());
    if (tls != nullptr && tls->resumed()) {
        owner_.stats.tls_resumed.add();
    }
    if (!closed_ && timeouts_.what() == connection_timeouts::waiting::handshake) {
        timeouts_.wait_headers(owner_.options.limits, owner_.loop.now());
    }
    if (!closed_ && may_be_h2_ && tls != nullptr && tls->alpn() == "h2") {
        start_h2({});
    }
}

// The client speaks HTTP/2: the connection hands every transport event to an h2_connection from now on, starting
// with `already` (what arrived of it, in the state's buffer, which goes back to the pool after).
bool server_connection::start_h2(std::string_view already) {
    may_be_h2_ = false;
    h2_ = std::make_unique<h2_connection>(owner_, *this, *transport_);
    if (!h2_->usable()) {
        close();
        return false;
    }
    timeouts_.wait_idle(owner_.options.limits, owner_.loop.now());
    if (reading_paused_) {
        reading_paused_ = false;
        transport_->start_reading();
    }
    h2_->on_data(already); // its SETTINGS are written even with nothing to read yet
    return true;
}

void server_connection::on_transport_end(std::error_code error) {
    if (closed_) {
        return;
    }
    if (h2_ != nullptr) {
        h2_->on_end();
        return;
    }
    if (handshaking_) {
        // The handshake failed, or the peer left before its end: nothing to answer.
        handshake_over();
        if (error && error != make_error_code(errc::closed)) {
            owner_.stats.tls_failures.add();
        }
        close();
        return;
    }
    peer_ended_ = true;
    if (phase_ == phase::handler) {
        state_->aborted.cancel(); // no one is left to read the answer: the handler's calls may stop
        if (state_->stream.in && !state_->body.complete()) {
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
        if (phase_ == phase::body && !do_body()) {
            break;
        }
        if (phase_ != phase::ready) {
            break;
        }
        do_dispatch();
    }
    if (h2_ != nullptr && !closed_) {
        release_state(); // HTTP/2 took what was read: it keeps what it needs in its streams
        return;
    }
    if (closed_) {
        return;
    }
    do_write();
    const bool wants_bytes = phase_ == phase::head || phase_ == phase::body;
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
    if (may_be_h2_) {
        // HTTP/2 with prior knowledge (RFC 9113 §3.3) opens with its preface, which no HTTP/1.1 request does.
        const std::string_view got(s.in.get() + begin_, end_ - begin_);
        const std::string_view preface = h2_connection::preface;
        if (got.substr(0, preface.size()) == preface.substr(0, got.size())) {
            if (got.size() >= preface.size()) {
                start_h2(got);
            }
            return false; // HTTP/2, or the preface so far
        }
        may_be_h2_ = false;
    }
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
        s.body.start(http::body_framing::none, 0);
        request_bytes_ = head_bytes_;
        phase_ = phase::ready;
        return true;
    case http::body_framing::content_length:
        if (s.head.content_length > limits.max_body_bytes) {
            fail(http::status::content_too_large, "the request body is over the size limit");
            return false;
        }
        break;
    case http::body_framing::chunked:
        break;
    case http::body_framing::until_close: // responses only: the request parser never yields it
        fail(http::status::bad_request, "the request body has no length");
        return false;
    }
    // A buffered body: read to its end before the handler runs (do_body).
    s.body.start(s.head.framing, s.head.content_length);
    phase_ = phase::body;
    timeouts_.wait_body(owner_.loop.now(), end_ - begin_ - head_bytes_);
    return true;
}

// The head of a request for a streaming route is here: its handler runs next, and the body goes to it in pieces.
bool server_connection::start_streaming_body(const handler& h) {
    request_state& s = *state_;
    s.stream.in = true;
    if (s.head.framing == http::body_framing::content_length && h.max_body_bytes != 0 &&
        s.head.content_length > h.max_body_bytes) {
        fail(http::status::content_too_large, "the request body is over the size limit");
        return false;
    }
    s.body.start(s.head.framing, s.head.content_length, h.max_body_bytes);
    // Room for the pieces to come, made now: once the handler runs, the buffer never moves (the head's views).
    phase_ = phase::body; // ensure_space keeps the head's views
    if (!ensure_space(stream_buffer_bytes)) {
        fail(http::status::internal_server_error, "the request head could not be kept");
        return false;
    }
    timeouts_.wait_body(owner_.loop.now(), end_ - begin_ - head_bytes_);
    phase_ = phase::ready;
    return true;
}

// A buffered body: what arrived is read into place after the body so far; the handler runs once it is whole.
bool server_connection::do_body() {
    request_state& s = *state_;
    char* const at = s.in.get() + begin_ + head_bytes_;
    if (const http::status error = s.body.read(at, end_ - begin_ - head_bytes_); error != http::status::none) {
        fail(error, error == http::status::content_too_large ? "the request body is over the size limit"
                                                             : "the chunked body is malformed");
        return false;
    }
    if (s.body.complete()) {
        request_bytes_ = head_bytes_ + s.body.used();
        phase_ = phase::ready;
        return true;
    }
    if (s.head.framing == http::body_framing::content_length) {
        // Room for the whole body at once, so it is read straight into place.
        if (!ensure_space(s.head.content_length - s.body.held())) {
            fail(http::status::internal_server_error, "the request head could not be kept");
            return false;
        }
    } else {
        // All input was read: the framing bytes behind the decoded body are dead, so the next read lands right
        // after the body. The buffer holds the decoded body plus one read, however much framing (tiny chunks, long
        // extensions) the body came with.
        end_ = begin_ + head_bytes_ + s.body.forget_framing();
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
    s.begin(owner_, *this, {s.in.get() + begin_ + head_bytes_, s.stream.in ? 0 : s.body.held()});
    // A streamed body is still arriving: its rate is watched while the handler reads it.
    if (!s.stream.in || s.body.complete()) {
        timeouts_.wait_nothing();
    }
    if (!dispatch::route(owner_, s, refuse_)) {
        finish_request();
        return;
    }
    phase_ = phase::handler;
    if (!dispatch::run(owner_, s, &server_connection::on_handler_done, this)) {
        return; // suspended: on_handler_done resumes the connection
    }
    dispatch::finished(owner_, s);
    finish_request();
}

void server_connection::on_handler_done(void* self) noexcept {
    auto* c = static_cast<server_connection*>(self);
    request_state& s = *c->state_;
    s.handler_error = s.handler_task.error();
    dispatch::finished(c->owner_, s);
    c->finish_request();
    if (!c->closed_) {
        c->do_process();
    }
}

void server_connection::finish_request() {
    request_state& s = *state_;
    auto& st = s.stream;
    using framing = request_state::stream_state::framing;
    // A streamed body: the piece the handler held goes, so that what follows the body starts right after the head;
    // a body not read to its end is still on the wire, and the connection cannot go on.
    const bool body_unread = st.in && !s.body.complete();
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
    const auto finished = std::chrono::steady_clock::now();
    request_time_parts parts = request_observer::handled(owner_, s, finished);
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
    parts.write_ns = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - finished).count());
    request_observer::answered(owner_, s, parts, s.out.size() - out_before + streamed, peer_, *transport_);

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
    timeouts_.wait_nothing(); // armed by do_process once the responses are written
}

// Waiting for the client again, with every response written: the keep-alive timeout when nothing of the next
// request is here, else the headers timeout for the rest of its head.
void server_connection::arm_read_timeout() {
    if (phase_ != phase::head || timeouts_.what() != connection_timeouts::waiting::none || !nothing_to_write()) {
        return;
    }
    if (begin_ == end_ && state_->overflow.empty()) {
        timeouts_.wait_idle(owner_.options.limits, owner_.loop.now());
    } else {
        timeouts_.wait_headers(owner_.options.limits, owner_.loop.now());
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
    timeouts_.wait_nothing();
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
    if (h2_ != nullptr) {
        h2_->on_written(error);
        return;
    }
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
    if (timeouts_.what() == connection_timeouts::waiting::linger) {
        return;
    }
    // RFC 9112 §9.6: close in stages only when the client may still be sending, so that it reads the
    // response instead of a reset; after a normal "Connection: close" response, close at once (as nginx).
    if (peer_ended_ || !linger_) {
        close();
        return;
    }
    transport_->shutdown_send();
    timeouts_.wait_linger(owner_.loop.now(), linger_time);
    begin_ = end_ = 0;
    state_->overflow.clear();
    reading_paused_ = false;
    transport_->start_reading();
}

void server_connection::on_tick(net::clock::time_point now) {
    if (h2_ != nullptr) {
        h2_->on_tick(now);
        return;
    }
    const auto& limits = owner_.options.limits;
    // The bytes the peer took, asked of the kernel only when the response rate is watched and a write waits.
    const auto acknowledged = limits.min_response_bytes_per_second != 0 && write_pending_
                                  ? std::optional<std::uint64_t>(transport_->bytes_acknowledged())
                                  : std::nullopt;
    switch (timeouts_.check(limits, now, acknowledged, reading_paused_)) {
    case connection_timeouts::expired::nothing:
        return;
    case connection_timeouts::expired::response_rate:
        // The client stopped taking its responses: nothing more can be said to it.
        owner_.stats.response_timeouts.add();
        close();
        return;
    case connection_timeouts::expired::handshake:
        owner_.stats.tls_timeouts.add();
        close();
        return;
    case connection_timeouts::expired::headers:
        owner_.stats.header_timeouts.add();
        if (begin_ != end_) {
            answer_and_close(http::status::request_timeout, "the request head did not arrive in time");
        } else {
            close();
        }
        return;
    case connection_timeouts::expired::idle:
        owner_.stats.idle_timeouts.add();
        close();
        return;
    case connection_timeouts::expired::body_rate:
        owner_.stats.body_timeouts.add();
        if (phase_ == phase::handler) {
            // Streamed to a running handler: its read fails, and the response says 408 (finish_request).
            fail_body(errc::timeout);
            resume_reader();
        } else {
            answer_and_close(http::status::request_timeout, "the request body is arriving too slowly");
        }
        return;
    case connection_timeouts::expired::linger:
        close();
        return;
    }
}

void server_connection::drain() {
    if (h2_ != nullptr) {
        h2_->drain();
        return;
    }
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
    timeouts_.wait_nothing();
    if (phase_ == phase::handler) {
        // Abandon a suspended handler: destroying its frame cancels what it awaits.
        dispatch::abandon(owner_, *state_);
    }
    if (h2_ != nullptr) {
        h2_->abandon_all();
    }
    transport_->close();
}

// The transport reports from a fresh handler with nothing in flight, so nothing refers to this any more.
void server_connection::on_transport_closed() {
    delete this;
}

} // namespace hotpath
