// Blocking socket client with poll()-based deadlines.
#include "support/raw_client.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <utility>

namespace hotpath::test {

raw_client::raw_client(std::uint16_t port, const std::string& address) {
    sockaddr_storage storage{};
    socklen_t length = 0;
    if (auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
        ::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        length = sizeof(sockaddr_in);
    } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
               ::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        length = sizeof(sockaddr_in6);
    } else {
        return;
    }
    fd_ = ::socket(storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
        return;
    }
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
        ::close(fd_);
        fd_ = -1;
        return;
    }
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    // A server that stops reading fails send() after 10 s without progress instead of hanging the test.
    const timeval send_timeout{10, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof(send_timeout));
}

std::uint16_t raw_client::local_port() const noexcept {
    sockaddr_storage addr{};
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        return 0;
    }
    // sin_port and sin6_port lie at the same offset.
    return ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
}

raw_client::~raw_client() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

bool raw_client::send(std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void raw_client::shutdown_send() {
    ::shutdown(fd_, SHUT_WR);
}

std::size_t raw_client::send_for(std::string_view bytes, std::chrono::milliseconds within) {
    std::size_t sent = 0;
    const auto deadline = std::chrono::steady_clock::now() + within;
    while (sent < bytes.size() && std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd_, POLLOUT, 0};
        if (::poll(&p, 1, 10) <= 0) {
            continue;
        }
        const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            break;
        }
        sent += n > 0 ? static_cast<std::size_t>(n) : 0;
    }
    return sent;
}

std::string raw_client::read_until_close(std::chrono::milliseconds within) {
    std::string out = std::exchange(buffer_, {});
    const auto deadline = std::chrono::steady_clock::now() + within;
    char buf[65536];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, 10) <= 0) {
            continue;
        }
        const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n <= 0) {
            break;
        }
        out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
}

void raw_client::reset() {
    const linger l{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    ::close(fd_);
    fd_ = -1;
}

void raw_client::small_receive_buffer() {
    const int bytes = 16 * 1024;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

bool raw_client::fill(std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
        return false;
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
        return false;
    }
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n <= 0) {
        return false;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
}

std::optional<http_reply> raw_client::read_reply(std::chrono::milliseconds timeout, bool head_request) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::size_t end = 0;
    while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
        if (!fill(deadline)) {
            return std::nullopt;
        }
    }
    http_reply reply;
    const std::string head = buffer_.substr(0, end);
    std::size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) {
        return std::nullopt;
    }
    reply.status = std::atoi(status_line.c_str() + 9);
    std::size_t pos = line_end == std::string::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
        std::size_t next = head.find("\r\n", pos);
        if (next == std::string::npos) {
            next = head.size();
        }
        const std::string line = head.substr(pos, next - pos);
        const auto colon = line.find(':');
        if (colon != std::string::npos) {
            std::string name = line.substr(0, colon);
            std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
            std::string value = line.substr(colon + 1);
            value.erase(0, value.find_first_not_of(' '));
            reply.fields[name] = value;
        }
        pos = next + 2;
    }
    buffer_.erase(0, end + 4);
    std::size_t length = 0;
    const bool bodyless = head_request || reply.status < 200 || reply.status == 204 || reply.status == 304;
    if (!bodyless) {
        length = static_cast<std::size_t>(std::strtoull(reply.field("content-length").c_str(), nullptr, 10));
    }
    while (buffer_.size() < length) {
        if (!fill(deadline)) {
            return std::nullopt;
        }
    }
    reply.body = buffer_.substr(0, length);
    buffer_.erase(0, length);
    return reply;
}

std::size_t raw_client::read_some(std::size_t max_bytes, std::chrono::milliseconds timeout) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
        return 0;
    }
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, std::min(max_bytes, sizeof(buf)), 0);
    if (n <= 0) {
        return 0;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
    return static_cast<std::size_t>(n);
}

bool raw_client::wait_closed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return false;
        }
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) {
            return false;
        }
        char buf[4096];
        const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
        if (n <= 0) {
            return true;
        }
        buffer_.append(buf, static_cast<std::size_t>(n));
    }
}

} // namespace hotpath::test
