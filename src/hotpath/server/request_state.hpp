// What a connection holds only while a request is in flight, lent by its loop's pool and given back when idle.
#pragma once

#include <hotpath/core/attribution.hpp>
#include <hotpath/core/cancel.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/http/limits.hpp>
#include <hotpath/http/request_head.hpp>
#include <hotpath/http/request_parser.hpp>
#include <hotpath/server/request.hpp>
#include <hotpath/server/request_body.hpp>
#include <hotpath/server/response.hpp>
#include <hotpath/server/stats.hpp>

#include <chrono>
#include <coroutine>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>

namespace hotpath {

namespace net {
class loop;
}
class exchange;
struct worker;

// The read buffer, the parser and parsed head, the request and response a handler sees, and the responses
// waiting to be written: about 9 KiB (the head's field table and the buffer are most of it), plus the JSON
// arena once a response has used it. A keep-alive connection waiting for its next request holds none of this
// (nginx frees its buffers the same way; Kestrel returns its pipes' blocks to a pool). Lives on one loop.
struct request_state {
    // Fits a typical request head and a 16-deep pipeline of small ones; grows on demand up to the limits.
    static constexpr std::size_t initial_buffer_bytes = 4096;

    request_state(const http::limits& limits, net::loop& loop);
    request_state(const request_state&) = delete;
    request_state& operator=(const request_state&) = delete;

    // Read buffer; the connection keeps the offsets of the unprocessed bytes in it.
    std::unique_ptr<char[]> in;
    std::size_t capacity = initial_buffer_bytes;
    // Bytes that arrived while a handler held views into `in` and it had no room: appended after it ends.
    std::string overflow;

    http::request_parser parser;
    http::request_head head; // views into `in`
    request_body body;       // the request's body, read right after its head in `in`
    request req;             // points at head, aborted and the loop
    response res;            // its JSON arena is made on first use and kept with the state
    cancel_signal aborted;   // request::aborted(): the peer went away while a handler ran
    // The request being handled, for its route's metrics: where it was routed; when its loop read it (the
    // net::loop::turn_started() of the read that brought its latest bytes); when it was dispatched; its waits.
    std::uint32_t route = 0;
    std::chrono::steady_clock::time_point received_at{};
    std::chrono::steady_clock::time_point dispatched_at{};
    time_attribution timing;
    // Its handler (see server/dispatch.hpp): a coroutine's frame, kept until the state is given back; whether it is
    // counted in worker::handlers_running; what it threw.
    task<void> handler_task;
    bool handler_counted = false;
    std::exception_ptr handler_error;

    // A body streamed to or from the handler (app.streaming, response::write), for the request being handled.
    struct stream_state {
        // In: the handler reads the body (`body`) as it arrives; the piece it holds is dropped when it asks for the
        // next.
        bool in = false;
        errc in_error{};                  // the read failed: the response becomes this error's status
        std::coroutine_handle<> reader;   // a handler awaiting the next piece
        std::int64_t reader_since_ns = 0; // its wait, for the time attribution
        // Out: the response body is written in pieces.
        enum class framing : std::uint8_t { none, chunked, length, until_close };
        framing out = framing::none;    // none: not streamed (or not yet)
        bool out_head_only = false;     // HEAD, or a status without content: the fields are sent, no piece
        bool out_keep = false;          // the fields sent did not say "Connection: close"
        bool out_failed = false;        // the handler failed after the fields went: the body stays unfinished
        std::uint64_t out_left = 0;     // length: bytes still owed
        std::uint64_t out_bytes = 0;    // bytes written, framing included
        std::coroutine_handle<> writer; // a handler awaiting room to write
        std::int64_t writer_since_ns = 0;
        void reset() noexcept { *this = {}; }
    };
    stream_state stream;

    std::string out;     // responses waiting to be written
    std::string writing; // the buffer being written

    request_state* next_free = nullptr; // the pool's free list

