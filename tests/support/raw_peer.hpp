// A scripted TCP server for tests: answers exact bytes (malformed, chunked, close-delimited), closes or resets.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace hotpath::test {

// One accepted connection, blocking, with deadlines so a script never hangs.
class peer_socket {
public:
    explicit peer_socket(int fd) noexcept : fd_(fd) {}
    ~peer_socket();
    peer_socket(const peer_socket&) = delete;
    peer_socket& operator=(const peer_socket&) = delete;

    // Reads one request head (up to the blank line) and the Content-Length body after it; empty on EOF or
    // after `timeout`.
    std::string read_request(std::chrono::milliseconds timeout = std::chrono::seconds{5});
    bool write(std::string_view bytes);
    void close();
    // Closes with SO_LINGER 0: the peer sees a reset (RST), not a FIN.
    void reset();

private:
    int fd_;
    std::string buffer_;
};

// Listens on 127.0.0.1 with a free port; runs `script(socket, index)` for each accepted connection in turn
// (index 0, 1, ...) on its own thread. Stops and joins on destruction.
class raw_peer {
public:
    using script = std::function<void(peer_socket& socket, int index)>;
    explicit raw_peer(script s);
    ~raw_peer();
    raw_peer(const raw_peer&) = delete;
    raw_peer& operator=(const raw_peer&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    int accepted() const noexcept { return accepted_.load(); }

private:
    void run();

    script script_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stop_{false};
    std::atomic<int> accepted_{0};
    std::thread thread_;
};

// A port on 127.0.0.1 where nothing listens (bound once, then closed).
std::uint16_t closed_port();

} // namespace hotpath::test
