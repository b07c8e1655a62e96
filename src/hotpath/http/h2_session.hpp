// HTTP/2 framing (RFC 9113) as bytes in, bytes out: nghttp2 (Debian's libnghttp2) through its memory interface, for
// a client or a server, with no socket and no loop. Its owner feeds it what the transport read (receive), sends what
// it produces (produce), and hears of streams through h2_events. The only file that includes nghttp2.h is
// h2_session.cpp; its memory goes through an allocator of its own that counts what the session holds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

namespace hotpath::http {

// What a session of nghttp2 refused, as nghttp2's own error (its message is nghttp2's text).
const std::error_category& h2_category() noexcept;

// Whether `e`, from h2_session::receive, is one of nghttp2's own defences: more CONTINUATIONs than a header block may
// have (CVE-2024-27316), or frames to acknowledge (PING, SETTINGS) piling up unread.
bool h2_flooded(std::error_code e) noexcept;

// A field of an HTTP/2 message: the pseudo-fields (":method", ":path", ":status", ...) first, names in lower case.
struct h2_field {
    std::string_view name;
    std::string_view value;
};

// HTTP/2's error codes (RFC 9113 §7), as RST_STREAM and GOAWAY carry them.
enum class h2_error : std::uint32_t {
    no_error = 0x0,
    protocol_error = 0x1,
    internal_error = 0x2,
    flow_control_error = 0x3,
    settings_timeout = 0x4,
    stream_closed = 0x5,
    frame_size_error = 0x6,
    refused_stream = 0x7,
    cancel = 0x8,
    compression_error = 0x9,
    connect_error = 0xa,
    enhance_your_calm = 0xb,
    inadequate_security = 0xc,
    http_1_1_required = 0xd,
};

// What the session tells its owner, from inside receive() and produce(): an owner records what it hears and acts
// once the call has returned (it never calls the session back from here).
class h2_events {
public:
    // One field of a message's header block (or of its trailers), in order.
    virtual void on_h2_field(std::int32_t stream, std::string_view name, std::string_view value) = 0;
    // The header block of `stream` is whole (HEADERS and its CONTINUATIONs).
    virtual void on_h2_headers(std::int32_t stream) = 0;
    // Body bytes of `stream`, as they arrive.
    virtual void on_h2_data(std::int32_t stream, std::string_view bytes) = 0;
    // The peer's side of `stream` ended (END_STREAM): the message is whole.
    virtual void on_h2_end(std::int32_t stream) = 0;
    // `stream` is closed: `error` is no_error when both sides ended, else why it was reset (by either side).
    virtual void on_h2_closed(std::int32_t stream, h2_error error) = 0;
    // The peer is going away: streams above `last_stream` were not and will not be processed.
    virtual void on_h2_goaway(std::int32_t last_stream, h2_error error) = 0;

protected:
    ~h2_events() = default;
};

// A body its caller keeps (unchanged, with this record) until its stream is closed: nghttp2 reads it as the peer's
// windows allow, and `sent` says how far it went. `more`: the caller will add to it (a body streamed as it is made):
// once all of `bytes` is sent the stream waits, until the caller has pointed `bytes` at more (or cleared `more`) and
// called h2_session::resume.
struct h2_body {
    std::string_view bytes;
    std::size_t sent = 0;
    bool more = false;
};

// The SETTINGS a session sends, and its connection's receive window. Kestrel's defaults (Http2Limits).
struct h2_settings {
    std::uint32_t max_concurrent_streams = 100;
    std::uint32_t initial_window_size = 768 * 1024; // each stream's receive window
    std::uint32_t connection_window = 1024 * 1024;  // the connection's receive window
    std::uint32_t max_frame_size = 16 * 1024;
    std::uint32_t header_table_size = 4096;
    std::uint32_t max_header_list_size = 32 * 1024;
    // Whether the owner gives the peer's DATA back to flow control itself (consume()), as it is done with it, so that
    // what a peer may send is bounded by what the owner holds. Otherwise nghttp2 gives it back as it arrives.
    bool consume_by_hand = false;
    // nghttp2's own limit on the peer's RST_STREAM (CANCEL) frames, a token bucket: `burst`, refilled at `rate` a
    // second; past it, a GOAWAY. 0: nghttp2's defaults (1,000 and 33).
    std::uint64_t stream_reset_burst = 0;
    std::uint64_t stream_reset_rate = 0;
};

// What the peer's frames cost beyond the requests they carry, counted as their headers arrive: the defences against
// HTTP/2's floods (server/h2_connection.cpp) read it after each receive().
struct h2_tally {
    // SETTINGS, PING, WINDOW_UPDATE, PRIORITY and unknown frames, and empty DATA or CONTINUATION frames that end
    // nothing: frames that carry no request forward.
    std::uint64_t control_frames = 0;
    // A header block began (HEADERS without END_HEADERS) and its last CONTINUATION has not come.
    bool header_block_open = false;
};

class h2_session {
public:
    enum class role { client, server };

