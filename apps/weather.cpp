// The weather service of case 1: GET /weatherForecast waits (asynchronously), builds 1000 forecasts, returns 5.
#include "apps/apps.hpp"

#include <hotpath/net/sleep.hpp>
#include <hotpath/server/json.hpp>

#include <array>
#include <chrono>
#include <ctime>
#include <random>
#include <vector>

namespace hotpath::apps {
namespace {

constexpr std::array<const char*, 10> summaries = {"Freezing", "Bracing", "Chilly", "Cool",       "Mild",
                                                   "Warm",     "Balmy",   "Hot",    "Sweltering", "Scorching"};

struct forecast {
    char date[11]; // YYYY-MM-DD
    int temperature_c;
    int temperature_f;
    const char* summary;
};

} // namespace

void map_weather(app& routes, std::chrono::nanoseconds delay) {
    routes.get("/weatherForecast", [delay](request&, response& res) -> task<void> {
        // Stands in for a cache or database call: the thread serves other requests meanwhile.
        co_await net::sleep_for(delay);
        thread_local std::minstd_rand rng{std::random_device{}()};
        thread_local std::vector<forecast> all(1000); // the write-up builds 1000 and returns 5
        thread_local std::time_t dates_day = -1;
        const std::time_t today = std::time(nullptr) / 86400;
        if (today != dates_day) {
            // The dates change once a day: format them then, not per request.
            dates_day = today;
            for (std::size_t i = 0; i < all.size(); ++i) {
                const std::time_t day = (today + static_cast<std::time_t>(i + 1)) * 86400;
                std::tm tm{};
                gmtime_r(&day, &tm);
                std::strftime(all[i].date, sizeof(all[i].date), "%Y-%m-%d", &tm);
            }
        }
        std::uniform_int_distribution<int> temperature(-20, 54); // [-20, 55)
        std::uniform_int_distribution<std::size_t> summary(0, summaries.size() - 1);
        for (auto& f : all) {
            f.temperature_c = temperature(rng);
            f.temperature_f = 32 + static_cast<int>(f.temperature_c / 0.5556);
            f.summary = summaries[summary(rng)];
        }
        boost::json::array out(json_storage(res));
        out.reserve(5);
        for (std::size_t i = 0; i < 5; ++i) {
            boost::json::object o(json_storage(res));
            o.reserve(4);
            o.emplace("date", all[i].date);
            o.emplace("temperatureC", all[i].temperature_c);
            o.emplace("temperatureF", all[i].temperature_f);
            o.emplace("summary", all[i].summary);
            out.emplace_back(std::move(o));
        }
        res.json(out);
    });
}

} // namespace hotpath::apps
