// One pooled client connection (internal): connect (and agree on the protocol), then HTTP/1.1's one request at a
// time, or HTTP/2's streams side by side.
#pragma once

#include <hotpath/client/response.hpp>
#include <hotpath/http/h2_session.hpp>
#include <hotpath/http/response_reader.hpp>
#include <hotpath/net/connect.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/transport.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::client_detail {

class host_pool;
struct call_state;

// The parts of a request, owned by the call; rendered into the connection's own buffer (so an abandoned
// call's frame is never read by a write still in flight).
struct request_parts {
    std::string_view method;
    std::string_view target;
    std::string_view host_field;
    const std::vector<std::pair<std::string, std::string>>* headers = nullptr;
    std::string_view body;
    bool send_length = false;
};

// Owned by its host_pool. Lives on the pool's loop. Over HTTP/1.1 one request at a time (no pipelining); over
// HTTP/2 (h2_on()) as many as the server's SETTINGS allow, each call on a stream of its own: the pool reserves a
// stream (reserve_stream) for a call that then begins on it.
class client_connection final : public net::transport_owner, private http::h2_events {
public:
    client_connection(host_pool& pool, net::loop& loop);
    ~client_connection();
    client_connection(const client_connection&) = delete;
    client_connection& operator=(const client_connection&) = delete;

    // Resolves (host names only), connects, and over TLS finishes the handshake when the protocol is to be agreed by
    // ALPN; ends `c`'s connecting step: success, errc::refused, errc::resolve_failed, a net::tls_errc (among them
    // no_common_protocol: HTTP/2 only, and the server did not agree to h2), or the system's error.
    void async_connect(call_state& c);
    // Writes the request and reads one response into `out`; ends `c`'s exchange step: success, or errc::closed
    // (EOF before the response ended), errc::reset, errc::malformed_response, errc::response_too_large, or a
    // system error. On failure an HTTP/1.1 connection is closing; an HTTP/2 connection goes on if only the stream
    // failed. Over HTTP/2 on the stream reserve_stream() counted. An error returned: the request could not be sent
    // (HTTP/2: the server's GOAWAY came first, with the call marked unprocessed) and the step is over at once.
    std::error_code begin(call_state& c, const request_parts& parts, client_response& out);
    // The call `c` stopped or went away mid-step: an HTTP/1.1 connection (or one connecting) closes without telling
    // it; over HTTP/2 only its stream is reset.
    void abandon(call_state& c) noexcept;
    // Close (pool's decision); the pool hears on_gone once nothing is in flight.
    void close() noexcept;
    // Idle in the pool: EOF or bytes from the peer now end the connection.
    void make_idle(net::clock::time_point now) noexcept;
    // Taken from the pool, before begin(): whether the peer has closed the connection or spoken out of turn
    // while it was idle, even if the loop has not delivered that yet (one system call: net::transport::peek).
    // Such a connection must not carry a request; nothing has been written on it for this call.
    bool stale() noexcept;

    bool reusable() const noexcept { return reusable_; }
    bool closing() const noexcept { return closing_; }
    bool connecting() const noexcept { return phase_ == phase::connecting; }
    net::clock::time_point created() const noexcept { return created_; }
    net::clock::time_point idle_since() const noexcept { return idle_since_; }

    // HTTP/2: whether this connection speaks it (h2c, or h2 agreed by ALPN), once connected.
    bool h2_on() const noexcept { return h2_ != nullptr; }
    // Streams reserved or open (0 over HTTP/1.1).
    std::size_t streams() const noexcept { return h2_ != nullptr ? h2_->in_use : 0; }
    // Whether another stream may be reserved: not closing, no GOAWAY from the server, and fewer streams than it allows
    // (until its SETTINGS arrive, than `assumed` where not 0: what the host's other connections were allowed).
    bool has_room(std::uint32_t assumed = 0) const noexcept;
    // The streams the server allows at once, once its SETTINGS have arrived; 0 before.
    std::uint32_t peer_streams() const noexcept;
    // Counts a stream for a call about to begin() on this connection.
    void reserve_stream() noexcept { ++h2_->in_use; }
    // Whether the connection ever carried a stream (a call on it is a reuse).
    bool carried() const noexcept { return h2_ != nullptr && h2_->carried; }

private:
    enum class phase : std::uint8_t { connecting, leased, idle, head, body };

