// Building a plan from typed options: defaults, overrides of a scenario, and the one set of checks.
#include <hotpath/load/options.hpp>

#include <gtest/gtest.h>

#include <thread>

namespace hotpath::load {
namespace {

using namespace std::chrono_literals;

plan made(const load_options& o) {
    auto p = make_plan(o);
    EXPECT_TRUE(p.has_value()) << p.error().message;
    return p ? std::move(*p) : plan{};
}

std::string refused(const load_options& o) {
    const auto p = make_plan(o);
    EXPECT_FALSE(p.has_value());
    EXPECT_EQ(p.error().code, errc::invalid_value);
    const std::string why = p.error().message;
    EXPECT_EQ(why.find('\n'), std::string::npos) << why;
    return why;
}

TEST(options_test, defaults_are_one_set) {
    load_options o;
    o.url = "http://127.0.0.1:8080/x";
    const plan p = made(o);
    EXPECT_EQ(p.connections, 50u);
    EXPECT_EQ(p.duration, std::chrono::nanoseconds{10s});
    EXPECT_EQ(p.timeout, std::chrono::nanoseconds{10s});
    EXPECT_EQ(p.threads, std::max(1u, std::thread::hardware_concurrency())) << "one thread per core unless -t";
    EXPECT_EQ(p.to.target, "/x");
    o.connections = 1;
    EXPECT_EQ(made(o).threads, 1u) << "no thread without a connection of its own";
    o.connections.reset();
    o.stages = "vus=0..1:1s";
    EXPECT_EQ(made(o).threads, 1u) << "a ramp to 1 user needs 1 thread";
    o.stages.reset();
    o.threads = 0;
    EXPECT_EQ(made(o).threads, std::max(1u, std::thread::hardware_concurrency()));
}

TEST(options_test, conflicts_are_refused_naming_both_options) {
    load_options o;
    o.url = "http://127.0.0.1:8080/";
    auto with = [&](auto change) {
        load_options c = o;
        change(c);
        return refused(c);
    };
    EXPECT_NE(with([](load_options& c) { c.rate = 0; }).find("--rate must be"), std::string::npos);
    EXPECT_NE(with([](load_options& c) { c.rate = -1; }).find("--rate must be"), std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.stages = "rate=1/s:1s";
                  c.rate = 5;
              }).find("--stages and --rate"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.stages = "rate=1/s:1s";
                  c.duration = "5s";
              }).find("--stages and --duration"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.stages = "vus=1..5:1s";
                  c.connections = 5;
              }).find("-c and vus stages"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.expect_status = {200, 700};
              }).find("--expect-status takes statuses"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) { c.max_connections = 100; }).find("--max-connections applies to the open"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.rate = 10;
                  c.connections = 8;
                  c.max_connections = 4;
              }).find("--max-connections must be at least -c (8)"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.pipeline = 2;
                  c.no_keepalive = true;
              }).find("--pipeline and --no-keepalive"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.pipeline = 2;
                  c.rate = 10;
              }).find("--pipeline works with the closed model only"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) { c.requests = 0; }).find("-n must be at least 1"), std::string::npos);
    EXPECT_NE(with([](load_options& c) {
                  c.warmup = "10s";
                  c.duration = "10s";
              }).find("--warmup must be shorter"),
              std::string::npos);
    EXPECT_NE(with([](load_options& c) { c.url.clear(); }).find("a URL is required"), std::string::npos);
}

