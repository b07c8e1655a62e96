// hotpath's services against the .NET originals they reproduce (peers/dotnet, published by scripts/build-peers.sh
// into HOTPATH_PEERS_DIR): the same requests to both, good and bad, and the same status, media type and payload
// shape back. Bodies are not compared byte for byte: forecasts are random, and error bodies are each framework's.
//
// Known differences, which are ASP.NET Core's own behaviour and stay as they are (peers/dotnet/README.md):
// - 404 and 405: hotpath answers problem+json; ASP.NET Core an empty body, except the aggregator, which registers
//   problem details for its bad requests and so answers every error that way. Only the status is compared.
// - Problem details: ASP.NET Core's `type` is a link and it adds `traceId`; a value that does not bind to `int`
//   (`limit=abc`) gets no `detail`. Compared: media type, `status`, `title`.
// - HEAD on a GET route: 200 from hotpath, 405 from MapGet. Not sent.
// - Paths and query names: ASP.NET Core ignores case (`/weatherforecast` is 200 there, 404 here). Not sent.
// - `limit=+5` or ` 5`: int binding takes them, hotpath does not. Not sent.
// - Media types: ASP.NET Core adds `; charset=utf-8`; the weather record writes `temperatureF` last.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <csignal>
#include <ctime>
#include <initializer_list>
#include <memory>
#include <netinet/in.h>
#include <regex>
#include <set>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::free_port;
using test::port_from;
using test::run_curl;
using test::wait_listening;

// What the two must agree on: the status, the media type (no parameters), Location and Allow, the body.
struct reply {
    int status = 0;
    std::string media_type;
    std::string location;
    std::string allow;
    std::string body;
};

// One request through curl, which reads both Content-Length and chunked bodies (Kestrel sends chunked).
reply fetch(std::uint16_t port, const std::string& method, const std::string& target) {
    // The body, then the status and fields on the last line: the body may hold newlines, the fields do not.
    const std::string out = run_curl("-X " + method + " -w '\\n%{http_code}|%{content_type}|%header{location}|" +
                                     "%header{allow}' 'http://127.0.0.1:" + std::to_string(port) + target + "'");
    reply r;
    const auto last = out.rfind('\n');
    if (last == std::string::npos) {
        return r;
    }
    r.body = out.substr(0, last);
    std::vector<std::string> parts;
    std::size_t from = last + 1;
    for (std::size_t bar; (bar = out.find('|', from)) != std::string::npos; from = bar + 1) {
        parts.push_back(out.substr(from, bar - from));
    }
    parts.push_back(out.substr(from));
    if (parts.size() != 4) {
        return r;
    }
    r.status = std::atoi(parts[0].c_str());
    r.media_type = parts[1].substr(0, parts[1].find(';'));
    r.location = parts[2];
    r.allow = parts[3];
    return r;
}

// A running server on 127.0.0.1: hotpath's service or a .NET original.
struct server {
    std::unique_ptr<child> process;
    std::uint16_t port = 0;
};

// `hotpath serve APP --port 0 ARGS...`, its port read from its announcement.
server start_hotpath(const std::string& app, std::vector<std::string> args) {
    args.insert(args.begin(), {"serve", app, "--threads", "1"});
    if (app != "avatar") { // avatar takes its port as its first positional, as the write-up's PORT N
        args.insert(args.end(), {"--port", "0"});
    }
    server s;
    s.process = std::make_unique<child>(std::move(args));
    s.port = port_from(s.process->line());
    return s;
}

std::string peer_path(const std::string& name) {
    return std::string(HOTPATH_PEERS_DIR) + "/" + name + "/" + name;
}

// The published original NAME with ARGS, where "{port}" stands for a free port it is given; its port once it
// accepts connections, else 0.
server start_original(const std::string& name, std::vector<std::string> args) {
    server s;
    const std::uint16_t port = free_port();
    for (auto& a : args) {
        if (const auto at = a.find("{port}"); at != std::string::npos) {
            a.replace(at, 6, std::to_string(port));
        }
    }
    s.process = std::make_unique<child>(peer_path(name), std::move(args));
    if (wait_listening(port, 30s)) { // the JIT's start, on a busy machine
        s.port = port;
    }
    return s;
}

