// What a load run measured: latency histograms, statuses, errors by class, and a per-second series.
#pragma once

#include <hotpath/metrics/histogram.hpp>
#include <hotpath/net/tls_options.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::load {

// Why a request failed. A failed connection attempt is not a failed request (no request was sent on it): it is
// counted in results::connect_failures. HTTP/2 adds two: its stream reset by the server (RST_STREAM), or refused
// (RST_STREAM with REFUSED_STREAM: the server did not start it, over its concurrent streams).
enum class error_class : std::uint8_t { read, write, timeout, malformed, status, check, reset, refused, count_ };
inline constexpr std::size_t error_class_count = static_cast<std::size_t>(error_class::count_);
std::string_view to_string(error_class e) noexcept;

// Over TLS: the handshakes of the connections opened, timed apart from the requests' latency (as wrk does: a
// request's time starts once its connection is ready).
struct tls_results {
    std::uint64_t handshakes = 0; // completed
    std::uint64_t resumed = 0;    // of those, resumed sessions (no certificate exchange)
    // From the TCP connection's establishment to the handshake's end, all handshakes of the run (warm-up too).
    metrics::histogram handshake_time;
    // Failed handshakes (failed connection attempts too), by class: the count of net::tls_errc `e` is
    // failures[e - 1], failures_of(e).
    std::array<std::uint64_t, net::tls_errcs.size()> failures{};

    std::uint64_t& failures_of(net::tls_errc e) noexcept { return failures[static_cast<std::size_t>(e) - 1]; }
    std::uint64_t failures_of(net::tls_errc e) const noexcept { return failures[static_cast<std::size_t>(e) - 1]; }
    void merge(const tls_results& other);
};

// One second of the measured window.
struct second_sample {
    std::uint64_t responses = 0;
    // Failed requests, and failed connection attempts (a starved server that refuses or drops connections fails
    // no request, but a user that could not connect is an error of that second all the same).
    std::uint64_t errors = 0;
    std::uint64_t connect_failures = 0; // of `errors`, the failed connection attempts
    std::unique_ptr<metrics::histogram> latency = std::make_unique<metrics::histogram>();
};

// The figures of one named request of a scenario.
struct request_results {
    std::string name;
    metrics::histogram latency;
    std::uint64_t responses = 0;
    std::uint64_t successes = 0;
    std::uint64_t failures = 0; // unexpected statuses and failed checks
};

// Kept by each worker on its own thread, merged at the end; merge() is exact (counts add, histograms merge).
struct results {
    // Open model: from each request's scheduled send time (coordinated-omission correct). Closed model:
    // from the time its bytes were handed to the socket.
    metrics::histogram latency;
    // Open model only: from the actual send time; the figure a naive tool would report.
    metrics::histogram service_time;
    std::array<std::uint64_t, 600> statuses{};
    std::array<std::uint64_t, error_class_count> errors{};
    std::uint64_t responses = 0;      // complete responses in the measured window
    std::uint64_t successes = 0;      // of those: 1xx-3xx or an expected status
    std::uint64_t bytes_received = 0; // measured window, heads and bodies
    std::uint64_t bytes_sent = 0;
    std::uint64_t unsent = 0; // open model: due but never sent (all connections busy until the end)
    std::uint64_t late = 0;   // open model: sent after waiting for a free connection
    // HTTP/2: requests on streams past a GOAWAY's last stream id (unprocessed, RFC 9113 §6.8), sent again on
    // another connection; not failures.
    std::uint64_t retried_unprocessed = 0;
    std::uint64_t connections_h2 = 0; // of connections_opened, those that spoke HTTP/2
    // Answers (429 or 503) with a Retry-After a client can read, in the measured window; of those, the ones a user
    // waited for (closed model, plan::honour_retry_after), and the time users were held in all (each wait cut at
    // the run's end).
    std::uint64_t retry_after_asked = 0;
    std::uint64_t retry_after_held = 0;
    std::chrono::nanoseconds retry_after_held_for{};
    // Open model: how far behind its scheduled time each late request was sent.
    metrics::histogram send_lag;
    std::uint64_t connect_attempts = 0;
    std::uint64_t connect_failures = 0;   // attempts that failed (refused, unreachable, ...)
    std::uint64_t connections_opened = 0; // attempts that succeeded
    std::string connect_error;            // the first failed attempt's reason, "" if none failed
    bool tls = false;                     // the target is https://: `handshakes` holds
    tls_results handshakes;
    std::chrono::nanoseconds measured{}; // length of the measured window (warm-up excluded)
    // How the run ended: as planned; cut short by SIGINT or SIGTERM (`signal`); or given up because nothing
    // connected within plan::connect_grace (see plan::keep_trying). Set by the runner; merged, the first that was
    // not completed.
    enum class ending : std::uint8_t { completed, interrupted, unreachable } ended = ending::completed;
    int signal = 0;
    // When the first sends were due, in nanoseconds since the Unix epoch (0: not known). Merged runs keep the
    // earliest and the latest: how far apart generators started together began (--start-at, --paused).
    std::int64_t started_unix_ns = 0;
    std::int64_t last_started_unix_ns = 0;
    std::vector<second_sample> seconds;
    std::vector<request_results> per_request; // one per scenario request, in the scenario's order

    second_sample& second(std::size_t index);
    // Folds the per-second samples past the measured window into its last second: responses still in flight at
    // the end are counted, and the series has one entry per second measured (ceil(measured / 1 s)).
    void close_seconds();
    void merge(const results& other);
    std::uint64_t error_total() const noexcept;
    // Open model: the share of planned sends never sent (unsent against unsent, answered and failed); 0 without.
    double dropped_rate() const noexcept;
};

} // namespace hotpath::load