    // The request is here (its head, and its body when buffered: `body_bytes`), about to be routed: its dispatch
    // time taken, its request and response made ready for a handler and carried by `carrier` (its HTTP/1.1
    // connection, or its HTTP/2 stream). The same for every protocol.
    void begin(const worker& w, exchange& carrier, std::string_view body_bytes) noexcept {
        dispatched_at = std::chrono::steady_clock::now();
        timing.start();
        req.worker_ = &w;
        req.exchange_ = &carrier;
        req.body_read_ = false;
        req.body_ = body_bytes;
        res.exchange_ = &carrier;
        res.has_length_ = false;
        res.clear();
        if (res.arena_ != nullptr) {
            reset_json_arena(*res.arena_);
        }
    }

    // request::read_body on a body read whole before the handler ran: the body, then the end.
    std::string_view take_whole_body() noexcept {
        if (req.body_read_) {
            return {};
        }
        req.body_read_ = true;
        return req.body_;
    }

    // A handler awaiting its streamed body's next piece (the reader) or room to write (the writer), whatever carries
    // it: the wait is timed as the client's. resume_* ends the wait and resumes the handler, last in its caller (the
    // handler may finish, and this state be given back, from there).
    void wait_reader(std::coroutine_handle<> reader) noexcept {
        stream.reader = reader;
        stream.reader_since_ns = time_attribution::now_ns();
        timing.begin_wait(wait_kind::client, stream.reader_since_ns);
    }
    void wait_writer(std::coroutine_handle<> writer) noexcept {
        stream.writer = writer;
        stream.writer_since_ns = time_attribution::now_ns();
        timing.begin_wait(wait_kind::client, stream.writer_since_ns);
    }
    void resume_reader() noexcept {
        const auto reader = std::exchange(stream.reader, {});
        timing.end_wait(wait_kind::client, stream.reader_since_ns, time_attribution::now_ns());
        reader.resume();
    }
    void resume_writer() noexcept {
        const auto writer = std::exchange(stream.writer, {});
        timing.end_wait(wait_kind::client, stream.writer_since_ns, time_attribution::now_ns());
        writer.resume();
    }

    // Where the router writes the matched route's path parameters (request::param reads them).
    http::route_params& params() noexcept { return req.params_; }
};

// One loop's free request states. take() and give() move a pointer on a list in steady state (no allocation): a busy
// keep-alive connection takes a state when its request's bytes arrive and gives it back once every response is
// written, so the states in use follow the requests in flight, not the connections. Bounded: trim(), once a
// second, frees the free states beyond what the last second needed at its peak. Not thread-safe.
class request_state_pool {
public:
    // Counts what it makes and frees in stats.request_states_made and request_states_freed.
    request_state_pool(const http::limits& limits, net::loop& loop, loop_stats& stats);
    ~request_state_pool();
    request_state_pool(const request_state_pool&) = delete;
    request_state_pool& operator=(const request_state_pool&) = delete;

    // A state with an empty read buffer of initial_buffer_bytes, a reset parser and empty outputs. Allocates
    // only when none is free (may throw std::bad_alloc then).
    request_state* take();
    // Takes `state` back; nothing may refer into it any more (views into its buffer, a handler's references).
    // A state whose buffers grew past their usual size is freed rather than kept, so a pooled state stays
    // ~9 KiB whatever requests it served.
    void give(request_state* state) noexcept;
    // Frees the free states beyond the peak in use since the last trim less those in use now (keeping at
    // least min_free), then starts a new period. After a burst, the pool is back to min_free within two calls.
    void trim() noexcept;

    std::size_t in_use() const noexcept { return in_use_; }
    std::size_t free_count() const noexcept { return free_count_; }

    // Kept across quiet periods, so a few connections waking up allocate nothing.
    static constexpr std::size_t min_free = 8;
    // A pooled state keeps strings (responses, body) up to this capacity; past it the state is freed.
    static constexpr std::size_t kept_string_bytes = 64 * 1024;

private:
    void destroy(request_state* state) noexcept;

    const http::limits& limits_;
    net::loop& loop_;
    loop_stats& stats_;
    request_state* free_ = nullptr; // most recently given first: its memory is the likeliest in cache
    std::size_t free_count_ = 0;
    std::size_t in_use_ = 0;
    std::size_t peak_in_use_ = 0; // since the last trim
};

} // namespace hotpath
