// Opening TCP connections from a loop: names resolved on the blocking pool, then a non-blocking connect through
// the loop's io_uring (or its epoll on a loop without one); each address tried in turn.
#pragma once

#include <hotpath/core/result.hpp>
#include <hotpath/net/address.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/socket.h>

namespace hotpath::net {

class loop;

// Resolves `host` (a name or a literal) with getaddrinfo on the calling thread: for start-up code off the loops.
// A failure is errc::resolve_failed with "cannot resolve HOST: " and getaddrinfo's reason.
result<std::vector<endpoint>, problem> resolve_now(const std::string& host, std::uint16_t port);

// One connection attempt at a time. The callback gets the connected socket (non-blocking, close-on-exec,
// TCP_NODELAY set; the callee owns it) or an error: the last address's, std::errc::operation_canceled after
// cancel(), or std::errc::host_unreachable when a name has no address or cannot be resolved. It is called once per
// start(), on the loop's thread, never from inside start() or cancel(), unless the attempt is abandoned first: by
// another start() or by destroying the connector, which cancel what is in flight without calling back.
class connector {
public:
    using done_fn = std::function<void(int fd, std::error_code error)>;

    connector() = default;
    ~connector();
    connector(const connector&) = delete;
    connector& operator=(const connector&) = delete;

    // Connects to `to` on `owner`, which must be the calling thread's loop.
    void start(loop& owner, const endpoint& to, done_fn done);
    // Resolves `host` on the blocking pool first (a literal needs none: answered in this turn), then tries each
    // address in getaddrinfo's order.
    void start(loop& owner, std::string host, std::uint16_t port, done_fn done);
    // Ends the attempt in flight, if any: its callback follows with operation_canceled.
    void cancel();
    bool active() const noexcept { return attempt_ != nullptr; }

    struct attempt;

private:
    void start_with(loop& owner, done_fn done);
    void abandon();
    std::shared_ptr<attempt> attempt_;
};

} // namespace hotpath::net
