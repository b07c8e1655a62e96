// A server connection's bodies streamed to and from a handler (app.streaming, response::write): the request body
// handed over a piece at a time as it arrives, the response written in pieces, and the awaitables of both.
#include <hotpath/server/server_connection.hpp>

#include <hotpath/server/request_state.hpp>
#include <hotpath/server/worker.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace hotpath {

// Drops the piece the handler held (and, chunked, the framing read so far): what is left moves to right after the
// head, and what waited in the overflow follows it as far as the buffer allows (it never grows).
void server_connection::drop_piece() noexcept {
    request_state& s = *state_;
    char* const base = s.in.get();
    const std::size_t body = begin_ + head_bytes_;
    end_ = body + s.body.drop(base + body, end_ - body);
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
    if (!s.stream.in || s.body.complete() || s.stream.in_error != errc{} || closed_) {
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
    timeouts_.body_done();
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
    if (st.in_error != errc{} || s.body.complete()) {
        return true;
    }
    if (!continue_sent_ && s.head.expect_continue && s.head.version_minor == 1) {
        // RFC 9110 §10.1.1: the handler wants the body; a client that waits for it may send it now.
        continue_sent_ = true;
        s.out.append(continue_response);
        do_write();
    }
    const std::size_t body = begin_ + head_bytes_;
    if (const http::status error = s.body.read(s.in.get() + body, end_ - body); error != http::status::none) {
        fail_body(error == http::status::content_too_large ? errc::body_too_large : errc::bad_request);
        return true;
    }
    if (s.body.complete()) {
        timeouts_.body_done();
        return true;
    }
    if (s.body.held() == 0) {
        drop_piece(); // only framing so far: make room for more
        return false;
    }
    return true;
}

void server_connection::wait_body_piece(std::coroutine_handle<> reader) noexcept {
    state_->wait_reader(reader);
}

// Resumes a handler awaiting a piece once it has its answer. Last in its caller: the handler may finish and the
// connection close from here.
void server_connection::resume_reader() noexcept {
    request_state& s = *state_;
    if (!s.stream.reader || !body_piece_ready()) {
        return;
    }
    s.resume_reader();
}

result<std::string_view> server_connection::take_body_piece() noexcept {
    request_state& s = *state_;
    if (!s.stream.in) {
        return s.take_whole_body();
    }
    if (s.stream.in_error != errc{}) {
        return s.stream.in_error;
    }
    return std::string_view(s.in.get() + begin_ + head_bytes_, s.body.held());
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
    state_->wait_writer(writer);
}

// Resumes a handler awaiting room to write once the client has taken enough. True when it did (the handler may
// have finished and the connection closed since).
bool server_connection::resume_writer() noexcept {
    request_state& s = *state_;
    if (!s.stream.writer || s.out.size() >= out_high_water_bytes) {
        return false;
    }
    s.resume_writer();
    return true;
}

// The awaitables, on what carries the request or response they belong to (see exchange.hpp).
bool body_read::await_ready() noexcept {
    return req_.exchange_->body_piece_ready();
}
void body_read::await_suspend(std::coroutine_handle<> waiting) noexcept {
    req_.exchange_->wait_body_piece(waiting);
}
result<std::string_view> body_read::await_resume() noexcept {
    return req_.exchange_->take_body_piece();
}

bool body_write::await_ready() noexcept {
    error_ = res_.exchange_->write_body_piece(piece_);
    return error_ || res_.exchange_->write_room();
}
void body_write::await_suspend(std::coroutine_handle<> waiting) noexcept {
    res_.exchange_->wait_write_room(waiting);
}
result<void> body_write::await_resume() noexcept {
    if (error_) {
        return error_;
    }
    return {};
}

} // namespace hotpath
