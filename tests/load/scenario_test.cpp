// Scenario files: the five case examples, CSV feeds, placeholders, every validation error, and the TOML round trip.
#include <hotpath/core/units.hpp>
#include <hotpath/load/feed.hpp>
#include <hotpath/load/scenario.hpp>

#include "support/result_assert.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

namespace hotpath::load {
namespace {

using namespace std::chrono_literals;

std::filesystem::path source_dir() {
#ifdef HOTPATH_SOURCE_DIR
    return HOTPATH_SOURCE_DIR;
#else
    return std::filesystem::path(__FILE__).parent_path().parent_path().parent_path();
#endif
}

std::string examples_dir() {
    return (source_dir() / "examples" / "scenarios").string();
}

std::string read(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

plan load_example(const std::string& file) {
    plan p;
    EXPECT_TRUE(test::ok(load_scenario_file((std::filesystem::path(examples_dir()) / file).string(), p)));
    return p;
}

// Field by field, so a failure names the field.
void expect_same(const plan& a, const plan& b) {
    EXPECT_EQ(a.to.host, b.to.host);
    EXPECT_EQ(a.to.port, b.to.port);
    EXPECT_EQ(a.to.target, b.to.target);
    EXPECT_EQ(a.method, b.method);
    EXPECT_EQ(a.headers, b.headers);
    EXPECT_EQ(a.body, b.body);
    ASSERT_EQ(a.scenario.size(), b.scenario.size());
    for (std::size_t i = 0; i < a.scenario.size(); ++i) {
        const auto& x = a.scenario[i];
        const auto& y = b.scenario[i];
        EXPECT_EQ(x.name, y.name) << i;
        EXPECT_EQ(x.method, y.method) << i;
        EXPECT_EQ(x.path_and_query, y.path_and_query) << i;
        EXPECT_EQ(x.headers, y.headers) << i;
        EXPECT_EQ(x.body, y.body) << i;
        EXPECT_EQ(x.weight, y.weight) << i;
        EXPECT_EQ(x.expected_statuses, y.expected_statuses) << i;
        ASSERT_EQ(x.checks.size(), y.checks.size()) << i;
        for (std::size_t c = 0; c < x.checks.size(); ++c) {
            EXPECT_EQ(x.checks[c].what, y.checks[c].what) << i << "." << c;
            EXPECT_EQ(x.checks[c].statuses, y.checks[c].statuses) << i << "." << c;
            EXPECT_EQ(x.checks[c].text, y.checks[c].text) << i << "." << c;
        }
        ASSERT_EQ(x.think.has_value(), y.think.has_value()) << i;
        if (x.think) {
            EXPECT_EQ(x.think->min, y.think->min) << i;
            EXPECT_EQ(x.think->max, y.think->max) << i;
        }
    }
    EXPECT_EQ(a.think.min, b.think.min);
    EXPECT_EQ(a.think.max, b.think.max);
    EXPECT_EQ(a.honour_retry_after, b.honour_retry_after);
    EXPECT_EQ(a.http, b.http);
    EXPECT_EQ(a.streams, b.streams);
    EXPECT_EQ(a.data.source, b.data.source);
    EXPECT_EQ(a.data.columns, b.data.columns);
    EXPECT_EQ(a.data.rows, b.data.rows);
    EXPECT_EQ(a.threads, b.threads);
    EXPECT_EQ(a.connections, b.connections);
    EXPECT_EQ(a.requests, b.requests);
    EXPECT_EQ(a.duration, b.duration);
    EXPECT_EQ(a.warmup, b.warmup);
    EXPECT_EQ(a.timeout, b.timeout);
    EXPECT_EQ(a.keep_alive, b.keep_alive);
    EXPECT_EQ(a.pipeline, b.pipeline);
    EXPECT_EQ(a.rate, b.rate);
    EXPECT_EQ(a.max_connections, b.max_connections);
    ASSERT_EQ(a.stages.size(), b.stages.size());
    for (std::size_t i = 0; i < a.stages.size(); ++i) {
        EXPECT_EQ(a.stages[i].what, b.stages[i].what) << i;
        EXPECT_EQ(a.stages[i].from, b.stages[i].from) << i;
        EXPECT_EQ(a.stages[i].to, b.stages[i].to) << i;
        EXPECT_EQ(a.stages[i].duration, b.stages[i].duration) << i;
    }
    EXPECT_EQ(a.expected_statuses, b.expected_statuses);
    ASSERT_EQ(a.thresholds.size(), b.thresholds.size());
    for (std::size_t i = 0; i < a.thresholds.size(); ++i) {
        EXPECT_EQ(a.thresholds[i].what, b.thresholds[i].what) << i;
        EXPECT_EQ(a.thresholds[i].percentile, b.thresholds[i].percentile) << i;
        EXPECT_EQ(a.thresholds[i].less, b.thresholds[i].less) << i;
        EXPECT_EQ(a.thresholds[i].limit, b.thresholds[i].limit) << i;
        EXPECT_EQ(a.thresholds[i].text, b.thresholds[i].text) << i;
    }
}

// ----- The five case studies (examples/scenarios, also shown in docs/scenarios.md) -----

TEST(scenario_test, case1_weather_rate_steps_after_a_warmup) {
    const plan p = load_example("case1_weather.toml");
    EXPECT_EQ(p.to.host, "127.0.0.1");
    EXPECT_EQ(p.to.port, 5060);
    EXPECT_TRUE(p.open_model());
    ASSERT_EQ(p.stages.size(), 4u);
    const std::array<std::pair<double, std::chrono::nanoseconds>, 4> expected{{{1, 5s}, {1, 5s}, {2, 10s}, {3, 15s}}};
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(p.stages[i].what, stage::kind::rate) << i;
        EXPECT_EQ(p.stages[i].from, expected[i].first) << i;
        EXPECT_EQ(p.stages[i].to, expected[i].first) << i;
        EXPECT_EQ(p.stages[i].duration, expected[i].second) << i;
    }
    EXPECT_EQ(p.warmup, std::chrono::nanoseconds{5s});
    EXPECT_EQ(p.total_time(), std::chrono::nanoseconds{35s});
    EXPECT_EQ(p.timeout, std::chrono::nanoseconds{30s});
    ASSERT_EQ(p.thresholds.size(), 2u);
    EXPECT_EQ(p.thresholds[0].what, threshold::metric::percentile);
    EXPECT_EQ(p.thresholds[0].percentile, 95);
    EXPECT_EQ(p.thresholds[0].limit, 600e6);
    EXPECT_EQ(p.thresholds[1].what, threshold::metric::errors);
    ASSERT_EQ(p.scenario.size(), 1u);
    const auto& r = p.scenario[0];
    EXPECT_EQ(r.name, "aggregate");
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.path_and_query, "/");
    ASSERT_EQ(r.checks.size(), 2u);
    EXPECT_EQ(r.checks[0].what, check::kind::status);
    EXPECT_EQ(r.checks[0].statuses, std::vector<unsigned>{200});
    EXPECT_EQ(r.checks[1].what, check::kind::body_contains);
    EXPECT_EQ(r.checks[1].text, "temperatureC");
    EXPECT_TRUE(p.data.columns.empty());
}

TEST(scenario_test, case2_freight_posts_ceps_from_a_csv) {
    const plan p = load_example("case2_freight.toml");
    EXPECT_EQ(p.to.port, 5080);
    EXPECT_FALSE(p.open_model());
    ASSERT_EQ(p.stages.size(), 2u);
    EXPECT_EQ(p.stages[0].what, stage::kind::vus);
    EXPECT_EQ(p.stages[0].from, 0);
    EXPECT_EQ(p.stages[0].to, 240);
    EXPECT_EQ(p.stages[0].duration, std::chrono::nanoseconds{60s});
    EXPECT_EQ(p.stages[1].from, 240);
    EXPECT_EQ(p.stages[1].to, 240);
    EXPECT_EQ(p.total_time(), std::chrono::nanoseconds{120s});
    EXPECT_EQ(p.threads, 4u);
    ASSERT_EQ(p.thresholds.size(), 2u);
    EXPECT_EQ(p.thresholds[0].limit, 150e6);
    ASSERT_EQ(p.scenario.size(), 1u);
    const auto& r = p.scenario[0];
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path_and_query, "/freight/quote");
    EXPECT_EQ(r.expected_statuses, std::vector<unsigned>{404});
    ASSERT_EQ(r.checks.size(), 1u);
    EXPECT_EQ(r.checks[0].statuses, (std::vector<unsigned>{200, 404}));
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0], (std::pair<std::string, std::string>{"Content-Type", "application/json"}));
    EXPECT_TRUE(has_placeholders(r.body));
    EXPECT_EQ(p.data.source, "ceps.csv");
    EXPECT_EQ(p.data.columns, (std::vector<std::string>{"cep", "city"}));
    ASSERT_GE(p.data.rows.size(), 20u);
    EXPECT_EQ(p.data.rows[0][0], "01310100"); // leading zeros kept: CEPs are text
    for (const auto& row : p.data.rows) {
        EXPECT_EQ(row[0].size(), 8u) << row[0];
        EXPECT_EQ(row[0].find_first_not_of("0123456789"), std::string::npos) << row[0];
    }
    const std::string body = render(r.body, p.data, 0);
    EXPECT_NE(body.find("\"cep\": \"01310100\""), std::string::npos) << body;
    EXPECT_FALSE(has_placeholders(body));
}

