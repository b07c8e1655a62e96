// hotpath's services against the .NET originals they reproduce (peers/dotnet, published by scripts/build-peers.sh
// into HOTPATH_PEERS_DIR): the same requests to both, good and bad, and the same status, media type and payload
// shape back. Bodies are not compared byte for byte: forecasts are random, and error bodies are each framework's.
// Freight (case 2) is the exception: both .NET variants must answer every request exactly as `hotpath serve
// freight` does, the parsed JSON bodies equal, problem details included (the original answers hotpath's router's
// 404 and 405 itself). Profile (case 4) is checked on the .NET side alone until hotpath serves it.
//
// Known differences, which are ASP.NET Core's own behaviour and stay as they are (peers/dotnet/README.md):
// - 404 and 405: hotpath answers problem+json; ASP.NET Core an empty body, except the aggregator, which registers
//   problem details for its bad requests and so answers every error that way. Only the status is compared.
// - Problem details: ASP.NET Core's `type` is a link and it adds `traceId`; a value that does not bind to `int`
//   (`limit=abc`) gets no `detail`. Compared: media type, `status`, `title`.
// - HEAD on a GET route: 200 from hotpath, 405 from MapGet. Not sent.
// - Paths and query names: ASP.NET Core ignores case (`/weatherforecast` is 200 there, 404 here). Not sent
//   (freight checks the case of its path itself, and `POST /Freight/Quote` is sent).
// - `limit=+5` or ` 5`: int binding takes them, hotpath does not. Not sent.
// - Media types: ASP.NET Core adds `; charset=utf-8`; the weather record writes `temperatureF` last.
// - Freight: hotpath also serves GET /metrics and /debug/routes (404 from the original), and reloads its table when
//   the file changes (the original reads it once). Not sent. A number whose exponent overflows (1e99999999999999999999
//   in an ignored member) is JSON to hotpath's lean reader and to System.Text.Json, but not to Boost.JSON, so
//   hotpath's churn variant answers 400 there: the originals agree with hotpath's lean variant, which the test runs.
#include "support/child_process.hpp"
#include "support/peers.hpp"
#include "support/raw_client.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <netinet/in.h>
#include <random>
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

// The published original NAME with ARGS, where "{port}" stands for a free port it is given; its port once it
// accepts connections, else 0.
server start_original(const std::string& name, std::vector<std::string> args) {
    auto started = test::start_original(name, std::move(args));
    return {std::move(started.process), started.port};
}

using test::missing_original;

std::string peer_path(const std::string& name) {
    return test::original_path(name);
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

// ---- Case 2: freight, answered exactly alike ----

// A temporary directory, removed with what it holds.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        std::string pattern = (std::filesystem::temp_directory_path() / "dotnet_peers_XXXXXX").string();
        if (::mkdtemp(pattern.data()) != nullptr) {
            path = pattern;
        }
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
};

// One request on a kept-alive connection (freight's answers all carry Content-Length, on both sides), read within 5 s.
reply exchange(test::raw_client& c, const std::string& method, const std::string& target, const std::string& body) {
    std::string request = method + " " + target + " HTTP/1.1\r\nHost: t\r\n";
    if (method == "POST") {
        request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    }
    request += "\r\n" + body;
    reply r;
    if (!c.send(request)) {
        return r;
    }
    const auto got = c.read_reply();
    if (!got) {
        return r;
    }
    const std::string type = got->field("content-type");
    r.status = got->status;
    r.media_type = type.substr(0, type.find(';'));
    r.allow = got->field("allow");
    r.body = got->body;
    return r;
}

std::string quote_body(const std::string& cep, const std::string& items) {
    return R"({"cep":")" + cep + R"(","items":)" + items + "}";
}