    // A session that sends `settings` first (a client: after the connection preface, which produce() writes). Null
    // only when nghttp2 cannot make one (out of memory).
    static std::unique_ptr<h2_session> make(role r, h2_events& events, const h2_settings& settings = {});
    ~h2_session();
    h2_session(const h2_session&) = delete;
    h2_session& operator=(const h2_session&) = delete;

    // Takes bytes the peer sent. An error (an h2_category code) means the connection is broken: what produce()
    // gives (a GOAWAY where nghttp2 queued one) is the last to send before closing.
    std::error_code receive(std::string_view bytes);
    // Appends the frames ready to go to `out`, until none are left or `out` holds at least `high_water` bytes. An
    // error (an h2_category code) means the session is broken.
    std::error_code produce(std::string& out, std::size_t high_water = 256 * 1024);
    // Whether the session still reads, or has frames to write: neither, and the connection may close.
    bool wants_read() const noexcept;
    bool wants_write() const noexcept;
    // A client: whether a new stream may be opened now (not after the peer's GOAWAY, nor past its stream ids).
    bool may_open_stream() const noexcept;

    // A client's request: its fields (":method", ":scheme", ":authority", ":path" first) and its body (copied; none
    // when empty). The new stream's id, or a negative nghttp2 error (the peer's GOAWAY, streams exhausted).
    std::int32_t request(std::span<const h2_field> fields, std::string_view body = {});
    // The same, with no copy: `body` (null for none) is the caller's until on_h2_closed of the stream, and `user`
    // is the stream's own pointer for stream_user(). What a load generator sends many times a second.
    std::int32_t request(std::span<const h2_field> fields, h2_body* body, void* user);
    // The pointer given with the stream's request() or set_stream_user(), or null (an unknown or closed stream, or
    // none given).
    void* stream_user(std::int32_t stream) const noexcept;
    // A server's pointer for a stream the peer opened, from its first on_h2_field on (the one call an owner may make
    // from inside h2_events: it only records). False for an unknown stream.
    bool set_stream_user(std::int32_t stream, void* user) noexcept;
    // From inside on_h2_field: the connection ends here (an HPACK bomb, a header block far past the header limits).
    // nghttp2 stops decoding at once, so the block's rest costs nothing; receive() returns an error and the owner
    // sends its GOAWAY (go_away) before the connection closes.
    void cut_in_fields() noexcept;
    // The peer's SETTINGS_MAX_CONCURRENT_STREAMS (100, nghttp2's assumption, until its SETTINGS arrive).
    std::uint32_t peer_max_concurrent_streams() const noexcept;
    // Whether the peer's first SETTINGS has arrived.
    bool peer_settings_received() const noexcept;
    // A server's response on `stream`: its fields (":status" first) and its body (copied).
    std::error_code respond(std::int32_t stream, std::span<const h2_field> fields, std::string_view body = {});
    // The same, with no copy: `body` (null for none) is the caller's until on_h2_closed of the stream. What a server
    // answers many times a second.
    std::error_code respond(std::int32_t stream, std::span<const h2_field> fields, h2_body* body);
    // A body given with `more` has more to send (or its end): the stream sends again.
    std::error_code resume(std::int32_t stream);
    // With h2_settings::consume_by_hand: `bytes` of DATA received on `stream` are done with, and the peer may send as
    // many more (WINDOW_UPDATE, on the stream and the connection). The stream may be closed: the connection's
    // window still takes them. Like set_stream_user, it may be called from inside h2_events.
    std::error_code consume(std::int32_t stream, std::size_t bytes);
    // Only the connection's window takes them back (the stream's stays shut).
    std::error_code consume_connection(std::size_t bytes);
    // Resets `stream` with `error` (RST_STREAM).
    std::error_code reset(std::int32_t stream, h2_error error);
    // Ends the connection: a GOAWAY with `error` and the last stream processed; produce() then writes it.
    std::error_code go_away(h2_error error);
    // A server's graceful end (RFC 9113 §6.8): a GOAWAY with no error and the last stream it has seen; the streams
    // up to it go on to their end, later ones are ignored. The connection may close once none is open.
    std::error_code shut_down();

    // The peer's frames so far (see h2_tally).
    const h2_tally& tally() const noexcept;
    // Whether this side sent a GOAWAY with an error (nghttp2's own defences among them): the connection is to close.
    bool failed_away() const noexcept;

    // For an idle connection (no stream open, everything produced written): frees the small blocks the session keeps
    // for reuse, and gives the pages of its large blocks back to the kernel where their bytes are dead or zero (the
    // outbound frame buffer, an empty stream map; see h2_session.cpp's allocator), once after each use. Returns the
    // bytes of pages given back.
    std::size_t trim() noexcept;

    // Bytes nghttp2 holds for this session right now (its allocations through the session's allocator).
    std::size_t bytes_held() const noexcept;

    struct impl;

private:
    explicit h2_session(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

} // namespace hotpath::http
