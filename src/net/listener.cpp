// Opening a SO_REUSEPORT listener (claiming or joining its port) and its accept loop.
#include "net/listener.hpp"

#include <boost/asio/socket_base.hpp>

#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace hotpath::net {

namespace asio = boost::asio;
using asio::ip::tcp;

result<std::unique_ptr<listener>> listener::open(loop& owner, const asio::ip::address& address, std::uint16_t port,
                                                 int backlog, port_share share) {
    boost::system::error_code ec;
    tcp::endpoint endpoint{address, port};
    tcp::acceptor acceptor{owner.context()};
    auto fail = [](const boost::system::error_code& e) { return std::error_code(e.value(), std::system_category()); };
    if (acceptor.open(endpoint.protocol(), ec); ec) {
        return fail(ec);
    }
    if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
        return fail(ec);
    }
    int one = 1;
    const auto reuse_port = [&acceptor, &one] {
        return ::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0;
    };
    if (share == port_share::join && !reuse_port()) {
        return std::error_code(errno, std::system_category());
    }
    // Accepted sockets inherit TCP_NODELAY from the listener on Linux: no system call per connection for it.
    if (::setsockopt(acceptor.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
        return std::error_code(errno, std::system_category());
    }
    // Claiming, the bind itself is the check that no other socket holds the port: a socket without SO_REUSEPORT
    // cannot share it with any. SO_REUSEPORT set after the bind and before listen() is what the kernel looks at
    // when the joining sockets bind, and puts this socket in their group when it starts listening.
    if (acceptor.bind(endpoint, ec); ec) {
        return fail(ec);
    }
    if (share == port_share::claim && !reuse_port()) {
        return std::error_code(errno, std::system_category());
    }
    if (acceptor.listen(backlog, ec); ec) {
        return fail(ec);
    }
    const std::uint16_t bound = acceptor.local_endpoint(ec).port();
    if (ec) {
        return fail(ec);
    }
    return std::unique_ptr<listener>(new listener(owner, std::move(acceptor), bound));
}

listener::listener(loop& owner, tcp::acceptor acceptor, std::uint16_t port)
    : owner_(owner), acceptor_(std::move(acceptor)), port_(port), pause_timer_(owner) {}

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

void listener::start(accept_fn on_accept) {
    on_accept_ = std::move(on_accept);
    do_accept();
}

listener::~listener() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

void listener::start(uring& ring, accept_fd_fn on_accept) {
    ring_ = &ring;
    on_accept_fd_ = std::move(on_accept);
    boost::system::error_code ec;
    fd_ = acceptor_.release(ec); // leaves Asio's epoll: the ring does the waiting
    accept_op_.fn = &listener::on_uring_accept;
    accept_op_.self = this;
    cancel_op_.fn = &listener::on_uring_cancel;
    cancel_op_.self = this;
    arm_uring_accept();
}

void listener::arm_uring_accept() {
    if (armed_ || closed_) {
        return;
    }
    armed_ = true;
    ring_->accept_multishot(fd_, &accept_op_);
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
            self->on_accept_fd_(res);
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
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

void listener::do_accept() {
    acceptor_.async_accept(owner_.context(), [this](const boost::system::error_code& ec, tcp::socket socket) {
        if (closed_) {
            return;
        }
        if (!ec) {
            on_accept_(std::move(socket));
        }
        // Out of descriptors: pause (the connection stays in the backlog); other failures concern that one
        // connection only.
        if (!ec || !pause_on(ec.value(), &listener::do_accept)) {
            do_accept();
        }
    });
}

} // namespace hotpath::net