// The requests both sides get: valid quotes of several shapes, unknown CEPs, carts too heavy, and every class of bad
// request (the cases of tests/apps/freight_test.cpp and the edges of the JSON hotpath accepts).
std::vector<std::string> freight_bodies() {
    const std::string item = R"({"sku":"A-1","quantity":2,"weightGrams":350})";
    std::string fifty = "[";
    for (int i = 0; i < 50; ++i) {
        fifty += (i == 0 ? "" : ",") + item;
    }
    const std::string item_list = "[" + item + "]";
    std::vector<std::string> bodies = {
        // Quoted: with and without the dash, members in any order, spaces, escapes, extra and repeated members.
        quote_body("01310100", item_list),
        quote_body("01310-100", R"([{"sku":"B","quantity":1,"weightGrams":1}])"),
        quote_body("20040-020",
                   R"([{"sku":"x","quantity":3,"weightGrams":700},{"sku":"y","quantity":1,"weightGrams":99}])"),
        quote_body("99999999", R"([{"sku":"heavy","quantity":1000,"weightGrams":100}])"),
        quote_body("69900-000", R"([{"sku":"a","quantity":1,"weightGrams":100000}])"),
        R"(  {"items": [ {"weightGrams": 1200, "quantity": 3, "sku": "SKU-9\u00e9\""} ], "cep": "30130-010" } )",
        R"({"c\u0065p":"0131\u00300100","items":[{"sku":"\ud83d\ude00","quantity":1,"weightGrams":5}],"note":[null,true,{"a":1.5e2}]})",
        R"({"cep":"00000000","items":[1],"cep":"01310100","items":[{"sku":"a","quantity":1,"weightGrams":1,"quantity":4}]})",
        quote_body("01310100", fifty + "]"),
        quote_body("01310100", "[" + item + R"(,{"sku":"z","quantity":1,"weightGrams":1,"deep":)" +
                                   std::string(29, '[') + std::string(29, ']') + "}]"),
        // Unknown CEPs (404) and a cart over the heaviest bracket (400).
        quote_body("00000-000", item_list),
        quote_body("01000000", item_list),
        quote_body("01310100", R"([{"sku":"a","quantity":1000,"weightGrams":100000}])"),
        // Not JSON, not an object.
        std::string(9000, ' ') + "{}",
        "",
        " ",
        "{",
        quote_body("01310100", item_list) + " x",
        R"({"cep":"01310100","items":[)" + item + "],}",
        R"({"cep":"\ud800","items":[]})",
        R"({"cep":"01310100","items":[],"x":"\udc00"})",
        "{\"cep\":\"\xff\",\"items\":[]}",
        "{\"cep\":\"01310100\",\"items\":[],\"x\":\"\xed\xa0\x80\"}",
        "\xef\xbb\xbf" + quote_body("01310100", item_list),
        R"({"cep":"01310100","items":[{"sku":"a","quantity":01,"weightGrams":1}]})",
        R"({"cep":"01310100","items":[{"sku":"a","quantity":1,"weightGrams":1}],"n":NaN})",
        R"({"cep":"01310100","items":[{"sku":"a","quantity":1,"weightGrams":1}]} // comment)",
        "[1,2]",
        "\"01310100\"",
        "null",
        // Missing or wrong fields, in hotpath's order: cep, items, then each item's sku, quantity, weightGrams.
        "{}",
        "{\"items\":" + item_list + "}",
        R"({"cep":1310100,"items":)" + item_list + "}",
        quote_body("0131010", item_list),
        quote_body("01310_100", item_list),
        quote_body("0131-0100", item_list),
        R"({"cep":"01310100"})",
        R"({"cep":"01310100","items":{}})",
        quote_body("01310100", "[]"),
        quote_body("01310100", fifty + "," + item + "]"),
        quote_body("01310100", "[" + item + ",3]"),
        quote_body("01310100", R"([{"quantity":2,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"","quantity":2,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":")" + std::string(65, 'x') + R"(","quantity":2,"weightGrams":350}])"),
        quote_body("01310100",
                   R"([{"sku":")" + std::string(22, 'x') + std::string(22 * 6, ' ') + R"(","quantity":2}])"),
        quote_body("01310100", R"([{"sku":7,"quantity":2,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":0,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":1001,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":2.5,"weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":"2","weightGrams":350}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":99999999999999999999,"weightGrams":1}])"),
        quote_body("01310100", "[" + item + R"(,{"sku":"a","quantity":2}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":2,"weightGrams":1e3}])"),
        quote_body("01310100", R"([{"sku":"a","quantity":2,"weightGrams":100001}])"),
    };
    // Nesting: 32 containers deep is JSON to hotpath (Boost.JSON's default), 33 is not.
    for (int depth : {31, 32, 33}) {
        bodies.push_back(std::string(static_cast<std::size_t>(depth), '[') +
                         std::string(static_cast<std::size_t>(depth), ']'));
        bodies.push_back(quote_body("01310100", item_list)
                             .insert(1, R"("x":)" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + ","));
    }
    // Random carts, and the same carts broken at random (bytes flipped, dropped, inserted, the body cut short).
    std::mt19937_64 rng(2027);
    const std::string alphabet = "{}[]\",:0123456789-.eE+ \\u\x01\x7f\xc3\xa9\xed\xa0\x80"
                                 "abtnrlsf";
    for (int i = 0; i < 400; ++i) {
        std::string cep = std::to_string(1'000'000 + rng() % 99'000'000);
        cep.insert(0, 8 - cep.size(), '0');
        if (rng() % 2 == 0) {
            cep.insert(5, "-");
        }
        std::string items = "[";
        const auto n = 1 + rng() % 6;
        for (std::uint64_t k = 0; k < n; ++k) {
            items += (k == 0 ? "{" : ", {") + std::string(R"("sku": "SKU-)") + std::to_string(rng() % 10000) +
                     R"(", "quantity": )" + std::to_string(1 + rng() % 4) + R"(, "weightGrams": )" +
                     std::to_string(50 + rng() % 2950) + "}";
        }
        std::string body = quote_body(cep, items + "]");
        if (i % 2 == 1) {
            for (std::uint64_t e = 0, edits = 1 + rng() % 3; e < edits && !body.empty(); ++e) {
                const auto at = rng() % body.size();
                switch (rng() % 4) {
                case 0:
                    body[at] = alphabet[rng() % alphabet.size()];
                    break;
                case 1:
                    body.erase(at, 1 + rng() % 3);
                    break;
                case 2:
                    body.insert(at, 1, alphabet[rng() % alphabet.size()]);
                    break;
                default:
                    body.resize(at);
                    break;
                }
            }
        }
        bodies.push_back(std::move(body));
    }
    return bodies;
}

