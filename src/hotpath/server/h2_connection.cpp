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
// A streamed response's bytes waiting for the client's windows: past this, its handler waits for room to write (as
// over HTTP/1.1), so that a client that does not read holds this much of its stream, and nothing of the loop's.
constexpr std::size_t stream_high_water_bytes = 64 * 1024;

// The defences against HTTP/2's floods (RFC 9113 §10.5), two token buckets per connection, refilled on the tick; a
// connection that empties one is sent GOAWAY (ENHANCE_YOUR_CALM) and closed:
// - streams ended before their response, by the client's RST_STREAM (rapid reset, CVE-2023-44487) or by a stream
//   error its frames caused (MadeYouReset, CVE-2025-8671): nghttp2's own numbers for resets, 1,000 and 33 a second;
// - frames that carry no request forward (SETTINGS, PING, WINDOW_UPDATE, PRIORITY, empty DATA or CONTINUATION):
//   1,000, 100 a second, and a few more for each stream opened and each 16 KiB sent (which a client acknowledges).
constexpr std::int64_t reset_burst = 1000;
constexpr std::int64_t resets_per_second = 33;
constexpr std::int64_t control_burst = 1000;
constexpr std::int64_t control_per_second = 100;
constexpr std::int64_t control_per_stream = 4;
constexpr std::size_t sent_bytes_per_control = 16 * 1024;
// What nghttp2 is given at a time, between the defences' checks: a thousand small frames at most.
constexpr std::size_t receive_slice_bytes = 16 * 1024;

// Kestrel's limits (http::h2_settings), request bodies given back to flow control by hand, and nghttp2's own limit on
// resets set above ours (so that ours acts, and counts, first).
constexpr http::h2_settings server_settings{
    .consume_by_hand = true, .stream_reset_burst = 2 * reset_burst, .stream_reset_rate = 2 * resets_per_second};

// The header block of the response being handed to nghttp2, which copies it: one per loop thread, its buffers reused,
// rather than one per connection.
thread_local http::h2_response_fields response_fields;

std::uintptr_t address(const char* p) noexcept {
    return reinterpret_cast<std::uintptr_t>(p);
}

// A stream's bytes measured against a minimum rate, as a connection's are (limits.min_body_bytes_per_second,
// min_response_bytes_per_second): once the grace period has passed, at least rate × (elapsed − grace) bytes.
struct rate_watch {
    net::clock::time_point since{};
    std::uint64_t base = 0; // the count when the watch began

