// HTTP/2 streams served through the routes: fields copied into a pooled request state as they are decoded, the
// handler run once the request is whole, its response handed to nghttp2, frames written as the transport allows.
#include <hotpath/server/h2_connection.hpp>

#include <hotpath/http/h2_fields.hpp>
#include <hotpath/net/transport.hpp>
#include <hotpath/server/app.hpp>
#include <hotpath/server/dispatch.hpp>
#include <hotpath/server/exchange.hpp>
#include <hotpath/server/request_observer.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/server_connection.hpp>
#include <hotpath/server/worker.hpp>

#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

namespace hotpath {

namespace {

// Frames produced ahead of the transport: past this, the rest stays queued in nghttp2 until the write is done.
constexpr std::size_t out_high_water_bytes = 256 * 1024;

// The header block of the response being handed to nghttp2, which copies it: one per loop thread, its buffers reused,
// rather than one per connection.
thread_local http::h2_response_fields response_fields;

std::uintptr_t address(const char* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p);
}

} // namespace

// One stream's request and response. Kept by its connection and reused; holds a request state from the worker's pool
// from its first field until its response is handed to nghttp2.
struct h2_connection::stream final : exchange {
    h2_connection* connection = nullptr;
    std::int32_t id = 0;
    request_state* state = nullptr;
    std::size_t used = 0;                    // bytes of state->in taken: the head's names and values, then the body
    std::size_t body_at = 0;                 // where the body starts in state->in
    http::status error = http::status::none; // refused while it was read: answered so once it is whole
    bool head_done = false;
    bool ended = false;   // the client's END_STREAM: the request is whole
    bool running = false; // its handler runs
    bool closed = false;  // nghttp2 closed the stream (answered, or reset)
    bool free = true;
    std::string streamed; // response::write's pieces: sent with the response once the handler returns
    std::string body;     // the response's body, kept (and its capacity reused) until nghttp2 has sent it
    http::h2_body sending;
    stream* next_free = nullptr;
    stream* next_ready = nullptr;
    stream* next_closed = nullptr;

    // The body is whole before the handler runs: one piece, then the end.
    bool body_piece_ready() noexcept override { return true; }
    void wait_body_piece(std::coroutine_handle<>) noexcept override {}
    result<std::string_view> take_body_piece() noexcept override {
        request_state& s = *state;
        if (s.req.body_read_) {
            return std::string_view{};
        }
        s.req.body_read_ = true;
        return s.req.body_;
    }
    std::error_code write_body_piece(std::string_view piece) override {
        if (closed) {
            return errc::closed;
        }
        request_state& s = *state;
        using framing = request_state::stream_state::framing;
        if (s.stream.out == framing::none) {
            s.stream.out = s.res.has_length_ ? framing::length : framing::until_close;
            s.stream.out_left = s.res.length_;
        }
        if (s.stream.out == framing::length) {
            if (piece.size() > s.stream.out_left) {
                return errc::bad_request;
            }
            s.stream.out_left -= piece.size();
        }
        streamed.append(piece);
        return {};
    }
    bool write_room() const noexcept override { return true; }
    void wait_write_room(std::coroutine_handle<>) noexcept override {}

    // Copies `bytes` to the end of what the stream holds; the buffer grows (its views moved with it) as needed.
    std::string_view keep(std::string_view bytes) {
        request_state& s = *state;
        if (s.capacity - used < bytes.size()) {
            grow(used + bytes.size());
        }
        char* to = s.in.get() + used;
        std::memcpy(to, bytes.data(), bytes.size());
        used += bytes.size();
        return {to, bytes.size()};
    }

    void grow(std::size_t needed) {
        request_state& s = *state;
        std::size_t capacity = s.capacity * 2;
        while (capacity < needed) {
            capacity *= 2;
        }
        std::unique_ptr<char[]> bigger(new char[capacity]);
        std::memcpy(bigger.get(), s.in.get(), used);
        const std::uintptr_t from = address(s.in.get());
        const std::uintptr_t to_end = from + used;
        char* const base = bigger.get();
        auto move = [&](std::string_view& v) {
            if (address(v.data()) >= from && address(v.data()) < to_end) {
                v = {base + (address(v.data()) - from), v.size()};
            }
        };
        http::request_head& h = s.head;
        move(h.method_token);
        move(h.target);
        move(h.path);
        move(h.query);
        move(h.host);
        for (std::size_t i = 0; i < h.field_count; ++i) {
            move(h.fields[i].name);
            move(h.fields[i].value);
        }
        s.in = std::move(bigger);
        s.capacity = capacity;
    }
};

