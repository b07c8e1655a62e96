// One client connection: read → parse → route → handler → write, then the next request, on one loop.
#pragma once

#include "core/cancel.hpp"
#include "core/task.hpp"
#include "http/chunked_decoder.hpp"
#include "http/request_parser.hpp"
#include "net/loop.hpp"
#include "net/transport.hpp"
#include "server/json_arena.hpp"
#include "server/request.hpp"
#include "server/response.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace hotpath {

struct worker;

// Owned by its worker's intrusive list and destroyed by itself once closed with no operation pending.
// Requests on one connection are answered strictly in order (pipelining, RFC 9112 §9.3.2): all complete
// requests in the read buffer are handled, their responses gathered in one buffer and written with one call.
class server_connection final : public net::transport_owner {
public:
    // Takes the accepted socket `fd` onto the loop's backend (net::make_transport).
    server_connection(worker& owner, int fd);
    ~server_connection();
    server_connection(const server_connection&) = delete;
    server_connection& operator=(const server_connection&) = delete;

    void start();
    // Once a second: enforce the headers, keep-alive, body-rate and response-rate timeouts.
    void on_tick(net::clock::time_point now);
    // Graceful shutdown: close now if idle, else after the response in progress.
    void drain();
    // Close at once, abandoning any handler (drain timeout).
    void abort();

    server_connection* prev = nullptr;
    server_connection* next = nullptr;

private:
    enum class phase : std::uint8_t { head, body_length, body_chunked, ready, handler, closing };
    enum class timeout_kind : std::uint8_t { none, headers, idle, body_rate, linger };

    void on_transport_data(std::string_view bytes) override;
    void on_transport_end(std::error_code error) override;
    void on_transport_written(std::error_code error) override;
    void on_transport_closed() override;

    void do_process();
    bool do_head();
    bool do_body();
    void do_dispatch();
    static void on_handler_done(void* self) noexcept;
    void finish_handler(const std::exception_ptr& error);
    void finish_request();
    void fail(http::status s, std::string_view detail);
    void answer_and_close(http::status s, std::string_view detail);
    bool response_too_slow(net::clock::time_point now) noexcept;
    void do_write();
    void do_linger();
    void arm_read_timeout();
    void close();
    bool ensure_space(std::size_t bytes);
    void take_overflow();
    bool idle() const noexcept;

    worker& owner_;
    std::unique_ptr<net::transport> transport_;

    // Read buffer: [begin_, end_) holds unprocessed bytes; the current request starts at begin_.
    std::unique_ptr<char[]> in_;
    std::size_t capacity_ = 0;
    std::size_t begin_ = 0;
    std::size_t end_ = 0;
    // Bytes that arrived while a handler held views into in_ and in_ had no room: appended after it ends.
    std::string overflow_;

    phase phase_ = phase::head;
    http::request_parser parser_;
    http::chunked_decoder chunked_;
    http::request_head head_;
    std::size_t head_bytes_ = 0;    // size of the current head, from begin_
    std::size_t body_bytes_ = 0;    // decoded body bytes, stored from begin_ + head_bytes_
    std::size_t chunk_pos_ = 0;     // chunked: next undecoded byte, from begin_
    std::size_t request_bytes_ = 0; // bytes of the whole request (head and framed body), from begin_
    bool continue_sent_ = false;

    request req_;
    response res_;
    cancel_signal aborted_; // request::aborted(): the peer went away while a handler ran
    json_arena_ptr arena_;
    task<void> handler_task_;

    std::string out_;             // responses waiting to be written
    std::string writing_;         // the buffer being written
    bool reading_paused_ = false; // backpressure: the transport was told to stop reading
    bool write_pending_ = false;
    bool closed_ = false;
    bool peer_ended_ = false; // EOF or error from the peer: finish what is in progress, then close
    bool linger_ = false;     // unread request bytes may follow: read and discard before closing

    // The read-side timeout. It runs only while the connection waits for the client's bytes: never while
    // responses are still being written (the response rate covers that time).
    timeout_kind timeout_ = timeout_kind::headers;
    net::clock::time_point deadline_{};
    // The response rate, measured on the tick (see response_too_slow): bytes the client may still fall behind.
    double response_credit_bytes_ = 0;
    std::uint64_t acknowledged_at_tick_ = 0; // while writing_at_tick_: transport_->bytes_acknowledged() then
    net::clock::time_point last_tick_{};     // while writing_at_tick_: that tick
    bool writing_at_tick_ = false;           // a write was pending at the last tick
    net::clock::time_point body_started_{};
    std::uint64_t body_received_ = 0;
};

} // namespace hotpath
