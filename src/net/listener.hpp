// A listening socket on one loop: SO_REUSEPORT so each loop accepts its own share of connections.
#pragma once

#include "core/result.hpp"
#include "net/loop.hpp"

#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hotpath::net {

class listener {
public:
    using accept_fn = std::function<void(boost::asio::ip::tcp::socket)>;

    // Binds address:port on `owner` with SO_REUSEADDR and SO_REUSEPORT. Port 0 picks a free port; open the
    // other loops' listeners on port() to share it. Errors (address in use, bad address) are values.
    static result<std::unique_ptr<listener>> open(loop& owner, const std::string& address, std::uint16_t port,
                                                  int backlog);

    std::uint16_t port() const noexcept { return port_; }

    // Accepts until close(), calling on_accept on the owner loop with each new socket (TCP_NODELAY set).
    // Call on the owner loop's thread.
    void start(accept_fn on_accept);
    // Stops accepting and closes the socket; call on the owner loop's thread.
    void close() noexcept;

private:
    listener(loop& owner, boost::asio::ip::tcp::acceptor acceptor, std::uint16_t port);
    void do_accept();

    loop& owner_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::uint16_t port_;
    accept_fn on_accept_;
    bool closed_ = false;
};

} // namespace hotpath::net
