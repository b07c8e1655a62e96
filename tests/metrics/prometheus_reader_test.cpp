// The Prometheus text reader: what the project's own writer writes reads back the same; tables of lines as
// exporters write them (0.0.4 and OpenMetrics) and of lines that are not the format, each refused with its line
// number; and whole pages recorded from OpenTelemetry's exporters (tests/lab/data/otel).
#include <hotpath/metrics/prometheus.hpp>
#include <hotpath/metrics/prometheus_reader.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace hotpath::metrics {
namespace {

using labels_t = std::vector<std::pair<std::string, std::string>>;

scrape read_ok(std::string_view text) {
    auto r = read_prometheus_text(text);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message) << "\n" << text;
    return r ? std::move(*r) : scrape{};
}

TEST(prometheus_reader_test, what_the_writer_writes_reads_back_the_same) {
    std::string text;
    prometheus_writer out(text);
    out.family("x_total", "Lines\nand a back\\slash", metric_type::counter);
    out.sample("x_total", {{"route", "/a\"b\\c\nd"}, {"code", "2xx"}}, std::uint64_t{42});
    out.sample("x_total", {}, 0.5);
    out.family("g", "special numbers", metric_type::gauge);
    out.sample("g", {}, std::numeric_limits<double>::infinity());
    out.sample("g", {}, -std::numeric_limits<double>::infinity());
    out.sample("g", {}, std::nan(""));
    out.sample("g", {}, std::uint64_t{1} << 53);
    out.family("d_seconds", "a histogram", metric_type::histogram);
    const std::array<double, 2> bounds{0.001, 0.25};
    const std::array<std::uint64_t, 3> counts{3, 4, 5};
    out.histogram("d_seconds", {{"route", "/r"}}, bounds, counts, 12.5);

    const scrape s = read_ok(text);
    ASSERT_EQ(s.samples.size(), 11U);
    EXPECT_EQ(s.samples[0].name, "x_total");
    EXPECT_EQ(s.samples[0].labels, (labels_t{{"route", "/a\"b\\c\nd"}, {"code", "2xx"}}));
    EXPECT_EQ(s.samples[0].value, 42);
    EXPECT_EQ(s.samples[1].value, 0.5);
    EXPECT_EQ(s.samples[2].value, std::numeric_limits<double>::infinity());
    EXPECT_EQ(s.samples[3].value, -std::numeric_limits<double>::infinity());
    EXPECT_TRUE(std::isnan(s.samples[4].value));
    EXPECT_EQ(s.samples[5].value, 9007199254740992.0);
    EXPECT_EQ(s.samples[6].name, "d_seconds_bucket");
    EXPECT_EQ(s.samples[6].label("le"), "0.001");
    EXPECT_EQ(s.samples[6].label("route"), "/r");
    EXPECT_EQ(s.samples[7].value, 7); // cumulative
    EXPECT_EQ(s.samples[8].label("le"), "+Inf");
    EXPECT_EQ(s.samples[8].value, 12);
    EXPECT_EQ(s.samples[9].name, "d_seconds_sum");
    EXPECT_EQ(s.samples[9].value, 12.5);
    EXPECT_EQ(s.samples[10].name, "d_seconds_count");
    EXPECT_EQ(s.type_of("x_total"), "counter");
    EXPECT_EQ(s.type_of("d_seconds_bucket"), "histogram");
    EXPECT_EQ(s.type_of("d_seconds_count"), "histogram");
    EXPECT_EQ(s.type_of("nothing"), "");
}

struct good_line {
    std::string_view text;
    std::string_view name;
    labels_t labels;
    double value;
};

TEST(prometheus_reader_test, lines_as_exporters_write_them) {
    const std::vector<good_line> table{
        {"a 1", "a", {}, 1},
        {"a_b:c 1.5e3", "a_b:c", {}, 1500},
        {"a 1 1700000000000", "a", {}, 1},                              // a timestamp (ms)
        {"a  \t 2", "a", {}, 2},                                        // blanks
        {"a{} 3", "a", {}, 3},                                          // an empty label set
        {"a{x=\"1\",} 4", "a", {{"x", "1"}}, 4},                        // a trailing comma
        {"a{ x = \"1\" , y=\"\" } 5", "a", {{"x", "1"}, {"y", ""}}, 5}, // blanks in the set, an empty value
        {"a {x=\"1\"} 6", "a", {{"x", "1"}}, 6},                        // a blank before the set
        {"a -7", "a", {}, -7},
        {"a +8", "a", {}, 8},
        {"a +Inf", "a", {}, std::numeric_limits<double>::infinity()},
        {"a -inf", "a", {}, -std::numeric_limits<double>::infinity()},
        {"a 1e-3", "a", {}, 0.001},
        {"a .5", "a", {}, 0.5},
        {"a 9 # {trace_id=\"abc\"} 0.67 1700000000.1", "a", {}, 9}, // an OpenMetrics exemplar
        {"a{x=\"{}=,#\"} 10", "a", {{"x", "{}=,#"}}, 10},           // what a value may hold
        {"{\"http.server.duration\",le=\"1\"} 11", "http.server.duration", {{"le", "1"}}, 11}, // Prometheus 3 names
        {"a{\"http.route\"=\"/x\"} 12", "a", {{"http.route", "/x"}}, 12},
        {"a 13\r", "a", {}, 13}, // a CRLF page
        {"  a 14", "a", {}, 14},
        {"a{x=\"\xc3\xa9\"} 15", "a", {{"x", "\xc3\xa9"}}, 15}, // UTF-8 in a value
    };
    for (const good_line& row : table) {
        const scrape s = read_ok(row.text);
        ASSERT_EQ(s.samples.size(), 1U) << row.text;
        EXPECT_EQ(s.samples[0].name, row.name) << row.text;
        EXPECT_EQ(s.samples[0].labels, row.labels) << row.text;
        EXPECT_EQ(s.samples[0].value, row.value) << row.text;
    }
    EXPECT_TRUE(std::isnan(read_ok("a NaN").samples.at(0).value));
}

