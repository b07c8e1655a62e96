// The portable transport: Boost.Asio's reactor (epoll on Linux), for kernels or sandboxes without io_uring.
#pragma once

#include "net/transport.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <memory>

namespace hotpath::net {

class asio_transport final : public transport {
public:
    asio_transport(boost::asio::ip::tcp::socket socket, transport_owner& owner);

    void start_reading() override;
    void stop_reading() override { want_read_ = false; }
    void write(std::string_view bytes) override;
    std::uint64_t bytes_acknowledged() noexcept override;
    void shutdown_send() override;
    void close() override;
    peeked peek() noexcept override;

private:
    static constexpr std::size_t read_bytes = 16 * 1024;

    void do_read();
    void maybe_closed();

    boost::asio::ip::tcp::socket socket_;
    transport_owner& owner_;
    std::unique_ptr<char[]> buffer_;
    std::uint64_t bytes_sent_ = 0; // taken by the kernel, over the transport's life
    std::uint64_t write_base_ = 0; // bytes_sent_ when the write in flight began
    bool want_read_ = false;
    bool reading_ = false;
    bool writing_ = false;
    bool closed_ = false;
    bool ended_ = false;
    bool close_reported_ = false;
};

} // namespace hotpath::net