// The first of `names` whose original has not been published, as a line for GTEST_SKIP; "" when all have.
std::string missing_original(std::initializer_list<const char*> names) {
    for (const char* name : names) {
        if (::access(peer_path(name).c_str(), X_OK) != 0) {
            return "no .NET original " + peer_path(name) + " (scripts/build-peers.sh publishes it where dotnet is)";
        }
    }
    return {};
}

// The shape of a JSON value: object keys (sorted) with their shapes, array lengths with their elements' shape
// (one when they all agree), scalar kinds. Integers and reals are told apart: a temperature is an integer.
std::string shape(const boost::json::value& v) {
    switch (v.kind()) {
    case boost::json::kind::object: {
        std::set<std::string> keys;
        for (const auto& [k, e] : v.get_object()) {
            keys.insert(std::string(k) + ":" + shape(e));
        }
        std::string out = "{";
        for (const auto& k : keys) {
            out += k + ",";
        }
        return out + "}";
    }
    case boost::json::kind::array: {
        std::set<std::string> elements;
        for (const auto& e : v.get_array()) {
            elements.insert(shape(e));
        }
        std::string out = "[" + std::to_string(v.get_array().size()) + " of ";
        for (const auto& e : elements) {
            out += e + "|";
        }
        return out + "]";
    }
    case boost::json::kind::string:
        return "string";
    case boost::json::kind::int64:
    case boost::json::kind::uint64:
        return "integer";
    case boost::json::kind::double_:
        return "real";
    case boost::json::kind::bool_:
        return "bool";
    case boost::json::kind::null:
        return "null";
    }
    return "?";
}

boost::json::value parse(const std::string& body) {
    boost::system::error_code ec;
    auto v = boost::json::parse(body, ec);
    return ec ? boost::json::value{"<not JSON: " + body + ">"} : v;
}

std::string iso_day(int days_from_now) {
    const std::time_t t = std::time(nullptr) + static_cast<std::time_t>(days_from_now) * 86400;
    std::tm tm{};
    gmtime_r(&t, &tm);
    char buf[11];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
    return buf;
}

// Case 1's answer, from either side: five forecasts from tomorrow, each as CASES.md describes it.
void expect_forecasts(const reply& r, const std::string& who) {
    SCOPED_TRACE(who);
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.media_type, "application/json");
    const auto doc = parse(r.body);
    EXPECT_EQ(shape(doc), "[5 of {date:string,summary:string,temperatureC:integer,temperatureF:integer,}|]") << r.body;
    if (!doc.is_array()) {
        return;
    }
    static const std::set<std::string> summaries = {"Freezing", "Bracing", "Chilly", "Cool",       "Mild",
                                                    "Warm",     "Balmy",   "Hot",    "Sweltering", "Scorching"};
    for (std::size_t i = 0; i < doc.get_array().size(); ++i) {
        const auto* f = doc.get_array()[i].if_object();
        if (f == nullptr || f->size() != 4 || !f->at("temperatureC").is_int64() || !f->at("temperatureF").is_int64() ||
            !f->at("date").is_string() || !f->at("summary").is_string()) {
            continue; // the shape above has failed already
        }
        const std::string date(f->at("date").get_string());
        // The day may roll over between the service's clock and ours (and .NET writes local time): either side.
        EXPECT_TRUE(date == iso_day(static_cast<int>(i)) || date == iso_day(static_cast<int>(i) + 1) ||
                    date == iso_day(static_cast<int>(i) + 2))
            << date;
        const auto c = f->at("temperatureC").get_int64();
        EXPECT_GE(c, -20);
        EXPECT_LT(c, 55);
        EXPECT_EQ(f->at("temperatureF").get_int64(), 32 + static_cast<int>(static_cast<double>(c) / 0.5556));
        EXPECT_TRUE(summaries.count(std::string(f->at("summary").get_string()))) << r.body;
    }
}

