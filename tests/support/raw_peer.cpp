// The scripted TCP server behind client tests.
#include "support/raw_peer.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace hotpath::test {

namespace {

int listen_on_loopback(std::uint16_t& port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 64) != 0) {
        std::abort();
    }
    socklen_t len = sizeof(addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
    return fd;
}

} // namespace

peer_socket::~peer_socket() {
    close();
}

std::string peer_socket::read_request(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const auto end = buffer_.find("\r\n\r\n"); end != std::string::npos) {
            std::size_t length = 0;
            const auto cl = buffer_.find("Content-Length: ");
            if (cl != std::string::npos && cl < end) {
                length = std::strtoul(buffer_.c_str() + cl + 16, nullptr, 10);
            }
            if (buffer_.size() >= end + 4 + length) {
                std::string request = buffer_.substr(0, end + 4 + length);
                buffer_.erase(0, end + 4 + length);
                return request;
            }
        }
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{fd_, POLLIN, 0};
        if (fd_ < 0 || left.count() <= 0 || ::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            return {};
        }
        char chunk[4096];
        const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
        if (n <= 0) {
            return {};
        }
        buffer_.append(chunk, static_cast<std::size_t>(n));
    }
}

bool peer_socket::write(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) {
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void peer_socket::close() {
    if (fd_ >= 0) {
        ::close(fd_);
        fd_ = -1;
    }
}

void peer_socket::reset() {
    if (fd_ >= 0) {
        linger l{1, 0};
        ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
        close();
    }
}

raw_peer::raw_peer(script s) : script_(std::move(s)) {
    listen_fd_ = listen_on_loopback(port_);
    thread_ = std::thread([this] { run(); });
}

raw_peer::~raw_peer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
}

void raw_peer::run() {
    int index = 0;
    while (!stop_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0) {
            continue;
        }
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        ++accepted_;
        peer_socket socket(fd);
        script_(socket, index++);
    }
}

std::uint16_t closed_port() {
    std::uint16_t port = 0;
    ::close(listen_on_loopback(port));
    return port;
}

} // namespace hotpath::test