    // One stream's state, kept by the connection (not by the call, whose frame may go first): the body it sends and
    // the response it is reading, for the call while it waits.
    struct stream {
        call_state* call = nullptr;     // null once it ended for its call (or the call went away)
        client_response* out = nullptr; // the call's response, while `call` is set
        std::int32_t id = 0;            // 0: free
        unsigned status = 0;            // the final response's :status, once its header block is whole
        bool head_done = false;         // the final header block is whole (fields after it are trailers)
        bool ended = false;             // the response's END_STREAM arrived
        bool queued = false;            // in `done`, to be told to its call
        bool closed = false;            // nghttp2 closed it (its record is freed once settled)
        bool unprocessed = false;       // the server provably did not process it
        std::error_code failed;         // why the stream failed its call (set with `queued`)
        std::string body;               // the request body, the connection's copy
        http::h2_body sending;
        stream* next_free = nullptr;
    };
    struct h2_state {
        std::unique_ptr<http::h2_session> session;
        std::vector<std::unique_ptr<stream>> streams; // every stream record made (they are reused)
        stream* free = nullptr;
        std::vector<stream*> done;          // streams to tell their call of, after receive() returns
        std::vector<stream*> closed;        // streams nghttp2 closed, to free after receive() returns
        std::vector<http::h2_field> fields; // the request's fields (views into the call's parts and `names`)
        std::string names;                  // the caller's field names lower-cased, back to back
        std::string out;                    // frames being written
        std::size_t in_use = 0;             // streams reserved or open
        bool writing = false;
        bool receiving = false;
        bool settling = false;
        bool goaway = false;
        bool carried = false;
        std::int32_t goaway_last = 0;
    };

    void on_connected(int fd, std::error_code ec);
    void on_transport_ready() override;
    void on_transport_data(std::string_view bytes) override;
    void on_transport_end(std::error_code error) override;
    void on_transport_written(std::error_code error) override;
    void on_transport_closed() override;
    // The connect step is over: the protocol is known (h2: its session made and its preface on its way).
    void connected(bool h2);
    void do_parse();
    bool keep_body(std::string_view bytes);
    void complete();
    void fail(std::error_code e);

    // HTTP/2 (client_connection_h2.cpp).
    void h2_start();
    std::error_code h2_begin(call_state& c, const request_parts& parts, client_response& out);
    void h2_abandon(call_state& c) noexcept;
    void h2_receive(std::string_view bytes);
    void h2_flush();
    // Tells the calls of the streams that ended, frees the streams that closed, and offers their room to the pool.
    void h2_settle();
    // The connection is lost: every stream's call fails with `e` (or is told it was not processed).
    void h2_fail_all(std::error_code e);
    void h2_end_stream(stream& s, std::error_code e) noexcept;
    void h2_free(stream& s) noexcept;
    stream* stream_of(std::int32_t id) const noexcept;
    void on_h2_field(std::int32_t stream, std::string_view name, std::string_view value) override;
    void on_h2_headers(std::int32_t stream) override;
    void on_h2_data(std::int32_t stream, std::string_view bytes) override;
    void on_h2_end(std::int32_t stream) override;
    void on_h2_closed(std::int32_t stream, http::h2_error error) override;
    void on_h2_goaway(std::int32_t last_stream, http::h2_error error) override;

    host_pool& pool_;
    net::loop& loop_;
    net::connector connector_;
    std::unique_ptr<net::transport> transport_;
    call_state* call_ = nullptr;
    client_response* out_ = nullptr;
    std::string out_bytes_; // the request being written
    std::string in_;        // bytes received and not yet parsed
    // Its head holds 3 KiB of field views: off the connection's own allocation.
    std::unique_ptr<http::response_reader> reader_;
    std::unique_ptr<h2_state> h2_;
    phase phase_ = phase::connecting;
    bool reusable_ = false;
    bool closing_ = false;
    bool writing_ = false;
    bool handshaking_ = false; // connected, and waiting for TLS to agree on the protocol
    net::clock::time_point created_{};
    net::clock::time_point idle_since_{};
};

} // namespace hotpath::client_detail