// A problem+json answer with this status, from either side.
void expect_problem(const reply& r, int status, const std::string& who) {
    SCOPED_TRACE(who);
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.media_type, "application/problem+json") << r.body;
    const auto doc = parse(r.body);
    const auto* o = doc.if_object();
    ASSERT_NE(o, nullptr) << r.body;
    ASSERT_TRUE(o->contains("status") && o->contains("title") && o->contains("type")) << r.body;
    EXPECT_TRUE(o->at("status").is_int64() && o->at("status").get_int64() == status) << r.body;
    EXPECT_TRUE(o->at("title").is_string() && o->at("type").is_string()) << r.body;
}

// The statuses where only the status can agree: an unknown path, a known path with another method.
void expect_same_errors(const server& hotpath, const server& original, const std::string& route) {
    for (const char* path : {"/nope", "/nope/deeper"}) {
        EXPECT_EQ(fetch(hotpath.port, "GET", path).status, 404) << path;
        EXPECT_EQ(fetch(original.port, "GET", path).status, 404) << path;
    }
    for (const char* method : {"POST", "PUT", "DELETE"}) {
        const reply h = fetch(hotpath.port, method, route);
        const reply o = fetch(original.port, method, route);
        EXPECT_EQ(h.status, 405) << method << " " << route;
        EXPECT_EQ(o.status, 405) << method << " " << route;
        EXPECT_NE(h.allow.find("GET"), std::string::npos) << h.allow;
        EXPECT_NE(o.allow.find("GET"), std::string::npos) << o.allow;
    }
}

