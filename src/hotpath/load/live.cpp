// Live totals: the bucket of a latency, and the sum of the workers' figures.
#include <hotpath/load/live.hpp>

#include <algorithm>

namespace hotpath::load {
namespace {

constexpr std::array<std::int64_t, live_bounds_s.size()> bounds_ns = [] {
    std::array<std::int64_t, live_bounds_s.size()> ns{};
    for (std::size_t i = 0; i < ns.size(); ++i) {
        ns[i] = static_cast<std::int64_t>(live_bounds_s[i] * 1e9 + 0.5);
    }
    return ns;
}();

template <std::size_t N>
void add_counts(std::array<std::uint64_t, N>& to, const std::array<live_count, N>& from) noexcept {
    for (std::size_t i = 0; i < N; ++i) {
        to[i] += from[i].get();
    }
}

} // namespace

std::size_t live_bucket(std::chrono::nanoseconds d) noexcept {
    return static_cast<std::size_t>(std::lower_bound(bounds_ns.begin(), bounds_ns.end(), d.count()) -
                                    bounds_ns.begin());
}

std::uint64_t live_snapshot::request::latency_count() const noexcept {
    std::uint64_t n = 0;
    for (const auto c : latency) {
        n += c;
    }
    return n;
}

std::uint64_t live_snapshot::responses() const noexcept {
    std::uint64_t n = 0;
    for (const auto& r : requests) {
        for (const auto c : r.responses) {
            n += c;
        }
    }
    return n;
}

std::uint64_t live_snapshot::errors() const noexcept {
    std::uint64_t n = 0;
    for (const auto c : errors_by_class) {
        n += c;
    }
    return n;
}

void live_watch::attach(std::vector<const live_totals*> workers, std::vector<std::string> names,
                        std::chrono::steady_clock::time_point start, std::chrono::system_clock::time_point wall_start) {
    std::lock_guard lock(mutex_);
    workers_ = std::move(workers);
    names_ = std::move(names);
    start_ = start;
    wall_start_ = wall_start;
    running_.store(true);
}

std::chrono::steady_clock::time_point live_watch::start() const {
    std::lock_guard lock(mutex_);
    return start_;
}

std::chrono::system_clock::time_point live_watch::wall_start() const {
    std::lock_guard lock(mutex_);
    return wall_start_;
}

void live_watch::detach() {
    std::lock_guard lock(mutex_);
    final_ = sum_locked();
    final_.in_flight = 0;        // what the workers left in flight at the end was abandoned with them
    final_.connections_open = 0; // and their connections closed
    workers_.clear();
    running_.store(false);
    ended_.store(true);
}

live_snapshot live_watch::snapshot() const {
    std::lock_guard lock(mutex_);
    return ended_.load() ? final_ : sum_locked();
}

live_snapshot live_watch::sum_locked() const {
    live_snapshot s;
    s.requests.resize(names_.size());
    for (std::size_t i = 0; i < names_.size(); ++i) {
        s.requests[i].name = names_[i];
    }
    std::uint64_t sent = 0;
    std::uint64_t ended = 0;
    std::uint64_t opened = 0;
    std::uint64_t closed = 0;
    for (const live_totals* w : workers_) {
        for (std::size_t i = 0; i < names_.size(); ++i) {
            const live_request& from = w->per_request[i];
            live_snapshot::request& to = s.requests[i];
            add_counts(to.responses, from.responses);
            add_counts(to.latency, from.latency);
            to.latency_sum_ns += from.latency_sum_ns.get();
        }
        // Ended is read before sent, so a request ended between the two reads is counted sent too; the loads are
        // relaxed, so where the processor may reorder them (not x86) the gauge is kept from going below zero below.
        add_counts(s.errors_by_class, w->errors);
        ended += w->ended.get();
        sent += w->sent.get();
        closed += w->sockets_closed.get(); // before opened, as ended before sent
        opened += w->sockets_opened.get();
        s.connect_attempts += w->connect_attempts.get();
        s.connect_failures += w->connect_failures.get();
        s.bytes_received += w->bytes_received.get();
        s.bytes_sent += w->bytes_sent.get();
        s.retry_after_asked += w->retry_after_asked.get();
        s.late += w->late.get();
        add_counts(s.send_lag, w->send_lag);
        s.send_lag_sum_ns += w->send_lag_sum_ns.get();
    }
    s.in_flight = sent >= ended ? sent - ended : 0;
    s.connections_open = opened >= closed ? opened - closed : 0;
    return s;
}

} // namespace hotpath::load
