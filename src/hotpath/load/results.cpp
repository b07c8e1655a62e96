// Merging per-worker results.
#include <hotpath/load/results.hpp>

#include <algorithm>

namespace hotpath::load {

void tls_results::merge(const tls_results& other) {
    handshakes += other.handshakes;
    resumed += other.resumed;
    handshake_time.merge(other.handshake_time);
    for (std::size_t i = 0; i < failures.size(); ++i) {
        failures[i] += other.failures[i];
    }
}

std::string_view to_string(error_class e) noexcept {
    switch (e) {
    case error_class::read:
        return "read";
    case error_class::write:
        return "write";
    case error_class::timeout:
        return "timeout";
    case error_class::malformed:
        return "malformed";
    case error_class::status:
        return "status";
    case error_class::check:
        return "check";
    case error_class::reset:
        return "reset";
    case error_class::refused:
        return "refused";
    case error_class::count_:
        break;
    }
    return "unknown";
}

second_sample& results::second(std::size_t index) {
    while (seconds.size() <= index) {
        seconds.emplace_back();
    }
    return seconds[index];
}

void results::close_seconds() {
    const auto whole = static_cast<std::size_t>((measured + std::chrono::seconds{1} - std::chrono::nanoseconds{1}) /
                                                std::chrono::seconds{1});
    const std::size_t keep = std::max<std::size_t>(1, whole);
    if (seconds.size() <= keep) {
        return;
    }
    auto& last = seconds[keep - 1];
    for (std::size_t i = keep; i < seconds.size(); ++i) {
        last.responses += seconds[i].responses;
        last.errors += seconds[i].errors;
        last.connect_failures += seconds[i].connect_failures;
        last.latency->merge(*seconds[i].latency);
    }
    seconds.resize(keep);
}

void results::merge(const results& other) {
    if (other.started_unix_ns != 0) {
        started_unix_ns =
            started_unix_ns == 0 ? other.started_unix_ns : std::min(started_unix_ns, other.started_unix_ns);
        last_started_unix_ns = std::max(last_started_unix_ns, other.last_started_unix_ns);
    }
    latency.merge(other.latency);
    service_time.merge(other.service_time);
    for (std::size_t i = 0; i < statuses.size(); ++i) {
        statuses[i] += other.statuses[i];
    }
    for (std::size_t i = 0; i < errors.size(); ++i) {
        errors[i] += other.errors[i];
    }
    responses += other.responses;
    successes += other.successes;
    bytes_received += other.bytes_received;
    bytes_sent += other.bytes_sent;
    unsent += other.unsent;
    late += other.late;
    retried_unprocessed += other.retried_unprocessed;
    retry_after_asked += other.retry_after_asked;
    retry_after_held += other.retry_after_held;
    retry_after_held_for += other.retry_after_held_for;
    connections_h2 += other.connections_h2;
    send_lag.merge(other.send_lag);
    connect_attempts += other.connect_attempts;
    connect_failures += other.connect_failures;
    connections_opened += other.connections_opened;
    if (connect_error.empty()) {
        connect_error = other.connect_error;
    }
    tls = tls || other.tls;
    handshakes.merge(other.handshakes);
    measured = std::max(measured, other.measured);
    if (ended == ending::completed && other.ended != ending::completed) {
        ended = other.ended; // a run merged from several is cut short if any of them was
        signal = other.signal;
    }
    if (per_request.size() < other.per_request.size()) {
        per_request.resize(other.per_request.size());
    }
    for (std::size_t i = 0; i < other.per_request.size(); ++i) {
        auto& mine = per_request[i];
        const auto& theirs = other.per_request[i];
        if (mine.name.empty()) {
            mine.name = theirs.name;
        }
        mine.latency.merge(theirs.latency);
        mine.responses += theirs.responses;
        mine.successes += theirs.successes;
        mine.failures += theirs.failures;
    }
    for (std::size_t i = 0; i < other.seconds.size(); ++i) {
        auto& s = second(i);
        s.responses += other.seconds[i].responses;
        s.errors += other.seconds[i].errors;
        s.connect_failures += other.seconds[i].connect_failures;
        s.latency->merge(*other.seconds[i].latency);
    }
}

std::uint64_t results::error_total() const noexcept {
    std::uint64_t total = 0;
    for (auto e : errors) {
        total += e;
    }
    return total;
}

double results::dropped_rate() const noexcept {
    const std::uint64_t planned = unsent + responses + error_total();
    return planned == 0 ? 0.0 : static_cast<double>(unsent) / static_cast<double>(planned);
}

} // namespace hotpath::load
