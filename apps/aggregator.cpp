// The upstream of case 1: GET / calls the weather service `calls` times through one shared pooled client,
// sequentially, all at once, or at most `limit` at a time, and answers one result at random or the first failure.
#include "apps/apps.hpp"

#include "apps/forecast.hpp"
#include <hotpath/client/json.hpp>
#include <hotpath/core/error.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/http/url.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/server/json.hpp>

#include <fmt/format.h>

#include <boost/json/value_from.hpp>

#include <algorithm>
#include <charconv>
#include <random>

namespace hotpath::apps {

namespace {

using forecasts = std::vector<forecast>;

std::string_view strategy_name(fan_out s) {
    return s == fan_out::sequential ? "sequential" : s == fan_out::all ? "all" : "bounded";
}

bool parse_count(std::string_view text, unsigned& out) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc{} || end != text.data() + text.size() || v == 0 || v > 100000) {
        return false;
    }
    out = v;
    return true;
}

} // namespace

bool parse_fan_out(std::string_view text, fan_out& out) {
    if (text == "sequential") {
        out = fan_out::sequential;
    } else if (text == "all") {
        out = fan_out::all;
    } else if (text == "bounded") {
        out = fan_out::bounded;
    } else {
        return false;
    }
    return true;
}

void map_aggregator(app& routes, aggregator_options options) {
    struct state {
        explicit state(aggregator_options o) : opts(std::move(o)), downstream(opts.client) {}
        aggregator_options opts;
        client downstream; // one client for every loop and request, like the write-up's static HttpClient
        std::string url;
        client_route route; // the calls' name in the client's metrics: the downstream's route, not the URL
    };
    auto s = std::make_shared<state>(std::move(options));
    s->url = s->opts.upstream + "/weatherForecast";
    s->route = s->downstream.route("/weatherForecast");
    routes.expose(s->downstream.metrics()); // the downstream calls on the page of app.metrics(), when it has one

    routes.get("/", [s](request& req, response& res) -> task<void> {
        fan_out strategy = s->opts.strategy;
        unsigned limit = s->opts.limit;
        unsigned calls = s->opts.calls;
        if (req.has_query_param("strategy") && !parse_fan_out(req.query_param("strategy"), strategy)) {
            res.problem(http::status::bad_request, "strategy must be sequential, all or bounded");
            co_return;
        }
        if (req.has_query_param("limit") && !parse_count(req.query_param("limit"), limit)) {
            res.problem(http::status::bad_request, "limit must be a whole number from 1 to 100000");
            co_return;
        }
        if (req.has_query_param("calls") && !parse_count(req.query_param("calls"), calls)) {
            res.problem(http::status::bad_request, "calls must be a whole number from 1 to 100000");
            co_return;
        }

        // Every strategy stops at the first failure, which is the answer: the calls in flight are cancelled
        // (their connections closed) and no more start. The group's signal also follows the inbound request.
        cancel_signal group;
        const cancel_forward inbound_gone(req.aborted(), group);
        const call_options per_call{s->opts.timeout, {}, &group, s->route};
        const auto one = [&](std::size_t) { return s->downstream.get_json<forecasts>(s->url, per_call); };
        std::vector<result<forecasts>> results;
        switch (strategy) {
        case fan_out::sequential: // the write-up's loop: each call awaited before the next starts
            results.reserve(calls);
            for (std::size_t i = 0; i < calls; ++i) {
                results.push_back(co_await one(i));
                if (!results.back()) {
                    break;
                }
            }
            break;
        case fan_out::all: { // Task.WhenAll: every call in flight at once
            std::vector<task<result<forecasts>>> started;
            started.reserve(calls);
            for (std::size_t i = 0; i < calls; ++i) {
                started.push_back(one(i));
            }
            results = co_await when_all(std::move(started), fail_fast{group});
            break;
        }
        case fan_out::bounded: // at most `limit` in flight, results in order
            results = co_await bounded_fan_out(calls, limit, one, fail_fast{group});
            break;
        }

        // The failure to report: the first that is not a cancellation (the fan-out cancels the rest after it).
        auto failed = std::find_if(results.begin(), results.end(),
                                   [](const auto& r) { return !r && r.error() != errc::cancelled; });
        if (failed == results.end()) {
            failed = std::find_if(results.begin(), results.end(), [](const auto& r) { return !r; });
        }
        if (failed != results.end()) {
            const auto i = static_cast<std::size_t>(failed - results.begin());
            const std::error_code e = failed->error();
            const bool slow = e == errc::timeout || e == errc::connect_timeout;
            res.problem(slow ? http::status::gateway_timeout : http::status::bad_gateway,
                        fmt::format("GET {} (call {} of {}, {}): {}", s->url, i + 1, calls, strategy_name(strategy),
                                    e.message()));
            co_return;
        }
        thread_local std::minstd_rand rng{std::random_device{}()};
        const auto pick = std::uniform_int_distribution<std::size_t>(0, results.size() - 1)(rng);
        res.json(boost::json::value_from(*results[pick], json_storage(res)));
    });
}

std::string check_aggregator_options(aggregator_options& o) {
    const auto upstream = http::parse_url(o.upstream);
    if (!upstream) {
        return "bad --upstream '" + o.upstream + "' (e.g. http://127.0.0.1:5176)";
    }
    if (upstream->tls()) {
        if (auto made = net::tls_context::client(o.client.tls); !made) {
            return made.error().message; // a CA file that cannot be used: told at start, not at each call
        }
    }
    while (!o.upstream.empty() && o.upstream.back() == '/') {
        o.upstream.pop_back();
    }
    if (o.calls == 0 || o.limit == 0) {
        return "--calls and --limit must be at least 1";
    }
    return {};
}

} // namespace hotpath::apps
