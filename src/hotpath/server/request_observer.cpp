// The request observer: time parts, Server-Timing, counters, route metrics and the access record.
#include <hotpath/server/request_observer.hpp>

#include <hotpath/net/transport.hpp>
#include <hotpath/server/access_log.hpp>
#include <hotpath/server/request_state.hpp>
#include <hotpath/server/worker.hpp>

#include <netinet/in.h>
#include <sys/socket.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <new>

namespace hotpath::request_observer {

namespace {

std::uint64_t elapsed_ns(std::chrono::steady_clock::time_point from,
                         std::chrono::steady_clock::time_point to) noexcept {
    return to > from ? static_cast<std::uint64_t>((to - from).count()) : 0;
}

void fill_peer(std::unique_ptr<peer_address>& peer, int fd) noexcept {
    peer.reset(new (std::nothrow) peer_address());
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (peer == nullptr || fd < 0 || ::getpeername(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return;
    }
    if (address.ss_family == AF_INET) {
        peer->family = AF_INET;
        std::memcpy(peer->bytes, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, 4);
    } else if (address.ss_family == AF_INET6) {
        peer->family = AF_INET6;
        std::memcpy(peer->bytes, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, 16);
    }
}

// The request's line for the access log, put in this loop's ring (dropped and counted when the ring is full).
void log_access(access_ring& ring, const request_state& s, const request_time_parts& parts, std::size_t response_bytes,
                std::unique_ptr<peer_address>& peer, int fd) noexcept {
    access_record* r = ring.reserve();
    if (r == nullptr) {
        return;
    }
    r->unix_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    r->route = s.route;
    r->status = static_cast<std::uint16_t>(http::to_int(s.res.status()));
    r->version_major = s.head.version_major;
    r->version_minor = s.head.version_minor;
    r->calls = s.timing.calls;
    r->response_bytes = response_bytes;
    r->parts = parts;
    r->method_length = static_cast<std::uint8_t>(std::min(s.head.method_token.size(), access_record::max_method_bytes));
    std::memcpy(r->method, s.head.method_token.data(), r->method_length);
    const std::size_t target = std::min(s.head.target.size(), access_record::max_target_bytes);
    r->target_length = static_cast<std::uint16_t>(target);
    r->target_cut = target < s.head.target.size();
    std::memcpy(r->target, s.head.target.data(), target);
    if (peer == nullptr) {
        fill_peer(peer, fd);
    }
    r->peer_family = peer != nullptr ? peer->family : 0;
    if (peer != nullptr) {
        std::memcpy(r->peer_address, peer->bytes, sizeof(r->peer_address));
    }
    ring.commit();
}

} // namespace

request_time_parts handled(const worker& w, request_state& s, std::chrono::steady_clock::time_point finished) {
    // Where its time went (see request_time_parts): the handler's wall time less its waits is its own.
    s.timing.finish();
    request_time_parts parts;
    parts.queue_ns = elapsed_ns(s.received_at, s.dispatched_at);
    const std::uint64_t handler_ns = elapsed_ns(s.dispatched_at, finished);
    const std::uint64_t waited_ns = std::min(s.timing.waited_ns, handler_ns);
    parts.downstream_ns = std::min(s.timing.downstream_ns, waited_ns);
    parts.wait_ns = waited_ns - parts.downstream_ns;
    parts.app_ns = handler_ns - waited_ns;
    if (w.options.server_timing) {
        add_server_timing(s.res, parts, s.timing);
    }
    return parts;
}

void answered(worker& w, const request_state& s, const request_time_parts& parts, std::size_t response_bytes,
              std::unique_ptr<peer_address>& peer, const net::transport& from) noexcept {
    const unsigned status_class = std::min(http::to_int(s.res.status()) / 100, 5u);
    w.stats.responses_by_class[status_class].add();
    w.route_stats.at(s.route).record(status_class, parts, s.timing);
    if (w.log_ring != nullptr) {
        log_access(*w.log_ring, s, parts, response_bytes, peer, peer == nullptr ? from.native_handle() : -1);
    }
}

void add_server_timing(response& res, const request_time_parts& parts, const time_attribution& waits) {
    char text[256];
    const auto ms = [](std::uint64_t ns) { return static_cast<double>(ns) / 1e6; };
    const double total = ms(parts.queue_ns + parts.app_ns + parts.downstream_ns + parts.wait_ns);
    const auto out =
        waits.calls == 0
            ? fmt::format_to_n(text, sizeof(text),
                               "queue;dur={:.3f}, app;dur={:.3f}, downstream;dur={:.3f}, wait;dur={:.3f}, "
                               "total;dur={:.3f}",
                               ms(parts.queue_ns), ms(parts.app_ns), ms(parts.downstream_ns), ms(parts.wait_ns), total)
            : fmt::format_to_n(text, sizeof(text),
                               "queue;dur={:.3f}, app;dur={:.3f}, downstream;dur={:.3f};desc=\"{} "
                               "call{}, at most {} at once\", wait;dur={:.3f}, total;dur={:.3f}",
                               ms(parts.queue_ns), ms(parts.app_ns), ms(parts.downstream_ns), waits.calls,
                               waits.calls == 1 ? "" : "s", waits.max_calls_in_flight, ms(parts.wait_ns), total);
    res.header("Server-Timing", std::string_view(text, std::min(out.size, sizeof(text))));
}

} // namespace hotpath::request_observer