TEST(scenario_test, case3_platform_mixes_plaintext_and_json_by_weight) {
    const plan p = load_example("case3_platform.toml");
    EXPECT_EQ(p.to.port, 8080);
    EXPECT_EQ(p.connections, 256u);
    EXPECT_EQ(p.threads, 4u);
    EXPECT_EQ(p.duration, std::chrono::nanoseconds{15s});
    EXPECT_EQ(p.warmup, std::chrono::nanoseconds{3s});
    ASSERT_EQ(p.scenario.size(), 2u);
    EXPECT_EQ(p.scenario[0].name, "plaintext");
    EXPECT_EQ(p.scenario[0].path_and_query, "/plaintext");
    EXPECT_EQ(p.scenario[0].weight, 3);
    EXPECT_EQ(p.scenario[0].checks.at(0).text, "Hello, World!");
    EXPECT_EQ(p.scenario[1].name, "json");
    EXPECT_EQ(p.scenario[1].weight, 1);
    EXPECT_EQ(p.scenario[1].checks.at(0).text, "\"message\":\"Hello, World!\"");
    EXPECT_EQ(p.scenario[1].headers.at(0).first, "Accept");
}

TEST(scenario_test, case4_profile_steps_virtual_users_with_an_error_threshold) {
    const plan p = load_example("case4_profile.toml");
    EXPECT_EQ(p.to.port, 5090);
    EXPECT_EQ(p.to.target, "/profile");
    EXPECT_FALSE(p.open_model());
    ASSERT_EQ(p.stages.size(), 5u);
    EXPECT_EQ(p.stages.back().what, stage::kind::vus);
    EXPECT_EQ(p.stages.back().to, 4000);
    EXPECT_EQ(p.level_at(45s), 1000);
    EXPECT_EQ(p.level_at(150s), 4000);
    EXPECT_EQ(p.timeout, std::chrono::nanoseconds{10s});
    ASSERT_EQ(p.thresholds.size(), 2u);
    EXPECT_EQ(p.thresholds[0].what, threshold::metric::errors);
    EXPECT_DOUBLE_EQ(p.thresholds[0].limit, 0.01);
    ASSERT_EQ(p.scenario.size(), 1u);
    EXPECT_EQ(p.scenario[0].path_and_query, "/profile/sync/42"); // the url's path is a prefix
}