h2_connection::h2_connection(worker& w, server_connection& c, net::transport& t)
    : owner_(w), connection_(c), transport_(t),
      session_(http::h2_session::make(http::h2_session::role::server, *this)) {
    owner_.stats.h2_connections.add();
}

h2_connection::~h2_connection() {
    session_.reset(); // no more events
    for (auto& st : streams_) {
        if (st->state != nullptr) {
            st->state->handler_task.reset();
            owner_.states.give(std::exchange(st->state, nullptr));
        }
    }
}

h2_connection::stream* h2_connection::find(std::int32_t id) const noexcept {
    return static_cast<stream*>(session_->stream_user(id));
}

// A stream the client opened: a reused one, with a request state for its head.
h2_connection::stream* h2_connection::open(std::int32_t id) {
    stream* st = free_;
    if (st != nullptr) {
        free_ = st->next_free;
    } else {
        streams_.push_back(std::make_unique<stream>());
        st = streams_.back().get();
        st->connection = this;
    }
    st->id = id;
    st->state = owner_.states.take();
    st->used = 0;
    st->body_at = 0;
    st->error = http::status::none;
    st->head_done = st->ended = st->running = st->closed = st->free = false;
    st->streamed.clear();
    st->next_ready = st->next_closed = nullptr;
    request_state& s = *st->state;
    s.received_at = owner_.loop.turn_started();
    http::request_head& h = s.head;
    h.method = http::method::other;
    h.method_token = h.target = h.path = h.query = h.host = {};
    h.version_major = 2;
    h.version_minor = 0;
    h.field_count = 0;
    h.framing = http::body_framing::none;
    h.content_length = 0;
    h.keep_alive = true;
    h.expect_continue = false;
    s.stream.reset();
    session_->set_stream_user(id, st);
    ++open_;
    return st;
}

void h2_connection::on_h2_field(std::int32_t id, std::string_view name, std::string_view value) {
    // Called from nghttp2's C frames: nothing may be thrown through them. Out of memory ends the connection.
    try {
        take_field(id, name, value);
    } catch (...) {
        ending_ = true;
    }
}

void h2_connection::take_field(std::int32_t id, std::string_view name, std::string_view value) {
    stream* st = find(id);
    if (st == nullptr) {
        st = open(id);
    }
    if (st->head_done || st->error != http::status::none) {
        return; // trailers are not kept; a refused request's fields no longer matter
    }
    const auto& limits = owner_.options.limits;
    http::request_head& h = st->state->head;
    if (st->used + name.size() + value.size() > limits.max_header_bytes) {
        st->error = http::status::request_header_fields_too_large;
        return;
    }
    if (name.starts_with(':')) {
        if (name == ":method") {
            h.method_token = st->keep(value);
            h.method = http::to_method(value);
        } else if (name == ":path") {
            h.target = st->keep(value);
        } else if (name == ":authority") {
            h.host = st->keep(value);
        }
        return; // :scheme, :protocol
    }
    if (h.field_count >= limits.max_header_count) {
        st->error = http::status::request_header_fields_too_large;
        return;
    }
    http::field& f = h.fields[h.field_count++];
    f.name = st->keep(name);
    f.value = st->keep(value);
    if (name == "host" && h.host.empty()) {
        h.host = f.value;
    } else if (name == "content-length") {
        // nghttp2 has checked it is a number, and will check the DATA against it.
        std::uint64_t length = 0;
        std::from_chars(value.data(), value.data() + value.size(), length);
        h.content_length = length;
        h.framing = http::body_framing::content_length;
        if (length > limits.max_body_bytes) {
            st->error = http::status::content_too_large;
        }
    }
}

void h2_connection::on_h2_headers(std::int32_t id) {
    stream* st = find(id);
    if (st == nullptr || st->head_done) {
        return;
    }
    st->head_done = true;
    http::request_head& h = st->state->head;
    const std::size_t question = h.target.find('?');
    h.path = h.target.substr(0, question);
    h.query = question == std::string_view::npos ? std::string_view{} : h.target.substr(question + 1);
    if (h.method == http::method::connect) {
        h.path = h.target; // CONNECT has no :path: answered 501 below
    }
    st->body_at = st->used;
}

void h2_connection::on_h2_data(std::int32_t id, std::string_view bytes) {
    stream* st = find(id);
    if (st == nullptr || st->error != http::status::none) {
        return;
    }
    if (st->used - st->body_at + bytes.size() > owner_.options.limits.max_body_bytes) {
        st->error = http::status::content_too_large;
        return;
    }
    try {
        st->keep(bytes);
    } catch (...) {
        st->error = http::status::content_too_large; // no memory for it
    }
}

