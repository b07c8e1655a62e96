// Case 4's profile service: one user profile served three ways — blocking the loop's thread (the anti-pattern),
// waiting asynchronously, and offloading the blocking call to a bounded pool.
#pragma once

#include <hotpath/net/blocking_pool.hpp>
#include <hotpath/server/app.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace hotpath::apps {

struct profile_options {
    // The backing call's length (the write-up's 2 s).
    std::chrono::nanoseconds delay = std::chrono::seconds{2};
    // The pool /profile/offload runs the blocking call on. Its threads bound how many offloaded calls run at once
    // (throughput ≈ threads / delay); beyond threads + queue_capacity a request gets 503 at once. The queue is
    // sized by the latency budget: a queued call waits up to queue_capacity / threads × delay (64 / 32 × 2 s = 4 s)
    // before its own 2 s, under the load's 10 s timeout. With 256 it waited 16 s: every 200 came too late
    // (bench/RESULTS.md).
    blocking_pool_options pool{.threads = 32, .queue_capacity = 64, .name = "profile"};
};

// Maps, each answering 200 application/json {"id":<id>,"name":"User <id>","email":"user<id>@example.com"} after
// `delay`, as the .NET original does:
// - GET /profile/sync/{id}: THE ANTI-PATTERN, kept to be measured: sleeps on the loop's thread, which serves
//   nothing else meanwhile (the stall watchdog names this route);
// - GET /profile/async/{id}: waits on the loop's timer (net::sleep_for); the thread serves others meanwhile;
// - GET /profile/offload/{id}: runs the blocking sleep on the pool (co_await pool.run), cancelled while queued
//   when the client goes away; a full queue answers 503 with Retry-After.
// {id} must be a decimal integer that fits in 64 bits (ASP.NET's {id:long}), else 404. The pool is made here,
// owned by the routes, and its metrics are exposed on the app's metrics page.
void map_profile(app& routes, const profile_options& options);

// The id of a profile path parameter: an optional '-' then decimal digits, within int64; nullopt otherwise.
std::optional<std::int64_t> parse_profile_id(std::string_view text) noexcept;
// Writes the profile of `id` into `out`; returns the JSON written (a view of `out`).
inline constexpr std::size_t profile_bytes = 128; // the longest: id -9223372036854775808, 109 bytes
std::string_view write_profile(std::int64_t id, std::span<char, profile_bytes> out) noexcept;

} // namespace hotpath::apps