TEST(scenario_test, case5_avatar_counts_requests_without_keep_alive) {
    const plan p = load_example("case5_avatar.toml");
    EXPECT_EQ(p.to.port, 5001);
    EXPECT_EQ(p.requests, 100000u);
    EXPECT_EQ(p.connections, 10u);
    EXPECT_FALSE(p.keep_alive);
    EXPECT_GE(p.duration, std::chrono::nanoseconds{24h}); // as `-n` alone: until the count is done
    ASSERT_EQ(p.scenario.size(), 1u);
    ASSERT_EQ(p.scenario[0].checks.size(), 1u);
    EXPECT_EQ(p.scenario[0].checks[0].statuses, std::vector<unsigned>{302});
    EXPECT_NE(build_request(p, p.scenario[0]).find("Connection: close\r\n"), std::string::npos);
}

TEST(scenario_test, the_docs_show_each_example_file_verbatim) {
    const std::string docs = read(source_dir() / "docs" / "scenarios.md");
    ASSERT_FALSE(docs.empty());
    for (const char* file : {"case1_weather.toml", "case2_freight.toml", "case3_platform.toml", "case4_profile.toml",
                             "case5_avatar.toml"}) {
        const std::string text = read(std::filesystem::path(examples_dir()) / file);
        ASSERT_FALSE(text.empty()) << file;
        EXPECT_NE(docs.find(text), std::string::npos) << file << " differs from its copy in docs/scenarios.md";
    }
}

TEST(scenario_test, keys_left_out_keep_the_callers_values) {
    plan p;
    p.threads = 8;
    p.timeout = 3s;
    ASSERT_TRUE(
        test::ok(load_scenario("url = \"http://h:81\"\n[load]\nconnections = 7\n[[request]]\npath = \"/x\"\n", "", p)));
    EXPECT_EQ(p.threads, 8u);
    EXPECT_EQ(p.timeout, std::chrono::nanoseconds{3s});
    EXPECT_EQ(p.connections, 7u);
    EXPECT_EQ(p.scenario.at(0).name, "GET /x"); // the default name
    EXPECT_EQ(p.scenario.at(0).weight, 1);
}

// One rule for a bare number as a duration, in a file as on the command line (-d 2): seconds.
TEST(scenario_test, a_bare_number_is_seconds_as_on_the_command_line) {
    plan p;
    ASSERT_TRUE(test::ok(load_scenario(
        "url = \"http://h:81\"\n[load]\nduration = 2\nwarmup = 0.5\ntimeout = 1\n[[request]]\npath = \"/x\"\n", "",
        p)));
    EXPECT_EQ(p.duration, std::chrono::nanoseconds{2s});
    EXPECT_EQ(p.warmup, std::chrono::nanoseconds{500ms});
    EXPECT_EQ(p.timeout, std::chrono::nanoseconds{1s});
    EXPECT_EQ(p.duration, *parse_duration("2")) << "the command line's reading of the same number";
}

// ----- CSV -----

struct csv_case {
    const char* label;
    std::string_view text;
    std::vector<std::string> columns;
    std::vector<std::vector<std::string>> rows;
};

TEST(scenario_test, csv_reads_rfc4180) {
    const std::vector<csv_case> cases{
        {"lf", "a,b\n1,2\n", {"a", "b"}, {{"1", "2"}}},
        {"crlf", "a,b\r\n1,2\r\n3,4\r\n", {"a", "b"}, {{"1", "2"}, {"3", "4"}}},
        {"no final line end", "a,b\n1,2", {"a", "b"}, {{"1", "2"}}},
        {"leading zeros stay text", "cep\n01310100\n00000000\n", {"cep"}, {{"01310100"}, {"00000000"}}},
        {"quoted comma", "a,b\n\"Smith, J\",2\n", {"a", "b"}, {{"Smith, J", "2"}}},
        {"doubled quote", "a\n\"say \"\"hi\"\"\"\n", {"a"}, {{"say \"hi\""}}},
        {"quoted lf and crlf", "a,b\n\"one\ntwo\",\"x\r\ny\"\n", {"a", "b"}, {{"one\ntwo", "x\r\ny"}}},
        {"quoted header", "\"a,1\",b\n1,2\n", {"a,1", "b"}, {{"1", "2"}}},
        {"empty fields", "a,b,c\n,,\n", {"a", "b", "c"}, {{"", "", ""}}},
        {"empty last field", "a,b\n1,\n", {"a", "b"}, {{"1", ""}}},
        {"empty last field at the end", "a,b\n1,", {"a", "b"}, {{"1", ""}}},
        {"quoted empty", "a,b\n\"\",x\n", {"a", "b"}, {{"", "x"}}},
        {"spaces kept", "a\n  x  \n", {"a"}, {{"  x  "}}},
        {"empty lines skipped", "a\n\n1\r\n\r\n2\n\n", {"a"}, {{"1"}, {"2"}}},
        {"byte order mark",
         "\xEF\xBB\xBF"
         "a\n1\n",
         {"a"},
         {{"1"}}},
        {"utf-8", "cidade\nSão Paulo\n", {"cidade"}, {{"São Paulo"}}},
        {"quote only at the start", "a\n\"x\"\n", {"a"}, {{"x"}}},
    };
    for (const auto& c : cases) {
        feed f;
        f.source = "kept.csv";
        ASSERT_TRUE(test::ok(load_csv(c.text, f))) << c.label;
        EXPECT_EQ(f.columns, c.columns) << c.label;
        EXPECT_EQ(f.rows, c.rows) << c.label;
        EXPECT_EQ(f.source, "kept.csv") << c.label;
    }
}

