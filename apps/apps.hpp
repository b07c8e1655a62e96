// The demo services, each a few routes on the public API (see ../shared/CASES.md in the project's docs).
#pragma once

#include <hotpath/client/client.hpp>
#include <hotpath/server/app.hpp>

#include <chrono>
#include <string>
#include <string_view>

namespace hotpath::apps {

// Case 3, TechEmpower: GET /plaintext and GET /json.
void map_platform(app& routes);
// Case 1, the downstream: GET /weatherForecast waits `delay` asynchronously, then answers a JSON array of
// 5 forecasts {date, temperatureC, temperatureF, summary} (dates from tomorrow, ISO-8601).
void map_weather(app& routes, std::chrono::nanoseconds delay);
// Case 1, the upstream: how GET / runs its downstream calls.
enum class fan_out { sequential, all, bounded };
bool parse_fan_out(std::string_view text, fan_out& out);

struct aggregator_options {
    std::string upstream = "http://127.0.0.1:5176"; // the weather service
    unsigned calls = 100;
    fan_out strategy = fan_out::sequential;
    unsigned limit = 10;                                         // bounded: calls in flight at most
    std::chrono::nanoseconds timeout = std::chrono::seconds{10}; // per downstream call: past it, 504
    client_options client;                                       // the shared client's pool settings
};
// GET / [?strategy=sequential|all|bounded&limit=K&calls=N]: `calls` GETs of {upstream}/weatherForecast
// through one pooled client, then one result (an array of 5 forecasts) at random. A downstream that refuses,
// fails or answers badly → 502, too slow → 504, each a problem+json naming the call, answered at the first
// failure whatever the strategy: the calls still in flight are cancelled and no more start.
void map_aggregator(app& routes, aggregator_options options);
// Checks `o` for map_aggregator and normalises it (the upstream loses trailing slashes); returns "" when it can
// serve, else one line saying what is wrong.
std::string check_aggregator_options(aggregator_options& o);

// Planted capacity shapes for `hotpath lab capacity` (docs/capacity.md), each an asynchronous wait of ?ms=:
// GET /scale (alone: scales), /lock (one at a time per loop: serialised), /pool (`pool_workers` at a time per loop),
// /grow?every= (a pool of `pool_workers` at first that takes one worker more per `every` ms while short, as .NET's
// thread pool does), /usl?sigma=&kappa= (a wait that grows with the requests in flight as the Universal Scalability
// Law says).
void map_shapes(app& routes, unsigned pool_workers);

// Case 5: GET / redirects (302) to https://avatar.spacefox.fr/Renard-{k}.png with k uniform in 0..n.
void map_avatar(app& routes, unsigned n);

} // namespace hotpath::apps
