// When a run begins: at once, at a wall-clock time (--start-at), or when released (--paused), so that many
// generators of one plan (--segment) begin within milliseconds of each other. The release comes from SIGUSR1 or
// from another thread through run_control (the CLI's control endpoint, as k6-operator's starter drives k6's).
#pragma once

#include <hotpath/core/result.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hotpath::load {

using wall_clock = std::chrono::system_clock;

// RFC 3339 ("2026-12-06T16:00:00Z", "2026-12-06 17:00:00.250+01:00": a space for the T, fractions to the
// nanosecond, Z or an offset required), or Unix time in seconds ("1796572800", "1796572800.25", as `date +%s`
// prints). Errors say what was expected.
result<wall_clock::time_point, problem> parse_start_time(std::string_view text);

// "2026-12-06T16:00:00.250Z": UTC, milliseconds.
std::string wall_clock_text(wall_clock::time_point t);

// What a run does and when it began, shared between the runner and whoever watches or drives it from another
// thread. Every member is safe from any thread.
class run_control {
public:
    enum class phase : std::uint8_t { waiting, running, finished };

    // Releases a paused run; false when the run was not waiting for it (not paused, already begun, or over).
    bool release() noexcept;
    // Ends the run early, as SIGTERM does (before the start: no run at all).
    void stop() noexcept { stop_.store(true); }

    phase now() const noexcept { return phase_.load(); }
    bool paused() const noexcept { return paused_.load(); }
    std::optional<wall_clock::time_point> start_at() const noexcept; // --start-at, when given
    std::optional<wall_clock::time_point> began() const noexcept;    // when the first sends were due

    // The runner's side.
    void wait_for(bool paused, std::optional<wall_clock::time_point> at) noexcept;
    bool released() const noexcept { return released_.load(); }
    bool stop_asked() const noexcept { return stop_.load(); }
    void begin(wall_clock::time_point at) noexcept;
    void finish() noexcept { phase_.store(phase::finished); }

private:
    std::atomic<phase> phase_{phase::waiting};
    std::atomic<bool> paused_{false};
    std::atomic<bool> released_{false};
    std::atomic<bool> stop_{false};
    std::atomic<std::int64_t> start_at_ns_{0}; // since the epoch; 0: none
    std::atomic<std::int64_t> began_ns_{0};
};

} // namespace hotpath::load