TEST(scenario_test, csv_errors_name_the_line) {
    const std::vector<std::pair<std::string_view, std::string_view>> cases{
        {"", "line 1: the CSV is empty"},
        {"\n\n", "line 1: the CSV is empty"},
        {"a,b\n", "line 1: no rows after the header"},
        {"a,b\n1\n", "line 2: this row has 1 field, the header 2 fields"},
        {"a,b\n1,2\n1,2,3\n", "line 3: this row has 3 fields, the header 2 fields"},
        {"a,b\n\"1\n2\",3\n4\n", "line 4: this row has 1 field"},
        {"a,a\n1,2\n", "line 1: column 'a' appears twice"},
        {"a,\n1,2\n", "line 1: column 2 of the header has no name"},
        {"a\n\n\"open\nstill open\n", "line 3: a quoted field is not closed"},
        {"a\n\"x\"y\n", "line 2: text after the closing quote"},
        {"a\nx\"y\n", "line 2: a quote inside an unquoted field"},
        {"a\r1\n", "line 1: a carriage return without a line feed"},
    };
    for (const auto& [text, expected] : cases) {
        feed f;
        f.columns = {"untouched"};
        std::string why;
        why = test::failure_of(load_csv(text, f));
        EXPECT_FALSE(why.empty());
        EXPECT_NE(why.find(expected), std::string::npos) << "'" << text << "' gave: " << why;
        EXPECT_EQ(why.find('\n'), std::string::npos) << why;
        EXPECT_EQ(f.columns, std::vector<std::string>{"untouched"});
    }
}

// ----- Placeholders -----

TEST(scenario_test, render_fills_placeholders_from_a_row) {
    feed f;
    f.columns = {"cep", "id", "odd"};
    f.rows = {{"01310100", "7", "{{cep}}"}, {"99999999", "8", ""}};
    EXPECT_EQ(render("/q/{{cep}}", f, 0), "/q/01310100");
    EXPECT_EQ(render("/q/{{cep}}", f, 1), "/q/99999999");
    EXPECT_EQ(render("{{ cep }}|{{\tid}}", f, 0), "01310100|7");
    EXPECT_EQ(render("{{id}}-{{cep}}-{{id}}", f, 1), "8-99999999-8");
    // Three braces: the value as it is, never escaped; two: escaped when the body is JSON.
    EXPECT_EQ(render("{{{id}}}", f, 0), "7");
    EXPECT_EQ(render("{ {{{id}}} }", f, 0), "{ 7 }");
    f.rows.push_back({"a\"b\\c\nd\x01", "\"raw\"", ""});
    EXPECT_EQ(render(R"({"cep": "{{cep}}"})", f, 2, escaping::json), R"({"cep": "a\"b\\c\nd\u0001"})");
    EXPECT_EQ(render(R"({"id": {{{id}}}})", f, 2, escaping::json), R"({"id": "raw"})");
    EXPECT_EQ(render("{{cep}}", f, 2), "a\"b\\c\nd\x01") << "escaping only where asked";
    f.rows.pop_back();
    EXPECT_TRUE(is_json_body(R"( {"a": 1})", ""));
    EXPECT_TRUE(is_json_body("[1]", ""));
    EXPECT_TRUE(is_json_body("x", "application/problem+JSON; charset=utf-8"));
    EXPECT_FALSE(is_json_body(R"({"a": 1})", "text/plain"));
    EXPECT_FALSE(is_json_body("cep=01310100", ""));
    EXPECT_EQ(render("{{odd}}", f, 0), "{{cep}}"); // values are not expanded again
    EXPECT_EQ(render("[{{odd}}]", f, 1), "[]");
    EXPECT_EQ(render("no placeholders", f, 0), "no placeholders");
    EXPECT_EQ(render("", f, 0), "");
    // Left verbatim: unknown columns, rows out of range, and what is not a placeholder.
    EXPECT_EQ(render("/{{zip}}/{{id}}", f, 0), "/{{zip}}/7");
    EXPECT_EQ(render("/{{id}}", f, 2), "/{{id}}");
    for (const char* text : {"{{}}", "{{  }}", "{{id", "id}}", "{ {id} }", "{{a\nb}}", "{\"json\": {\"x\": 1}}"}) {
        EXPECT_FALSE(has_placeholders(text)) << text;
        EXPECT_EQ(render(text, f, 0), text);
    }
    for (const char* text : {"{{id}}", "x{{ id }}y", "{{{id}}}", "{{a b}}"}) {
        EXPECT_TRUE(has_placeholders(text)) << text;
    }
    const auto ph = next_placeholder("ab{{ cep }}cd", 0);
    ASSERT_TRUE(ph);
    EXPECT_EQ(ph->begin, 2u);
    EXPECT_EQ(ph->end, 11u);
    EXPECT_EQ(ph->name, "cep");
}

// ----- Validation: every bad document gets a one-line reason naming the key -----