// HTTP/2's knobs: --h2 or --h2c make an h2 plan (over https:// offering only h2 through ALPN), --streams needs one of
// them, and HTTP/1.1's own knobs (--pipeline, --no-keepalive) are refused with it.
TEST(options_test, http2_knobs_and_their_conflicts) {
    load_options o;
    o.url = "http://127.0.0.1:8080/";
    o.streams = 10;
    EXPECT_NE(refused(o).find("--streams needs HTTP/2 (--h2, --h2c or --http)"), std::string::npos);
    o.h2c = true;
    plan p = made(o);
    EXPECT_TRUE(p.h2());
    EXPECT_EQ(p.streams, 10u);
    o.pipeline = 2;
    EXPECT_NE(refused(o).find("--pipeline is HTTP/1.1's"), std::string::npos);
    o.pipeline.reset();
    o.no_keepalive = true;
    EXPECT_NE(refused(o).find("--no-keepalive is HTTP/1.1's"), std::string::npos);
    o.no_keepalive = false;
    o.url = "https://127.0.0.1:8443/";
    EXPECT_NE(refused(o).find("--h2c is HTTP/2 over plain TCP"), std::string::npos);
    o.h2c = false;
    o.h2 = true;
    p = made(o);
    EXPECT_TRUE(p.h2());
    EXPECT_EQ(p.tls.alpn, std::vector<std::string>{"h2"});
    EXPECT_NE(p.tls_context, nullptr);
    o.streams = 1001;
    EXPECT_NE(refused(o).find("--streams must be from 1 to 1000"), std::string::npos);
    o.h2 = false;
    o.streams.reset();
    EXPECT_EQ(made(o).tls.alpn, std::vector<std::string>{"http/1.1"}) << "HTTP/1.1 unless asked";

    // --http auto: over https:// each connection speaks what ALPN agrees, h2 offered first; over http:// refused.
    o.http = "auto";
    o.streams = 8;
    p = made(o);
    EXPECT_TRUE(p.may_h2());
    EXPECT_FALSE(p.h2());
    EXPECT_EQ(p.tls.alpn, (std::vector<std::string>{"h2", "http/1.1"}));
    o.url = "http://127.0.0.1:8080/";
    EXPECT_NE(refused(o).find("--http auto agrees on the protocol through ALPN, over https:// only"),
              std::string::npos);
    o.http = "3";
    EXPECT_NE(refused(o).find("--http is 1.1, 2 or auto, not '3'"), std::string::npos);
    o.http = "2";
    EXPECT_TRUE(made(o).h2()) << "--http 2 is --h2";
}

// --segment: read into the plan's part, the threads no more than the part's users; a part holding no user of the
// closed model, or none of -n's requests, is refused (it would wait forever, or send nothing).
TEST(options_test, segments_are_read_and_a_part_without_users_is_refused) {
    load_options o;
    o.url = "http://127.0.0.1:8080/";
    o.connections = 8;
    o.segment = "1/4";
    const auto p = make_plan(o);
    ASSERT_TRUE(p) << p.error().message;
    EXPECT_EQ(p->part.text(), "1/4:1/2");
    EXPECT_LE(p->threads, 2u) << "no more threads than the part's 2 users";
    o.segment = "1/2:1/4";
    EXPECT_NE(refused(o).find("is empty"), std::string::npos);
    o.segment = "2/3";
    o.connections = 2;
    EXPECT_NE(refused(o).find("--segment 2/3:1 holds none of the plan's 2 users"), std::string::npos) << refused(o);
    o.connections = 6;
    o.requests = 2;
    EXPECT_NE(refused(o).find("--segment 2/3:1 holds none of the plan's 2 requests (-n)"), std::string::npos);
    o.requests.reset();
    o.connections = 2;
    o.rate = 100; // the open model opens a connection of its own whatever the part
    EXPECT_TRUE(make_plan(o));
    o.rate.reset();
    o.segment.reset();
    o.segment_sequence = "0,1/2,1";
    EXPECT_NE(refused(o).find("--segment-sequence needs --segment"), std::string::npos);
}

// For an https:// target make_plan makes the run's TLS context, once: a file that cannot be used is told then, and
// run() uses the context the plan keeps. None for http://.
TEST(options_test, an_https_plan_keeps_the_tls_context_it_checked) {
    load_options o;
    o.url = "https://127.0.0.1:8443/";
    const plan https = made(o);
    EXPECT_NE(https.tls_context, nullptr);
    const plan copy = https;
    EXPECT_EQ(copy.tls_context, https.tls_context) << "copies share it";
    o.url = "http://127.0.0.1:8080/";
    EXPECT_EQ(made(o).tls_context, nullptr);
    o.url = "https://127.0.0.1:8443/";
    o.tls.ca_file = "/nonexistent/ca.pem";
    EXPECT_NE(refused(o).find("--cacert '/nonexistent/ca.pem'"), std::string::npos);
}

