// Opening a SO_REUSEPORT listener (claiming or joining its port) and its accept loop on either backend.
#include <hotpath/net/listener.hpp>

#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace hotpath::net {

namespace {

// A socket closed on every early return.
class socket_guard {
public:
    explicit socket_guard(int fd) noexcept : fd_(fd) {}
    ~socket_guard() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    socket_guard(const socket_guard&) = delete;
    socket_guard& operator=(const socket_guard&) = delete;
    int get() const noexcept { return fd_; }
    int release() noexcept { return std::exchange(fd_, -1); }

private:
    int fd_;
};

std::error_code last_error() noexcept {
    return {errno, std::system_category()};
}

// Accepts this many connections per readiness event before the loop's other work gets its turn.
constexpr int accepts_per_event = 64;

} // namespace

result<std::unique_ptr<listener>> listener::open(loop& owner, const endpoint& address, std::uint16_t port, int backlog,
                                                 port_share share) {
    endpoint at = address;
    at.set_port(port);
    socket_guard s(::socket(at.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP));
    if (s.get() < 0) {
        return last_error();
    }
    int one = 1;
    if (::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
        return last_error();
    }
    const auto reuse_port = [&s, &one] {
        return ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0;
    };
    if (share == port_share::join && !reuse_port()) {
        return last_error();
    }
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux: no system call per connection for it.
    if (::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
        return last_error();
    }
    // Claiming, the bind itself is the check that no other socket holds the port: a socket without SO_REUSEPORT
    // cannot share it with any. SO_REUSEPORT set after the bind and before listen() is what the kernel looks at
    // when the joining sockets bind, and puts this socket in their group when it starts listening.
    if (::bind(s.get(), reinterpret_cast<const sockaddr*>(&at.address), at.length) != 0) {
        return last_error();
    }
    if (share == port_share::claim && !reuse_port()) {
        return last_error();
    }
    if (::listen(s.get(), backlog) != 0) {
        return last_error();
    }
    endpoint bound;
    bound.length = sizeof(bound.address);
    if (::getsockname(s.get(), reinterpret_cast<sockaddr*>(&bound.address), &bound.length) != 0) {
        return last_error();
    }
    const int fd = s.release();
    return std::unique_ptr<listener>(new listener(owner, fd, bound.port()));
}

listener::listener(loop& owner, int fd, std::uint16_t port)
    : owner_(owner), fd_(fd), port_(port), pause_timer_(owner) {}

bool listener::pause_on(int error, void (listener::*resume)()) {
    if (error != EMFILE && error != ENFILE && error != ENOBUFS && error != ENOMEM) {
        return false;
    }
    if (pauses_ != nullptr) {
        pauses_->add();
    }
    pause_timer_.arm_after(resource_pause, [this, resume] {
        if (!closed_) {
            (this->*resume)();
        }
    });
    return true;
}

listener::~listener() {
    if (poller_ != nullptr) {
        if (armed_ && fd_ >= 0) {
            poller_->remove(fd_, &readable_op_);
        }
        poller_->forget(&readable_op_);
    }
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void listener::start(accept_fn on_accept) {
    on_accept_ = std::move(on_accept);
    if (uring* ring = owner_.ring()) {
        ring_ = ring;
        accept_op_.fn = &listener::on_uring_accept;
        accept_op_.self = this;
        cancel_op_.fn = &listener::on_uring_cancel;
        cancel_op_.self = this;
        arm_uring_accept();
        return;
    }
    poller_ = owner_.poller();
    readable_op_.fn = &listener::on_readable;
    readable_op_.self = this;
    arm_epoll_accept();
}

void listener::arm_uring_accept() {
    if (armed_ || closed_) {
        return;
    }
    armed_ = true;
    ring_->accept_multishot(fd_, &accept_op_);
}

// Level-triggered: connections left in the backlog after this event's share raise the next one.
void listener::arm_epoll_accept() {
    if (armed_ || closed_) {
        return;
    }
    if (const auto ec = poller_->add(fd_, EPOLLIN, &readable_op_)) {
        // Out of kernel memory for the registration: try again after a pause, as for accept itself.
        if (!pause_on(ec.value(), &listener::arm_epoll_accept)) {
            std::fprintf(stderr, "hotpath: cannot watch the listening socket: %s\n", ec.message().c_str());
            std::abort();
        }
        return;
    }
    armed_ = true;
}

void listener::on_readable(epoll_op* o, std::uint32_t) {
    listener* self = static_cast<poll_op*>(o)->self;
    for (int i = 0; i < accepts_per_event && !self->closed_; ++i) {
        const int fd = ::accept4(self->fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            self->on_accept_(fd);
            continue;
        }
        const int error = errno;
        if (error == EAGAIN || error == EWOULDBLOCK) {
            return;
        }
        // Out of descriptors: stop watching until the pause ends (the connection stays in the backlog); other
        // failures (ECONNABORTED, EPERM from a firewall, ...) concern that one connection only.
        if (error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM) {
            self->poller_->remove(self->fd_, &self->readable_op_);
            self->armed_ = false;
            self->pause_on(error, &listener::arm_epoll_accept);
            return;
        }
    }
}

void listener::on_uring_accept(uring_op* o, int res, unsigned flags) {
    listener* self = static_cast<op*>(o)->self;
    if ((flags & IORING_CQE_F_MORE) == 0) {
        self->armed_ = false;
    }
    if (res >= 0) {
        if (self->closed_) {
            ::close(res);
        } else {
            self->on_accept_(res);
        }
    }
    // Re-arm after the multishot ended: at once, or after a pause when out of descriptors (-EMFILE ends it and
    // would end the next one at once while the connection waits in the backlog).
    if (!self->armed_ && !self->closed_ && (res >= 0 || !self->pause_on(-res, &listener::arm_uring_accept))) {
        self->arm_uring_accept();
    }
    self->maybe_close_fd();
}

void listener::on_uring_cancel(uring_op* o, int, unsigned) {
    listener* self = static_cast<op*>(o)->self;
    self->cancel_pending_ = false;
    self->maybe_close_fd();
}

void listener::maybe_close_fd() {
    if (closed_ && !armed_ && !cancel_pending_ && fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void listener::close() noexcept {
    if (closed_) {
        return;
    }
    closed_ = true;
    pause_timer_.cancel();
    if (ring_ != nullptr) {
        if (armed_ && !cancel_pending_) {
            cancel_pending_ = true;
            ring_->cancel(&accept_op_, &cancel_op_);
        }
        // Stop new handshakes at once; the fd itself closes when the ring lets go of it.
        if (fd_ >= 0) {
            ::shutdown(fd_, SHUT_RDWR);
        }
        maybe_close_fd();
        return;
    }
    if (poller_ != nullptr && armed_) {
        poller_->remove(fd_, &readable_op_); // before the close: a forked child may hold the descriptor too
        armed_ = false;
    }
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

} // namespace hotpath::net