struct bad_case {
    std::string_view document;
    std::string_view expected; // a substring of `why`
};

constexpr std::string_view head = "url = \"http://127.0.0.1:8080\"\n";

TEST(scenario_test, every_mistake_gets_a_clear_reason) {
    const std::string r = "[[request]]\npath = \"/\"\n";
    const std::string h(head);
    const std::vector<std::pair<std::string, std::string_view>> cases{
        // Syntax and the document's shape.
        {"url = \n", "line 1, column 7: "},
        {h + "url = \"http://x\"\n", "line 2, column"},
        {r, "url is required"},
        {"url = 8080\n" + r, "url must be a string, not an integer"},
        {"url = \"127.0.0.1:8080\"\n" + r,
         "url: '127.0.0.1:8080' is not an absolute URL: it must start with http:// or https://"},
        {"url = \"http://x/?a=1\"\n" + r, "url: a query belongs in each request's path"},
        {"urls = \"http://x\"\n" + r, "unknown key 'urls' (did you mean 'url'?)"},
        {h + "[[requests]]\npath = \"/\"\n", "unknown key 'requests' (did you mean 'request'?)"},
        {h + "[options]\n" + r, "unknown key 'options' (known keys: url load feed request)"},
        {h + "[load]\nthink_time = \"soon\"\n" + r,
         "load.think_time: bad think time 'soon' (e.g. 500ms, or 1s..3s for a uniform range)"},
        {h + "[load]\nthink_time = \"3s..1s\"\n" + r, "load.think_time: bad think time '3s..1s'"},
        {h + "[load]\nthink_time = true\n" + r, "load.think_time must be a duration like \"500ms\""},
        {h + "[load]\nignore_retry_after = 1\n" + r, "load.ignore_retry_after must be"},
        {h + "[load]\nrate = 10\nthink_time = \"1s\"\n" + r,
         "load.think_time (or a request's) is a user's pause between its requests, in the closed model"},
        {h + "[load]\nrate = 10\n[[request]]\npath = \"/\"\nthink_time = \"1s\"\n",
         "load.think_time (or a request's) is a user's pause"},
        {h + "[load]\nhttp = \"2\"\nstreams = 8\nthink_time = \"1s\"\n" + r,
         "pauses a user that has one request at a time: not with load.pipeline or load.streams above 1"},
        {h + "[[request]]\npath = \"/\"\nthink_time = \"x\"\n", "request 1: think_time: bad think time 'x'"},
        {h, "the scenario has no [[request]]"},
        {h + "[request]\npath = \"/\"\n",
         "request must be an array of tables: one [[request]] per request, not a table"},
        {h + "request = []\n", "the scenario has no [[request]]"},
        {h + "request = [1]\n", "request must be an array of tables"},
        {h + "load = 5\n" + r, "load must be a table"},
        {h + "feed = \"ceps.csv\"\n" + r, "feed must be a table"},
        // [load]
        {h + "[load]\nconections = 5\n" + r, "unknown key 'load.conections' (did you mean 'connections'?)"},
        {h + "[load]\nthreshold = [\"p95<1s\"]\n" + r, "unknown key 'load.threshold' (did you mean 'thresholds'?)"},
        {h + "[load]\nconnections = \"50\"\n" + r, "load.connections must be an integer, not a string"},
        {h + "[load]\nconnections = 0\n" + r, "load.connections must be from 1 to 100000; got 0"},
        {h + "[load]\nthreads = 5000\n" + r, "load.threads must be from 0 to 1024"},
        {h + "[load]\nrequests = 0\n" + r, "load.requests must be from 1"},
        {h + "[load]\npipeline = 1.5\n" + r, "load.pipeline must be an integer, not a float"},
        {h + "[load]\nduration = true\n" + r,
         "load.duration must be a duration like \"30s\" (a bare number is seconds), not a boolean"},
        {h + "[load]\nduration = -3\n" + r, "load.duration must be a duration like \"30s\""},
        {h + "[load]\nduration = 0\n" + r, "load.duration must be a duration"},
        {h + "[load]\nduration = \"30 parsecs\"\n" + r, "load.duration must be a duration like \"30s\""},
        {h + "[load]\nduration = \"0s\"\n" + r, "load.duration must be a duration"},
        {h + "[load]\ntimeout = \"-1s\"\n" + r, "load.timeout must be a duration"},
        {h + "[load]\nwarmup = \"soon\"\n" + r, "load.warmup must be a duration"},
        {h + "[load]\nrate = 0\n" + r, "load.rate must be a number > 0"},
        {h + "[load]\nrate = \"10/s\"\n" + r, "load.rate must be a number, not a string"},
        {h + "[load]\nkeep_alive = \"no\"\n" + r, "load.keep_alive must be true or false, not a string"},
        {h + "[load]\nstages = 5\n" + r, "load.stages must be a string or an array of strings, not an integer"},
        {h + "[load]\nstages = [\"rate=1/s:5s\", 2]\n" + r, "load.stages items must be strings, not an integer"},
        {h + "[load]\nstages = \"rate=1/s:5s, vus=2:5s\"\n" + r, "load.stages: stages mix rate and vus"},
        {h + "[load]\nstages = [\"speed=1:5s\"]\n" + r, "load.stages: a stage kind is rate or vus"},
        {h + "[load]\nstages = \"rate=1/s:5s\"\nduration = \"5s\"\n" + r, "load.duration and load.stages do not mix"},
        {h + "[load]\nstages = \"rate=1/s:5s\"\nrate = 5\n" + r, "load.rate and load.stages do not mix"},
        {h + "[load]\nthresholds = \"p95<1s\"\n" + r, "load.thresholds must be an array of strings, not a string"},
        {h + "[load]\nthresholds = [\"p95<150\"]\n" + r, "load.thresholds: latency thresholds take a duration"},
        {h + "[load]\nthresholds = [\"latency<1s\"]\n" + r, "load.thresholds: unknown threshold metric 'latency'"},
        {h + "[load]\nexpect_status = 404\n" + r, "load.expect_status must be an array of statuses"},
        {h + "[load]\nexpect_status = []\n" + r, "load.expect_status must list at least one status"},
        {h + "[load]\nexpect_status = [42]\n" + r, "load.expect_status holds statuses from 100 to 599"},
        {h + "[load]\nrate = 10\npipeline = 4\n" + r, "load.pipeline works with the closed model only"},
        {h + "[load]\nduration = \"10s\"\nwarmup = \"10s\"\n" + r, "load.warmup must be shorter than the run"},
        {h + "[load]\nstages = \"rate=1/s:5s\"\nwarmup = \"5s\"\n" + r, "load.warmup must be shorter than the run"},
        // [[request]]
        {h + "[[request]]\nname = \"x\"\n", "request 'x': path is required"},
        {h + "[[request]]\nmethod = \"GET\"\n", "request 1: path is required"},
        {h + "[[request]]\npath = \"plaintext\"\n", "request 1: path must start with '/'; got \"plaintext\""},
        {h + "[[request]]\npath = \"\"\n", "path must start with '/'"},
        {h + "[[request]]\npath = \"/a b\"\n", "path has spaces or control characters"},
        {h + "[[request]]\npath = \"/\"\npaht = \"/x\"\n", "unknown key 'request.paht' (did you mean 'path'?)"},
        {h + "[[request]]\npath = \"/\"\ncheck_statu = [200]\n",
         "unknown key 'request.check_statu' (did you mean 'check_status'?)"},
        {h + "[[request]]\npath = 5\n", "request 1: path must be a string, not an integer"},
        {h + "[[request]]\nname = \"\"\npath = \"/\"\n", "request 1: name must be one non-empty line"},
        {h + "[[request]]\nname = \"a\"\npath = \"/\"\nweight = 0\n", "request 'a': weight must be a number > 0"},
        {h + "[[request]]\npath = \"/\"\nweight = -2.5\n", "weight must be a number > 0"},
        {h + "[[request]]\npath = \"/\"\nweight = \"2\"\n", "weight must be a number, not a string"},
        {h + "[[request]]\npath = \"/\"\nweight = nan\n", "weight must be a number > 0"},
        {h + "[[request]]\npath = \"/\"\nweight = inf\n", "weight must be a number > 0"},
        {h + "[[request]]\npath = \"/\"\nmethod = \"GE T\"\n", "method must be a token like GET or POST"},
        {h + "[[request]]\nname = \"a\"\npath = \"/\"\n[[request]]\nname = \"a\"\npath = \"/b\"\n",
         "request 'a': two requests have this name"},
        {h + "[[request]]\npath = \"/\"\n[[request]]\npath = \"/\"\n", "request 'GET /': two requests have this name"},
        {h + "[[request]]\npath = \"/\"\nheaders = \"Accept: */*\"\n", "headers must be a table"},
        {h + "[[request]]\npath = \"/\"\nheaders = { X-Id = 5 }\n", "header X-Id must be a string, not an integer"},
        {h + "[[request]]\npath = \"/\"\nheaders = { \"bad name\" = \"x\" }\n", "bad header name 'bad name'"},
        {h + "[[request]]\npath = \"/\"\nheaders = { Host = \"x\" }\n", "header 'Host' is set by hotpath"},
        {h + "[[request]]\npath = \"/\"\nheaders = { content-length = \"3\" }\n",
         "header 'content-length' is set by hotpath"},
        {h + "[[request]]\npath = \"/\"\nheaders = { Accept = \"a\", accept = \"b\" }\n", "is given twice"},
        {h + "[[request]]\npath = \"/\"\nheaders = { X-A = \"a\\nX-B: b\" }\n", "header X-A has a line break"},
        {h + "[[request]]\npath = \"/\"\nbody = 5\n", "body must be a string, not an integer"},
        {h + "[[request]]\npath = \"/\"\nexpect_status = [\"404\"]\n", "expect_status holds statuses from 100 to 599"},
        {h + "[[request]]\npath = \"/\"\ncheck_status = [200, 1000]\n", "check_status holds statuses from 100 to 599"},
        {h + "[[request]]\npath = \"/\"\ncheck_body_contains = \"\"\n", "check_body_contains needs a non-empty text"},
        {h + "[[request]]\npath = \"/\"\ncheck_body_contains = \"{{cep}}\"\n", "without placeholders"},
        {h + "[[request]]\npath = \"/\"\ncheck_body_contains = 5\n",
         "check_body_contains must be a string or an array of strings, not an integer"},
        // Placeholders and [feed]
        {h + "[[request]]\nname = \"q\"\npath = \"/q/{{cep}}\"\n",
         "request 'q': the path uses {{cep}} but there is no [feed]"},
        {h + "[[request]]\npath = \"/\"\nbody = \"{{cep}}\"\n", "the body uses {{cep}} but there is no [feed]"},
        {h + "[[request]]\npath = \"/\"\nheaders = { X-Cep = \"{{cep}}\" }\n",
         "the header value uses {{cep}} but there is no [feed]"},
        {h + "[feed]\ncsv = \"ceps.csv\"\n[[request]]\npath = \"/q/{{zip}}\"\n",
         "the path uses {{zip}} but ceps.csv has no column 'zip' (its columns: cep, city)"},
        {h + "[feed]\ncsv = \"ceps.csv\"\n[[request]]\npath = \"/q/{{ cep}}\"\nbody = \"{{Cep}}\"\n",
         "the body uses {{Cep}} but ceps.csv has no column 'Cep'"},
        {h + "[feed]\ncsv = \"ceps.csv\"\n[[request]]\npath = \"/q/{{city}}\"\n",
         "row 1 of ceps.csv has a value of 'city' that cannot go in a path"},
        {h + "[feed]\ncsv = \"ceps.csv\"\n" + r, "[feed]: no request uses a {{column}} of ceps.csv"},
        {h + "[feed]\n" + r, "feed.csv is required"},
        {h + "[feed]\ncsv = \"\"\n" + r, "feed.csv is required"},
        {h + "[feed]\ncsv = \"missing.csv\"\n" + r, "feed.csv: cannot read"},
        {h + "[feed]\ncsv = \"ceps.csv\"\norder = \"random\"\n" + r, "feed.order must be \"sequential\""},
        {h + "[feed]\ncvs = \"ceps.csv\"\n" + r, "unknown key 'feed.cvs' (did you mean 'csv'?)"},
    };
    for (const auto& [document, expected] : cases) {
        plan p;
        p.connections = 42;
        std::string why;
        why = test::failure_of(load_scenario(document, examples_dir(), p));
        EXPECT_FALSE(why.empty());
        EXPECT_NE(why.find(expected), std::string::npos) << document << "\ngave: " << why;
        EXPECT_EQ(why.rfind("line ", 0), 0u) << why;
        EXPECT_EQ(why.find('\n'), std::string::npos) << why;
        EXPECT_EQ(p.connections, 42u) << "a failed load left the plan changed";
        EXPECT_TRUE(p.scenario.empty());
    }
}

