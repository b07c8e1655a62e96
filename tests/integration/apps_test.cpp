// The demo services in-process over loopback: the weather forecast's shape and its asynchronous delay.
#include "apps/apps.hpp"
#include "support/raw_client.hpp"
#include "support/test_server.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <ctime>
#include <set>
#include <string>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

std::string iso_day(int days_from_now) {
    const std::time_t t = std::time(nullptr) + static_cast<std::time_t>(days_from_now) * 86400;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[11];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
    return buf;
}

TEST(apps_test, weather_answers_five_well_formed_forecasts_after_its_delay) {
    app routes;
    apps::map_weather(routes, 30ms);
    test::test_server srv(routes);
    ASSERT_TRUE(srv.ok());
    const std::set<std::string> summaries = {"Freezing", "Bracing", "Chilly", "Cool",       "Mild",
                                             "Warm",     "Balmy",   "Hot",    "Sweltering", "Scorching"};
    test::raw_client c(srv.port());
    for (int round = 0; round < 20; ++round) {
        const auto t0 = std::chrono::steady_clock::now();
        ASSERT_TRUE(c.send("GET /weatherForecast HTTP/1.1\r\nHost: t\r\n\r\n"));
        auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_GE(std::chrono::steady_clock::now() - t0, 29ms);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->field("content-type"), "application/json");
        boost::system::error_code ec;
        const auto doc = boost::json::parse(r->body, ec);
        ASSERT_FALSE(ec) << r->body;
        ASSERT_TRUE(doc.is_array());
        const auto& list = doc.as_array();
        ASSERT_EQ(list.size(), 5u);
        for (std::size_t i = 0; i < list.size(); ++i) {
            const auto& f = list[i].as_object();
            ASSERT_EQ(f.size(), 4u) << r->body;
            const std::string date(f.at("date").as_string());
            // The day may roll over between the service's clock and ours: accept either.
            EXPECT_TRUE(date == iso_day(static_cast<int>(i) + 1) || date == iso_day(static_cast<int>(i) + 2)) << date;
            const auto c_deg = f.at("temperatureC").as_int64();
            EXPECT_GE(c_deg, -20);
            EXPECT_LT(c_deg, 55);
            EXPECT_EQ(f.at("temperatureF").as_int64(), 32 + static_cast<int>(static_cast<double>(c_deg) / 0.5556));
            EXPECT_TRUE(summaries.count(std::string(f.at("summary").as_string()))) << r->body;
        }
    }
}

TEST(apps_test, weather_waits_without_blocking_other_requests) {
    app routes;
    apps::map_weather(routes, 300ms);
    test::test_server srv(routes); // one loop
    std::vector<std::unique_ptr<test::raw_client>> clients;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 20; ++i) {
        clients.push_back(std::make_unique<test::raw_client>(srv.port()));
        ASSERT_TRUE(clients.back()->send("GET /weatherForecast HTTP/1.1\r\nHost: t\r\n\r\n"));
    }
    for (auto& c : clients) {
        ASSERT_TRUE(c->read_reply());
    }
    // Twenty 300 ms waits on one thread overlap: well under 20 × 300 ms.
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
}

} // namespace
} // namespace hotpath
