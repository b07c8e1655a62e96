// The client's per-loop state (internal): host pools, the calls in flight, their deadlines and cancellations.
#pragma once

#include <hotpath/client/client.hpp>
#include <hotpath/client/client_metrics.hpp>
#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/transport.hpp>

#include <algorithm>
#include <coroutine>
#include <deque>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace hotpath::client_detail {

class client_connection;
class host_pool;
struct loop_pools;

// One call in flight, in its coroutine frame. It suspends in one step at a time and is resumed exactly once
// per step: by the step's completion, its deadline, or its cancel signal. Destroying it (the frame of an
// abandoned handler) takes it out of every list and closes a connection it was using or opening.
struct call_state {
    enum class step : std::uint8_t { none, queued, connecting, exchange };

    explicit call_state(loop_pools& p) noexcept;
    ~call_state();
    call_state(const call_state&) = delete;
    call_state& operator=(const call_state&) = delete;

    // co_await c.suspend() after starting a step; the step's end sets `error` and resumes. A step that ended
    // before the call suspended (HTTP/2: its connection failed as the request was being queued) does not suspend.
    auto suspend() noexcept {
        struct awaiter {
            call_state& c;
            bool await_ready() const noexcept { return std::exchange(c.ended_early, false); }
            void await_suspend(std::coroutine_handle<> h) noexcept { c.handle = h; }
            void await_resume() const noexcept {}
        };
        return awaiter{*this};
    }
    // Ends the current step with `e` and resumes the call (the last thing a caller does: the call may run on,
    // and even finish and destroy this, before it returns).
    void finish(std::error_code e) noexcept;

    loop_pools& pools;
    host_pool* pool = nullptr;
    client_connection* conn = nullptr; // the connection being opened or used
    step current = step::none;
    std::coroutine_handle<> handle;
    std::error_code error;   // the last step's outcome
    std::error_code stopped; // the deadline or cancellation that ended the call early, once set
    bool got_response_bytes = false;
    bool ended_early = false; // finish() came before the call suspended
    // HTTP/2: the server provably did not process the request (its stream refused, or above its GOAWAY's last).
    bool unprocessed = false;
    void* stream = nullptr; // HTTP/2: the connection's record of the call's stream

    // In loop_pools' deadline list (sorted by deadline).
    call_state* deadline_prev = nullptr;
    call_state* deadline_next = nullptr;
    bool timed = false;
    net::clock::time_point deadline{};
    std::error_code timeout_error;
    // In loop_pools' list of cancelled calls waiting for their stop to run (from a fresh handler).
    call_state* stop_prev = nullptr;
    call_state* stop_next = nullptr;
    bool stop_pending = false;
    // In a host_pool's FIFO of calls waiting for a connection.
    call_state* queue_prev = nullptr;
    call_state* queue_next = nullptr;
    bool queued = false;
    // Attached to call_options::cancel while the call runs.
    struct slot_type : cancel_slot {
        explicit slot_type(call_state& c) noexcept;
        call_state& owner;
    } slot;
};

// One client's state on one loop, kept in the loop's locals (so it lives as long as the loop).
struct loop_pools final : net::loop_local {
    loop_pools(std::shared_ptr<shared_state> s, net::loop& l);
    ~loop_pools() override;

    // This loop's pools of `s`, created on first use. Call on a loop thread.
    static loop_pools& of(const std::shared_ptr<shared_state>& s, net::loop& l);

    // `tls`: the client's TLS context for an https:// URL (null for http://): its pools are apart from http://'s.
    host_pool& pool_for(const std::string& host, std::uint16_t port, const std::string& host_field,
                        std::shared_ptr<net::tls_context> tls = nullptr);

    // Deadlines: `c` ends with `why` at `at` unless it finishes first. Re-tracking moves it.
    void track(call_state& c, net::clock::time_point at, std::error_code why);
    void untrack(call_state& c) noexcept;
    // Ends the call's current step now with `why` (a deadline or a cancellation).
    void stop(call_state& c, std::error_code why) noexcept;
    // From a cancel slot's callback (inside cancel_signal::cancel()): stop `c` from a fresh handler.
    void request_stop(call_state& c) noexcept;
    void unlink_stop(call_state& c) noexcept;

    std::shared_ptr<shared_state> shared;
    const client_options& options;
    net::loop& loop;
    loop_metrics& metrics; // this loop's, kept in `shared` (a scrape may read them after the loop is gone)
    // What this loop's connections get their transports from: sockets on the loop's backend (over which an
    // https:// host's pool makes TLS sessions).
    net::transport_factory* transports = &net::socket_transports();

private:
    void arm_timer();
    void on_timer();
    void drain_stops() noexcept;
    void on_tick(net::clock::time_point now);

    std::vector<std::unique_ptr<host_pool>> hosts_;
    call_state* deadline_head_ = nullptr;
    call_state* deadline_tail_ = nullptr;
    net::timer timer_;
    net::clock::time_point armed_ = net::clock::time_point::max();
    call_state* stop_head_ = nullptr;
    call_state* stop_tail_ = nullptr;
    bool drain_posted_ = false;
    bool erase_posted_ = false;
    std::size_t tick_id_ = 0;
};