TEST(scenario_test, reasons_give_the_line_of_the_mistake) {
    std::string why;
    plan p;
    why = test::failure_of(
        load_scenario(std::string(head) + "\n[load]\nthreads = 1\nrate = -1\n[[request]]\npath = \"/\"\n", "", p));
    ASSERT_FALSE(why.empty());
    EXPECT_EQ(why, "line 5: load.rate must be a number > 0");
    why = test::failure_of(load_scenario(std::string(head) + "[[request]]\npath = \"/\"\n[[request]]\nname = \"b\"\n"
                                                             "path = \"/b\"\nweight = 0\n",
                                         "", p));
    ASSERT_FALSE(why.empty());
    EXPECT_EQ(why, "line 7: request 'b': weight must be a number > 0");
}

TEST(scenario_test, a_bad_csv_is_reported_with_its_own_line) {
    const auto dir = std::filesystem::path(::testing::TempDir()) / "hotpath_scenario_test";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "bad.csv") << "cep,city\n01310100,São Paulo\n99999999\n";
    plan p;
    std::string why;
    why = test::failure_of(load_scenario(
        std::string(head) + "[feed]\ncsv = \"bad.csv\"\n[[request]]\npath = \"/{{cep}}\"\n", dir.string(), p));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why, "line 3: feed.csv bad.csv, line 3: this row has 1 field, the header 2 fields");
    std::ofstream(dir / "s.toml") << head << "[feed]\ncsv = \"" << (dir / "bad.csv").string()
                                  << "\"\n[[request]]\npath = \"/{{cep}}\"\n";
    why = test::failure_of(load_scenario_file((dir / "s.toml").string(), p));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.rfind((dir / "s.toml").string() + ": line 3: feed.csv /", 0), 0u) << why;
    why = test::failure_of(load_scenario_file((dir / "missing.toml").string(), p));
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why.find("cannot read scenario"), std::string::npos) << why;
}

