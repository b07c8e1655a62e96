// The byte stream under a connection: two implementations (io_uring, epoll) behind one small interface.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <system_error>

namespace hotpath::net {

// What a look at a socket finds, without waiting and consuming nothing.
enum class peeked : std::uint8_t {
    nothing, // no byte and no end pending
    data,    // bytes are pending
    end,     // the peer closed or reset the stream
};

// One recv(MSG_PEEK | MSG_DONTWAIT) of a byte on the connected socket `fd`: one system call, no allocation.
peeked peek_socket(int fd) noexcept;
// Waits on the calling thread until the socket `fd` is ready for `events` (POLLIN, POLLOUT) or `deadline` passes:
// false at the deadline. A poll that fails returns true: the next call on the socket reports the error. For the
// blocking requests of probe and of its TLS stream, never on a loop.
bool wait_for_socket(int fd, short events, std::chrono::steady_clock::time_point deadline) noexcept;
// Of `sent` bytes the kernel took for the connected socket `fd` (-1: closed), those the peer has acknowledged: less
// those still in its send queue (SIOCOUTQ, one system call). `sent` when the queue cannot be read.
std::uint64_t acknowledged_bytes(int fd, std::uint64_t sent) noexcept;

// Implemented by whoever owns a transport (a server or client connection). Called on the owner's loop.
class transport_owner {
public:
    // `bytes` arrived; the view is valid only during the call (copy what you keep).
    virtual void on_transport_data(std::string_view bytes) = 0;
    // No more data will arrive: EOF (empty code) or an error.
    virtual void on_transport_end(std::error_code error) = 0;
    // The last write() finished: all its bytes were sent, or it failed.
    virtual void on_transport_written(std::error_code error) = 0;
    // The transport closed and has nothing in flight: the owner may now destroy it.
    virtual void on_transport_closed() = 0;
    // A transport with a handshake of its own (TLS) finished it: what is written now goes out, data may follow.
    // Called once, before any data; never by a transport without a handshake. The owner times or counts it.
    virtual void on_transport_ready() {}

protected:
    ~transport_owner() = default;
};

// A connected socket owned by one loop. Callbacks are never made from inside a call to the transport.
class transport {
public:
    virtual ~transport() = default;

    // Delivers data until stop_reading() or the end. Idempotent.
    virtual void start_reading() = 0;
    // Backpressure: stop delivering data soon (data already received may still be delivered).
    virtual void stop_reading() = 0;
    // Sends all of `bytes`, which must stay valid and unchanged until on_transport_written. One at a time. After
    // close() it does nothing (and nothing is told), as start_reading() and stop_reading() do.
    virtual void write(std::string_view bytes) = 0;
    // Bytes of write() calls over the transport's life that the peer has acknowledged: those the kernel took,
    // less those still in the socket's send queue (SIOCOUTQ). How a slow reader's progress is measured: the
    // kernel takes bytes in large steps as its buffer frees, the peer acknowledges them as it reads. The count
    // of bytes taken costs an addition per completion; this call costs a system call (for a once-a-second check).
    virtual std::uint64_t bytes_acknowledged() noexcept = 0;
    // Sends FIN after pending writes (for a lingering close); reading goes on.
    virtual void shutdown_send() = 0;
    // Closes the socket, cancelling what is in flight; on_transport_closed follows once nothing is. Idempotent.
    virtual void close() = 0;
    // The socket (-1 once closed), for what only a system call tells (the peer's address).
    virtual int native_handle() const noexcept = 0;
    // Looks at the socket now (peek_socket): whether the peer has ended the stream or sent bytes, even if the
    // loop has not delivered that yet. An end stays pending on the socket, so it is always seen; bytes a
    // receive already took from the socket but not yet delivered are not. After close(): end.
    virtual peeked peek() noexcept = 0;
};

class loop;

// The transport for the connected socket `fd` (which it takes over) on `owner`: on the loop's io_uring, or its epoll on
// a loop without one. Call on the loop's thread.
std::unique_ptr<transport> make_transport(loop& owner, int fd, transport_owner& user);

// Where a connection's transport comes from. A connection never makes its own: its owner (a server's loop, a client's
// pool, a load worker) is given a factory and hands the connection what it makes: the loop's own socket transport,
// or another kind on the same seam (a TLS session over a socket, an in-memory pair in tests).
class transport_factory {
public:
    // The transport for `user` on `l`, on the loop's thread: of the connected socket `fd`, which it takes over, or of
    // no socket (fd -1) for a kind that needs none. Never null.
    virtual std::unique_ptr<transport> make(loop& l, int fd, transport_owner& user) = 0;

protected:
    ~transport_factory() = default;
};

// The factory of make_transport(): the loop's io_uring or epoll. One for the process, stateless, any thread.
transport_factory& socket_transports() noexcept;

} // namespace hotpath::net
