// Asio reads into a transport-owned buffer and hands the bytes to the owner; writes are Asio's async_write.
#include "net/asio_transport.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <algorithm>

namespace hotpath::net {

namespace asio = boost::asio;

namespace {

std::error_code to_std(const boost::system::error_code& ec) {
    return ec ? std::error_code(ec.value(), std::system_category()) : std::error_code{};
}

} // namespace

asio_transport::asio_transport(asio::ip::tcp::socket socket, transport_owner& owner)
    : socket_(std::move(socket)), owner_(owner), buffer_(new char[read_bytes]) {}

void asio_transport::start_reading() {
    want_read_ = true;
    do_read();
}

void asio_transport::do_read() {
    if (reading_ || closed_ || ended_ || !want_read_) {
        return;
    }
    reading_ = true;
    socket_.async_read_some(asio::buffer(buffer_.get(), read_bytes),
                            [this](const boost::system::error_code& ec, std::size_t n) {
                                reading_ = false;
                                if (closed_) {
                                    maybe_closed();
                                    return;
                                }
                                if (ec) {
                                    ended_ = true;
                                    owner_.on_transport_end(ec == asio::error::eof ? std::error_code{} : to_std(ec));
                                    return;
                                }
                                owner_.on_transport_data({buffer_.get(), n});
                                do_read();
                            });
}

void asio_transport::write(std::string_view bytes) {
    writing_ = true;
    write_base_ = bytes_sent_;
    // The completion condition sees the progress before each partial write: it records it and then decides
    // as transfer_all() (the default) does.
    asio::async_write(
        socket_, asio::buffer(bytes.data(), bytes.size()),
        [this](const boost::system::error_code& ec, std::size_t sent) {
            bytes_sent_ = write_base_ + sent;
            return asio::transfer_all()(ec, sent);
        },
        [this](const boost::system::error_code& ec, std::size_t sent) {
            bytes_sent_ = write_base_ + sent;
            writing_ = false;
            if (closed_) {
                maybe_closed();
                return;
            }
            owner_.on_transport_written(to_std(ec));
        });
}

std::uint64_t asio_transport::bytes_acknowledged() noexcept {
    int queued = 0;
    if (!socket_.is_open() || ::ioctl(socket_.native_handle(), SIOCOUTQ, &queued) != 0 || queued < 0) {
        return bytes_sent_;
    }
    return bytes_sent_ - std::min<std::uint64_t>(bytes_sent_, static_cast<std::uint64_t>(queued));
}

void asio_transport::shutdown_send() {
    boost::system::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void asio_transport::close() {
    if (closed_) {
        return;
    }
    closed_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    maybe_closed();
}

peeked asio_transport::peek() noexcept {
    return closed_ ? peeked::end : peek_socket(socket_.native_handle());
}

void asio_transport::maybe_closed() {
    if (!closed_ || reading_ || writing_ || close_reported_) {
        return;
    }
    close_reported_ = true;
    // Posted: close() may be called from inside the owner.
    asio::post(socket_.get_executor(), [this] { owner_.on_transport_closed(); });
}

} // namespace hotpath::net
