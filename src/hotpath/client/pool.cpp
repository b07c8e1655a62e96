// Per-loop client state: host pools, deadlines on one timer, cancellations run from a fresh handler.
#include <hotpath/client/pool.hpp>

#include <hotpath/client/client_connection.hpp>
#include <hotpath/core/error.hpp>

#include <algorithm>

namespace hotpath::client_detail {

// ---- call_state ----

call_state::slot_type::slot_type(call_state& c) noexcept
    : cancel_slot([](cancel_slot& s) noexcept {
          // Inside cancel_signal::cancel(): only schedule; the stop runs from a fresh handler.
          call_state& self = static_cast<slot_type&>(s).owner;
          self.pools.request_stop(self);
      }),
      owner(c) {}

call_state::call_state(loop_pools& p) noexcept : pools(p), slot(*this) {}

call_state::~call_state() {
    pools.untrack(*this);
    pools.unlink_stop(*this);
    if (queued) {
        pool->unqueue(*this);
    }
    if (conn != nullptr && (current == step::connecting || current == step::exchange)) {
        std::exchange(conn, nullptr)->abandon(*this);
    }
}

void call_state::finish(std::error_code e) noexcept {
    current = step::none;
    error = e;
    if (!handle) {
        ended_early = true; // the call sees it at its co_await
        return;
    }
    std::exchange(handle, {}).resume();
}

// ---- loop_pools ----

loop_pools::loop_pools(std::shared_ptr<shared_state> s, net::loop& l)
    : shared(std::move(s)), options(shared->options), loop(l), metrics([this]() -> loop_metrics& {
          const std::lock_guard lock(shared->mutex);
          return shared->loops.emplace_back();
      }()),
      timer_(l) {
    tick_id_ = loop.add_tick([this](net::clock::time_point now) { on_tick(now); });
}

loop_pools::~loop_pools() {
    loop.remove_tick(tick_id_);
    hosts_.clear();
}

loop_pools& loop_pools::of(const std::shared_ptr<shared_state>& s, net::loop& l) {
    if (net::loop_local* found = l.local(s.get())) {
        return static_cast<loop_pools&>(*found);
    }
    return static_cast<loop_pools&>(l.set_local(s.get(), std::make_unique<loop_pools>(s, l)));
}

host_pool& loop_pools::pool_for(const std::string& host, std::uint16_t port, const std::string& host_field,
                                std::shared_ptr<net::tls_context> tls) {
    for (auto& p : hosts_) {
        if (p->port() == port && p->host() == host && p->tls() == (tls != nullptr)) {
            return *p;
        }
    }
    hosts_.push_back(std::make_unique<host_pool>(*this, host, port, host_field, std::move(tls)));
    return *hosts_.back();
}

// Sorted insert from the tail: calls mostly share one timeout, so a new deadline is usually the latest.
void loop_pools::track(call_state& c, net::clock::time_point at, std::error_code why) {
    untrack(c);
    c.timed = true;
    c.deadline = at;
    c.timeout_error = why;
    call_state* after = deadline_tail_;
    while (after != nullptr && after->deadline > at) {
        after = after->deadline_prev;
    }
    c.deadline_prev = after;
    c.deadline_next = after != nullptr ? after->deadline_next : deadline_head_;
    (c.deadline_next != nullptr ? c.deadline_next->deadline_prev : deadline_tail_) = &c;
    (after != nullptr ? after->deadline_next : deadline_head_) = &c;
    if (at < armed_) {
        arm_timer();
    }
}

void loop_pools::untrack(call_state& c) noexcept {
    if (!c.timed) {
        return;
    }
    c.timed = false;
    (c.deadline_prev != nullptr ? c.deadline_prev->deadline_next : deadline_head_) = c.deadline_next;
    (c.deadline_next != nullptr ? c.deadline_next->deadline_prev : deadline_tail_) = c.deadline_prev;
    c.deadline_prev = c.deadline_next = nullptr;
    // The timer stays armed: firing early for a removed deadline costs one wake-up, re-arming costs a syscall.
}

void loop_pools::arm_timer() {
    armed_ = deadline_head_->deadline;
    timer_.arm(armed_, [this] { on_timer(); });
}

void loop_pools::on_timer() {
    armed_ = net::clock::time_point::max();
    const auto now = net::clock::now();
    while (deadline_head_ != nullptr && deadline_head_->deadline <= now) {
        call_state& c = *deadline_head_;
        untrack(c);
        stop(c, c.timeout_error);
    }
    if (deadline_head_ != nullptr) {
        arm_timer();
    }
}

void loop_pools::stop(call_state& c, std::error_code why) noexcept {
    if (!c.stopped) {
        c.stopped = why; // counted as the call's outcome by its call_meter
    }
    switch (c.current) {
    case call_state::step::none:
        return; // not suspended in a step: the call sees `stopped` before its next one
    case call_state::step::queued:
        c.pool->unqueue(c);
        break;
    case call_state::step::connecting:
    case call_state::step::exchange:
        if (c.conn != nullptr) {
            std::exchange(c.conn, nullptr)->abandon(c);
        }
        break;
    }
    c.finish(c.stopped);
}

void loop_pools::request_stop(call_state& c) noexcept {
    if (c.stop_pending) {
        return;
    }
    c.stop_pending = true;
    c.stop_prev = stop_tail_;
    c.stop_next = nullptr;
    (stop_tail_ != nullptr ? stop_tail_->stop_next : stop_head_) = &c;
    stop_tail_ = &c;
    if (!drain_posted_) {
        drain_posted_ = true;
        loop.defer([this] { drain_stops(); });
    }
}

void loop_pools::unlink_stop(call_state& c) noexcept {
    if (!c.stop_pending) {
        return;
    }
    c.stop_pending = false;
    (c.stop_prev != nullptr ? c.stop_prev->stop_next : stop_head_) = c.stop_next;
    (c.stop_next != nullptr ? c.stop_next->stop_prev : stop_tail_) = c.stop_prev;
    c.stop_prev = c.stop_next = nullptr;
}

void loop_pools::drain_stops() noexcept {
    drain_posted_ = false;
    while (call_state* c = stop_head_) {
        unlink_stop(*c);
        stop(*c, make_error_code(errc::cancelled));
    }
}

void loop_pools::on_tick(net::clock::time_point now) {
    const bool gone = shared->closed.load(std::memory_order_relaxed);
    bool empty = true;
    for (auto& p : hosts_) {
        p->on_tick(now, gone);
        empty = empty && p->empty();
    }
    // The client is gone and its last connection closed: free this loop's share (a service that makes a
    // client per request, case 1's first mistake, must not grow a loop without bound).
    if (gone && empty && !erase_posted_) {
        erase_posted_ = true;
        loop.defer([l = &loop, key = shared.get()] { l->erase_local(key); });
    }
}

// ---- host_pool ----

namespace {

// The downstream label: host:port, an IPv6 literal in brackets (as in a URL).
std::string downstream_name(const std::string& host, std::uint16_t port) {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

downstream_metrics& add_downstream(shared_state& s, loop_metrics& l, std::string name) {
    auto m = std::make_unique<downstream_metrics>(std::move(name));
    const std::lock_guard lock(s.mutex);
    return *l.downstreams.emplace_back(std::move(m));
}

} // namespace

host_pool::host_pool(loop_pools& owner, std::string host, std::uint16_t port, std::string host_field,
                     std::shared_ptr<net::tls_context> tls)
    : owner_(owner), metrics_(add_downstream(*owner.shared, owner.metrics, downstream_name(host, port))),
      host_(std::move(host)), port_(port), host_field_(std::move(host_field)) {
    const client_protocol asked = owner.options.protocol;
    if (tls != nullptr) {
        const std::string& name = owner.options.tls.server_name.empty() ? host_ : owner.options.tls.server_name;
        tls_ = std::make_unique<net::tls_transports>(std::move(tls), *owner.transports, name);
        protocol_ = asked == client_protocol::http1 ? speaks::http1 : speaks::unknown;
    } else {
        protocol_ = asked == client_protocol::http2 ? speaks::http2 : speaks::http1;
    }
}

host_pool::~host_pool() {
    // The figures outlive the pool (a scrape may come later): what is gone is no longer open, idle or waiting.
    // Calls in flight are the calls' own to count down (call_meter), as their frames go.
    metrics_.open.set(0);
    metrics_.idle.set(0);
    metrics_.waiters.set(0);
}

call_metrics& host_pool::add_route(std::size_t id) {
    auto made = std::make_unique<call_metrics>(owner_.shared->bounds_ns);
    const std::lock_guard lock(owner_.shared->mutex);
    if (metrics_.routes.size() <= id) {
        metrics_.routes.resize(id + 1);
    }
    if (metrics_.routes[id] == nullptr) {
        metrics_.routes[id] = std::move(made);
    }
    return *metrics_.routes[id];
}

void host_pool::publish() noexcept {
    metrics_.open.set(total_);
    metrics_.idle.set(idle_.size() + static_cast<std::size_t>(
                                         std::count_if(shared_.begin(), shared_.end(), [](const client_connection* c) {
                                             return c->streams() == 0 && !c->closing();
                                         })));
    metrics_.waiters.set(queue_length_);
}

bool host_pool::expired(const client_connection& c, net::clock::time_point now) const noexcept {
    const auto lifetime = owner_.options.connection_lifetime;
    return lifetime.count() > 0 && now - c.created() >= lifetime;
}

client_connection* host_pool::take_idle(net::clock::time_point now) {
    while (!idle_.empty()) {
        client_connection* c = idle_.back();
        idle_.pop_back();
        if (expired(*c, now)) {
            metrics_.closed_lifetime.add();
            c->close();
            continue;
        }
        publish();
        return c;
    }
    publish();
    return nullptr;
}

bool host_pool::room_on(const client_connection& c) noexcept {
    if (const std::uint32_t allowed = c.peer_streams(); allowed != 0) {
        peer_streams_ = allowed;
    }
    return c.has_room(peer_streams_);
}

client_connection* host_pool::take_stream(net::clock::time_point now) {
    for (client_connection* c : shared_) {
        if (room_on(*c) && !expired(*c, now)) {
            c->reserve_stream();
            publish();
            return c;
        }
    }
    return nullptr;
}

void host_pool::connected(client_connection& c) {
    --opening_;
    const speaks before = protocol_;
    protocol_ = c.h2_on() ? speaks::http2 : speaks::http1;
    if (c.h2_on()) {
        shared_.push_back(&c);
        c.reserve_stream(); // the opener's
        offer(c);
    } else if (before == speaks::unknown) {
        // The calls that waited to learn the protocol each take a connection of their own now.
        while (queue_head_ != nullptr) {
            hand_oldest(nullptr);
        }
    }
    publish();
}

void host_pool::hand_oldest(client_connection* c) {
    call_state* w = queue_head_;
    unqueue(*w);
    w->conn = c;
    w->finish({});
}

void host_pool::offer(client_connection& c) {
    while (queue_head_ != nullptr && room_on(c)) {
        c.reserve_stream();
        hand_oldest(&c); // it begins its stream now
    }
    if (queue_head_ != nullptr && protocol_ == speaks::http2 && opening_ == 0 && can_open()) {
        hand_oldest(nullptr); // it finds no room, and opens a connection
    }
}

bool host_pool::retiring(const client_connection& c, net::clock::time_point now) const noexcept {
    return !c.has_room(peer_streams_) || expired(c, now) || owner_.shared->closed.load(std::memory_order_relaxed);
}

void host_pool::on_room(client_connection& c, net::clock::time_point now) {
    if (c.closing()) {
        return;
    }
    const bool too_old = expired(c, now);
    if (!too_old) {
        offer(c);
    }
    if (c.streams() == 0 && !c.closing()) {
        if (too_old) {
            metrics_.closed_lifetime.add();
        }
        if (retiring(c, now)) {
            c.close();
        } else {
            c.make_idle(now);
        }
    }
    publish();
}

client_connection* host_pool::open() {
    ++opening_;
    ++total_;
    all_.push_back(std::make_unique<client_connection>(*this, owner_.loop));
    publish();
    return all_.back().get();
}

void host_pool::release(client_connection& c, net::clock::time_point now) {
    if (!c.reusable() || c.closing() || owner_.shared->closed.load(std::memory_order_relaxed)) {
        c.close();
        return;
    }
    if (expired(c, now)) {
        metrics_.closed_lifetime.add();
        c.close();
        return;
    }
    if (queue_head_ != nullptr) {
        hand_oldest(&c); // it resumes now and writes its request
        return;
    }
    c.make_idle(now);
    idle_.push_back(&c);
    publish();
}

void host_pool::on_tick(net::clock::time_point now, bool client_gone) {
    // An idle connection closes past its lifetime or the idle timeout (counted as such), when it may carry no more
    // (an HTTP/2 GOAWAY), or when the client is gone.
    const auto closes = [&](client_connection& c, bool spent) {
        const bool too_old = expired(c, now);
        const bool idle_long = now - c.idle_since() >= owner_.options.idle_timeout;
        if (!client_gone && !spent && !too_old && !idle_long) {
            return false;
        }
        if (!client_gone && (too_old || idle_long)) {
            (too_old ? metrics_.closed_lifetime : metrics_.closed_idle).add();
        }
        c.close();
        return true;
    };
    std::erase_if(idle_, [&](client_connection* c) { return closes(*c, false); });
    for (client_connection* c : shared_) {
        if (c->streams() == 0 && !c->closing()) {
            closes(*c, !c->has_room(peer_streams_));
        }
    }
    publish();
}

void host_pool::enqueue(call_state& c) noexcept {
    c.queued = true;
    c.queue_prev = queue_tail_;
    c.queue_next = nullptr;
    (queue_tail_ != nullptr ? queue_tail_->queue_next : queue_head_) = &c;
    queue_tail_ = &c;
    ++queue_length_;
    publish();
}

void host_pool::unqueue(call_state& c) noexcept {
    if (!c.queued) {
        return;
    }
    c.queued = false;
    (c.queue_prev != nullptr ? c.queue_prev->queue_next : queue_head_) = c.queue_next;
    (c.queue_next != nullptr ? c.queue_next->queue_prev : queue_tail_) = c.queue_prev;
    c.queue_prev = c.queue_next = nullptr;
    --queue_length_;
    publish();
}

void host_pool::remove_idle(client_connection& c) noexcept {
    if (const auto it = std::find(idle_.begin(), idle_.end(), &c); it != idle_.end()) {
        idle_.erase(it);
        publish();
    }
}

void host_pool::on_idle_end(client_connection& c) noexcept {
    remove_idle(c);
}

void host_pool::on_gone(client_connection& c) noexcept {
    remove_idle(c);
    std::erase(shared_, &c);
    if (c.connecting()) {
        --opening_;
    }
    --total_;
    publish();
    const auto it = std::find_if(all_.begin(), all_.end(), [&c](const auto& p) { return p.get() == &c; });
    std::unique_ptr<client_connection> doomed = std::move(*it);
    all_.erase(it);
    doomed.reset();
    // A slot is free: the oldest waiting call may open a connection now.
    if (queue_head_ != nullptr) {
        hand_oldest(nullptr);
    }
}

} // namespace hotpath::client_detail
