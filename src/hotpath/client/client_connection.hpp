// One pooled client connection (internal): connect, write one request, parse its response, then idle.
#pragma once

#include <hotpath/client/response.hpp>
#include <hotpath/http/response_reader.hpp>
#include <hotpath/net/connect.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/transport.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath::client_detail {

class host_pool;
struct call_state;

// The parts of a request, owned by the call; rendered into the connection's own buffer (so an abandoned
// call's frame is never read by a write still in flight).
struct request_parts {
    std::string_view method;
    std::string_view target;
    std::string_view host_field;
    const std::vector<std::pair<std::string, std::string>>* headers = nullptr;
    std::string_view body;
    bool send_length = false;
};

// Owned by its host_pool; one request at a time (no pipelining). Lives on the pool's loop.
class client_connection final : public net::transport_owner {
public:
    client_connection(host_pool& pool, net::loop& loop);
    ~client_connection();
    client_connection(const client_connection&) = delete;
    client_connection& operator=(const client_connection&) = delete;

    // Resolves (host names only) and connects; ends `c`'s connecting step: success, errc::refused,
    // errc::resolve_failed or the system's error.
    void async_connect(call_state& c);
    // Writes the request and reads one response into `out`; ends `c`'s exchange step: success, or errc::closed
    // (EOF before the response ended), errc::reset, errc::malformed_response, errc::response_too_large, or a
    // system error. On failure the connection is closing.
    void begin(call_state& c, const request_parts& parts, client_response& out);
    // The call stopped or went away mid-step: close without telling it.
    void abandon() noexcept;
    // Close (pool's decision); the pool hears on_gone once nothing is in flight.
    void close() noexcept;
    // Idle in the pool: EOF or bytes from the peer now end the connection.
    void make_idle(net::clock::time_point now) noexcept;
    // Taken from the pool, before begin(): whether the peer has closed the connection or spoken out of turn
    // while it was idle, even if the loop has not delivered that yet (one system call: net::transport::peek).
    // Such a connection must not carry a request; nothing has been written on it for this call.
    bool stale() noexcept;

    bool reusable() const noexcept { return reusable_; }
    bool closing() const noexcept { return closing_; }
    net::clock::time_point created() const noexcept { return created_; }
    net::clock::time_point idle_since() const noexcept { return idle_since_; }

private:
    enum class phase : std::uint8_t { connecting, leased, idle, head, body };

    void on_connected(int fd, std::error_code ec);
    void on_transport_data(std::string_view bytes) override;
    void on_transport_end(std::error_code error) override;
    void on_transport_written(std::error_code error) override;
    void on_transport_closed() override;
    void do_parse();
    bool keep_body(std::string_view bytes);
    void complete();
    void fail(std::error_code e);

    host_pool& pool_;
    net::loop& loop_;
    net::connector connector_;
    std::unique_ptr<net::transport> transport_;
    call_state* call_ = nullptr;
    client_response* out_ = nullptr;
    std::string out_bytes_; // the request being written
    std::string in_;        // bytes received and not yet parsed
    // Its head holds 3 KiB of field views: off the connection's own allocation.
    std::unique_ptr<http::response_reader> reader_;
    phase phase_ = phase::connecting;
    bool reusable_ = false;
    bool closing_ = false;
    bool writing_ = false;
    net::clock::time_point created_{};
    net::clock::time_point idle_since_{};
};

} // namespace hotpath::client_detail
