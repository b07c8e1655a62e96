// HTTP/2 on a server connection (RFC 9113): its streams read, routed and answered through the same routes, handlers,
// request and response as HTTP/1.1. A server_connection becomes one when its client opens with HTTP/2's preface (h2c
// with prior knowledge) or agrees to "h2" through ALPN over TLS, and hands it its transport's events from then on.
// Internal: not installed.
#pragma once

#include <hotpath/http/h2_session.hpp>
#include <hotpath/net/loop.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace hotpath {

namespace net {
class transport;
}
struct worker;
class server_connection;

class h2_connection final : private http::h2_events {
public:
    // What a client sends first (RFC 9113 §3.4).
    static constexpr std::string_view preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    // On `c`, whose transport is `t`: sends the server's SETTINGS at once (Kestrel's limits: see http::h2_settings).
    h2_connection(worker& w, server_connection& c, net::transport& t);
    ~h2_connection();
    h2_connection(const h2_connection&) = delete;
    h2_connection& operator=(const h2_connection&) = delete;

    // Null when nghttp2 could not make a session (out of memory): the connection closes.
    bool usable() const noexcept { return session_ != nullptr; }

    // The transport's events, handed on by the server connection.
    void on_data(std::string_view bytes);
    void on_written(std::error_code error);
    void on_end();
    // Once a second: the keep-alive timeout when no stream is open, the response rate while frames wait; each
    // stream's body and response rates; an idle connection lets go of its kept streams and buffers.
    void on_tick(net::clock::time_point now);
    // Graceful shutdown: a GOAWAY, the open streams answered, then the connection closes.
    void drain();
    // The connection is closing: every running handler is abandoned (its client is gone or cut off).
    void abandon_all() noexcept;

private:
    struct stream;

    void on_h2_field(std::int32_t id, std::string_view name, std::string_view value) override;
    void on_h2_headers(std::int32_t id) override;
    void on_h2_data(std::int32_t id, std::string_view bytes) override;
    void on_h2_end(std::int32_t id) override;
    void on_h2_closed(std::int32_t id, http::h2_error error) override;
    void on_h2_goaway(std::int32_t last_stream, http::h2_error error) override;

    stream* find(std::int32_t id) const noexcept;
    stream* open(std::int32_t id);
    void take_field(std::int32_t id, std::string_view name, std::string_view value);
    void take_body(stream& st, std::string_view bytes);
    void hold_window(stream& st, std::size_t bytes);
    bool receiving_first(const stream& st) const noexcept;
    std::size_t body_budget() const noexcept;
    void give_back_window();
    void drop_piece(stream& st) noexcept;
    void let_go_of_body(stream& st) noexcept;
    void queue(stream& st) noexcept;
    void after_session();
    void let_go_of_closed();
    void serve(stream& st);
    void start_streaming(stream& st);
    void start_response(stream& st);
    void wake_handlers();
    void defend();
    void check_streams(net::clock::time_point now);
    void finish(stream& st);
    static void on_handler_done(void* self) noexcept;
    void release(stream& st) noexcept;
    void flush();
    void close();
    void trim() noexcept;

    worker& owner_;
    server_connection& connection_;
    net::transport& transport_;
    std::unique_ptr<http::h2_session> session_;

    // Streams are kept and reused: a connection's steady state allocates none.
    std::vector<std::unique_ptr<stream>> streams_;
    stream* free_ = nullptr;
    // Heard inside the session's calls and acted on after they return: requests whose END_STREAM came (ready_), and
    // streams the session closed (closed_).
    stream* ready_ = nullptr;
    stream* ready_tail_ = nullptr;
    stream* closed_ = nullptr;
    stream* woken_ = nullptr; // streamed bodies with news for a handler that awaits them
    std::size_t open_ = 0;    // streams with a request being read, handled or answered

    // Flow control of request bodies (RFC 9113 §5.2): a body read whole before its handler runs is given back to
    // the peer's windows as it arrives while the connection holds at most limits.max_body_bytes of such bodies;
    // past that, only the oldest stream still sending goes on, the others wait (their windows shut), and a stream
    // that would hold more than half the connection's window waiting is refused (REFUSED_STREAM: the client may
    // retry it). A streamed body is given back as its handler reads it.
    std::size_t body_bytes_ = 0;       // bodies held, given back to flow control
    std::size_t held_back_ = 0;        // bodies held, not given back (the connection over its budget)
    std::size_t handlers_waiting_ = 0; // handlers awaiting room to write (at least)
    bool refusing_ = false;            // streams marked refused, to be reset

    // The defences against floods (see h2_connection.cpp): what the connection may still spend.
    std::int64_t reset_budget_;
    std::int64_t control_budget_;
    std::uint64_t control_seen_ = 0; // control frames already charged
    std::size_t sent_credit_ = 0;    // bytes sent not yet turned into control budget
    net::clock::time_point header_block_since_{};

    std::string out_;     // frames produced, waiting for the write in flight
    std::string writing_; // the frames being written
    bool write_pending_ = false;
    bool draining_ = false;
    bool ending_ = false;        // a protocol error or the peer's end: close once the last frames are written
    bool cut_in_fields_ = false; // a header block far past the limits: GOAWAY(ENHANCE_YOUR_CALM) and close
    bool gone_ = false;          // closed: no more writes
};

} // namespace hotpath
