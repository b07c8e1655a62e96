// The access log: a line per request in JSON lines or the Common Log Format, in time order across loops, written
// off the loops; a writer that cannot keep up costs lines (counted), never a loop's time.
#include "support/raw_client.hpp"
#include "support/test_server.hpp"
#include <hotpath/server/access_log.hpp>
#include <hotpath/server/server.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

std::string temp_path(const std::string& name) {
    return ::testing::TempDir() + "hotpath_access_" + name + "_" + std::to_string(::getpid());
}

std::vector<std::string> lines_of(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
        lines.push_back(l);
    }
    return lines;
}

app make_app() {
    app routes;
    routes.get("/plaintext", [](request&, response& res) { res.text("Hello, World!", "text/plain"); });
    routes.get("/users/{id}", [](request& req, response& res) { res.text(req.param("id")); });
    return routes;
}

server_options logging_to(const std::string& path, log_line_format format, unsigned threads = 2) {
    server_options o;
    o.port = 0;
    o.threads = threads;
    o.io = test::test_io();
    o.access_log = path;
    o.access_log_format = format;
    return o;
}

TEST(access_log_test, json_lines_name_the_route_and_the_parts_of_the_time) {
    const std::string path = temp_path("json");
    std::remove(path.c_str());
    const app routes = make_app();
    {
        server srv(routes, logging_to(path, log_line_format::json));
        ASSERT_TRUE(srv.start());
        for (const char* target : {"/users/7?x=%22q%22", "/nowhere", "/plaintext"}) {
            test::raw_client c(srv.port());
            ASSERT_TRUE(c.send(std::string("GET ") + target + " HTTP/1.1\r\nHost: t\r\n\r\n"));
            ASSERT_TRUE(c.read_reply());
        }
        srv.stop();
        srv.wait(); // every answered request's line is written when wait() returns
        EXPECT_EQ(srv.stats().access_log_lines, 3u);
        EXPECT_EQ(srv.stats().access_log_dropped, 0u);
    }
    const auto lines = lines_of(path);
    ASSERT_EQ(lines.size(), 3u);
    const std::vector<std::pair<std::string, std::string>> want{
        {"/users/7?x=%22q%22", "/users/{id}"}, {"/nowhere", "(no route)"}, {"/plaintext", "/plaintext"}};
    std::string previous_time;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto doc = boost::json::parse(lines[i]).as_object();
        EXPECT_EQ(doc.at("target").as_string(), want[i].first);
        EXPECT_EQ(doc.at("route").as_string(), want[i].second);
        EXPECT_EQ(doc.at("method").as_string(), "GET");
        EXPECT_EQ(doc.at("remote").as_string(), "127.0.0.1");
        EXPECT_EQ(doc.at("status").as_int64(), i == 1 ? 404 : 200);
        EXPECT_GT(doc.at("bytes").as_int64(), 60);
        const std::string time(doc.at("time").as_string());
        EXPECT_TRUE(std::regex_match(time, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))) << time;
        EXPECT_GE(time, previous_time); // in time order, whichever loop answered
        previous_time = time;
        double parts = 0;
        for (const char* part : {"queue_ms", "app_ms", "downstream_ms", "wait_ms", "write_ms"}) {
            parts += doc.at(part).as_double();
        }
        EXPECT_NEAR(parts, doc.at("duration_ms").as_double(), 0.006); // each rounded to a microsecond
    }
    std::remove(path.c_str());
}

TEST(access_log_test, the_common_log_format_as_apache_writes_it) {
    const std::string path = temp_path("clf");
    std::remove(path.c_str());
    const app routes = make_app();
    {
        server srv(routes, logging_to(path, log_line_format::common, 1));
        ASSERT_TRUE(srv.start());
        test::raw_client c(srv.port());
        ASSERT_TRUE(c.send("GET /plaintext?a=1 HTTP/1.0\r\n\r\n"));
        ASSERT_TRUE(c.read_reply());
        test::raw_client d(srv.port());
        ASSERT_TRUE(d.send("GET /" + std::string(600, 'a') + " HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(d.read_reply());
        srv.stop();
        srv.wait();
    }
    const auto lines = lines_of(path);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_TRUE(
        std::regex_match(lines[0], std::regex(R"(127\.0\.0\.1 - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] )"
                                              R"("GET /plaintext\?a=1 HTTP/1\.0" 200 \d+)")))
        << lines[0];
    // A target longer than a record holds is cut, and says so.
    EXPECT_NE(lines[1].find("\"GET /" + std::string(access_record::max_target_bytes - 1, 'a') + "... HTTP/1.1\" 404"),
              std::string::npos)
        << lines[1];
    std::remove(path.c_str());
}

// The log goes to a pipe nobody reads: once the pipe and the ring are full, lines are dropped, and the requests
// are answered as fast as ever. Every request is a line or a drop.
TEST(access_log_test, a_writer_that_falls_behind_drops_lines_and_never_holds_a_loop) {
    int pipe_fds[2];
    ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
    const std::string path = "/proc/self/fd/" + std::to_string(pipe_fds[1]);
    const app routes = make_app();
    server_options o = logging_to(path, log_line_format::json, 1);
    o.access_log_records = 8;
    std::optional<server> srv;
    srv.emplace(routes, o);
    ASSERT_TRUE(srv->start());
    ::close(pipe_fds[1]); // the log holds its own descriptor of the pipe
    constexpr int requests = 2000;
    test::raw_client c(srv->port());
    const auto started = std::chrono::steady_clock::now();
    for (int i = 0; i < requests; ++i) {
        ASSERT_TRUE(c.send("GET /users/" + std::to_string(i) + " HTTP/1.1\r\nHost: t\r\n\r\n"));
        ASSERT_TRUE(c.read_reply(2s)) << i;
    }
    EXPECT_LT(std::chrono::steady_clock::now() - started, 10s);
    EXPECT_GT(srv->stats().access_log_dropped, 0u);

    std::string read_all;
    std::thread reader([&] {
        char buffer[65536];
        for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) {
            read_all.append(buffer, static_cast<std::size_t>(n));
        }
    });
    srv->stop();
    srv->wait();
    const auto stats = srv->stats();
    EXPECT_EQ(stats.access_log_lines + stats.access_log_dropped, static_cast<std::uint64_t>(requests));
    srv.reset(); // closes the log's end of the pipe: the reader sees its end
    reader.join();
    ::close(pipe_fds[0]);
    std::size_t newlines = 0;
    for (const char ch : read_all) {
        newlines += ch == '\n' ? 1 : 0;
    }
    EXPECT_EQ(newlines, stats.access_log_lines);
}

TEST(access_log_test, a_path_that_cannot_be_opened_fails_start) {
    const app routes = make_app();
    server srv(routes, logging_to("/nonexistent-dir/access.log", log_line_format::json));
    const auto started = srv.start();
    ASSERT_FALSE(started);
    EXPECT_EQ(started.error().code, std::errc::no_such_file_or_directory);
}

} // namespace
} // namespace hotpath
