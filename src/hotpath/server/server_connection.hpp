// One client connection: read → parse → route → handler → write, then the next request, on one loop.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/core/task.hpp>
#include <hotpath/http/status.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/transport.hpp>
#include <hotpath/server/connection_timeouts.hpp>
#include <hotpath/server/exchange.hpp>

#include <coroutine>
#include <cstdint>
#include <memory>
#include <string_view>

namespace hotpath {

struct handler;
struct peer_address;

struct worker;
struct request_state;
class h2_connection;

// Owned by its worker's intrusive list and destroyed by itself once closed with no operation pending.
// Requests on one connection are answered strictly in order (pipelining, RFC 9112 §9.3.2): all complete
// requests in the read buffer are handled, their responses gathered in one buffer and written with one call.
// The buffers, parser, request and response live in a request_state taken from the worker's pool when bytes
// arrive and given back once the connection is idle again, so a waiting keep-alive connection is this object
// and its transport only.
class server_connection final : public net::transport_owner, public exchange {
public:
    // Made by worker::accept: serves the accepted socket `fd` through a transport from the worker's factory (the
    // loop's backend, or another kind on that seam). `refuse`: the connection is over limits.max_connections: its
    // first request is answered 503 with Retry-After, then it closes.
    server_connection(worker& owner, int fd, bool refuse = false);
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

    // For the awaitables of streamed bodies (request::read_body, response::write), on the loop, while the
    // connection's handler runs.
    bool body_piece_ready() noexcept override;
    void wait_body_piece(std::coroutine_handle<> reader) noexcept override;
    result<std::string_view> take_body_piece() noexcept override;
    std::error_code write_body_piece(std::string_view piece) override;
    bool write_room() const noexcept override;
    void wait_write_room(std::coroutine_handle<> writer) noexcept override;

    server_connection* prev = nullptr;
    server_connection* next = nullptr;

private:
    friend class h2_connection; // closes the connection, and keeps its timeouts and peer address
    // Past this many bytes of unwritten responses, stop reading and handling until the peer reads.
    static constexpr std::size_t out_high_water_bytes = 256 * 1024;
    static constexpr std::string_view continue_response = "HTTP/1.1 100 Continue\r\n\r\n";

    // head: reading a request head; body: reading its body before the handler runs (a buffered body, or a
    // streamed one only until its handler starts); ready: complete, to be dispatched; handler: its handler runs;
    // closing: the last response is owed or written, then the connection closes.
    enum class phase : std::uint8_t { head, body, ready, handler, closing };

    void on_transport_data(std::string_view bytes) override;
    void on_transport_end(std::error_code error) override;
    void on_transport_written(std::error_code error) override;
    void on_transport_closed() override;
    void on_transport_ready() override;
    void handshake_over() noexcept;

    void do_process();
    bool do_head();
    bool do_body();
    void do_dispatch();
    bool start_streaming_body(const handler& h);
    void drop_piece() noexcept;
    void stream_reading() noexcept;
    void fail_body(errc error) noexcept;
    void resume_reader() noexcept;
    bool resume_writer() noexcept;
    void start_response_stream();
    static void on_handler_done(void* self) noexcept;
    void finish_request();
    bool start_h2(std::string_view already);
    void fail(http::status code, std::string_view detail);
    void answer_and_close(http::status code, std::string_view detail);
    void do_write();
    void do_linger();
    void arm_read_timeout();
    void close();
    bool ensure_space(std::size_t bytes);
    void take_overflow();
    bool idle() const noexcept;
    bool nothing_to_write() const noexcept;
    void release_state() noexcept;

    worker& owner_;
    std::unique_ptr<net::transport> transport_;

    // Lent by owner_.states while a request is in flight; null when idle (no byte unprocessed, no handler
    // running, nothing left to write) and before the first byte arrives.
    request_state* state_ = nullptr;
    // In state_->in: [begin_, end_) holds unprocessed bytes; the current request starts at begin_.
    std::size_t begin_ = 0;
    std::size_t end_ = 0;

    phase phase_ = phase::head;
    std::size_t head_bytes_ = 0;    // size of the current head, from begin_; its body (state_->body) follows
    std::size_t request_bytes_ = 0; // bytes of the whole request (head and framed body), from begin_
    bool continue_sent_ = false;
    bool refuse_ = false;      // over limits.max_connections: 503 and close
    bool may_be_h2_ = false;   // with server_options.http2, until the first bytes show which protocol comes
    bool handshaking_ = false; // over TLS, until the handshake is done: counted in owner_.handshakes

    bool reading_paused_ = false; // backpressure: the transport was told to stop reading
    bool write_pending_ = false;
    bool closed_ = false;
    bool peer_ended_ = false; // EOF or error from the peer: finish what is in progress, then close
    bool linger_ = false;     // unread request bytes may follow: read and discard before closing

    // What the connection waits for and until when, judged on the tick.
    connection_timeouts timeouts_;
    // With an access log: the peer's address, asked of the kernel once (see request_observer).
    std::unique_ptr<peer_address> peer_;
    // Once the client has chosen HTTP/2 (its preface, or ALPN): every transport event goes to it.
    std::unique_ptr<h2_connection> h2_;
};

} // namespace hotpath
