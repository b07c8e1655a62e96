// Readiness edges mark the socket readable or writable; reads drain it into the loop's buffer, writes go out at
// once and wait for an EPOLLOUT edge only when the socket's buffer is full.
#include <hotpath/net/epoll_transport.hpp>

#include <hotpath/net/loop.hpp>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hotpath::net {

namespace {

// Reads per turn for one socket before others get theirs: a peer that sends without pause cannot hold the loop.
constexpr int reads_per_turn = 4;

std::error_code errno_code(int e) noexcept {
    return {e, std::system_category()};
}

} // namespace

epoll_transport::epoll_transport(loop& on, epoll& poller, int fd, transport_owner& owner)
    : loop_(on), poller_(poller), fd_(fd), owner_(owner) {
    op_.fn = &epoll_transport::on_event;
    op_.self = this;
    register_error_ = poller_.add(fd_, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, &op_);
}

epoll_transport::~epoll_transport() {
    if (fd_ >= 0) { // destroyed without close()
        poller_.remove(fd_, &op_);
        ::close(fd_);
    }
    poller_.forget(&op_); // a make_ready() asked after close() may still be queued
}

void epoll_transport::start_reading() {
    want_read_ = true;
    if (readable_ || register_error_) {
        schedule();
    }
}

void epoll_transport::schedule() {
    if (!scheduled_ && !close_reported_) {
        scheduled_ = true;
        poller_.make_ready(&op_);
    }
}

// The bytes go to the kernel now: by the time the loop sleeps they are on their way, as on the ring, where the
// send is submitted with the turn's wait. Only a full socket buffer makes the rest wait for EPOLLOUT.
void epoll_transport::write(std::string_view bytes) {
    if (closed_) {
        return; // the owner closed it: nothing is sent, nothing told
    }
    writing_ = bytes;
    sent_ = 0;
    write_pending_ = true;
    write_error_ = {};
    if (writable_) {
        do_send();
    }
}

void epoll_transport::do_send() {
    while (sent_ < writing_.size()) {
        const ssize_t n = ::send(fd_, writing_.data() + sent_, writing_.size() - sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n >= 0) {
            sent_ += static_cast<std::size_t>(n);
            bytes_sent_ += static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            writable_ = false; // the next EPOLLOUT edge resumes
            return;
        }
        write_error_ = errno_code(errno);
        break;
    }
    write_pending_ = false;
    written_unreported_ = true;
    schedule();
}

void epoll_transport::on_event(epoll_op* o, std::uint32_t events) {
    auto* self = static_cast<op*>(o)->self;
    if ((events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        self->readable_ = true;
    }
    if ((events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
        self->peer_done_ = true;
    }
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0) {
        self->writable_ = true;
    }
    if (events == 0) {
        self->scheduled_ = false;
    }
    self->do_progress();
}

// Whatever the state allows: the rest of a write, telling of a finished one, reading. The owner may close
// from any of its callbacks, so each step looks at closed_ again.
void epoll_transport::do_progress() {
    if (!closed_ && write_pending_ && writable_) {
        do_send();
    }
    if (!closed_ && written_unreported_) {
        written_unreported_ = false;
        owner_.on_transport_written(write_error_);
    }
    if (!closed_ && want_read_ && !ended_ && register_error_) {
        ended_ = true;
        owner_.on_transport_end(register_error_);
    }
    if (!closed_ && want_read_ && readable_ && !ended_) {
        do_read();
    }
    maybe_closed();
}

void epoll_transport::do_read() {
    const std::span<char> buffer = poller_.read_buffer();
    for (int reads = 0; want_read_ && readable_ && !ended_ && !closed_; ++reads) {
        if (reads == reads_per_turn) {
            schedule(); // more may be waiting: the rest after the other sockets' turn
            return;
        }
        const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (n > 0) {
            // A short read drained the socket: bytes that arrive later raise a new edge. Not so the end of the
            // stream, which may have come with the edge that brought these bytes: then read on until recv says it.
            if (static_cast<std::size_t>(n) < buffer.size() && !peer_done_) {
                readable_ = false;
            }
            owner_.on_transport_data({buffer.data(), static_cast<std::size_t>(n)});
        } else if (n == 0) {
            ended_ = true;
            owner_.on_transport_end({});
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            readable_ = false;
        } else if (errno != EINTR) {
            ended_ = true;
            owner_.on_transport_end(errno_code(errno));
        }
    }
}

std::uint64_t epoll_transport::bytes_acknowledged() noexcept {
    return acknowledged_bytes(fd_, bytes_sent_);
}

void epoll_transport::shutdown_send() {
    ::shutdown(fd_, SHUT_WR);
}

void epoll_transport::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    maybe_closed();
}

peeked epoll_transport::peek() noexcept {
    return closed_ || fd_ < 0 ? peeked::end : peek_socket(fd_);
}

// Nothing is ever in flight on epoll: the socket closes at once, and the owner hears of it from a fresh call, so it
// may destroy this transport then. It leaves the epoll first: a close() takes a descriptor out of an epoll only when
// no other process holds it, and a child forked by anything in the process (system(), popen()) holds every
// descriptor until its exec; events for the closed socket would then keep naming this op.
void epoll_transport::maybe_closed() {
    if (!closed_ || close_reported_) {
        return;
    }
    close_reported_ = true;
    poller_.remove(fd_, &op_);
    scheduled_ = false;
    ::close(fd_);
    fd_ = -1;
    loop_.defer([owner = &owner_] { owner->on_transport_closed(); });
}

} // namespace hotpath::net