TEST(prometheus_reader_test, numbers_as_a_buckets_le_writes_them) {
    EXPECT_EQ(parse_prometheus_number("0.005"), 0.005);
    EXPECT_EQ(parse_prometheus_number("+Inf"), std::numeric_limits<double>::infinity());
    EXPECT_EQ(parse_prometheus_number("-inf"), -std::numeric_limits<double>::infinity());
    EXPECT_EQ(parse_prometheus_number("1e3"), 1000);
    EXPECT_FALSE(parse_prometheus_number("").has_value());
    EXPECT_FALSE(parse_prometheus_number("ten").has_value());
    EXPECT_FALSE(parse_prometheus_number("1 ").has_value());
}

TEST(prometheus_reader_test, comments_types_units_and_the_end_of_an_openmetrics_page) {
    const scrape s = read_ok("# A comment of the page's own\n"
                             "# HELP a_seconds Time.\n"
                             "# TYPE a_seconds histogram\n"
                             "# UNIT a_seconds seconds\n"
                             "\n"
                             "a_seconds_count 3\n"
                             "# TYPE b gauge\n"
                             "b 1\n"
                             "# EOF\n"
                             "after the end: not read\n");
    ASSERT_EQ(s.samples.size(), 2U);
    ASSERT_EQ(s.families.size(), 2U);
    EXPECT_EQ(s.families[0].name, "a_seconds");
    EXPECT_EQ(s.families[0].unit, "seconds");
    EXPECT_EQ(s.type_of("a_seconds_count"), "histogram");
    EXPECT_EQ(s.type_of("b"), "gauge");
    EXPECT_TRUE(read_ok("").samples.empty());
    EXPECT_TRUE(read_ok("\n\n# HELP x y\n").samples.empty());
}

TEST(prometheus_reader_test, what_is_not_the_format_is_refused_with_its_line_and_why) {
    const std::vector<std::pair<std::string_view, std::string_view>> table{
        {"a", "line 1: a: no value"},
        {"a x", "'x' is not a number"},
        {"a 1 2 3", "unexpected '3' after the value"},
        {"a 1 x", "'x' is not a timestamp"},
        {"a{x=1} 1", "label 'x': expected '\"'"},
        {"a{x=\"1} 1", "quoted value not closed"},
        {"a{x=\"\\t\"} 1", "invalid escape"},
        {"a{x=\"1\" y=\"2\"} 1", "expected ',' or '}'"},
        {"a{x=\"1\",x=\"2\"} 1", "label 'x' given twice"},
        {"a{1x=\"1\"} 1", "expected a label name"},
        {"a{x} 1", "expected '=' after the label 'x'"},
        {"{} 1", "a sample without a metric name"},
        {"1a 1", "expected a metric name"},
        {"a ++1", "'++1' is not a number"},
        {"a 1e", "'1e' is not a number"},
        {"a 0x10", "'0x10' is not a number"},
        {"ok 1\n# TYPE a nonsense\n", "line 2: # TYPE a: unknown type 'nonsense'"},
        {"# TYPE a gauge\n# TYPE a counter\n", "line 2: # TYPE a declared twice"},
        {"# TYPE\n", "# TYPE without a metric name"},
        {"# TYPE a gauge extra\n", "unexpected 'extra'"},
    };
    for (const auto& [text, why] : table) {
        const auto r = read_prometheus_text(text);
        ASSERT_FALSE(r.has_value()) << text;
        EXPECT_NE(r.error().message.find(why), std::string::npos) << text << " -> " << r.error().message;
    }
}

TEST(prometheus_reader_test, a_page_past_the_limits_is_refused_not_held) {
    scrape_limits limits;
    limits.max_bytes = 10;
    EXPECT_FALSE(read_prometheus_text("a 1\nb 2\nc 3\n", limits).has_value());
    limits = {};
    limits.max_labels = 2;
    EXPECT_TRUE(read_prometheus_text("a{x=\"1\",y=\"2\"} 1", limits).has_value());
    const auto r = read_prometheus_text("a{x=\"1\",y=\"2\",z=\"3\"} 1", limits);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("more than 2 labels"), std::string::npos) << r.error().message;
}

// Every page recorded from a real exporter reads whole, with its HTTP families where the recording has them.
TEST(prometheus_reader_test, pages_recorded_from_opentelemetry_exporters_read_whole) {
    const std::filesystem::path folder = std::filesystem::path(HOTPATH_SOURCE_DIR) / "tests/lab/data/otel";
    std::size_t pages = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        if (entry.path().extension() != ".prom") {
            continue;
        }
        std::ifstream in(entry.path());
        std::ostringstream text;
        text << in.rdbuf();
        const auto r = read_prometheus_text(text.str());
        ASSERT_TRUE(r.has_value()) << entry.path().filename() << ": " << r.error().message;
        EXPECT_FALSE(r->samples.empty()) << entry.path().filename();
        ++pages;
    }
    EXPECT_GE(pages, 6U);
}

} // namespace
} // namespace hotpath::metrics