TEST(dotnet_peers_test, freight_answers_exactly_as_hotpath_in_both_variants) {
    if (const auto missing = missing_original({"freight"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const temp_dir dir;
    ASSERT_FALSE(dir.path.empty());
    const std::string db = (dir.path / "freight.sqlite").string();
    {
        child init({"freight", "init", "--db", db});
        ASSERT_EQ(init.wait_exit(30s), 0) << init.rest();
    }
    const server hotpath = start_hotpath("freight", {"--variant", "lean", "--db", db});
    ASSERT_NE(hotpath.port, 0);
    for (const char* variant : {"lean", "churn"}) {
        SCOPED_TRACE(variant);
        const server original =
            start_original("freight", {"--urls", "http://127.0.0.1:{port}", "--db", db, "--variant", variant});
        ASSERT_NE(original.port, 0) << peer_path("freight") << " did not accept connections within 30 s";
        test::raw_client to_hotpath(hotpath.port);
        test::raw_client to_original(original.port);
        std::map<int, int> statuses;
        for (const auto& body : freight_bodies()) {
            const reply h = exchange(to_hotpath, "POST", "/freight/quote", body);
            const reply o = exchange(to_original, "POST", "/freight/quote", body);
            ASSERT_NE(h.status, 0) << "hotpath did not answer " << body.substr(0, 200);
            ASSERT_NE(o.status, 0) << "the original did not answer " << body.substr(0, 200);
            EXPECT_EQ(o.status, h.status) << body.substr(0, 200);
            EXPECT_EQ(o.media_type, h.media_type) << body.substr(0, 200);
            EXPECT_EQ(parse(o.body), parse(h.body)) << body.substr(0, 200) << "\n" << h.body << "\n" << o.body;
            ++statuses[h.status];
        }
        // The set covers every answer: quotes, unknown CEPs, bad requests.
        EXPECT_GT(statuses[200], 100);
        EXPECT_GT(statuses[404], 2);
        EXPECT_GT(statuses[400], 150);
        // The router's answers: another method, another path (case counts), a trailing slash and a query.
        for (const auto& [method, target] :
             std::vector<std::pair<std::string, std::string>>{{"GET", "/freight/quote"},
                                                              {"PUT", "/freight/quote"},
                                                              {"DELETE", "/freight/quote/"},
                                                              {"POST", "/nope"},
                                                              {"GET", "/"},
                                                              {"POST", "/Freight/Quote"},
                                                              {"POST", "/freight/quote/"},
                                                              {"POST", "/freight/quote?x=1"},
                                                              {"POST", "/freight"}}) {
            const std::string body =
                method == "POST" ? quote_body("01310100", R"([{"sku":"a","quantity":1,"weightGrams":9}])") : "";
            const reply h = exchange(to_hotpath, method, target, body);
            const reply o = exchange(to_original, method, target, body);
            EXPECT_EQ(o.status, h.status) << method << " " << target;
            EXPECT_EQ(o.media_type, h.media_type) << method << " " << target;
            EXPECT_EQ(o.allow, h.allow) << method << " " << target;
            EXPECT_EQ(parse(o.body), parse(h.body)) << method << " " << target << "\n" << h.body << "\n" << o.body;
        }
        EXPECT_EQ(exchange(to_hotpath, "GET", "/freight/quote", "").status, 405);
        EXPECT_EQ(exchange(to_hotpath, "POST", "/nope", "{}").status, 404);
    }
}

// ---- Case 4: the profile endpoint ----

TEST(dotnet_peers_test, profile_answers_after_the_delay_in_each_style) {
    if (const auto missing = missing_original({"profile"}); !missing.empty()) {
        GTEST_SKIP() << missing;
    }
    const server original = start_original("profile", {"--urls", "http://127.0.0.1:{port}", "--delay", "50"});
    ASSERT_NE(original.port, 0) << peer_path("profile") << " did not accept connections within 30 s";
    const boost::json::value expected = {{"id", 42}, {"name", "User 42"}, {"email", "user42@example.com"}};
    for (const char* style : {"sync", "async", "offload"}) {
        const std::string target = std::string("/profile/") + style + "/42";
        const auto start = std::chrono::steady_clock::now();
        const reply r = fetch(original.port, "GET", target);
        const auto took = std::chrono::steady_clock::now() - start;
        EXPECT_EQ(r.status, 200) << target;
        EXPECT_EQ(r.media_type, "application/json") << target;
        EXPECT_EQ(parse(r.body), expected) << target << ": " << r.body;
        EXPECT_GE(took, 50ms) << target;
        EXPECT_LT(took, 5s) << target; // curl's own limit: the delay is 50 ms, not the default 2 s
        for (const char* id : {"abc", "1.5", "42x"}) {
            EXPECT_EQ(fetch(original.port, "GET", std::string("/profile/") + style + "/" + id).status, 404)
                << style << "/" << id;
        }
    }
    EXPECT_EQ(fetch(original.port, "GET", "/profile/7").status, 404);
    const reply other = fetch(original.port, "GET", "/profile/async/7");
    EXPECT_EQ(parse(other.body), (boost::json::value{{"id", 7}, {"name", "User 7"}, {"email", "user7@example.com"}}));
}

} // namespace
} // namespace hotpath