void h2_connection::on_h2_end(std::int32_t id) {
    stream* st = find(id);
    if (st == nullptr || st->ended) {
        return;
    }
    st->ended = true;
    if (ready_tail_ != nullptr) {
        ready_tail_->next_ready = st;
    } else {
        ready_ = st;
    }
    ready_tail_ = st;
}

void h2_connection::on_h2_closed(std::int32_t id, http::h2_error) {
    stream* st = find(id);
    if (st == nullptr || st->closed) {
        return;
    }
    st->closed = true;
    if (st->state != nullptr) { // reset (with any code, NO_ERROR too) before its response was handed over
        owner_.stats.h2_resets.add();
    }
    st->next_closed = closed_;
    closed_ = st;
}

void h2_connection::on_h2_goaway(std::int32_t, http::h2_error) {
    // The client is leaving: what it opened is answered, then its end (or the idle timeout) closes the connection.
}

// What the session told during its last call: requests to dispatch, then streams to let go.
void h2_connection::after_session() {
    while (ready_ != nullptr) {
        stream* st = std::exchange(ready_, ready_->next_ready);
        st->next_ready = nullptr;
        if (ready_ == nullptr) {
            ready_tail_ = nullptr;
        }
        if (!st->closed && !gone_) {
            serve(*st);
        }
    }
    while (closed_ != nullptr) {
        stream* st = std::exchange(closed_, closed_->next_closed);
        release(*st);
    }
    if (gone_) {
        return;
    }
    connection_timeouts& t = connection_.timeouts_;
    if (open_ == 0) {
        if (t.what() != connection_timeouts::waiting::idle) {
            t.wait_idle(owner_.options.limits, owner_.loop.now());
        }
    } else {
        t.wait_nothing();
    }
}

void h2_connection::serve(stream& st) {
    request_state& s = *st.state;
    owner_.stats.requests.add();
    owner_.stats.h2_streams.add();
    s.begin(owner_, st, {s.in.get() + st.body_at, st.used - st.body_at});
    if (st.error == http::status::none && s.head.method == http::method::connect) {
        st.error = http::status::not_implemented;
    }
    if (st.error != http::status::none) {
        owner_.stats.bad_requests.add();
        s.route = owner_.route_stats.index_of(route_table_metrics::no_route);
        s.res.problem(st.error, st.error == http::status::content_too_large ? "the request body is over the size limit"
                                : st.error == http::status::not_implemented
                                    ? "this server does not open tunnels (CONNECT)"
                                    : "the request's header fields are over a limit");
        finish(st);
        return;
    }
    if (!dispatch::route(owner_, s, connection_.refuse_)) {
        finish(st);
        if (connection_.refuse_ && !draining_) {
            // Over the connection limit (or stopping past the drain's time): answered, and the connection ends, as
            // over HTTP/1.1.
            draining_ = true;
            session_->shut_down();
        }
        return;
    }
    if (const handler& h = owner_.routes.handler_at(s.route);
        h.streams_body && h.max_body_bytes != 0 && st.used - st.body_at > h.max_body_bytes) {
        // A streaming route's own limit (app.streaming), which the body, whole here, is over.
        owner_.stats.bad_requests.add();
        s.res.problem(http::status::content_too_large, "the request body is over the size limit");
        finish(st);
        return;
    }
    st.running = true;
    if (!dispatch::run(owner_, s, &h2_connection::on_handler_done, &st)) {
        return; // suspended: on_handler_done answers
    }
    st.running = false;
    dispatch::finished(owner_, s);
    finish(st);
}

void h2_connection::on_handler_done(void* self) noexcept {
    auto& st = *static_cast<stream*>(self);
    h2_connection& c = *st.connection;
    request_state& s = *st.state;
    s.handler_error = s.handler_task.error();
    st.running = false;
    dispatch::finished(c.owner_, s);
    c.finish(st);
    c.flush();
}

// The response goes to nghttp2 (its body copied), and the request state back to the pool.
void h2_connection::finish(stream& st) {
    request_state& s = *st.state;
    using framing = request_state::stream_state::framing;
    const auto finished = std::chrono::steady_clock::now();
    request_time_parts parts = request_observer::handled(owner_, s, finished);
    const bool streamed = s.stream.out != framing::none;
    if (streamed) {
        st.body.swap(st.streamed);
    } else {
        st.body.assign(s.res.body()); // into the stream's own buffer: no allocation once it has grown
    }
    const std::string_view body = st.body;
    std::size_t bytes = 0;
    if (streamed && (s.stream.out_failed || (s.stream.out == framing::length && s.stream.out_left != 0))) {
        // The handler failed, or wrote less than the length it gave: the client sees the stream reset.
        session_->reset(st.id, http::h2_error::internal_error);
    } else {
        http::h2_response_fields& fields = response_fields;
        fields.build(s.res, owner_.loop.http_date(), body.size());
        const bool head_only = s.head.method == http::method::head || !http::allows_body(s.res.status());
        st.sending = {body, 0};
        session_->respond(st.id, fields.fields(), head_only || body.empty() ? nullptr : &st.sending);
        for (const http::h2_field& f : fields.fields()) {
            bytes += f.name.size() + f.value.size();
        }
        bytes += head_only ? 0 : body.size();
    }
    parts.write_ns = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - finished).count());
    request_observer::answered(owner_, s, parts, bytes, connection_.peer_, transport_);
    s.handler_task.reset();
    owner_.states.give(std::exchange(st.state, nullptr));
}