// The connections to one (host, port) on one loop: idle ones (most recently used first), a count of all open
// or opening, and the FIFO of calls waiting because the count reached max_connections_per_host. Over HTTP/2 its
// connections are shared: a call takes a stream on one with room, and waits (in the same FIFO) while they are all
// full and another is opening or none may open.
class host_pool {
public:
    // What its connections speak: known from the options (http://), or agreed by ALPN on the last connection made
    // (https:// with HTTP/2 asked for: unknown until the first handshake, and the calls meanwhile wait for it).
    enum class speaks : std::uint8_t { unknown, http1, http2 };

    host_pool(loop_pools& owner, std::string host, std::uint16_t port, std::string host_field,
              std::shared_ptr<net::tls_context> tls);
    ~host_pool();

    // Where its connections' transports come from: the loop's, or TLS sessions over them for an https:// host.
    net::transport_factory& transports() noexcept { return tls_ != nullptr ? *tls_ : *owner_.transports; }
    bool tls() const noexcept { return tls_ != nullptr; }
    const std::string& host() const noexcept { return host_; }
    std::uint16_t port() const noexcept { return port_; }
    const std::string& host_field() const noexcept { return host_field_; }
    loop_pools& owner() noexcept { return owner_; }
    // This downstream's figures on this loop, written by this pool's loop only.
    downstream_metrics& metrics() noexcept { return metrics_; }
    // The figures of `route`'s calls here; made on the route's first call from this loop (under the shared lock,
    // the only allocation), then found by index.
    call_metrics& route_metrics(client_route route) {
        const std::size_t id = std::min<std::size_t>(route.id, client_route::max_named + 1);
        if (id < metrics_.routes.size() && metrics_.routes[id] != nullptr) {
            return *metrics_.routes[id];
        }
        return add_route(id);
    }

    speaks protocol() const noexcept { return protocol_; }
    // Connections connecting (or in their handshake).
    bool opening() const noexcept { return opening_ != 0; }
    // The most recently used idle connection that may still be used, or nullptr.
    client_connection* take_idle(net::clock::time_point now);
    // HTTP/2: a connection with room for another stream, that stream reserved for the caller; or nullptr.
    client_connection* take_stream(net::clock::time_point now);
    // From a connection whose connect step succeeded (before it ends its call's step): the pool learns what it
    // speaks. An HTTP/2 connection reserves a stream for the call that opened it and offers the rest to the waiting
    // calls; the first HTTP/1.1 one of a pool that did not know sends the waiting calls to open their own.
    void connected(client_connection& c);
    // From an HTTP/2 connection whose streams closed: the oldest waiting calls get its room; with no stream left it
    // idles, or closes when it may carry no more (GOAWAY, lifetime, the client gone).
    void on_room(client_connection& c, net::clock::time_point now);
    bool can_open() const noexcept { return total_ < owner_.options.max_connections_per_host; }
    // No connection open or opening.
    bool empty() const noexcept { return total_ == 0; }
    // A new connection, counted; the caller starts its connect.
    client_connection* open();
    // After a complete exchange: hands the connection to the oldest waiting call, keeps it idle, or closes it
    // (not reusable, or past its lifetime).
    void release(client_connection& c, net::clock::time_point now);
    // Idle timeout and lifetime, once a second; everything idle when the client is gone.
    void on_tick(net::clock::time_point now, bool client_gone);

    void enqueue(call_state& c) noexcept;
    void unqueue(call_state& c) noexcept;

    // From a connection: it ended while idle (the peer closed it) — no longer offered.
    void on_idle_end(client_connection& c) noexcept;
    // From a connection: it is closed with nothing in flight; deletes it and lets a waiting call open another.
    void on_gone(client_connection& c) noexcept;

private:
    void remove_idle(client_connection& c) noexcept;
    call_metrics& add_route(std::size_t id);
    // Sets the gauges (open, idle, waiting) from the pool's state, after each change of it.
    void publish() noexcept;
    bool expired(const client_connection& c, net::clock::time_point now) const noexcept;

    loop_pools& owner_;
    downstream_metrics& metrics_;
    std::string host_;
    std::uint16_t port_;
    std::string host_field_;
    std::unique_ptr<net::tls_transports> tls_;
    // The oldest waiting call leaves the queue and resumes with `c` (null: none; it looks again, and may open one).
    void hand_oldest(client_connection* c);
    // Hands streams of `c` to the oldest waiting calls while it has room; if calls still wait and another
    // connection may open, the oldest of them goes to open it.
    void offer(client_connection& c);
    // Whether `c` may take another stream, assuming until its SETTINGS arrive what the host allowed before.
    bool room_on(const client_connection& c) noexcept;
    // Whether an HTTP/2 connection with no stream open is to close now.
    bool retiring(const client_connection& c, net::clock::time_point now) const noexcept;

    speaks protocol_ = speaks::http1;
    std::size_t opening_ = 0;
    std::uint32_t peer_streams_ = 0;       // HTTP/2: the streams at once the host's SETTINGS allowed last (0: unknown)
    std::vector<client_connection*> idle_; // back = most recently released
    std::vector<client_connection*> shared_; // HTTP/2 connections made, in the order they were
    std::vector<std::unique_ptr<client_connection>> all_;
    std::size_t total_ = 0;
    call_state* queue_head_ = nullptr;
    call_state* queue_tail_ = nullptr;
    std::size_t queue_length_ = 0;
};

} // namespace hotpath::client_detail