TEST(dotnet_peers_test, platform_answers_as_the_techempower_entry) {
    if (const auto missing = missing_original({"platform"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const server hotpath = start_hotpath("platform", {});
    const server original = start_original("platform", {"--urls", "http://127.0.0.1:{port}"});
    ASSERT_NE(hotpath.port, 0);
    ASSERT_NE(original.port, 0) << peer_path("platform") << " did not accept connections within 30 s";
    for (const server* s : {&hotpath, &original}) {
        const std::string who = s == &hotpath ? "hotpath" : "original";
        for (const char* target : {"/plaintext", "/plaintext?x=1", "/plaintext/"}) {
            const reply r = fetch(s->port, "GET", target);
            EXPECT_EQ(r.status, 200) << who << " " << target;
            EXPECT_EQ(r.media_type, "text/plain") << who;
            EXPECT_EQ(r.body, "Hello, World!") << who;
        }
        const reply r = fetch(s->port, "GET", "/json");
        EXPECT_EQ(r.status, 200) << who;
        EXPECT_EQ(r.media_type, "application/json") << who;
        EXPECT_EQ(parse(r.body), (boost::json::object{{"message", "Hello, World!"}})) << who << ": " << r.body;
    }
    expect_same_errors(hotpath, original, "/plaintext");
    expect_same_errors(hotpath, original, "/json");
}

TEST(dotnet_peers_test, avatar_redirects_as_the_seven_lines) {
    if (const auto missing = missing_original({"avatar"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const server hotpath = start_hotpath("avatar", {"0", "3"});
    const server original = start_original("avatar", {"{port}", "3"}); // PORT N, as the write-up runs it
    ASSERT_NE(hotpath.port, 0);
    ASSERT_NE(original.port, 0) << peer_path("avatar") << " did not accept connections within 30 s";
    static const std::regex target(R"(^https://avatar\.spacefox\.fr/Renard-([0-3])\.png$)");
    for (const server* s : {&hotpath, &original}) {
        const std::string who = s == &hotpath ? "hotpath" : "original";
        std::set<std::string> seen;
        for (int i = 0; i < 60; ++i) {
            const reply r = fetch(s->port, "GET", i % 2 == 0 ? "/" : "/?from=test");
            EXPECT_EQ(r.status, 302) << who;
            std::smatch m;
            ASSERT_TRUE(std::regex_match(r.location, m, target)) << who << ": " << r.location;
            seen.insert(m[1]);
        }
        EXPECT_GE(seen.size(), 3u) << who; // uniform over 0..3: 60 draws miss two values with negligible odds
    }
    expect_same_errors(hotpath, original, "/");
}

TEST(dotnet_peers_test, weather_answers_five_forecasts_as_second_api) {
    if (const auto missing = missing_original({"weather"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const server hotpath = start_hotpath("weather", {});
    const server original = start_original("weather", {"--urls", "http://127.0.0.1:{port}"});
    ASSERT_NE(hotpath.port, 0);
    ASSERT_NE(original.port, 0) << peer_path("weather") << " did not accept connections within 30 s";
    for (const char* target : {"/weatherForecast", "/weatherForecast?days=3", "/weatherForecast/"}) {
        expect_forecasts(fetch(hotpath.port, "GET", target), std::string("hotpath ") + target);
        expect_forecasts(fetch(original.port, "GET", target), std::string("original ") + target);
    }
    EXPECT_EQ(fetch(hotpath.port, "GET", "/").status, 404);
    EXPECT_EQ(fetch(original.port, "GET", "/").status, 404);
    expect_same_errors(hotpath, original, "/weatherForecast");
}

TEST(dotnet_peers_test, aggregator_fans_out_and_refuses_bad_queries_as_first_api) {
    if (const auto missing = missing_original({"weather", "aggregator"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    // Each aggregator calls its own side's weather service.
    const server hotpath_weather = start_hotpath("weather", {});
    const server original_weather = start_original("weather", {"--urls", "http://127.0.0.1:{port}"});
    ASSERT_NE(hotpath_weather.port, 0);
    ASSERT_NE(original_weather.port, 0) << peer_path("weather") << " did not accept connections within 30 s";
    const server hotpath =
        start_hotpath("aggregator", {"--upstream", "http://127.0.0.1:" + std::to_string(hotpath_weather.port)});
    const server original = start_original("aggregator", {"--urls", "http://127.0.0.1:{port}", "--upstream",
                                                          "http://127.0.0.1:" + std::to_string(original_weather.port)});
    ASSERT_NE(hotpath.port, 0);
    ASSERT_NE(original.port, 0) << peer_path("aggregator") << " did not accept connections within 30 s";

    for (const char* target :
         {"/?calls=3", "/?strategy=sequential&calls=3", "/?strategy=all&calls=7", "/?strategy=bounded&limit=2&calls=7",
          "/?strategy=bounded&calls=12", "/?strategy=all&limit=100000&calls=1"}) {
        expect_forecasts(fetch(hotpath.port, "GET", target), std::string("hotpath ") + target);
        expect_forecasts(fetch(original.port, "GET", target), std::string("original ") + target);
    }
    for (const char* target : {"/?strategy=parallel", "/?strategy=", "/?strategy=ALL", "/?limit=0", "/?limit=-1",
                               "/?limit=abc", "/?limit=", "/?limit=100001", "/?limit=99999999999", "/?calls=0",
                               "/?calls=x", "/?strategy=bounded&limit=1.5", "/?calls=3&limit=0"}) {
        expect_problem(fetch(hotpath.port, "GET", target), 400, std::string("hotpath ") + target);
        expect_problem(fetch(original.port, "GET", target), 400, std::string("original ") + target);
    }
    expect_same_errors(hotpath, original, "/");
}

// A weather service that is not there: each aggregator answers 502 problem details naming the call.
TEST(dotnet_peers_test, aggregator_answers_502_when_the_weather_service_is_gone) {
    if (const auto missing = missing_original({"aggregator"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const std::string nowhere = "http://127.0.0.1:" + std::to_string(free_port());
    const server hotpath = start_hotpath("aggregator", {"--upstream", nowhere});
    const server original = start_original("aggregator", {"--urls", "http://127.0.0.1:{port}", "--upstream", nowhere});
    ASSERT_NE(hotpath.port, 0);
    ASSERT_NE(original.port, 0) << peer_path("aggregator") << " did not accept connections within 30 s";
    for (const char* target : {"/?calls=2", "/?strategy=all&calls=5", "/?strategy=bounded&limit=2&calls=5"}) {
        for (const server* s : {&hotpath, &original}) {
            const std::string who = std::string(s == &hotpath ? "hotpath " : "original ") + target;
            const reply r = fetch(s->port, "GET", target);
            expect_problem(r, 502, who);
            EXPECT_NE(r.body.find(nowhere + "/weatherForecast"), std::string::npos) << who << ": " << r.body;
        }
    }
}

} // namespace
} // namespace hotpath