    void start(net::clock::time_point now, std::uint64_t count) noexcept {
        since = now;
        base = count;
    }
    bool too_slow(net::clock::time_point now, std::uint64_t count, std::uint64_t per_second,
                  std::chrono::seconds grace) const noexcept {
        const auto elapsed = now - since;
        if (per_second == 0 || elapsed <= grace) {
            return false;
        }
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed - grace).count();
        return count - base < per_second * static_cast<std::uint64_t>(seconds);
    }
};

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
    bool ended = false;        // the client's END_STREAM: the request is whole
    bool queued = false;       // on the connection's ready list
    bool served = false;       // routed, and its handler run or its answer made
    bool streaming_in = false; // a streaming route's: its handler reads the body as it arrives
    bool running = false;      // its handler runs
    bool closed = false;       // nghttp2 closed the stream (answered, or reset)
    bool reset_here = false;   // this side reset it (a limit or a timeout), not the client
    bool refused = false;      // over the connection's body budget: to be reset with REFUSED_STREAM
    bool woken = false;        // on the connection's list of streams with news for their handler's read
    bool free = true;
    bool answering = false; // its response is with nghttp2, sending until the stream closes

    // The request body. Buffered: after the head in state->in. Streamed: `arriving`, then the handler's `piece`.
    std::uint64_t body_bytes = 0;  // received
    std::uint64_t body_limit = 0;  // streamed: its route's own limit (0: none)
    std::size_t refused_bytes = 0; // fields past the header limits, or trailers: decoded, not kept
    std::size_t counted = 0;       // buffered: given back to flow control, and counted in the connection's body_bytes_
    std::size_t unconsumed = 0; // not given back yet: held back (buffered), or not yet read by the handler (streamed)
    std::string arriving;
    std::string piece;
    rate_watch body_rate;

    // The response body, kept (and its capacity reused) until nghttp2 has sent it: whole, or streamed, where the
    // handler's pieces are added as the client takes them (what is sent is dropped from the front now and then).
    std::string body;
    http::h2_body sending;
    std::uint64_t sent_before = 0; // streamed: bytes sent and dropped from `body`
    rate_watch response_rate;

    stream* next_free = nullptr;
    stream* next_ready = nullptr;
    stream* next_closed = nullptr;
    stream* next_woken = nullptr;

    std::uint64_t sent() const noexcept { return sent_before + sending.sent; }
    bool response_waiting() const noexcept { return answering && sending.sent < sending.bytes.size(); }

    // request::read_body. A buffered body is whole before the handler runs: one piece, then the end. A streamed one
    // comes as it arrives: the piece the handler held is given back to flow control when it asks for the next.
    bool body_piece_ready() noexcept override {
        if (!streaming_in) {
            return true;
        }
        connection->drop_piece(*this);
        return !arriving.empty() || ended || closed || state->stream.in_error != errc{};
    }
    void wait_body_piece(std::coroutine_handle<> reader) noexcept override { state->wait_reader(reader); }
    result<std::string_view> take_body_piece() noexcept override {
        request_state& s = *state;
        if (!streaming_in) {
            return s.take_whole_body();
        }
        if (s.stream.in_error != errc{}) {
            return s.stream.in_error;
        }
        if (closed && !ended) {
            return errc::closed;
        }
        piece.swap(arriving);
        arriving.clear();
        return std::string_view(piece); // empty: the end
    }

    // response::write: the fields go with the first piece; each piece goes to nghttp2 as the windows allow.
    std::error_code write_body_piece(std::string_view piece_in) override {
        if (closed) {
            return errc::closed;
        }
        request_state& s = *state;
        using framing = request_state::stream_state::framing;
        if (s.stream.out == framing::none) {
            connection->start_response(*this);
        }
        if (s.stream.out == framing::length) {
            if (piece_in.size() > s.stream.out_left) {
                return errc::bad_request;
            }
            s.stream.out_left -= piece_in.size();
        }
        if (s.stream.out_head_only || piece_in.empty()) {
            return {};
        }
        if (sending.sent == body.size()) {
            sent_before += sending.sent;
            sending.sent = 0;
            body.clear();
        } else if (sending.sent >= stream_high_water_bytes / 2) {
            sent_before += sending.sent;
            body.erase(0, sending.sent);
            sending.sent = 0;
        }
        body.append(piece_in);
        sending.bytes = body;
        s.stream.out_bytes += piece_in.size();
        connection->session_->resume(id);
        connection->flush();
        return {};
    }
    bool write_room() const noexcept override { return closed || body.size() - sending.sent < stream_high_water_bytes; }
    void wait_write_room(std::coroutine_handle<> writer) noexcept override {
        state->wait_writer(writer);
        ++connection->handlers_waiting_;
    }
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
      session_(http::h2_session::make(http::h2_session::role::server, *this, server_settings)),
      reset_budget_(reset_burst), control_budget_(control_burst) {
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
    st->head_done = st->ended = st->queued = st->served = st->streaming_in = st->running = st->closed = false;
    st->reset_here = st->refused = st->woken = st->free = st->answering = false;
    st->body_bytes = st->body_limit = 0;
    st->refused_bytes = 0;
    st->counted = st->unconsumed = 0;
    st->arriving.clear();
    st->piece.clear();
    st->body.clear();
    st->sending = {};
    st->sent_before = 0;
    st->next_ready = st->next_closed = st->next_woken = nullptr;
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
    control_budget_ = std::min(control_burst, control_budget_ + control_per_stream);
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
    const auto& limits = owner_.options.limits;
    if (st->head_done || st->error != http::status::none) {
        // Trailers are not kept; a refused request's fields no longer matter, unless they go on far past the limit:
        // an HPACK bomb (one large field in the table, referenced thousands of times). Its block's rest would cost
        // nghttp2's decoding of every reference (the table must stay in step even for a refused stream), so the
        // connection ends here with GOAWAY(ENHANCE_YOUR_CALM), as Kestrel ends it at the limit itself.
        st->refused_bytes += name.size() + value.size();
        if (st->refused_bytes > 4 * limits.max_header_bytes && !cut_in_fields_) {
            cut_in_fields_ = true;
            owner_.stats.h2_cut_fields.add();
            session_->cut_in_fields();
        }
        return;
    }
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
    request_state& s = *st->state;
    http::request_head& h = s.head;
    const std::size_t question = h.target.find('?');
    h.path = h.target.substr(0, question);
    h.query = question == std::string_view::npos ? std::string_view{} : h.target.substr(question + 1);
    if (h.method == http::method::connect) {
        h.path = h.target; // CONNECT has no :path: answered 501 below
    }
    st->body_at = st->used;
    st->body_rate.start(owner_.loop.now(), 0);
    if (!owner_.routes.has_streaming_routes() ||
        (st->error != http::status::none && st->error != http::status::content_too_large)) {
        return;
    }
    // A streaming route's handler runs now, and reads the body as it arrives; its own limit is the one that counts.
    const auto match = owner_.routes.routes().match(h.method, h.path, s.params());
    if (match.status != http::route_status::found || !owner_.routes.handler_at(match.handler).streams_body) {
        return;
    }
    const std::uint64_t limit = owner_.routes.handler_at(match.handler).max_body_bytes;
    st->streaming_in = true;
    st->body_limit = limit;
    st->error = h.framing == http::body_framing::content_length && limit != 0 && h.content_length > limit
                    ? http::status::content_too_large
                    : http::status::none;
    queue(*st);
}

