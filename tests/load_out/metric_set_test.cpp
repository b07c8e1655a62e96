// The run's metrics as each output writes them: the Prometheus text read back by the project's reader (and
// promtool), remote-write's series decoded back, OTLP's request parsed back with its own messages; the --out and
// --tag syntax.
#include "support/promtool.hpp"
#include <hotpath/load/live.hpp>
#include <hotpath/load_out/metric_set.hpp>
#include <hotpath/load_out/otlp.hpp>
#include <hotpath/load_out/outputs.hpp>
#include <hotpath/load_out/remote_write.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>

#include <hotpath/load_out/proto/otlp_metrics.pb.h>

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <map>

namespace hotpath::load_out {
namespace {

using namespace std::chrono_literals;

// Two requests, one with a name that needs escaping, and figures in every family.
load::live_snapshot snapshot() {
    load::live_snapshot s;
    s.requests.resize(2);
    s.requests[0].name = "list";
    s.requests[0].responses = {0, 0, 900, 5, 40, 3};
    s.requests[0].latency[load::live_bucket(3ms)] = 940;
    s.requests[0].latency[load::live_bucket(20s)] = 8; // past the last bound: +Inf
    s.requests[0].latency_sum_ns = 940 * 3'000'000ULL + 8 * 20'000'000'000ULL;
    s.requests[1].name = "say \"hi\"\\n";
    s.requests[1].responses = {2, 0, 10, 0, 0, 0};
    s.requests[1].latency[load::live_bucket(100us)] = 12; // on a bound: in its bucket (le)
    s.requests[1].latency_sum_ns = 12 * 100'000ULL;
    s.errors_by_class[static_cast<std::size_t>(load::error_class::timeout)] = 7;
    s.in_flight = 16;
    s.connections_open = 8;
    s.connect_attempts = 20;
    s.connect_failures = 4;
    s.bytes_received = 123456;
    s.bytes_sent = 65432;
    s.retry_after_asked = 3;
    s.late = 2;
    s.send_lag[load::live_bucket(40ms)] = 2;
    s.send_lag_sum_ns = 80'000'000;
    return s;
}

run_view view() {
    return run_view{{{"test", "checkout"}, {"generator", "host:1"}}, 32, false};
}

TEST(load_out_metrics, buckets_are_prometheus_le_bounds) {
    EXPECT_EQ(load::live_bucket(0ns), 0u);
    EXPECT_EQ(load::live_bucket(100us), 0u) << "on the bound: in it";
    EXPECT_EQ(load::live_bucket(100001ns), 1u);
    EXPECT_EQ(load::live_bucket(10s), load::live_bounds_s.size() - 1);
    EXPECT_EQ(load::live_bucket(10s + 1ns), load::live_bounds_s.size()) << "+Inf";
}

TEST(load_out_metrics, the_text_exposition_reads_back_with_every_figure) {
    const std::string text = prometheus_text(snapshot(), view());
    const auto page = metrics::read_prometheus_text(text);
    ASSERT_TRUE(page.has_value()) << page.error().message << "\n" << text;
    std::map<std::string, double> seen;
    for (const auto& s : page->samples) {
        std::string key = s.name;
        for (const auto& [n, v] : s.labels) {
            if (n != "test" && n != "generator") {
                key += "," + n + "=" + v;
            }
        }
        EXPECT_EQ(s.label("test"), "checkout") << s.name;
        EXPECT_EQ(s.label("generator"), "host:1") << s.name;
        seen[key] = s.value;
    }
    EXPECT_EQ(seen["hotpath_load_responses_total,request=list,status_class=2xx"], 900);
    EXPECT_EQ(seen["hotpath_load_responses_total,request=list,status_class=5xx"], 3);
    EXPECT_EQ(seen.count("hotpath_load_responses_total,request=list,status_class=other"), 0u) << "none: not written";
    EXPECT_EQ(seen["hotpath_load_responses_total,request=say \"hi\"\\n,status_class=other"], 2) << "escaped, read back";
    EXPECT_EQ(seen["hotpath_load_latency_seconds_bucket,request=list,le=0.005"], 940);
    EXPECT_EQ(seen["hotpath_load_latency_seconds_bucket,request=list,le=10"], 940);
    EXPECT_EQ(seen["hotpath_load_latency_seconds_bucket,request=list,le=+Inf"], 948);
    EXPECT_EQ(seen["hotpath_load_latency_seconds_count,request=list"], 948);
    EXPECT_DOUBLE_EQ(seen["hotpath_load_latency_seconds_sum,request=list"], 940 * 0.003 + 8 * 20.0);
    EXPECT_EQ(seen["hotpath_load_latency_seconds_bucket,request=say \"hi\"\\n,le=0.0001"], 12);
    EXPECT_EQ(seen["hotpath_load_errors_total,class=timeout"], 7);
    EXPECT_EQ(seen["hotpath_load_errors_total,class=read"], 0) << "every class written, zero or not";
    EXPECT_EQ(seen["hotpath_load_requests_in_flight"], 16);
    EXPECT_EQ(seen["hotpath_load_connections"], 8);
    EXPECT_EQ(seen["hotpath_load_connect_failures_total"], 4);
    EXPECT_EQ(seen["hotpath_load_received_bytes_total"], 123456);
    EXPECT_EQ(seen["hotpath_load_retry_after_total"], 3);
    EXPECT_EQ(seen["hotpath_load_send_lag_seconds_count"], 2);
    EXPECT_EQ(seen["hotpath_load_target,kind=users"], 32);
    EXPECT_EQ(page->type_of("hotpath_load_latency_seconds_bucket"), "histogram");
    EXPECT_EQ(page->type_of("hotpath_load_responses_total"), "counter");
    if (test::have_promtool()) {
        const auto verdict = test::promtool_check(text);
        EXPECT_TRUE(verdict.passed) << verdict.said;
    }
}

TEST(load_out_metrics, remote_write_sends_each_series_sorted_at_one_time_and_marks_them_stale_at_the_end) {
    remote_write_encoder encoder;
    const auto at = std::chrono::system_clock::time_point{std::chrono::milliseconds{1796572800123}};
    const auto series = decode_write_request(encoder.encode(snapshot(), view(), at));
    const auto page = metrics::read_prometheus_text(prometheus_text(snapshot(), view()));
    ASSERT_TRUE(page.has_value());
    ASSERT_EQ(series.size(), page->samples.size()) << "the same series as a scrape";
    std::map<std::string, double> by_labels;
    for (const auto& s : series) {
        EXPECT_EQ(s.timestamp_ms, 1796572800123);
        EXPECT_TRUE(s.labels.starts_with("__name__=hotpath_load_")) << s.labels;
        // Sorted by name: __name__, class|kind|le|request|status_class..., generator, test.
        std::vector<std::string> names;
        for (std::size_t from = 0; from < s.labels.size();) {
            const auto comma = s.labels.find(',', from);
            const std::string pair = s.labels.substr(from, comma - from);
            names.push_back(pair.substr(0, pair.find('=')));
            from = comma == std::string::npos ? s.labels.size() : comma + 1;
        }
        EXPECT_TRUE(std::is_sorted(names.begin(), names.end())) << s.labels;
        by_labels[s.labels] = s.value;
    }
    EXPECT_EQ(by_labels["__name__=hotpath_load_responses_total,generator=host:1,request=list,status_class=2xx,"
                        "test=checkout"],
              900);
    EXPECT_EQ(by_labels["__name__=hotpath_load_latency_seconds_bucket,generator=host:1,le=+Inf,request=list,"
                        "test=checkout"],
              948);

    // A second push adds no series; the stale markers cover every one, with Prometheus's own NaN.
    encoder.encode(snapshot(), view(), at + 5s);
    const auto stale = decode_write_request(encoder.stale(at + 6s));
    ASSERT_EQ(stale.size(), series.size());
    for (const auto& s : stale) {
        EXPECT_EQ(std::bit_cast<std::uint64_t>(s.value), 0x7ff0000000000002ULL) << s.labels;
        EXPECT_EQ(s.timestamp_ms, 1796572806123);
    }
    EXPECT_TRUE(decode_write_request("not snappy").empty());
    EXPECT_EQ(remote_write_headers(),
              (std::vector<std::string>{"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                                        "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: hotpath-load"}));
}

TEST(load_out_metrics, otlp_has_cumulative_sums_gauges_and_histograms_with_the_same_figures) {
    const auto start = std::chrono::system_clock::time_point{std::chrono::seconds{1796572800}};
    const std::string body = otlp_body(snapshot(), view(), start, start + 10s);
    otlp::ExportMetricsServiceRequest request;
    ASSERT_TRUE(request.ParseFromString(body));
    ASSERT_EQ(request.resource_metrics_size(), 1);
    const auto& rm = request.resource_metrics(0);
    ASSERT_EQ(rm.resource().attributes_size(), 1);
    EXPECT_EQ(rm.resource().attributes(0).key(), "service.name");
    EXPECT_EQ(rm.resource().attributes(0).value().string_value(), "hotpath-load");
    ASSERT_EQ(rm.scope_metrics_size(), 1);
    std::map<std::string, const otlp::Metric*> metrics;
    for (const auto& m : rm.scope_metrics(0).metrics()) {
        metrics[m.name()] = &m;
    }
    ASSERT_TRUE(metrics.count("hotpath.load.responses"));
    const auto& responses = *metrics["hotpath.load.responses"];
    ASSERT_TRUE(responses.has_sum());
    EXPECT_TRUE(responses.sum().is_monotonic());
    EXPECT_EQ(responses.sum().aggregation_temporality(), otlp::AGGREGATION_TEMPORALITY_CUMULATIVE);
    std::int64_t total = 0;
    for (const auto& p : responses.sum().data_points()) {
        total += p.as_int();
        EXPECT_EQ(p.start_time_unix_nano(), 1796572800000000000ULL);
        EXPECT_EQ(p.time_unix_nano(), 1796572810000000000ULL);
    }
    EXPECT_EQ(total, 900 + 5 + 40 + 3 + 2 + 10);
    ASSERT_TRUE(metrics.count("hotpath.load.latency"));
    const auto& latency = *metrics["hotpath.load.latency"];
    ASSERT_TRUE(latency.has_histogram());
    EXPECT_EQ(latency.unit(), "s");
    ASSERT_EQ(latency.histogram().data_points_size(), 2);
    const auto& list = latency.histogram().data_points(0);
    EXPECT_EQ(list.count(), 948u);
    EXPECT_EQ(list.bucket_counts_size(), static_cast<int>(load::live_buckets));
    EXPECT_EQ(list.explicit_bounds_size(), static_cast<int>(load::live_bounds_s.size()));
    EXPECT_EQ(list.bucket_counts(static_cast<int>(load::live_buckets) - 1), 8u);
    EXPECT_DOUBLE_EQ(list.sum(), 940 * 0.003 + 8 * 20.0);
    ASSERT_TRUE(metrics.count("hotpath.load.requests_in_flight"));
    ASSERT_TRUE(metrics["hotpath.load.requests_in_flight"]->has_gauge());
    EXPECT_EQ(metrics["hotpath.load.requests_in_flight"]->gauge().data_points(0).as_double(), 16);
    EXPECT_EQ(metrics["hotpath.load.received"]->unit(), "By");

    EXPECT_EQ(otlp_partial_success(""), std::nullopt);
    otlp::ExportMetricsServiceResponse partial;
    partial.mutable_partial_success()->set_rejected_data_points(5);
    partial.mutable_partial_success()->set_error_message("too many");
    const auto told = otlp_partial_success(partial.SerializeAsString());
    ASSERT_TRUE(told.has_value());
    EXPECT_EQ(told->first, 5);
    EXPECT_EQ(told->second, "too many");
}

// The plan's level, and a segment's part of it (the parts' add up to the plan's); 0 before the start.
TEST(load_out_metrics, the_target_is_this_runs_part_of_the_plans_level) {
    load::plan p;
    p.connections = 8;
    EXPECT_EQ(target_at(p, 1s), 8);
    EXPECT_EQ(target_at(p, -1ms), 0);
    p.part = *load::segment::parse("1/4:3/4", "");
    EXPECT_EQ(target_at(p, 1s), 4);
    const auto tags = run_tags(p, {{"test", "x"}});
    ASSERT_EQ(tags.size(), 3u);
    EXPECT_EQ(tags[1].first, "generator");
    EXPECT_EQ(tags[2], (std::pair<std::string, std::string>{"segment", "1/4:3/4"}));
    p.part = {};
    p.stages = *load::parse_stages("rate=0..100/s:10s");
    EXPECT_NEAR(target_at(p, 5s), 50, 1e-9);
}

TEST(load_out_metrics, out_and_tag_are_read_or_refused_in_one_line) {
    auto rw = parse_output("prometheus-rw=http://127.0.0.1:9090/api/v1/write");
    ASSERT_TRUE(rw.has_value());
    EXPECT_EQ(rw->what, output_spec::kind::prometheus_rw);
    EXPECT_EQ(rw->target, "http://127.0.0.1:9090/api/v1/write");
    auto otlp_base = parse_output("otlp=http://127.0.0.1:4318");
    ASSERT_TRUE(otlp_base.has_value());
    EXPECT_EQ(otlp_base->target, "http://127.0.0.1:4318/v1/metrics") << "a base URL gets the signal's path";
    auto otlp_full = parse_output("otlp=https://collector:4318/custom/metrics");
    ASSERT_TRUE(otlp_full.has_value());
    EXPECT_EQ(otlp_full->target, "https://collector:4318/custom/metrics");
    auto scrape = parse_output("prometheus=9464");
    ASSERT_TRUE(scrape.has_value());
    EXPECT_EQ(scrape->target, "127.0.0.1");
    EXPECT_EQ(scrape->port, 9464);
    auto anywhere = parse_output("prometheus=0.0.0.0:0");
    ASSERT_TRUE(anywhere.has_value());
    EXPECT_EQ(anywhere->target, "0.0.0.0");
    auto v6 = parse_output("prometheus=[::1]:9464");
    ASSERT_TRUE(v6.has_value());
    EXPECT_EQ(v6->target, "::1");
    for (const char* bad : {"", "prometheus-rw", "prometheus-rw=", "prometheus-rw=127.0.0.1:9090", "otlp=ftp://x",
                            "prometheus=", "prometheus=x", "prometheus=70000", "prometheus=:9464", "influxdb=http://x",
                            "json=out.json"}) {
        const auto refused = parse_output(bad);
        ASSERT_FALSE(refused.has_value()) << bad;
        EXPECT_EQ(refused.error().message.find('\n'), std::string::npos);
        EXPECT_NE(refused.error().message.find("--out"), std::string::npos) << refused.error().message;
    }
    const auto tag = parse_tag("test=checkout run 2");
    ASSERT_TRUE(tag.has_value());
    EXPECT_EQ(tag->first, "test");
    EXPECT_EQ(tag->second, "checkout run 2");
    EXPECT_TRUE(parse_tag("empty=").has_value());
    // Values are UTF-8, as protobuf's strings and the text format require.
    EXPECT_EQ(parse_tag("city=Zürich \xF0\x9F\x9A\x80")->second, "Zürich \xF0\x9F\x9A\x80");
    for (const char* bad : {"", "test", "=x", "9lives=x", "a-b=x", "__name__=x", "generator=x", "request=x", "le=1",
                            "t=\xff", "t=caf\xC3", "t=\xC0\xAF", "t=\xED\xA0\x80", "t=\xF4\x90\x80\x80",
                            "t=a\x80"
                            "b"}) {
        const auto refused = parse_tag(bad);
        ASSERT_FALSE(refused.has_value()) << bad;
        EXPECT_NE(refused.error().message.find("--tag"), std::string::npos) << refused.error().message;
    }
}

// The options as a whole: one scrape endpoint, each tag's name once; the message names both.
TEST(load_out_metrics, one_scrape_endpoint_and_each_tag_once) {
    output_options o;
    o.specs = {*parse_output("prometheus=9464"), *parse_output("prometheus-rw=http://127.0.0.1:9090/api/v1/write"),
               *parse_output("otlp=http://127.0.0.1:4318")};
    o.tags = {*parse_tag("test=a"), *parse_tag("env=ci")};
    EXPECT_TRUE(check(o).has_value());
    o.specs.push_back(*parse_output("prometheus=9465"));
    ASSERT_FALSE(check(o).has_value());
    EXPECT_EQ(check(o).error().message, "--out prometheus=9464 and --out prometheus=9465: one scrape endpoint per run");
    o.specs.pop_back();
    o.tags.push_back(*parse_tag("test=b"));
    ASSERT_FALSE(check(o).has_value());
    EXPECT_EQ(check(o).error().message, "--tag test: given twice (test=a and test=b)");
}

} // namespace
} // namespace hotpath::load_out
