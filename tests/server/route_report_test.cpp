// The route report: what to_json() writes reads back equal, what a real server answers reads as its routes did,
// and what is not a report is refused in one line.
#include "support/memory_server.hpp"
#include <hotpath/server/app.hpp>
#include <hotpath/server/route_report.hpp>

#include <gtest/gtest.h>

namespace hotpath {
namespace {

route_report full_report() {
    route_report r;
    r.loops = 4;
    r.allocations_counted = true;
    route_figures a;
    a.method = "GET";
    a.route = "/users/{id}";
    a.requests = 12345;
    a.status_1xx = 1;
    a.status_2xx = 12000;
    a.status_3xx = 3;
    a.status_4xx = 300;
    a.status_5xx = 41;
    a.mean_ms = 1.25;
    a.p50_ms = 0.875;
    a.p95_ms = 3.0625;
    a.p99_ms = 10.1;
    a.queue = 0.1;
    a.app = 0.2;
    a.downstream = 0.5;
    a.wait = 0.15;
    a.write = 0.05;
    a.queue_mean_ms = 0.125;
    a.app_mean_ms = 0.25;
    a.downstream_mean_ms = 0.625;
    a.wait_mean_ms = 0.1875;
    a.write_mean_ms = 0.0625;
    a.calls_per_request = 2.5;
    a.mean_concurrency = 1.75;
    a.max_concurrency = 10;
    a.allocations_per_request = 151.0;
    a.allocated_bytes_per_request = 9876.5;
    a.stalls = 3;
    a.stall_held_ms = 450.5;
    a.stall_longest_ms = 300.25;
    a.stall_cpu_share = 0.03125;
    a.stall_measured_ms = 400.5;
    a.stall_waiting = {{"clock_nanosleep", 2}, {"computes", 1}};
    r.routes.push_back(a);
    route_figures b;
    b.method = "ANY";
    b.route = "/\"quoted\"/\\back";
    b.stalls = 1;
    r.routes.push_back(b);
    r.server = {true, 25, 7, 64, 1000, 5, 6, 7};
    return r;
}

TEST(route_report, what_is_written_reads_back_equal) {
    const route_report r = full_report();
    const auto back = parse_route_report(to_json(r));
    ASSERT_TRUE(back.has_value()) << back.error().message;
    EXPECT_EQ(*back, r);

    route_report minimal; // no allocation counter, no routes, an older server's missing "server" object
    minimal.loops = 1;
    const auto again = parse_route_report(to_json(minimal));
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(*again, minimal);
    EXPECT_FALSE(again->server.present);
}

// Per route, what held the loop's thread in its stalls (the watchdog's measure); a report of an older server,
// without it, reads with nothing measured.
TEST(route_report, stalls_say_what_held_the_thread) {
    const std::string json = to_json(full_report());
    EXPECT_NE(json.find(R"("cpu_share":3.125E-2,"measured_ms":4.005E2,"waiting":{"clock_nanosleep":2,"computes":1}})"),
              std::string::npos)
        << json;
    const auto older = parse_route_report(
        R"({"loops":1,"routes":[{"method":"GET","route":"/x","stalls":{"count":2,"held_ms":90,"longest_ms":60}}]})");
    ASSERT_TRUE(older.has_value());
    ASSERT_EQ(older->routes.size(), 1u);
    EXPECT_EQ(older->routes[0].stalls, 2u);
    EXPECT_FALSE(older->routes[0].stall_cpu_share.has_value());
    EXPECT_EQ(older->routes[0].stall_measured_ms, 0);
    EXPECT_TRUE(older->routes[0].stall_waiting.empty());
}

TEST(route_report, not_a_report_is_refused_in_one_line) {
    for (const char* text : {"[1,2]", R"({"loops":1})", "{not json", "", R"({"routes":[1]})"}) {
        const auto r = parse_route_report(text);
        ASSERT_FALSE(r.has_value()) << text;
        EXPECT_EQ(r.error().code, errc::invalid_value);
        EXPECT_FALSE(r.error().message.empty());
        EXPECT_EQ(r.error().message.find('\n'), std::string::npos);
    }
}

TEST(route_report, a_server_answers_a_report_of_its_routes) {
    app a;
    a.get("/users/{id}", [](request&, response& res) { res.text("u"); });
    a.post("/users", [](request&, response& res) { res.status(http::status::created); });
    a.debug_routes("/debug/routes");
    test::memory_server server(a);
    test::memory_peer* peer = nullptr;
    const std::string requests = "GET /users/1 HTTP/1.1\r\nHost: a\r\n\r\nGET /users/2 HTTP/1.1\r\nHost: a\r\n\r\n"
                                 "POST /users HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"
                                 "GET /nope HTTP/1.1\r\nHost: a\r\n\r\n";
    ASSERT_TRUE(server.run(
        [&] {
            peer = &server.connect();
            peer->send(requests);
        },
        [&] { return peer->received().find("HTTP/1.1 404") != std::string::npos; }));
    ASSERT_TRUE(server.run([&] { peer->send("GET /debug/routes HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); },
                           [&] { return peer->closed(); }));
    const std::string& got = peer->received();
    const auto body_at = got.rfind("\r\n\r\n{");
    ASSERT_NE(body_at, std::string::npos) << got;
    const auto r = parse_route_report(std::string_view(got).substr(body_at + 4));
    ASSERT_TRUE(r.has_value()) << r.error().message;
    EXPECT_EQ(r->loops, 1u);
    EXPECT_TRUE(r->server.present);
    const auto find = [&](std::string_view method, std::string_view route) -> const route_figures* {
        for (const auto& f : r->routes) {
            if (f.method == method && f.route == route) {
                return &f;
            }
        }
        return nullptr;
    };
    const route_figures* users = find("GET", "/users/{id}");
    ASSERT_NE(users, nullptr);
    EXPECT_EQ(users->requests, 2u);
    EXPECT_EQ(users->status_2xx, 2u);
    const route_figures* created = find("POST", "/users");
    ASSERT_NE(created, nullptr);
    EXPECT_EQ(created->status_2xx, 1u);
    const route_figures* unrouted = find("", "(no route)");
    ASSERT_NE(unrouted, nullptr) << to_json(*r);
    EXPECT_EQ(unrouted->status_4xx, 1u);
    // And what the server wrote is what to_json() writes of what was read.
    EXPECT_EQ(to_json(*r), std::string_view(got).substr(body_at + 4));
}

} // namespace
} // namespace hotpath
