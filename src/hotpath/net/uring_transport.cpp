// Receive completions hand buffer-ring bytes to the owner and recycle the buffer; partial sends continue.
#include <hotpath/net/uring_transport.hpp>

#include <hotpath/net/loop.hpp>

#include <liburing.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hotpath::net {

uring_transport::uring_transport(loop& on, uring& ring, int fd, transport_owner& owner)
    : loop_(on), ring_(ring), fd_(fd), owner_(owner) {
    recv_op_.fn = &uring_transport::on_recv;
    recv_op_.self = this;
    send_op_.fn = &uring_transport::on_send;
    send_op_.self = this;
    cancel_op_.fn = &uring_transport::on_cancel;
    cancel_op_.self = this;
}

uring_transport::~uring_transport() {
    if (fd_ >= 0) {
        ::close(fd_); // only when destroyed without close(): nothing can be in flight then
    }
}

void uring_transport::start_reading() {
    want_read_ = true;
    if (!recv_armed_ && cancels_ == 0 && !ended_ && !closed_) {
        arm();
    }
}

void uring_transport::stop_reading() {
    want_read_ = false;
    if (recv_armed_ && cancels_ == 0) {
        ++cancels_;
        ring_.cancel(&recv_op_, &cancel_op_);
    }
}

void uring_transport::arm() {
    recv_armed_ = true;
    ring_.recv_multishot(fd_, &recv_op_);
}

void uring_transport::write(std::string_view bytes) {
    if (closed_) {
        return; // the owner closed it: nothing is sent, nothing told
    }
    writing_ = bytes;
    sent_ = 0;
    send_pending_ = true;
    ring_.send(fd_, writing_.data(), writing_.size(), &send_op_);
}

std::uint64_t uring_transport::bytes_acknowledged() noexcept {
    return acknowledged_bytes(fd_, bytes_sent_);
}

void uring_transport::shutdown_send() {
    ::shutdown(fd_, SHUT_WR);
}

void uring_transport::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    // Cancels the multishot receive and any send without a system call; the fd is closed once both have
    // completed (maybe_closed), so the kernel sends FIN after the last byte written. Each is cancelled by its own
    // key, which the kernel finds in a hash: a cancel by fd walks every pending operation of the ring, so closing
    // each of 9,000 connections cost as much as all of them (io_cancel_req_match was a quarter of a load's CPU).
    if (cancels_ == 0) {
        if (recv_armed_) {
            ++cancels_;
            ring_.cancel(&recv_op_, &cancel_op_);
        }
        if (send_pending_) {
            ++cancels_;
            ring_.cancel(&send_op_, &cancel_op_);
        }
    }
    maybe_closed();
}

peeked uring_transport::peek() noexcept {
    return closed_ || fd_ < 0 ? peeked::end : peek_socket(fd_);
}

void uring_transport::on_recv(uring_op* o, int res, unsigned flags) {
    auto* self = static_cast<op*>(o)->self;
    if ((flags & IORING_CQE_F_MORE) == 0) {
        self->recv_armed_ = false;
    }
    if (res > 0) {
        if (!self->closed_) {
            self->owner_.on_transport_data(self->ring_.buffer_data(flags, res));
        }
        self->ring_.recycle(flags);
    } else if (res == 0 || (res < 0 && res != -ENOBUFS && res != -ECANCELED)) {
        if (!self->ended_ && !self->closed_) {
            self->ended_ = true;
            self->owner_.on_transport_end(res == 0 ? std::error_code{} : std::error_code(-res, std::system_category()));
        }
        self->ended_ = true;
    }
    // Out of buffers (-ENOBUFS) or a receive that ended while still wanted: arm again; buffers handed back in
    // this batch are available by the time it is submitted.
    if (!self->recv_armed_ && self->want_read_ && self->cancels_ == 0 && !self->ended_ && !self->closed_) {
        self->arm();
    }
    self->maybe_closed();
}

void uring_transport::on_send(uring_op* o, int res, unsigned) {
    auto* self = static_cast<op*>(o)->self;
    if (res >= 0 && !self->closed_) {
        self->sent_ += static_cast<std::size_t>(res);
        self->bytes_sent_ += static_cast<std::size_t>(res);
        if (self->sent_ < self->writing_.size()) {
            self->ring_.send(self->fd_, self->writing_.data() + self->sent_, self->writing_.size() - self->sent_,
                             &self->send_op_);
            return;
        }
    }
    self->send_pending_ = false;
    if (!self->closed_) {
        self->owner_.on_transport_written(res < 0 ? std::error_code(-res, std::system_category()) : std::error_code{});
    }
    self->maybe_closed();
}

void uring_transport::on_cancel(uring_op* o, int, unsigned) {
    auto* self = static_cast<op*>(o)->self;
    --self->cancels_;
    if (!self->recv_armed_ && self->want_read_ && !self->ended_ && !self->closed_) {
        self->arm();
    }
    self->maybe_closed();
}

// The fd is closed only when no operation refers to it; the owner hears of it from a fresh handler, so it may
// destroy this transport then.
void uring_transport::maybe_closed() {
    if (!closed_ || recv_armed_ || send_pending_ || cancels_ != 0 || close_reported_) {
        return;
    }
    close_reported_ = true;
    ring_.close(fd_);
    fd_ = -1;
    loop_.defer([owner = &owner_] { owner->on_transport_closed(); });
}

} // namespace hotpath::net