// ----- Round trip: to_toml, then load_scenario, gives the same plan -----

TEST(scenario_test, the_examples_round_trip) {
    for (const char* file : {"case1_weather.toml", "case2_freight.toml", "case3_platform.toml", "case4_profile.toml",
                             "case5_avatar.toml"}) {
        SCOPED_TRACE(file);
        const plan p = load_example(file);
        const std::string text = to_toml(p);
        plan q;
        ASSERT_TRUE(test::ok(load_scenario(text, examples_dir(), q)));
        expect_same(p, q);
        EXPECT_EQ(to_toml(q), text);
    }
}

TEST(scenario_test, awkward_values_round_trip) {
    plan p;
    ASSERT_TRUE(test::ok(load_scenario(R"(url = "http://example.test:8081/api/v2/"
[load]
threads = 3
connections = 17
stages = "rate=120/m:1.5s, rate=0.5..7.25/s:250ms, rate=1/m:1h"
warmup = "1.000000001s"
timeout = "0.25s"
keep_alive = false
max_connections = 99
requests = 12345
thresholds = ["p99.9 < 1.5s", "errors<=7.5%", "rps>1000", "mean<20ms", "max<2s"]
expect_status = [404, 409]

[feed]
csv = "ceps.csv"

[[request]]
name = "quotes \"and\" back\\slashes, tabs	and ünïcödé, it's"
method = "PATCH"
path = "/x/{{ cep }}?q=1&r=%20"
headers = { "X-Note" = "a \"b\" \\ c", Accept = "*/*", "X-City" = "{{city}}" }
body = """
line one
	line two with {{cep}} and a control \u0001 char"""
weight = 0.1
expect_status = [422]
check_status = [200, 422]
check_body_contains = ["ok", "also \"this\""]

[[request]]
name = "plain"
path = "/"
weight = 1e-3
)",
                                       examples_dir(), p)));
    EXPECT_EQ(p.scenario[0].path_and_query, "/api/v2/x/{{ cep }}?q=1&r=%20");
    EXPECT_EQ(p.warmup, std::chrono::nanoseconds{1'000'000'001});
    const std::string text = to_toml(p);
    plan q;
    ASSERT_TRUE(test::ok(load_scenario(text, examples_dir(), q)));
    expect_same(p, q);
    EXPECT_EQ(to_toml(q), text);
}

// HTTP/2 in a scenario: load.http = "2" and load.streams, written back as read; other versions refused.
TEST(scenario_test, http2_round_trips) {
    plan p;
    ASSERT_TRUE(test::ok(load_scenario(R"(url = "http://example.test:8081/"
[load]
http = "2"
streams = 64

[[request]]
path = "/"
)",
                                       examples_dir(), p)));
    EXPECT_TRUE(p.h2());
    EXPECT_EQ(p.streams, 64u);
    const std::string text = to_toml(p);
    EXPECT_NE(text.find("http = \"2\"\nstreams = 64\n"), std::string::npos) << text;
    plan q;
    ASSERT_TRUE(test::ok(load_scenario(text, examples_dir(), q)));
    expect_same(p, q);
    plan r;
    const auto refused = load_scenario(
        "url = \"http://example.test/\"\n[load]\nhttp = \"3\"\n[[request]]\npath = \"/\"\n", examples_dir(), r);
    ASSERT_FALSE(refused.has_value());
    EXPECT_NE(refused.error().message.find("load.http is \"1.1\", \"2\" or \"auto\""), std::string::npos)
        << refused.error().message;
    EXPECT_FALSE(to_toml(plan{}).find("streams") != std::string::npos) << "HTTP/1.1 plans are written as before";
    plan automatic = p;
    automatic.http = plan::http_version::automatic;
    automatic.to.scheme = http::scheme::https;
    plan back;
    ASSERT_TRUE(test::ok(load_scenario(to_toml(automatic), examples_dir(), back)));
    EXPECT_EQ(back.http, plan::http_version::automatic);
    automatic.to.scheme = http::scheme::http;
    plan refused_auto;
    const auto over_http = load_scenario(to_toml(automatic), examples_dir(), refused_auto);
    ASSERT_FALSE(over_http.has_value()) << "ALPN needs https://";
    EXPECT_NE(over_http.error().message.find("load.http = \"auto\" agrees on the protocol through ALPN"),
              std::string::npos)
        << over_http.error().message;
}

