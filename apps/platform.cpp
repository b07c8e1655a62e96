// The TechEmpower "platform" app (case 3): /plaintext and /json, following the benchmark's rules.
#include "apps/apps.hpp"

#include <hotpath/server/json.hpp>

namespace hotpath::apps {

void map_platform(app& routes) {
    routes.get("/plaintext", [](request&, response& res) { res.text("Hello, World!", "text/plain"); });
    // Serialised per request from a fresh object, as the JSON test requires; built on the per-request arena.
    routes.get("/json", [](request&, response& res) {
        boost::json::object message(json_storage(res));
        message.emplace("message", "Hello, World!");
        res.json(message);
    });
}

} // namespace hotpath::apps