void h2_connection::on_h2_data(std::int32_t id, std::string_view bytes) {
    stream* st = find(id);
    if (st == nullptr || st->state == nullptr || st->error != http::status::none || st->refused ||
        st->state->stream.in_error != errc{}) {
        session_->consume(id, bytes.size()); // answered, refused or failed: of no use
        return;
    }
    st->body_bytes += bytes.size();
    if (st->streaming_in) {
        if (st->body_limit != 0 && st->body_bytes > st->body_limit) {
            st->state->stream.in_error = errc::body_too_large;
            session_->consume(id, bytes.size());
        } else {
            try {
                st->arriving.append(bytes);
                st->unconsumed += bytes.size(); // given back as the handler reads it
            } catch (...) {
                st->state->stream.in_error = errc::body_too_large; // no memory for it
                session_->consume(id, bytes.size());
            }
        }
        if (!st->woken && st->state->stream.reader) {
            st->woken = true;
            st->next_woken = woken_;
            woken_ = st;
        }
        return;
    }
    if (st->used - st->body_at + bytes.size() > owner_.options.limits.max_body_bytes) {
        st->error = http::status::content_too_large;
        session_->consume(id, bytes.size());
        return;
    }
    try {
        st->keep(bytes);
    } catch (...) {
        st->error = http::status::content_too_large; // no memory for it
        session_->consume(id, bytes.size());
        return;
    }
    hold_window(*st, bytes.size());
}

// The budget of buffered bodies a connection holds: limits.max_body_bytes, what one HTTP/1.1 connection may hold.
// Within it, or for the oldest stream still sending (so that some stream always goes on), the bytes are given back
// to flow control at once; past it, they are held back, which shuts the stream's window; and a stream that would
// hold back more than half the connection's window (past which no WINDOW_UPDATE would come for the oldest) is refused.
void h2_connection::hold_window(stream& st, std::size_t bytes) {
    if (body_bytes_ + bytes <= body_budget() || receiving_first(st)) {
        session_->consume(st.id, bytes);
        st.counted += bytes;
        body_bytes_ += bytes;
        return;
    }
    if (held_back_ + bytes + server_settings.max_frame_size <= server_settings.connection_window / 2) {
        st.unconsumed += bytes;
        held_back_ += bytes;
        return;
    }
    st.refused = true; // reset once the session's call returns
    refusing_ = true;
    session_->consume(st.id, bytes);
}

std::size_t h2_connection::body_budget() const noexcept {
    return static_cast<std::size_t>(std::max<std::uint64_t>(owner_.options.limits.max_body_bytes, 1));
}

// Whether no stream opened before `st` is still sending a buffered body.
bool h2_connection::receiving_first(const stream& st) const noexcept {
    for (const auto& p : streams_) {
        const stream& o = *p;
        if (o.id < st.id && !o.free && o.state != nullptr && o.head_done && !o.ended && !o.streaming_in && !o.refused &&
            o.error == http::status::none) {
            return false;
        }
    }
    return true;
}

