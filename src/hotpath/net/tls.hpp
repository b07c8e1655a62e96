// TLS on the transport seam (transport.hpp): a TLS session (OpenSSL 3) over any other transport, the loop's socket
// transports or an in-memory pair, for servers and clients alike. The session reads and writes through memory BIOs,
// so that a handshake, a read and a write never block the loop: the inner transport carries the records, this one
// hands its owner the plain bytes. No OpenSSL header here.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/net/tls_options.hpp>
#include <hotpath/net/transport.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

struct ssl_ctx_st;

namespace hotpath::net {

// An OpenSSL context, shared by every session made from it, on any loop. Its client sessions for resumption are
// kept here, one per server name.
class tls_context {
public:
    static result<std::shared_ptr<tls_context>, problem> client(const tls_client_options& o);
    static result<std::shared_ptr<tls_context>, problem> server(const tls_server_options& o);
    ~tls_context();
    tls_context(const tls_context&) = delete;
    tls_context& operator=(const tls_context&) = delete;

    ssl_ctx_st* native() const noexcept;
    bool is_server() const noexcept;

    struct impl;

private:
    friend class tls_transports;
    friend class tls_stream;
    explicit tls_context(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

// What one session did, for the load's counts and probe's phases.
struct tls_session_info {
    bool done = false;    // the handshake completed
    bool resumed = false; // ... with a resumed session (no certificate exchange)
    std::string alpn;     // the protocol agreed on, or empty
    std::string version;  // "TLSv1.3"
};

// A transport that is a TLS session: what it reads and writes are plain bytes; under it, the transport the inner
// factory makes carries the records. The owner's callbacks follow the transport contract (never from inside a call
// to the transport); a handshake failure ends the stream (on_transport_end) and fails a write waiting for it, with a
// tls_errc. `info()` says what the handshake agreed.
class tls_transport : public transport {
public:
    virtual tls_session_info info() const = 0;
    // Whether the handshake resumed a session (cheap: no allocation).
    virtual bool resumed() const noexcept = 0;
    // The protocol agreed through ALPN ("h2", "http/1.1"), or empty: none, or no handshake done (no allocation).
    virtual std::string_view alpn() const noexcept = 0;
};

// Makes TLS transports over what `inner` makes, for a server (a session that accepts) or a client (a session that
// connects to `server_name`: its SNI where it is a name, and what the certificate must be for).
class tls_transports final : public transport_factory {
public:
    tls_transports(std::shared_ptr<tls_context> context, transport_factory& inner, std::string server_name = {});
    std::unique_ptr<transport> make(loop& l, int fd, transport_owner& user) override;
    // Sessions made from now on use `context` (a reloaded certificate); those made before keep theirs. On the
    // thread that calls make().
    void set_context(std::shared_ptr<tls_context> context) noexcept { context_ = std::move(context); }

private:
    std::shared_ptr<tls_context> context_;
    transport_factory& inner_;
    std::string server_name_;
};

// A client TLS session over a connected socket, driven by its caller one blocking call at a time, each waiting at
// most until a deadline: for probe, whose requests go one after another on the calling thread with each phase timed.
// The loop-less counterpart of tls_transports: the same context (verification, SNI, resumption) and failure classes.
class tls_stream {
public:
    using deadline = std::chrono::steady_clock::time_point;

    // Handshakes as a client of `context` for `server_name` over the connected non-blocking socket `fd` (which
    // stays the caller's, and must outlive the stream). A tls_errc, errc::timeout, or the socket's error.
    static result<std::unique_ptr<tls_stream>> connect(std::shared_ptr<tls_context> context, int fd,
                                                       const std::string& server_name, deadline until);
    ~tls_stream();
    tls_stream(const tls_stream&) = delete;
    tls_stream& operator=(const tls_stream&) = delete;

    // Sends all of `bytes`.
    std::error_code write(std::string_view bytes, deadline until);
    // Reads what arrived, at most `room` bytes: how many, 0 at the stream's end (a close_notify or the socket's).
    result<std::size_t> read(char* into, std::size_t room, deadline until);
    tls_session_info info() const;

    struct impl;

private:
    explicit tls_stream(std::unique_ptr<impl> p) noexcept;
    std::unique_ptr<impl> impl_;
};

// Whether this kernel offers kernel TLS (the `tls` upper-layer protocol on a TCP socket), asked of it on a loopback
// connection: one line for a person, that also says what hotpath does about it. Sessions here encrypt in user space
// (memory BIOs, whatever the kernel offers).
std::string kernel_tls_status();

} // namespace hotpath::net
