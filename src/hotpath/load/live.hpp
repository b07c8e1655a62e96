// A run's figures as it goes, for those who watch it from other threads: exporters that push them every few seconds
// (Prometheus remote-write, OTLP) and a scrape endpoint. Each worker keeps its own totals, written by its thread
// alone (no lock, no read-modify-write instruction, nothing allocated per request), and a watcher sums them.
#pragma once

#include <hotpath/load/results.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hotpath::load {

// The latency histogram's upper bounds, in seconds (Prometheus's classic buckets: a fixed set every instance and
// every generator shares, so that their buckets add; the last bucket, +Inf, is implied).
inline constexpr std::array<double, 16> live_bounds_s{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10};
inline constexpr std::size_t live_buckets = live_bounds_s.size() + 1;

// The bucket of a duration: the first bound it does not exceed (Prometheus's le), else the +Inf bucket.
std::size_t live_bucket(std::chrono::nanoseconds d) noexcept;

// Counts that only grow. Written by one thread, so an add is a load and a store, not a locked instruction.
struct live_count {
    std::atomic<std::uint64_t> value{0};
    void add(std::uint64_t n = 1) noexcept {
        value.store(value.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
    }
    std::uint64_t get() const noexcept { return value.load(std::memory_order_relaxed); }
};

// One scenario request's figures in the measured window (the warm-up left out, as in the results).
struct live_request {
    std::array<live_count, 6> responses;          // by status class: [1] 1xx ... [5] 5xx, [0] any other
    std::array<live_count, live_buckets> latency; // counts per bucket (not cumulative)
    live_count latency_sum_ns;
};

// One worker's figures. Written by the worker's thread, read by any.
struct live_totals {
    explicit live_totals(std::size_t requests) : per_request(std::make_unique<live_request[]>(requests)) {}
    std::unique_ptr<live_request[]> per_request;
    // Over the whole run, warm-up included: requests sent and ended (answered or failed), for the in-flight gauge.
    live_count sent;
    live_count ended;
    // The measured window.
    std::array<live_count, error_class_count> errors; // failed requests by class (results::errors)
    live_count connect_attempts;
    live_count connect_failures;
    // Over the whole run: sockets connected and closed (TLS handshakes under way among them), for the open gauge.
    live_count sockets_opened;
    live_count sockets_closed;
    live_count bytes_received;
    live_count bytes_sent;
    live_count retry_after_asked;
    live_count late; // open model: sent late, waiting for a connection
    std::array<live_count, live_buckets> send_lag;
    live_count send_lag_sum_ns;
};

// The sum of the workers' figures at one moment.
struct live_snapshot {
    struct request {
        std::string name;
        std::array<std::uint64_t, 6> responses{};
        std::array<std::uint64_t, live_buckets> latency{};
        std::uint64_t latency_sum_ns = 0;
        std::uint64_t latency_count() const noexcept;
    };
    std::vector<request> requests;
    std::array<std::uint64_t, error_class_count> errors_by_class{};
    std::uint64_t in_flight = 0;
    std::uint64_t connections_open = 0;
    std::uint64_t connect_attempts = 0;
    std::uint64_t connect_failures = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t retry_after_asked = 0;
    std::uint64_t late = 0;
    std::array<std::uint64_t, live_buckets> send_lag{};
    std::uint64_t send_lag_sum_ns = 0;

    std::uint64_t responses() const noexcept;
    std::uint64_t errors() const noexcept;
};

// A run as others watch it. The runner attaches its workers' totals while they run and, when they end, leaves
// their final sum; snapshot() is safe from any thread at any time (empty before the run).
class live_watch {
public:
    live_snapshot snapshot() const;
    bool running() const noexcept { return running_.load(); }
    bool ended() const noexcept { return ended_.load(); }
    // When the run's first sends were due (valid once running() or ended()): on the steady clock, and the wall's.
    std::chrono::steady_clock::time_point start() const;
    std::chrono::system_clock::time_point wall_start() const;

    // The runner's side. `names`: the scenario's request names, in order; `start`: when the first sends are due.
    void attach(std::vector<const live_totals*> workers, std::vector<std::string> names,
                std::chrono::steady_clock::time_point start, std::chrono::system_clock::time_point wall_start);
    void detach();

private:
    live_snapshot sum_locked() const;

    mutable std::mutex mutex_;
    std::vector<const live_totals*> workers_;
    std::vector<std::string> names_;
    live_snapshot final_;
    std::chrono::steady_clock::time_point start_{};
    std::chrono::system_clock::time_point wall_start_{};
    std::atomic<bool> running_{false};
    std::atomic<bool> ended_{false};
};

} // namespace hotpath::load
