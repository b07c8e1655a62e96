// A blocking TCP client for tests: sends exact bytes, reads HTTP/1.1 responses with deadlines.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hotpath::test {

struct http_reply {
    int status = 0;
    std::map<std::string, std::string> fields; // names lower-cased; a repeated field keeps its last value
    std::string body;

    std::string field(const std::string& lower_name) const {
        auto it = fields.find(lower_name);
        return it == fields.end() ? std::string{} : it->second;
    }
};

// Connects to address:port (an IPv4 or IPv6 literal). Every read waits at most `timeout`; a test never hangs on a
// silent server.
class raw_client {
public:
    explicit raw_client(std::uint16_t port, const std::string& address = "127.0.0.1");
    ~raw_client();
    raw_client(const raw_client&) = delete;
    raw_client& operator=(const raw_client&) = delete;

    bool connected() const noexcept { return fd_ >= 0; }
    // This end's port, which is the peer port of the server's socket for this connection.
    std::uint16_t local_port() const noexcept;
    // Sends all of `bytes`; false on error or after 10 s without progress (the server stopped reading).
    bool send(std::string_view bytes);
    // Reads one response (Content-Length or no body; 1xx, 204, 304 and HEAD replies have none). nullopt on
    // timeout, close or malformed input.
    std::optional<http_reply> read_reply(std::chrono::milliseconds timeout = std::chrono::seconds{5},
                                         bool head_request = false);
    // Reads what has arrived, at most `max_bytes`, waiting up to `timeout` for the first byte; the bytes join
    // those read_reply parses. Returns their count: 0 on timeout, close or error.
    std::size_t read_some(std::size_t max_bytes, std::chrono::milliseconds timeout);
    // True when the peer closes (EOF or reset) within `timeout`, discarding any bytes before.
    bool wait_closed(std::chrono::milliseconds timeout = std::chrono::seconds{5});
    // Bytes received and not taken by read_reply, including those wait_closed read before the close.
    std::string_view unread() const noexcept { return buffer_; }
    // Half-closes the sending side.
    void shutdown_send();
    // Sends what the kernel takes within `within`, never waiting past it; returns how much (for a client that
    // outpaces a server that stopped reading).
    std::size_t send_for(std::string_view bytes, std::chrono::milliseconds within);
    // Reads until the peer closes or `within` passes; returns what was not taken before (unread() included).
    std::string read_until_close(std::chrono::milliseconds within);
    // Closes at once with a reset (SO_LINGER 0): a client gone in the middle of a request.
    void reset();
    // Shrinks the receive buffer, so that a response the test does not read fills it quickly.
    void small_receive_buffer();

private:
    bool fill(std::chrono::steady_clock::time_point deadline);

    int fd_ = -1;
    std::string buffer_;
};

} // namespace hotpath::test