// Bodies held back are given back to flow control, oldest stream first, as the budget allows.
void h2_connection::give_back_window() {
    while (held_back_ != 0) {
        stream* next = nullptr;
        for (const auto& p : streams_) {
            stream& o = *p;
            if (!o.free && !o.streaming_in && o.unconsumed != 0 && (next == nullptr || o.id < next->id)) {
                next = &o;
            }
        }
        if (next == nullptr || (body_bytes_ + next->unconsumed > body_budget() && !receiving_first(*next))) {
            return;
        }
        session_->consume(next->id, next->unconsumed);
        next->counted += next->unconsumed;
        body_bytes_ += next->unconsumed;
        held_back_ -= next->unconsumed;
        next->unconsumed = 0;
    }
}

// The piece a streaming route's handler held is done with: the client may send as much more.
void h2_connection::drop_piece(stream& st) noexcept {
    if (st.piece.empty()) {
        return;
    }
    session_->consume(st.id, st.piece.size());
    st.unconsumed -= std::min(st.unconsumed, st.piece.size());
    st.piece.clear();
    flush(); // the WINDOW_UPDATE, which the client may be waiting for
}

// The request's body is no longer needed (its request state goes back): what it held is given back to flow control.
void h2_connection::let_go_of_body(stream& st) noexcept {
    body_bytes_ -= std::min(body_bytes_, st.counted);
    st.counted = 0;
    if (st.unconsumed != 0) {
        session_->consume(st.id, st.unconsumed);
        if (!st.streaming_in) {
            held_back_ -= std::min(held_back_, st.unconsumed);
        }
        st.unconsumed = 0;
    }
    st.arriving.clear();
    st.piece.clear();
    give_back_window();
}

void h2_connection::queue(stream& st) noexcept {
    st.queued = true;
    if (ready_tail_ != nullptr) {
        ready_tail_->next_ready = &st;
    } else {
        ready_ = &st;
    }
    ready_tail_ = &st;
}

void h2_connection::on_h2_end(std::int32_t id) {
    stream* st = find(id);
    if (st == nullptr || st->ended) {
        return;
    }
    st->ended = true;
    if (!st->queued && !st->served) {
        queue(*st);
    } else if (st->served && st->state != nullptr && st->state->stream.reader && !st->woken) {
        st->woken = true;
        st->next_woken = woken_;
        woken_ = st;
    }
}

void h2_connection::on_h2_closed(std::int32_t id, http::h2_error) {
    stream* st = find(id);
    if (st == nullptr || st->closed) {
        return;
    }
    st->closed = true;
    if (st->state != nullptr && !st->reset_here) { // reset (with any code, NO_ERROR too) before its response was whole
        owner_.stats.h2_resets.add();
        --reset_budget_;
    }
    st->next_closed = closed_;
    closed_ = st;
}

void h2_connection::on_h2_goaway(std::int32_t, http::h2_error) {
    // The client is leaving: what it opened is answered, then its end (or the idle timeout) closes the connection.
}

// What the session told during its last receive: streams to refuse, requests to dispatch, streams to let go.
void h2_connection::after_session() {
    if (refusing_) {
        refusing_ = false;
        for (const auto& p : streams_) {
            stream& st = *p;
            if (st.refused && !st.free && !st.closed && !st.reset_here) {
                st.reset_here = true;
                owner_.stats.h2_refused.add();
                session_->reset(st.id, http::h2_error::refused_stream);
            }
        }
    }
    while (ready_ != nullptr) {
        stream* st = std::exchange(ready_, ready_->next_ready);
        st->next_ready = nullptr;
        st->queued = false;
        if (ready_ == nullptr) {
            ready_tail_ = nullptr;
        }
        if (!st->closed && !st->refused && !gone_ && st->state != nullptr) {
            serve(*st);
        }
    }
    let_go_of_closed();
}

