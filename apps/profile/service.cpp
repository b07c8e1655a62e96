// GET /profile/{sync,async,offload}/{id}: the same answer after the same delay, spent three ways.
#include "apps/profile/service.hpp"

#include <hotpath/net/sleep.hpp>
#include <hotpath/server/blocking.hpp>

#include <fmt/format.h>

#include <charconv>
#include <memory>
#include <thread>

namespace hotpath::apps {

std::optional<std::int64_t> parse_profile_id(std::string_view text) noexcept {
    if (text.empty() || text.front() == '+') {
        return std::nullopt;
    }
    std::int64_t id = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return id;
}

std::string_view write_profile(std::int64_t id, std::span<char, profile_bytes> out) noexcept {
    const auto r =
        fmt::format_to_n(out.data(), out.size(), R"({{"id":{0},"name":"User {0}","email":"user{0}@example.com"}})", id);
    return {out.data(), r.size};
}

namespace {

void answer_profile(std::int64_t id, response& res) {
    char body[profile_bytes];
    res.body(write_profile(id, body), "application/json");
}

void not_found(response& res) {
    res.problem(http::status::not_found, "no route matches the request path");
}

} // namespace

void map_profile(app& routes, const profile_options& options) {
    const auto delay = options.delay;
    auto pool = std::make_shared<blocking_pool>(options.pool);
    routes.expose(pool->metrics());

    // THE ANTI-PATTERN, on purpose: a synchronous backing call on the loop's own thread. Every other request of
    // this loop (its connections, its timers) waits behind it. Do not copy.
    routes.get("/profile/sync/{id}", [delay](request& req, response& res) {
        const auto id = parse_profile_id(req.param("id"));
        if (!id) {
            not_found(res);
            return;
        }
        std::this_thread::sleep_for(delay);
        answer_profile(*id, res);
    });

    // The fix: the wait is a timer on the loop; the thread serves other requests meanwhile.
    routes.get("/profile/async/{id}", [delay](request& req, response& res) -> task<void> {
        const auto id = parse_profile_id(req.param("id"));
        if (!id) {
            not_found(res);
            co_return;
        }
        co_await net::sleep_for(delay);
        answer_profile(*id, res);
    });

    // A library that only blocks: its call runs on the bounded pool, the loop's thread stays free.
    routes.get("/profile/offload/{id}", [delay, pool](request& req, response& res) -> task<void> {
        const auto id = parse_profile_id(req.param("id"));
        if (!id) {
            not_found(res);
            co_return;
        }
        const auto done = co_await pool->run([delay] { std::this_thread::sleep_for(delay); }, req.aborted());
        if (!done) {
            answer_blocking_failure(res, done.error());
            co_return;
        }
        answer_profile(*id, res);
    });
}

} // namespace hotpath::apps
