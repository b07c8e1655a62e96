// lab compare's pairing and verdicts on sides built in memory, with case and variant names no case uses.
#include <hotpath/lab/compare.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace hotpath::lab {
namespace {

lab_side side(const std::string& name, std::vector<std::pair<std::string, variant_figures>> variants,
              std::optional<double> headline) {
    lab_side s;
    s.source = name;
    case_figures c;
    c.variants = std::move(variants);
    c.headline_label = "a/b p95";
    c.headline = headline;
    s.cases["ingest"] = std::move(c);
    return s;
}

variant_figures figures(double rps, double p95_ms, double errors) {
    variant_figures f;
    f.rps = rps;
    f.p50_ms = p95_ms / 2;
    f.p95_ms = p95_ms;
    f.p99_ms = p95_ms * 2;
    f.errors = errors;
    return f;
}

const figure_change& figure(const variant_change& row, const std::string& name) {
    for (const auto& f : row.figures) {
        if (f.name == name) {
            return f;
        }
    }
    static const figure_change none{};
    ADD_FAILURE() << "no figure " << name;
    return none;
}

TEST(compare_test, changes_past_the_noise_are_faster_or_slower_in_each_figures_direction) {
    const auto a = side("a", {{"batched", figures(100, 10, 0)}}, 2.0);
    const auto b = side("b", {{"batched", figures(130, 8.9, 0)}}, 2.1);
    const comparison c = compare(a, b, 0.15);
    ASSERT_EQ(c.rows.size(), 2u); // the variant, then the headline
    const auto& row = c.rows[0];
    EXPECT_EQ(row.variant, "batched");
    EXPECT_EQ(figure(row, "rps").verdict, "faster"); // +30 %
    EXPECT_NEAR(*figure(row, "rps").change, 0.30, 1e-9);
    EXPECT_EQ(figure(row, "p95").verdict, "within noise"); // -11 %
    EXPECT_EQ(figure(row, "errors").verdict, "");          // 0 and 0
    EXPECT_FALSE(figure(row, "errors").change.has_value());
    EXPECT_EQ(c.rows[1].variant, "");
    EXPECT_EQ(c.rows[1].label, "a/b p95");
    EXPECT_EQ(figure(c.rows[1], "headline").verdict, "within noise");
}

TEST(compare_test, latency_up_is_slower_errors_from_zero_are_more_errors_a_headline_only_changes) {
    const auto a = side("a", {{"batched", figures(100, 10, 0)}}, 2.0);
    const auto b = side("b", {{"batched", figures(100, 20, 5)}}, 4.0);
    const comparison c = compare(a, b, 0.15);
    EXPECT_EQ(figure(c.rows[0], "p95").verdict, "slower");
    EXPECT_EQ(figure(c.rows[0], "p99").verdict, "slower");
    EXPECT_EQ(figure(c.rows[0], "errors").verdict, "more errors");
    EXPECT_EQ(figure(c.rows[1], "headline").verdict, "changed");
}

TEST(compare_test, cases_and_variants_on_one_side_are_listed) {
    auto a = side("a", {{"batched", figures(1, 1, 0)}, {"streamed", figures(1, 1, 0)}}, std::nullopt);
    auto b = side("b", {{"batched", figures(1, 1, 0)}, {"chunked", figures(1, 1, 0)}}, std::nullopt);
    b.cases["export"] = b.cases["ingest"];
    const comparison c = compare(a, b);
    ASSERT_EQ(c.rows.size(), 1u); // no headline row: neither side has a value
    EXPECT_EQ(c.only_old, std::vector<std::string>{"ingest/streamed"});
    EXPECT_EQ(c.only_new, (std::vector<std::string>{"ingest/chunked", "export"}));
}

TEST(compare_test, the_page_is_self_contained_and_escapes_names) {
    const auto a = side("<old>", {{"a&b", figures(1, 1, 0)}}, std::nullopt);
    const auto b = side("new", {{"a&b", figures(2, 1, 0)}}, std::nullopt);
    const std::string html = comparison_html(compare(a, b), a, b);
    EXPECT_NE(html.find("ingest/a&amp;b"), std::string::npos);
    EXPECT_NE(html.find("&lt;old&gt;"), std::string::npos);
    EXPECT_EQ(html.find("<old>"), std::string::npos);
    EXPECT_NE(html.find("<svg"), std::string::npos);
    EXPECT_EQ(html.find("://"), std::string::npos);
}

// Two `lab capacity` results (hotpath-capacity/1) read as the case "capacity", a variant per step and the peak with
// the shape as its headline: the step whose answers doubled is faster, the others within noise.
TEST(compare_test, two_capacity_runs_compare_step_by_step) {
    auto write = [](const std::string& text) {
        char path[] = "/tmp/hotpath-capacity-compare-XXXXXX";
        const int fd = ::mkstemp(path);
        EXPECT_GE(fd, 0);
        ::close(fd);
        std::ofstream(path) << text;
        return std::string(path);
    };
    auto doc = [](double at_two, const char* shape) {
        return std::string(R"({"schema": "hotpath-capacity/1", "url": "u", "steps": [
            {"users": 1, "throughput": 100, "p50_s": 0.01, "p99_s": 0.012, "error_share": 0, "requests": 300},
            {"users": 2, "throughput": )") +
               std::to_string(at_two) + R"(, "p50_s": 0.01, "p99_s": 0.012, "error_share": 0.01, "requests": 600}],
            "fit": null, "verdict": {"shape": ")" +
               shape + R"(", "peak_throughput": )" + std::to_string(at_two) + R"(}, "stopped": "x"})";
    };
    const std::string old_path = write(doc(100, "serialised"));
    const std::string new_path = write(doc(200, "linear"));
    const auto a = read_lab_side(old_path);
    const auto b = read_lab_side(new_path);
    std::remove(old_path.c_str());
    std::remove(new_path.c_str());
    ASSERT_TRUE(a) << a.error().message;
    ASSERT_TRUE(b) << b.error().message;
    ASSERT_EQ(a->cases.count("capacity"), 1u);
    const auto& steps = a->cases.at("capacity").variants;
    ASSERT_EQ(steps.size(), 2u);
    EXPECT_EQ(steps[0].first, "1 user");
    EXPECT_EQ(steps[1].first, "2 users");
    EXPECT_DOUBLE_EQ(steps[1].second.p99_ms, 12);
    EXPECT_DOUBLE_EQ(steps[1].second.errors, 6);
    EXPECT_EQ(a->cases.at("capacity").headline_label, "peak answers/s (serialised)");
    const comparison c = compare(*a, *b);
    bool two_faster = false;
    bool one_within = false;
    for (const auto& row : c.rows) {
        if (row.variant == "2 users") {
            two_faster = figure(row, "rps").verdict == "faster";
        } else if (row.variant == "1 user") {
            one_within = figure(row, "rps").verdict == "within noise";
        }
    }
    EXPECT_TRUE(two_faster);
    EXPECT_TRUE(one_within);
}

} // namespace
} // namespace hotpath::lab