// Streams the session closed are let go; with none open, the connection waits for its next stream.
void h2_connection::let_go_of_closed() {
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
    st.served = true;
    owner_.stats.requests.add();
    owner_.stats.h2_streams.add();
    s.begin(owner_, st,
            st.streaming_in ? std::string_view{} : std::string_view{s.in.get() + st.body_at, st.used - st.body_at});
    s.stream.in = st.streaming_in;
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

// The first piece of a streamed response: its fields go to nghttp2, and its body follows as the handler writes it.
void h2_connection::start_response(stream& st) {
    request_state& s = *st.state;
    using framing = request_state::stream_state::framing;
    s.stream.out = s.res.has_length_ ? framing::length : framing::until_close; // until_close: its END_STREAM ends it
    s.stream.out_left = s.res.length_;
    s.stream.out_head_only = s.head.method == http::method::head || !http::allows_body(s.res.status());
    http::h2_response_fields& fields = response_fields;
    fields.build(s.res, owner_.loop.http_date(),
                 s.res.has_length_ ? std::optional<std::uint64_t>(s.res.length_) : std::nullopt);
    for (const http::h2_field& f : fields.fields()) {
        s.stream.out_bytes += f.name.size() + f.value.size();
    }
    st.body.clear();
    st.sent_before = 0;
    st.sending = {{}, 0, true};
    session_->respond(st.id, fields.fields(), &st.sending);
    st.answering = true;
    st.response_rate.start(owner_.loop.now(), 0);
}

// The response goes to nghttp2, and the request state back to the pool. A streamed response has gone piece by piece:
// its end follows.
void h2_connection::finish(stream& st) {
    request_state& s = *st.state;
    using framing = request_state::stream_state::framing;
    const auto finished = std::chrono::steady_clock::now();
    if (st.streaming_in && s.stream.in_error != errc{} && s.stream.out == framing::none) {
        // The body failed: whatever the handler answered, the client hears why.
        s.res.clear();
        s.res.problem(http::status::content_too_large, "the request body is over the size limit");
        owner_.stats.bad_requests.add();
    }
    request_time_parts parts = request_observer::handled(owner_, s, finished);
    std::size_t bytes = 0;
    if (s.stream.out != framing::none) {
        bytes = s.stream.out_bytes;
        if (s.stream.out_failed || (s.stream.out == framing::length && s.stream.out_left != 0)) {
            // The handler failed, or wrote less than the length it gave: the client sees the stream reset.
            st.reset_here = true;
            session_->reset(st.id, http::h2_error::internal_error);
        } else {
            st.sending.more = false;
            session_->resume(st.id);
        }
    } else {
        st.body.assign(s.res.body()); // into the stream's own buffer: no allocation once it has grown
        const std::string_view body = st.body;
        http::h2_response_fields& fields = response_fields;
        fields.build(s.res, owner_.loop.http_date(), body.size());
        const bool head_only = s.head.method == http::method::head || !http::allows_body(s.res.status());
        st.sent_before = 0;
        st.sending = {body, 0, false};
        session_->respond(st.id, fields.fields(), head_only || body.empty() ? nullptr : &st.sending);
        if (head_only) {
            st.sending.bytes = {};
        }
        st.answering = true;
        st.response_rate.start(owner_.loop.now(), 0);
        for (const http::h2_field& f : fields.fields()) {
            bytes += f.name.size() + f.value.size();
        }
        bytes += head_only ? 0 : body.size();
    }
    parts.write_ns = static_cast<std::uint64_t>((std::chrono::steady_clock::now() - finished).count());
    request_observer::answered(owner_, s, parts, bytes, connection_.peer_, transport_);
    let_go_of_body(st);
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
        let_go_of_body(st);
        st.state->handler_task.reset();
        owner_.states.give(std::exchange(st.state, nullptr));
    }
    st.answering = false;
    st.sending = {};
    // A kept stream keeps what an ordinary request and response need, not what the largest ones did.
    for (std::string* kept : {&st.body, &st.arriving, &st.piece}) {
        if (kept->capacity() > request_state_pool::kept_string_bytes) {
            std::string().swap(*kept);
        }
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
    // In slices, each followed by the defences' check: a flood is cut after a slice's frames, not a whole read's.
    for (std::size_t at = 0; at < bytes.size() && !ending_ && !gone_; at += receive_slice_bytes) {
        const std::error_code broken = session_->receive(bytes.substr(at, receive_slice_bytes));
        after_session();
        if (broken) {
            ending_ = true; // nghttp2 queued its GOAWAY: written, then the connection closes
            if (cut_in_fields_) {
                session_->go_away(http::h2_error::enhance_your_calm);
            } else if (http::h2_flooded(broken)) {
                owner_.stats.h2_cut_frames.add();
            }
        } else {
            defend();
        }
    }
    flush();
    wake_handlers();
}

// What the last frames cost, against the connection's budgets (see reset_burst above).
void h2_connection::defend() {
    const std::uint64_t control = session_->tally().control_frames;
    control_budget_ -= static_cast<std::int64_t>(control - control_seen_);
    control_seen_ = control;
    if (reset_budget_ < 0 || control_budget_ < 0) {
        (reset_budget_ < 0 ? owner_.stats.h2_cut_resets : owner_.stats.h2_cut_control).add();
        session_->go_away(http::h2_error::enhance_your_calm);
        ending_ = true;
    } else if (session_->failed_away()) {
        ending_ = true; // nghttp2 sent a GOAWAY with an error of its own: the connection ends once it is written
    }
}

// Handlers waiting on their stream: a read with its piece (or end) here, a write with room again. Called from the
// transport's events only, never from inside a handler.
void h2_connection::wake_handlers() {
    while (woken_ != nullptr && !gone_) {
        stream* st = std::exchange(woken_, woken_->next_woken);
        st->woken = false;
        if (st->state == nullptr || !st->state->stream.reader || !st->body_piece_ready()) {
            continue;
        }
        st->state->resume_reader();
    }
    if (handlers_waiting_ == 0 || gone_) {
        return;
    }
    handlers_waiting_ = 0;
    // By index: a resumed handler may open nothing, but may finish, which never removes a stream from the vector.
    for (std::size_t i = 0; i < streams_.size() && !gone_; ++i) {
        stream& st = *streams_[i];
        if (st.free || st.state == nullptr || !st.state->stream.writer) {
            continue;
        }
        if (!st.write_room()) {
            ++handlers_waiting_;
            continue;
        }
        st.state->resume_writer();
    }
}

void h2_connection::flush() {
    if (write_pending_ || gone_) {
        return;
    }
    if (session_->produce(out_, out_high_water_bytes)) {
        ending_ = true;
    }
    let_go_of_closed(); // streams closed by what was produced (answered); never a dispatch, which may be running
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
    sent_credit_ += writing_.size();
    if (sent_credit_ >= sent_bytes_per_control) {
        control_budget_ =
            std::min(control_burst, control_budget_ + static_cast<std::int64_t>(sent_credit_ / sent_bytes_per_control));
        sent_credit_ %= sent_bytes_per_control;
    }
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
    wake_handlers();
}

void h2_connection::on_end() {
    close();
}

// Each stream's rates: a request body arriving too slowly, or a response the client does not take (its windows
// stay shut), resets that stream alone; the connection's other streams go on. Time the server is the one waiting
// (a body held back, a handler yet to read or to write, the transport busy) does not count against the client.
void h2_connection::check_streams(net::clock::time_point now) {
    const auto& limits = owner_.options.limits;
    bool reset = false;
    for (const auto& p : streams_) {
        stream& st = *p;
        if (st.free || st.closed || st.reset_here) {
            continue;
        }
        if (st.response_waiting() && !write_pending_) {
            if (st.response_rate.too_slow(now, st.sent(), limits.min_response_bytes_per_second,
                                          limits.min_response_rate_grace)) {
                owner_.stats.response_timeouts.add();
                st.reset_here = reset = true;
                session_->reset(st.id, http::h2_error::cancel);
                continue;
            }
        } else if (st.answering) {
            st.response_rate.start(now, st.sent());
        }
        if (st.state != nullptr && st.head_done && !st.ended && st.error == http::status::none && !st.refused) {
            if (st.unconsumed != 0) {
                st.body_rate.start(now, st.body_bytes);
            } else if (st.body_rate.too_slow(now, st.body_bytes, limits.min_body_bytes_per_second,
                                             limits.min_body_rate_grace)) {
                owner_.stats.body_timeouts.add();
                st.reset_here = reset = true;
                session_->reset(st.id, http::h2_error::cancel);
            }
        }
    }
    if (reset) {
        flush();
    }
}

void h2_connection::on_tick(net::clock::time_point now) {
    if (gone_) {
        return;
    }
    const auto& limits = owner_.options.limits;
    reset_budget_ = std::min(reset_burst, reset_budget_ + resets_per_second);
    control_budget_ = std::min(control_burst, control_budget_ + control_per_second);
    if (!session_->tally().header_block_open) {
        header_block_since_ = {};
    } else if (header_block_since_ == net::clock::time_point{}) {
        header_block_since_ = now;
    } else if (now - header_block_since_ >= limits.request_headers_timeout) {
        // A header block begun and never ended (its CONTINUATIONs withheld): no other frame may come meanwhile, so
        // the connection is stuck; a slowloris over HTTP/2.
        owner_.stats.header_timeouts.add();
        close();
        return;
    }
    if (open_ != 0) {
        check_streams(now);
        if (gone_) {
            return;
        }
    }
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

// No stream open and nothing being written: the kept streams and the frame buffers go, and the session gives its
// large blocks' pages back (once per idle spell), so that an idle connection holds its session's state and little
// else. Once a second at most, so a busy connection allocates nothing.
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