TEST(options_test, think_time_and_retry_after) {
    load_options o;
    o.url = "http://127.0.0.1:8080/";
    EXPECT_FALSE(made(o).think.any());
    EXPECT_TRUE(made(o).honour_retry_after) << "honoured unless told";
    o.think_time = "250ms";
    o.ignore_retry_after = true;
    plan p = made(o);
    EXPECT_EQ(p.think.min, std::chrono::nanoseconds{250ms});
    EXPECT_EQ(p.think.max, std::chrono::nanoseconds{250ms});
    EXPECT_FALSE(p.honour_retry_after);
    o.think_time = " 1s .. 2.5s ";
    p = made(o);
    EXPECT_EQ(p.think.min, std::chrono::nanoseconds{1s});
    EXPECT_EQ(p.think.max, std::chrono::nanoseconds{2500ms});
    EXPECT_EQ(think_time_text(p.think), "1s..2500ms");
    o.think_time = "0";
    EXPECT_FALSE(made(o).think.any()) << "no pause";
    for (const char* bad : {"", "soon", "2s..1s", "-1s", "1s..", "..1s", "1s..2s..3s", "1s..x"}) {
        o.think_time = bad;
        EXPECT_NE(refused(o).find("--think-time: bad think time '"), std::string::npos) << bad;
    }
    // A day at most (a longer one once overflowed the clock's time point).
    o.think_time = "24h";
    EXPECT_EQ(made(o).think.max, std::chrono::nanoseconds{std::chrono::hours{24}});
    for (const char* too_long : {"25h", "1s..2562047h"}) {
        o.think_time = too_long;
        EXPECT_NE(refused(o).find("is longer than a day"), std::string::npos) << too_long;
    }
    o.think_time.reset();
    // A run of a year at most: 2562047h overflowed the steady clock's time point of its end, as a sum of stages did.
    o.duration = "8784h";
    EXPECT_EQ(made(o).duration, std::chrono::nanoseconds{std::chrono::hours{8784}});
    o.duration = "2562047h";
    EXPECT_EQ(refused(o), "-d must be at most 366 days");
    o.duration.reset();
    o.stages = "vus=1:1500000h,vus=1:1500000h";
    EXPECT_EQ(refused(o), "--stages: the stages' durations must add up to 366 days at most");
    o.stages = "vus=1:4392h,vus=1:4392h";
    EXPECT_EQ(made(o).total_time(), std::chrono::nanoseconds{std::chrono::hours{8784}});
    o.stages.reset();
    o.think_time = "1s";
    o.rate = 10;
    EXPECT_NE(refused(o).find("--think-time is a user's pause between its requests, in the closed model"),
              std::string::npos);
    o.rate.reset();
    o.pipeline = 4;
    EXPECT_NE(refused(o).find("--think-time pauses a user that has one request at a time: not with --pipeline or "
                              "--streams above 1"),
              std::string::npos);
    o.pipeline.reset();
    o.h2c = true;
    o.streams = 10;
    EXPECT_NE(refused(o).find("not with --pipeline or --streams above 1"), std::string::npos);
    o.streams = 1;
    EXPECT_TRUE(made(o).think.any()) << "one stream per connection: a user";
}

TEST(options_test, validate_names_the_knobs_as_each_source_writes_them) {
    plan p;
    p.rate = 10;
    p.pipeline = 4;
    EXPECT_NE(validate(p, plan_source::flags).find("--pipeline"), std::string::npos);
    EXPECT_NE(validate(p, plan_source::scenario).find("load.pipeline"), std::string::npos);
    p = plan{};
    EXPECT_EQ(validate(p, plan_source::flags), "");
    p.expected_statuses = {99};
    EXPECT_NE(validate(p, plan_source::scenario).find("load.expect_status"), std::string::npos);
}

TEST(options_test, a_scenario_is_overridden_by_the_options_given) {
    const std::string path = ::testing::TempDir() + "options_test_scenario.toml";
    {
        std::FILE* f = std::fopen(path.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fputs("url = \"http://127.0.0.1:9/\"\n[load]\nconnections = 7\nrate = 50\nduration = \"3s\"\n"
                   "[[request]]\npath = \"/a\"\n",
                   f);
        std::fclose(f);
    }
    load_options o;
    o.scenario = path;
    plan p = made(o);
    EXPECT_EQ(p.connections, 7u);
    EXPECT_EQ(p.rate, 50);
    EXPECT_EQ(p.threads, std::min(7u, std::max(1u, std::thread::hardware_concurrency())));
    o.stages = "vus=0..3:1s"; // a model option replaces the file's whole model
    p = made(o);
    EXPECT_EQ(p.rate, 0);
    ASSERT_EQ(p.stages.size(), 1u);
    EXPECT_FALSE(p.open_model());
    o.stages.reset();
    o.method = "POST";
    EXPECT_NE(refused(o).find("--method does not apply with --scenario"), std::string::npos);
    std::remove(path.c_str());
}

} // namespace
} // namespace hotpath::load
