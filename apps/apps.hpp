// The demo services, each a few routes on the public API (see ../shared/CASES.md in the project's docs).
#pragma once

#include "server/app.hpp"

#include <chrono>

namespace hotpath::apps {

// Case 3, TechEmpower: GET /plaintext and GET /json.
void map_platform(app& routes);
// Case 1, the downstream: GET /weatherForecast waits `delay` asynchronously, then answers a JSON array of
// 5 forecasts {date, temperatureC, temperatureF, summary} (dates from tomorrow, ISO-8601).
void map_weather(app& routes, std::chrono::nanoseconds delay);
// Case 5: GET / redirects (302) to https://avatar.spacefox.fr/Renard-{k}.png with k uniform in 0..n.
void map_avatar(app& routes, unsigned n);

} // namespace hotpath::apps
