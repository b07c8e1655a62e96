// The connection's timeouts, judged on its tick.
#include <hotpath/server/connection_timeouts.hpp>

#include <algorithm>

namespace hotpath {

connection_timeouts::connection_timeouts(const http::limits& limits, net::clock::time_point now) noexcept
    : deadline_(now + limits.request_headers_timeout),
      response_credit_bytes_(static_cast<double>(limits.min_response_bytes_per_second) *
                             static_cast<double>(limits.min_response_rate_grace.count())) {}

void connection_timeouts::wait_body(net::clock::time_point now, std::uint64_t already) noexcept {
    waiting_ = waiting::body_rate;
    body_started_ = now;
    body_received_ = already;
}

void connection_timeouts::wait_linger(net::clock::time_point now, net::clock::duration for_how_long) noexcept {
    waiting_ = waiting::linger;
    deadline_ = now + for_how_long;
}

void connection_timeouts::body_done() noexcept {
    if (waiting_ == waiting::body_rate) {
        waiting_ = waiting::none;
    }
}

// The minimum response rate (Kestrel's MinResponseDataRate, measured as progress): while responses wait to be
// sent, the client owes limits.min_response_bytes_per_second and pays with every byte it acknowledges. It may fall
// behind by the grace period's worth of bytes, and no further; its credit never exceeds that, so however fast it
// read before, a stall is noticed after the grace period. In other words, over any span during which responses
// wait, the client must take at least rate × (span − grace) bytes. Measured from the first tick that sees a write
// waiting; a tick with nothing left to send restores the full credit. Only the tick does this (a system call per
// connection with a write waiting): nothing is added to the write path.
bool connection_timeouts::response_too_slow(const http::limits& limits, net::clock::time_point now,
                                            std::optional<std::uint64_t> acknowledged) noexcept {
    const auto rate = static_cast<double>(limits.min_response_bytes_per_second);
    const double allowance = rate * static_cast<double>(limits.min_response_rate_grace.count());
    if (!acknowledged) {
        response_credit_bytes_ = allowance;
        writing_at_tick_ = false;
        return false;
    }
    if (writing_at_tick_) {
        const std::chrono::duration<double> owed_for = now - last_tick_;
        response_credit_bytes_ =
            std::min(allowance, response_credit_bytes_ + static_cast<double>(*acknowledged - acknowledged_at_tick_) -
                                    rate * owed_for.count());
    }
    acknowledged_at_tick_ = *acknowledged;
    last_tick_ = now;
    writing_at_tick_ = true;
    return response_credit_bytes_ < 0;
}

connection_timeouts::expired connection_timeouts::check(const http::limits& limits, net::clock::time_point now,
                                                        std::optional<std::uint64_t> acknowledged,
                                                        bool reading_paused) noexcept {
    if (limits.min_response_bytes_per_second != 0 && response_too_slow(limits, now, acknowledged)) {
        return expired::response_rate;
    }
    switch (waiting_) {
    case waiting::none:
        return expired::nothing;
    case waiting::handshake:
        return now >= deadline_ ? expired::handshake : expired::nothing;
    case waiting::headers:
        return now >= deadline_ ? expired::headers : expired::nothing;
    case waiting::idle:
        return now >= deadline_ ? expired::idle : expired::nothing;
    case waiting::linger:
        return now >= deadline_ ? expired::linger : expired::nothing;
    case waiting::body_rate:
        break;
    }
    if (reading_paused) {
        // Not reading (its responses are not being taken): the rate is measured afresh once reading resumes.
        body_started_ = now;
        body_received_ = 0;
        return expired::nothing;
    }
    const auto elapsed = now - body_started_;
    if (elapsed <= limits.min_body_rate_grace) {
        return expired::nothing;
    }
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
    return body_received_ < limits.min_body_bytes_per_second * static_cast<std::uint64_t>(seconds) ? expired::body_rate
                                                                                                   : expired::nothing;
}

} // namespace hotpath
