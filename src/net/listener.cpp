// Opening a SO_REUSEPORT listener and its accept loop.
#include "net/listener.hpp"

#include <boost/asio/socket_base.hpp>

#include <sys/socket.h>

namespace hotpath::net {

namespace asio = boost::asio;
using asio::ip::tcp;

result<std::unique_ptr<listener>> listener::open(loop& owner, const std::string& address, std::uint16_t port,
                                                 int backlog) {
    boost::system::error_code ec;
    const auto ip = asio::ip::make_address(address, ec);
    if (ec) {
        return std::error_code(ec.value(), std::system_category());
    }
    tcp::endpoint endpoint{ip, port};
    tcp::acceptor acceptor{owner.context()};
    auto fail = [](const boost::system::error_code& e) { return std::error_code(e.value(), std::system_category()); };
    if (acceptor.open(endpoint.protocol(), ec); ec) {
        return fail(ec);
    }
    if (acceptor.set_option(tcp::acceptor::reuse_address(true), ec); ec) {
        return fail(ec);
    }
    int one = 1;
    if (::setsockopt(acceptor.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0) {
        return std::error_code(errno, std::system_category());
    }
    if (acceptor.bind(endpoint, ec); ec) {
        return fail(ec);
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
    : owner_(owner), acceptor_(std::move(acceptor)), port_(port) {}

void listener::start(accept_fn on_accept) {
    on_accept_ = std::move(on_accept);
    do_accept();
}

void listener::close() noexcept {
    closed_ = true;
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

void listener::do_accept() {
    acceptor_.async_accept(owner_.context(), [this](const boost::system::error_code& ec, tcp::socket socket) {
        if (closed_) {
            return;
        }
        if (!ec) {
            boost::system::error_code ignored;
            socket.set_option(tcp::no_delay(true), ignored);
            on_accept_(std::move(socket));
        }
        // EMFILE and friends: keep accepting; the failed connection stays in the backlog or was dropped.
        do_accept();
    });
}

} // namespace hotpath::net