// A closed stream is let go: its handler abandoned if it still runs (the client reset it), its state returned.
void h2_connection::release(stream& st) noexcept {
    if (st.free) {
        return;
    }
    if (st.state != nullptr) {
        if (st.running) {
            st.running = false;
            dispatch::abandon(owner_, *st.state);
        }
        st.state->handler_task.reset();
        owner_.states.give(std::exchange(st.state, nullptr));
    }
    // A kept stream keeps what an ordinary response needs, not what the largest one did.
    if (st.body.capacity() > request_state_pool::kept_string_bytes) {
        std::string().swap(st.body);
    }
    if (st.streamed.capacity() > request_state_pool::kept_string_bytes) {
        std::string().swap(st.streamed);
    }
    st.free = true;
    st.next_free = free_;
    free_ = &st;
    --open_;
}

void h2_connection::on_data(std::string_view bytes) {
    if (gone_ || ending_) {
        return;
    }
    const std::error_code broken = session_->receive(bytes);
    after_session();
    if (broken) {
        ending_ = true; // nghttp2 queued its GOAWAY: written, then the connection closes
    }
    flush();
}

void h2_connection::flush() {
    if (write_pending_ || gone_) {
        return;
    }
    if (session_->produce(out_, out_high_water_bytes)) {
        ending_ = true;
    }
    after_session(); // streams closed by what was produced (answered) are let go
    if (gone_) {
        return;
    }
    if (out_.empty()) {
        if (ending_ || (draining_ && open_ == 0) || (!session_->wants_read() && !session_->wants_write())) {
            close();
        }
        return;
    }
    std::swap(out_, writing_);
    write_pending_ = true;
    owner_.stats.bytes_sent.add(writing_.size());
    transport_.write(writing_);
}

void h2_connection::on_written(std::error_code error) {
    write_pending_ = false;
    writing_.clear();
    if (gone_) {
        return;
    }
    if (error) {
        close();
        return;
    }
    flush();
}

void h2_connection::on_end() {
    close();
}

void h2_connection::on_tick(net::clock::time_point now) {
    if (gone_) {
        return;
    }
    const auto& limits = owner_.options.limits;
    const auto acknowledged = limits.min_response_bytes_per_second != 0 && write_pending_
                                  ? std::optional<std::uint64_t>(transport_.bytes_acknowledged())
                                  : std::nullopt;
    switch (connection_.timeouts_.check(limits, now, acknowledged, false)) {
    case connection_timeouts::expired::nothing:
        trim();
        return;
    case connection_timeouts::expired::response_rate:
        owner_.stats.response_timeouts.add();
        close();
        return;
    case connection_timeouts::expired::idle:
        // No stream for keep_alive_timeout: a GOAWAY says so, then the connection closes.
        owner_.stats.idle_timeouts.add();
        session_->shut_down();
        ending_ = true;
        flush();
        return;
    default:
        close();
        return;
    }
}

// No stream open and nothing being written: the kept streams and the frame buffers go, so that an idle connection
// holds its session and little else. Once a second at most, so a busy connection allocates nothing.
void h2_connection::trim() noexcept {
    if (open_ != 0 || write_pending_) {
        return;
    }
    streams_.clear();
    free_ = nullptr;
    session_->trim();
    std::string().swap(out_);
    std::string().swap(writing_);
}

void h2_connection::drain() {
    if (gone_ || draining_) {
        return;
    }
    draining_ = true;
    session_->shut_down();
    flush();
}

void h2_connection::abandon_all() noexcept {
    gone_ = true;
    for (auto& st : streams_) {
        if (!st->free && st->running && st->state != nullptr) {
            st->running = false;
            dispatch::abandon(owner_, *st->state);
        }
    }
}

void h2_connection::close() {
    if (gone_) {
        return;
    }
    connection_.close(); // abandons the handlers still running (abandon_all), then closes the transport
}

} // namespace hotpath