// Think times, the plan's and a request's own, and Retry-After ignored: read, written back as read.
TEST(scenario_test, think_times_and_retry_after_round_trip) {
    plan p;
    ASSERT_TRUE(test::ok(load_scenario(R"(url = "http://example.test:8081/"
[load]
think_time = "1s..3s"
ignore_retry_after = true

[[request]]
name = "browse"
path = "/"

[[request]]
name = "buy"
path = "/buy"
think_time = 0.5
)",
                                       examples_dir(), p)));
    EXPECT_EQ(p.think.min, std::chrono::nanoseconds{1s});
    EXPECT_EQ(p.think.max, std::chrono::nanoseconds{3s});
    EXPECT_FALSE(p.honour_retry_after);
    ASSERT_EQ(p.scenario.size(), 2u);
    EXPECT_FALSE(p.scenario[0].think.has_value());
    ASSERT_TRUE(p.scenario[1].think.has_value());
    EXPECT_EQ(p.scenario[1].think->min, std::chrono::nanoseconds{500ms});
    EXPECT_EQ(p.scenario[1].think->max, std::chrono::nanoseconds{500ms});
    const std::string text = to_toml(p);
    EXPECT_NE(text.find("think_time = \"1s..3s\"\nignore_retry_after = true\n"), std::string::npos) << text;
    plan q;
    ASSERT_TRUE(test::ok(load_scenario(text, examples_dir(), q)));
    expect_same(p, q);
    plan fresh;
    fresh.to = *http::parse_url("http://example.test:8081/");
    plan defaults;
    ASSERT_TRUE(test::ok(load_scenario(to_toml(fresh), examples_dir(), defaults)));
    EXPECT_FALSE(defaults.think.any());
    EXPECT_TRUE(defaults.honour_retry_after);
}

TEST(scenario_test, a_plan_without_a_scenario_is_written_as_one_request) {
    plan p;
    auto to = http::parse_url("http://127.0.0.1:5001/avatar?size=64");
    ASSERT_TRUE(to);
    p.to = *to;
    p.method = "POST";
    p.headers = {{"Content-Type", "text/plain"}};
    p.body = "hello";
    p.rate = 1.0 / 3;
    p.duration = 90s;
    p.expected_statuses = {404};
    const std::string text = to_toml(p);
    plan q;
    ASSERT_TRUE(test::ok(load_scenario(text, "", q)));
    ASSERT_EQ(q.scenario.size(), 1u);
    EXPECT_EQ(q.scenario[0].method, "POST");
    EXPECT_EQ(q.scenario[0].path_and_query, "/avatar?size=64");
    EXPECT_EQ(q.scenario[0].headers, p.headers);
    EXPECT_EQ(q.scenario[0].body, "hello");
    EXPECT_EQ(q.rate, p.rate);
    EXPECT_EQ(q.duration, p.duration);
    EXPECT_EQ(q.expected_statuses, p.expected_statuses);
    EXPECT_EQ(build_request(q, q.scenario[0]), build_request(p));
}

} // namespace
} // namespace hotpath::load
