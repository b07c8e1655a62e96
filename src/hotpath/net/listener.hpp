// A listening socket on one loop: SO_REUSEPORT so each loop of a server accepts its own share of connections.
#pragma once

#include <hotpath/core/counter.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/net/address.hpp>
#include <hotpath/net/epoll.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/uring.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hotpath::net {

// How a listener takes its port. A server's first listener claims it: it binds without SO_REUSEPORT, so that a
// port any other socket holds, of this process or another, hotpath or not, is refused (EADDRINUSE) as nginx or
// Kestrel would; it sets SO_REUSEPORT once bound. The others join it: SO_REUSEPORT before binding, so that they
// share the claimed port and the kernel spreads its connections over them.
enum class port_share : std::uint8_t { claim, join };

class listener {
public:
    using accept_fn = std::function<void(int fd)>;

    // Binds address:port on `owner` with SO_REUSEADDR (a restart finds the port free despite TIME_WAIT), claiming
    // or joining the port as `share` says. Port 0 picks a free port (claim only); open the other loops' listeners
    // on port() with port_share::join. Errors are values: std::errc::address_in_use when the port is taken.
    //
    // What remains: once claimed, the port has SO_REUSEPORT set, and the kernel lets any socket of the same
    // user that sets SO_REUSEPORT itself join it (that is the option's contract, the same for nginx's
    // `reuseport`). A hotpath server never does, since it claims first; nothing is racy in the claim itself.
    static result<std::unique_ptr<listener>> open(loop& owner, const endpoint& address, std::uint16_t port, int backlog,
                                                  port_share share);

    std::uint16_t port() const noexcept { return port_; }

    // Accepts until close(), calling on_accept on the owner loop with each connected socket, which it owns
    // (close-on-exec, non-blocking on epoll, TCP_NODELAY inherited from the listener): with one multishot accept on the
    // loop's io_uring, or accept4 as the loop's epoll reports the socket readable. Call on the owner loop's
    // thread.
    void start(accept_fn on_accept);
    // Stops accepting and closes the socket; call on the owner loop's thread.
    void close() noexcept;

    // Out of file descriptors or kernel memory, accept() fails at once for as long as a connection waits in
    // the backlog: retrying straight away would spin the loop. Accepting pauses this long instead (as nginx
    // does), the backlog keeps the waiting connections, and `pauses` counts each pause.
    static constexpr std::chrono::milliseconds resource_pause{100};
    void count_pauses_in(counter& pauses) noexcept { pauses_ = &pauses; }

    ~listener();

private:
    listener(loop& owner, int fd, std::uint16_t port);
    static void on_uring_accept(uring_op* op, int res, unsigned flags);
    static void on_uring_cancel(uring_op* op, int res, unsigned flags);
    void maybe_close_fd();
    void arm_uring_accept();
    static void on_readable(epoll_op* op, std::uint32_t events);
    void arm_epoll_accept();
    // True when `error` (an errno) is worth a pause; then resumes by calling `resume` after resource_pause.
    bool pause_on(int error, void (listener::*resume)());

    struct op : uring_op {
        listener* self = nullptr;
    };
    struct poll_op : epoll_op {
        listener* self = nullptr;
    };

    loop& owner_;
    int fd_ = -1;
    std::uint16_t port_;
    accept_fn on_accept_;
    bool closed_ = false;
    timer pause_timer_;
    counter* pauses_ = nullptr;

    // io_uring
    uring* ring_ = nullptr;
    op accept_op_;
    op cancel_op_;
    bool armed_ = false; // also: registered with the epoll
    bool cancel_pending_ = false;

    // epoll
    epoll* poller_ = nullptr;
    poll_op readable_op_;
};

} // namespace hotpath::net
