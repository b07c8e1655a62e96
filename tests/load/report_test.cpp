// The "hotpath-load/1" JSON document: bit-exact round trips, exact merging, and refusal of bad input.
#include <hotpath/load/merge.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/load/segment.hpp>

#include "support/result_assert.hpp"
#include <boost/json.hpp>
#include <fmt/core.h>
#include <fmt/format.h>

#include <gtest/gtest.h>

#include <csignal>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace hotpath::load {
namespace {

constexpr std::uint64_t ms = 1'000'000;
constexpr std::uint64_t s = 1'000'000'000;

// results are ~60 KB: the tests keep them on the heap.
std::unique_ptr<results> make_results() {
    return std::make_unique<results>();
}

plan make_plan(bool open_model) {
    plan p;
    p.to = *http::parse_url("http://10.0.0.7:8080/api/items?limit=20");
    p.method = "POST";
    p.threads = 4;
    p.connections = 64;
    p.pipeline = 1;
    p.keep_alive = true;
    p.warmup = std::chrono::seconds{2};
    if (open_model) {
        // 7/m is 0.11666…: Boost.JSON 1.81's own parser reads its shortest form back one ulp off.
        p.stages = *parse_stages("rate=7/m:3s, rate=1234.5678/s:9s");
    } else {
        p.duration = std::chrono::seconds{12};
    }
    p.thresholds = {*parse_threshold("p99<250ms"), *parse_threshold("errors<1%"), *parse_threshold("rps>10")};
    return p;
}

// Records the same random run into `one` (a machine's share) and `all` (one run seeing every sample): latencies
// log-uniform over 50 ns .. 150 s (both clamping sides), a few huge-count samples so the sums pass 2^64 and the
// sums of squares pass 2^53, statuses, errors and a per-second series.
void record_random(results& one, results& all, std::uint64_t seed, std::size_t n, std::size_t seconds) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> log_value(std::log(50.0), std::log(150.0 * s));
    constexpr unsigned statuses[] = {200, 200, 200, 201, 304, 404, 500, 503};
    for (results* r : {&one, &all}) {
        r->per_request.resize(2);
        r->per_request[0].name = "list";
        r->per_request[1].name = "detail";
    }
    for (std::size_t i = 0; i < n; ++i) {
        const auto latency = static_cast<std::uint64_t>(std::exp(log_value(rng)));
        const auto service = latency / (1 + rng() % 4);
        const std::size_t second = rng() % seconds;
        const unsigned status = statuses[rng() % std::size(statuses)];
        const bool failed = rng() % 17 == 0;
        const auto error_kind = static_cast<std::size_t>(rng() % error_class_count);
        auto& request = one.per_request[rng() % 2];
        auto& request_in_all = all.per_request[&request - one.per_request.data()];
        for (request_results* q : {&request, &request_in_all}) {
            q->latency.record_ns(latency);
            ++q->responses;
            q->successes += failed ? 0 : 1;
            q->failures += failed ? 1 : 0;
        }
        for (results* r : {&one, &all}) {
            if (failed) {
                ++r->errors[error_kind];
                ++r->second(second).errors;
                continue;
            }
            r->latency.record_ns(latency);
            r->service_time.record_ns(service);
            ++r->statuses[status];
            ++r->responses;
            r->successes += status < 400 ? 1 : 0;
            r->bytes_received += 180 + latency % 1000;
            r->bytes_sent += 120;
            ++r->second(second).responses;
            r->second(second).latency->record_ns(latency);
        }
    }
    for (results* r : {&one, &all}) {
        r->latency.record_ns(90 * s + seed, 1'000'000'000); // sum ~9e19 > 2^64
        r->second(0).latency->record_ns(3 * ms, 5);
        r->connections_opened += 64;
        r->late += seed;
        r->unsent += 2 * seed;
        r->second(seconds - 1).errors += seed;
        r->second(seconds - 1).connect_failures += seed;
        r->retry_after_asked += 3 * seed;
        r->retry_after_held += 2 * seed;
        r->retry_after_held_for += std::chrono::milliseconds{1500} * seed;
    }
}

using test::failure_of;
using test::ok;

std::string json_of(const loaded_report& l) {
    return to_json(l.p, l.r, l.outcomes);
}

loaded_report must_read(const std::string& text) {
    auto l = from_json(text);
    EXPECT_TRUE(l.has_value()) << l.error().message;
    if (!l) {
        return {};
    }
    return std::move(*l);
}

std::string write_temp(const std::string& name, const std::string& text) {
    const auto path = std::filesystem::path(::testing::TempDir()) / ("hotpath_report_test_" + name);
    std::ofstream(path, std::ios::binary) << text;
    return path.string();
}

// The console report's distribution: a narrow one (every latency near 1 s) gets band labels that differ, with as
// many decimals as that takes; a wide one keeps two.
TEST(load_report, distribution_bands_never_repeat_a_label) {
    const auto band_labels = [](const results& r) {
        const plan p = make_plan(false);
        std::string text;
        {
            std::FILE* out = std::tmpfile();
            print_report(out, p, r, {});
            std::rewind(out);
            char buffer[4096];
            for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), out)) > 0;) {
                text.append(buffer, n);
            }
            std::fclose(out);
        }
        std::vector<std::string> labels;
        std::size_t at = text.find("  Percentiles");
        for (int band = 0; band < 10 && at != std::string::npos; ++band) {
            at = text.find('\n', at) + 1;
            const std::size_t start = text.find_first_not_of(' ', at);
            labels.push_back(text.substr(start, text.find(' ', start) - start));
        }
        return labels;
    };
    auto narrow = make_results();
    for (int i = 0; i < 1000; ++i) {
        narrow->latency.record_ns(1'010'000'000 + static_cast<std::uint64_t>(i) * 20'000);
    }
    narrow->responses = narrow->successes = 1000;
    narrow->measured = std::chrono::seconds{10};
    auto labels = band_labels(*narrow);
    ASSERT_EQ(labels.size(), 10u);
    EXPECT_EQ(std::adjacent_find(labels.begin(), labels.end()), labels.end())
        << fmt::format("{}", fmt::join(labels, " "));
    auto wide = make_results();
    for (std::uint64_t ns = 1000; ns < 1'000'000'000; ns *= 3) {
        wide->latency.record_ns(ns);
    }
    wide->responses = wide->successes = 19;
    wide->measured = std::chrono::seconds{1};
    labels = band_labels(*wide);
    ASSERT_EQ(labels.size(), 10u);
    EXPECT_EQ(labels.front(), "1.00us");
    EXPECT_EQ(std::adjacent_find(labels.begin(), labels.end()), labels.end());
}

TEST(load_json, round_trip_is_bit_exact) {
    for (const bool open_model : {false, true}) {
        const plan p = make_plan(open_model);
        auto r = make_results();
        auto ignored = make_results();
        record_random(*r, *ignored, 11, 4000, 9);
        r->measured = std::chrono::nanoseconds{9'876'543'210};
        const std::string first = to_json(p, *r, evaluate(p, *r));
        auto back = std::make_unique<loaded_report>(must_read(first));
        EXPECT_EQ(json_of(*back), first) << "open model: " << open_model;
        // The plan fields the report shows come back too, so the console reports match.
        EXPECT_EQ(back->p.to.host, "10.0.0.7");
        EXPECT_EQ(back->p.to.port, 8080);
        EXPECT_EQ(back->p.to.target, "/api/items?limit=20");
        EXPECT_EQ(back->p.open_model(), open_model);
        EXPECT_EQ(back->p.total_time(), p.total_time());
        EXPECT_EQ(back->p.warmup, p.warmup);
        if (open_model) {
            ASSERT_EQ(back->p.stages.size(), 2u);
            EXPECT_EQ(back->p.stages[0].from, 7.0 / 60); // bit-exact, though Boost.JSON alone reads it 1 ulp off
        }
        ASSERT_EQ(back->outcomes.size(), 3u);
        EXPECT_EQ(back->outcomes[2].rule, &back->p.thresholds[2]);
        EXPECT_EQ(back->r.latency.exact_sum_ns(), r->latency.exact_sum_ns());
        EXPECT_EQ(back->r.latency.exact_sum_squares_ns(), r->latency.exact_sum_squares_ns());
        EXPECT_GT(back->r.latency.exact_sum_ns().high, 0u); // the sum really is past 2^64
    }
}

TEST(load_json, merge_equals_one_run_with_all_samples) {
    for (const bool open_model : {false, true}) {
        plan p = make_plan(open_model);
        auto a = make_results();
        auto b = make_results();
        auto c = make_results();
        auto all = make_results();
        record_random(*a, *all, 1, 3000, 6);
        record_random(*b, *all, 2, 5000, 9); // a longer series: seconds 6..8 come from b alone
        record_random(*c, *all, 3, 10, 2);
        a->measured = std::chrono::milliseconds{6'010};
        b->measured = std::chrono::milliseconds{9'003};
        c->measured = std::chrono::milliseconds{2'000};
        all->measured = b->measured; // the machines ran at the same time: the longest window
        const std::string a_json = to_json(p, *a, evaluate(p, *a));
        p.threads = 8; // another machine's plan: only threads are summed, the rest comes from the first file
        const std::string b_json = to_json(p, *b, evaluate(p, *b));
        p.threads = 2;
        const std::string c_json = to_json(p, *c, evaluate(p, *c));

        plan one_run = make_plan(open_model);
        one_run.threads = 4 + 8 + 2;
        // The thresholds judged again on the merged run: one verdict for the whole.
        const std::string expected = to_json(one_run, *all, evaluate(one_run, *all));

        auto merged = std::make_unique<loaded_report>(must_read(a_json));
        auto part = std::make_unique<loaded_report>(must_read(b_json));
        ASSERT_TRUE(ok(merge_into(*merged, *part)));
        *part = must_read(c_json);
        ASSERT_TRUE(ok(merge_into(*merged, *part)));
        EXPECT_EQ(json_of(*merged), expected) << "open model: " << open_model;

        // The same through files, in another order for b and c, and merging a merged file again (associative).
        const std::vector<std::string> paths = {write_temp("a.json", a_json), write_temp("b.json", b_json),
                                                write_temp("c.json", c_json)};
        std::string out;
        std::string report;
        ASSERT_TRUE(ok(merge_files({paths[0], paths[2], paths[1]}, out, report)));
        EXPECT_EQ(out, expected);
        EXPECT_NE(report.find(fmt::format("{} responses", all->responses)), std::string::npos) << report;
        EXPECT_NE(report.find("14 threads"), std::string::npos) << report;
        EXPECT_NE(report.find("Threshold    p99<250ms"), std::string::npos) << report;
        ASSERT_TRUE(ok(merge_files({paths[0], paths[1]}, out, report)));
        const std::string ab = write_temp("ab.json", out);
        ASSERT_TRUE(ok(merge_files({ab, paths[2]}, out, report)));
        EXPECT_EQ(out, expected);
        for (const auto& path : paths) {
            std::filesystem::remove(path);
        }
        std::filesystem::remove(ab);
    }
}

TEST(load_json, merged_report_prints_like_one_run) {
    plan p = make_plan(false);
    auto a = make_results();
    auto all = make_results();
    record_random(*a, *all, 5, 500, 3);
    a->measured = all->measured = std::chrono::seconds{3};
    std::string out;
    std::string report;
    const auto path = write_temp("single.json", to_json(p, *a, evaluate(p, *a)));
    ASSERT_TRUE(ok(merge_files({path}, out, report)));
    std::filesystem::remove(path);
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* memory = ::open_memstream(&buffer, &size);
    ASSERT_NE(memory, nullptr);
    print_header(memory, p);
    print_report(memory, p, *all, evaluate(p, *all));
    std::fclose(memory);
    EXPECT_EQ(report, std::string(buffer, size));
    std::free(buffer);
}

// The parts of one plan, merged, are judged as one run: a bound each part meets alone can fail for the whole (rps),
// the verdict is merge_files' (the exit code of `hotpath load merge`), and runs whose thresholds differ are refused.
// An open-model run's implied bound ("dropped<1% (default)") reads back as written.
TEST(load_json, merged_parts_are_judged_as_one_run) {
    plan p = make_plan(false);
    p.thresholds = {*parse_threshold("rps>1500")};
    auto a = make_results();
    auto b = make_results();
    auto all = make_results();
    record_random(*a, *all, 11, 3000, 3);
    record_random(*b, *all, 12, 3000, 3);
    a->measured = b->measured = std::chrono::seconds{3};
    // About 940 answers a second each (a sixteenth of the samples are errors): each part fails rps>1500 alone, the
    // whole (about 1,880/s) passes.
    EXPECT_EQ(judge(*a, evaluate(p, *a)), verdict::threshold_failed);
    const std::vector<std::string> paths = {write_temp("part_a.json", to_json(p, *a, evaluate(p, *a))),
                                            write_temp("part_b.json", to_json(p, *b, evaluate(p, *b)))};
    std::string out;
    std::string report;
    verdict judged = verdict::threshold_failed;
    ASSERT_TRUE(ok(merge_files(paths, out, report, &judged)));
    EXPECT_EQ(judged, verdict::passed) << report;
    EXPECT_NE(report.find("Threshold    rps>1500         pass"), std::string::npos) << report;
    const auto rule = out.find("\"threshold\":\"rps>1500\"");
    ASSERT_NE(rule, std::string::npos) << out;
    const std::string judged_rule = out.substr(rule, out.find('}', rule) - rule);
    EXPECT_NE(judged_rule.find("\"pass\":true"), std::string::npos) << judged_rule;
    // A bound the whole fails: the verdict says so.
    plan strict = p;
    strict.thresholds = {*parse_threshold("rps>2500")};
    const std::vector<std::string> strict_paths = {
        write_temp("strict_a.json", to_json(strict, *a, evaluate(strict, *a))),
        write_temp("strict_b.json", to_json(strict, *b, evaluate(strict, *b)))};
    ASSERT_TRUE(ok(merge_files(strict_paths, out, report, &judged)));
    EXPECT_EQ(judged, verdict::threshold_failed);
    // Parts of different plans: refused, naming both lists.
    const auto why = merge_files({paths[0], strict_paths[1]}, out, report);
    ASSERT_FALSE(why);
    EXPECT_NE(why.error().message.find("its thresholds (rps>2500) differ from the runs' before (rps>1500)"),
              std::string::npos)
        << why.error().message;
    // The open model's implied bound.
    plan open = make_plan(true);
    auto implied = parse_threshold("dropped<1%");
    implied->text = "dropped<1% (default)";
    open.thresholds = {*implied};
    auto o = make_results();
    auto ignored = make_results();
    record_random(*o, *ignored, 13, 300, 3);
    o->measured = std::chrono::seconds{3};
    const std::string open_path = write_temp("open.json", to_json(open, *o, evaluate(open, *o)));
    ASSERT_TRUE(ok(merge_files({open_path, open_path}, out, report, &judged)));
    EXPECT_NE(out.find("\"threshold\":\"dropped<1% (default)\""), std::string::npos) << out;
    for (const auto& path : {paths[0], paths[1], strict_paths[0], strict_paths[1], open_path}) {
        std::filesystem::remove(path);
    }
}

// Parts of a plan split with --segment: read back as written, merged into the whole (no segment then) or into the
// range they cover side by side; a part twice, a gap, another sequence, or a part among whole runs are refused.
TEST(load_json, segments_merge_into_the_range_they_cover) {
    const auto part_of = [](const std::string& segment_text, const std::string& sequence, std::uint64_t seed) {
        plan p = make_plan(false);
        p.part = *segment::parse(segment_text, sequence);
        auto r = make_results();
        auto ignored = make_results();
        record_random(*r, *ignored, seed, 600, 3);
        r->measured = std::chrono::seconds{3};
        return to_json(p, *r, evaluate(p, *r));
    };
    const std::string a = part_of("0/3", "", 21);
    const std::string b = part_of("1/3", "", 22);
    const std::string c = part_of("2/3", "", 23);
    EXPECT_EQ(json_of(must_read(a)), a) << "read back as written";
    EXPECT_NE(a.find("\"segment\":\"0:1/3\",\"segment_sequence\":\"0,1/3,2/3,1\""), std::string::npos) << a;
    const std::vector<std::string> paths{write_temp("seg_a.json", a), write_temp("seg_b.json", b),
                                         write_temp("seg_c.json", c)};
    std::string out;
    std::string report;
    // Any order: the whole plan.
    ASSERT_TRUE(ok(merge_files({paths[2], paths[0], paths[1]}, out, report)));
    EXPECT_EQ(out.find("\"segment\""), std::string::npos) << out;
    // Two side by side: their range.
    ASSERT_TRUE(ok(merge_files({paths[1], paths[0]}, out, report)));
    EXPECT_NE(out.find("\"segment\":\"0:2/3\""), std::string::npos) << out;
    EXPECT_NE(report.find("segment 0:2/3 of it"), std::string::npos) << report;
    const std::string ab = write_temp("seg_ab.json", out);
    ASSERT_TRUE(ok(merge_files({ab, paths[2]}, out, report)));
    EXPECT_EQ(out.find("\"segment\""), std::string::npos) << out;
    // Refused.
    const std::string other = write_temp("seg_other.json", part_of("1/4:1/2", "0,1/4,1/2,1", 24));
    const std::string whole = write_temp("seg_whole.json", part_of("", "", 25));
    struct refusal {
        std::vector<std::string> files;
        std::string says;
    };
    for (const refusal& r : std::vector<refusal>{
             {{paths[0], paths[0]}, "its segment 0:1/3 overlaps the parts before (0:1/3): each part once"},
             {{ab, paths[1]}, "its segment 1/3:2/3 overlaps the parts before (0:2/3)"},
             {{paths[0], paths[2]}, "the parts merged leave 1/3:2/3 of the plan out between them"},
             {{paths[0], other}, "its segment sequence (0,1/4,1/2,1) differs from the runs' before (0,1/3,2/3,1)"},
             {{whole, paths[0]}, "it is a part of a plan (--segment 0:1/3), the runs before whole ones"},
             {{paths[0], whole}, "it is a whole run, the runs before parts of a plan (0:1/3)"},
         }) {
        const auto why = merge_files(r.files, out, report);
        ASSERT_FALSE(why) << r.says;
        EXPECT_NE(why.error().message.find(r.says), std::string::npos) << why.error().message;
    }
    for (const auto& path : {paths[0], paths[1], paths[2], ab, other, whole}) {
        std::filesystem::remove(path);
    }
}

// A small valid document to break in the tests below.
std::string valid_document() {
    const plan p = make_plan(true);
    auto r = make_results();
    auto ignored = make_results();
    record_random(*r, *ignored, 7, 200, 3);
    r->measured = std::chrono::seconds{3};
    return to_json(p, *r, evaluate(p, *r));
}

// Replaces the value at a path of member names and array indexes ("latency", "state", "counts", "0").
std::string with(const std::string& text, const std::vector<std::string>& path, const boost::json::value& value,
                 bool erase = false) {
    boost::json::value doc = boost::json::parse(text);
    boost::json::value* at = &doc;
    for (std::size_t i = 0; i + 1 < path.size(); ++i) {
        at = at->is_array() ? &at->as_array().at(std::stoul(path[i])) : &at->as_object().at(path[i]);
    }
    if (erase) {
        at->as_object().erase(path.back());
    } else if (at->is_array()) {
        at->as_array().at(std::stoul(path.back())) = value;
    } else {
        at->as_object()[path.back()] = value;
    }
    return boost::json::serialize(doc);
}

std::string joined(const std::vector<std::string>& path) {
    std::string out;
    for (const auto& part : path) {
        out += (out.empty() ? "" : ".") + part;
    }
    return out;
}

void expect_refused(const std::string& text, const std::string& reason_part, const std::string& label) {
    const auto l = from_json(text);
    EXPECT_FALSE(l.has_value()) << label;
    const std::string why = l.error().message;
    EXPECT_NE(why.find(reason_part), std::string::npos) << label << ": " << why;
    EXPECT_EQ(why.find('\n'), std::string::npos) << label << ": " << why;
}

TEST(load_json, refuses_malformed_input_with_one_line) {
    const std::string doc = valid_document();
    struct bad_case {
        const char* label;
        std::string text;
        const char* reason;
    };
    const std::vector<bad_case> cases = {
        {"empty", "", "not JSON"},
        {"truncated", doc.substr(0, doc.size() / 2), "not JSON"},
        {"trailing bytes", doc + "x", "not JSON"},
        {"not an object", "[1,2]", "expected a hotpath-load/1 object"},
        {"no schema", "{}", "no \"schema\" field"},
        {"other schema", with(doc, {"schema"}, "hotpath-load/2"), "schema is 'hotpath-load/2'"},
        {"schema kind", with(doc, {"schema"}, 1), "schema is a number; expected a string"},
        {"missing run", with(doc, {"run"}, nullptr, true), "run is missing"},
        {"missing field", with(doc, {"responses"}, nullptr, true), "responses is missing"},
        {"missing nested", with(doc, {"latency", "state", "min_ns"}, nullptr, true), "latency.state.min_ns is missing"},
        {"string count", with(doc, {"responses"}, "12"), "responses is a string; expected an unsigned integer"},
        {"negative count", with(doc, {"bytes_sent"}, -4), "bytes_sent is a negative or fractional number"},
        {"fractional count", with(doc, {"late"}, 1.5), "late is a negative or fractional number"},
        {"threads zero", with(doc, {"run", "threads"}, 0), "run.threads is 0"},
        {"threads huge", with(doc, {"run", "threads"}, 1ull << 40), "run.threads is 1099511627776"},
        {"rate kind", with(doc, {"run", "rate"}, "fast"), "run.rate is a string; expected a number"},
        {"rate negative", with(doc, {"run", "rate"}, -1.0), "run.rate is negative"},
        {"bad url", with(doc, {"run", "url"}, "ftp://x/"), "run.url 'ftp://x/'"},
        {"bad model", with(doc, {"run", "model"}, "sideways"), "run.model is 'sideways'"},
        {"model mismatch", with(doc, {"run", "model"}, "closed"), "run.model is 'closed' but"},
        {"stage kind", with(doc, {"run", "stages", "1", "kind"}, "vus"), "run.stages[1].kind differs"},
        {"stage sum", with(doc, {"run", "planned_ns"}, 5), "run.planned_ns differs from the sum"},
        {"keep_alive kind", with(doc, {"run", "keep_alive"}, 1), "run.keep_alive is a number; expected true or false"},
        {"errors kind", with(doc, {"errors"}, boost::json::array{}), "errors is an array; expected an object"},
        {"unknown error class", with(doc, {"errors", "gremlins"}, 1), "errors has an unknown error class"},
        {"status key", with(doc, {"statuses", "abc"}, 1), "statuses has key 'abc'"},
        {"status range", with(doc, {"statuses", "600"}, 1), "statuses has key '600'"},
        {"status kind", with(doc, {"statuses", "200"}, true), "statuses.200 is a boolean"},
        {"histogram kind", with(doc, {"latency"}, 3), "latency is a number; expected an object"},
        {"no state", with(doc, {"service_time", "state"}, nullptr, true), "service_time.state is missing"},
        {"counts kind", with(doc, {"latency", "state", "counts"}, "x"), "latency.state.counts is a string"},
        {"pair shape", with(doc, {"latency", "state", "counts", "0"}, boost::json::array{1}),
         "latency.state.counts[0] is not an [index, count] pair"},
        {"pair index", with(doc, {"latency", "state", "counts", "0"}, boost::json::array{99999, 1}),
         "bucket index 99999 is out of range"},
        {"pair order", with(doc, {"latency", "state", "counts", "1"}, boost::json::array{0, 1}), "not increasing"},
        {"sum kind", with(doc, {"latency", "state", "sum_ns"}, 12), "latency.state.sum_ns is a number"},
        {"sum text", with(doc, {"latency", "state", "sum_ns"}, "12e3"), "is not a decimal integer"},
        {"sum overflow", with(doc, {"latency", "state", "sum_ns"}, "340282366920938463463374607431768211456"),
         "is not a decimal integer below 2^128"},
        {"min inconsistent", with(doc, {"latency", "state", "min_ns"}, 10 * s), "latency.state is inconsistent"},
        {"seconds kind", with(doc, {"seconds", "1"}, "x"), "seconds[1] is a string"},
        {"request name", with(doc, {"requests", "0", "name"}, 3), "requests[0].name is a number"},
        {"request histogram", with(doc, {"requests", "1", "latency", "state", "max_ns"}, "1"),
         "requests[1].latency.state.max_ns is a string"},
        {"second index", with(doc, {"seconds", "1", "second"}, 5), "seconds[1].second is 5; expected 1"},
        {"second histogram", with(doc, {"seconds", "2", "latency", "state", "clamped"}, nullptr, true),
         "seconds[2].latency.state.clamped is missing"},
        {"threshold text", with(doc, {"thresholds", "0", "threshold"}, "p95<fast"), "thresholds[0].threshold"},
        {"layout buckets", with(doc, {"latency", "state", "bucket_count"}, 3000),
         "histogram layout 3000 buckets, 7 sub-bucket bits"},
        {"layout bits", with(doc, {"seconds", "0", "latency", "state", "sub_bucket_bits"}, 6),
         "seconds[0].latency.state: histogram layout 3393 buckets, 6 sub-bucket bits"},
    };
    for (const auto& c : cases) {
        expect_refused(c.text, c.reason, c.label);
    }
}

// How a run ended travels through the file (an older file without it reads as completed), and a merge of runs
// made together is cut short when one of them was.
TEST(load_json, how_a_run_ended_round_trips_and_merges) {
    const std::string doc = valid_document();
    EXPECT_EQ(must_read(doc).r.ended, results::ending::completed);
    EXPECT_EQ(must_read(with(doc, {"ended"}, {}, true)).r.ended, results::ending::completed);
    const loaded_report cut = must_read(with(with(doc, {"ended"}, "interrupted"), {"signal"}, "SIGTERM"));
    EXPECT_EQ(cut.r.ended, results::ending::interrupted);
    EXPECT_EQ(cut.r.signal, SIGTERM);
    EXPECT_NE(json_of(cut).find(R"("ended":"interrupted","signal":"SIGTERM")"), std::string::npos) << json_of(cut);
    EXPECT_EQ(must_read(with(doc, {"ended"}, "unreachable")).r.ended, results::ending::unreachable);
    EXPECT_FALSE(from_json(with(doc, {"ended"}, "finished")));

    results merged = must_read(doc).r;
    merged.merge(cut.r);
    EXPECT_EQ(merged.ended, results::ending::interrupted);
    EXPECT_EQ(merged.signal, SIGTERM);
}

// When a run began: written in "run" (the earliest loop, and how much later the last), read back, merged to the
// earliest and latest of the parts, printed with the spread; absent from older files, and refused when broken.
TEST(load_json, when_runs_began_round_trips_and_merges_to_their_spread) {
    const plan p = make_plan(false);
    auto a = make_results();
    a->started_unix_ns = 1'796'572'800'000'000'000;
    a->last_started_unix_ns = a->started_unix_ns + 40'000;
    const std::string doc = to_json(p, *a, {});
    EXPECT_NE(doc.find(R"("started_at":"2026-12-06T16:00:00.000Z","started_unix_ns":1796572800000000000,)"
                       R"("start_spread_ns":40000)"),
              std::string::npos)
        << doc;
    auto back = std::make_unique<loaded_report>(must_read(doc));
    EXPECT_EQ(back->r.started_unix_ns, a->started_unix_ns);
    EXPECT_EQ(back->r.last_started_unix_ns, a->last_started_unix_ns);

    auto b = make_results();
    b->started_unix_ns = a->started_unix_ns + 1'500'000; // 1.5 ms later
    b->last_started_unix_ns = b->started_unix_ns;
    results& merged = back->r;
    merged.merge(*b);
    EXPECT_EQ(merged.started_unix_ns, a->started_unix_ns);
    EXPECT_EQ(merged.last_started_unix_ns, b->started_unix_ns);
    std::string text;
    {
        char* buf = nullptr;
        std::size_t size = 0;
        std::FILE* out = ::open_memstream(&buf, &size);
        print_report(out, p, merged, {});
        std::fclose(out);
        text.assign(buf, size);
        std::free(buf);
    }
    EXPECT_NE(text.find("  Started      2026-12-06T16:00:00.000Z, every event loop within 1.50ms of it"),
              std::string::npos)
        << text;

    // Older files have none; the merge of one with a newer keeps the newer's.
    const std::string old_doc = valid_document();
    EXPECT_EQ(old_doc.find("started_unix_ns"), std::string::npos);
    auto none = std::make_unique<loaded_report>(must_read(old_doc));
    EXPECT_EQ(none->r.started_unix_ns, 0);
    none->r.merge(*b);
    EXPECT_EQ(none->r.started_unix_ns, b->started_unix_ns);
    EXPECT_FALSE(from_json(with(doc, {"run", "start_spread_ns"}, {}, true)));
    EXPECT_FALSE(from_json(with(doc, {"run", "started_unix_ns"}, 0)));
}

// HTTP/2 runs say their protocol and streams in "run", count their own error classes (reset, refused) and the requests
// a GOAWAY left unprocessed; files written before HTTP/2 (without any of these) still read, as HTTP/1.1 runs whose
// reset and refused counts are 0; the console report names the protocol.
// The console report of `r` under plan `q`, as print_report writes it.
std::string printed(const plan& q, const results& r) {
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* memory = ::open_memstream(&buffer, &size);
    print_report(memory, q, r, {});
    std::fclose(memory);
    std::string text(buffer, size);
    std::free(buffer);
    return text;
}

// Think times, Retry-After and each second's failed connects: written, read back, merged, printed; files written
// before them still read.
TEST(load_json, retry_after_think_time_and_failed_connects_round_trip_and_print) {
    plan p = make_plan(false);
    p.think = *parse_think_time("1s..3s");
    auto r = make_results();
    auto ignored = make_results();
    record_random(*r, *ignored, 5, 100, 3);
    r->measured = std::chrono::seconds{3};
    const std::string doc = to_json(p, *r, evaluate(p, *r));
    EXPECT_NE(doc.find(R"("think_time":"1s..3s","honour_retry_after":true)"), std::string::npos) << doc;
    EXPECT_NE(doc.find(R"("retry_after":{"asked":15,"held":10,"held_ns":7500000000,"held_s":)"), std::string::npos)
        << doc;
    EXPECT_NE(doc.find(R"("connect_failures":5,)"), std::string::npos) << doc;
    const loaded_report back = must_read(doc);
    EXPECT_EQ(json_of(back), doc);
    EXPECT_EQ(back.p.think.min, std::chrono::nanoseconds{std::chrono::seconds{1}});
    EXPECT_EQ(back.r.retry_after_held_for, std::chrono::milliseconds{7500});
    EXPECT_EQ(back.r.seconds[2].connect_failures, 5u);

    std::string text = printed(back.p, back.r);
    EXPECT_NE(text.find("\n  Retry-After  15 answers asked to wait; users held 10 times, 7.50s in all\n"),
              std::string::npos)
        << text;
    p.honour_retry_after = false;
    text = printed(p, *r);
    EXPECT_NE(text.find("\n  Retry-After  15 answers asked to wait; users sent again at once (--ignore-retry-after)\n"),
              std::string::npos)
        << text;
    text = printed(make_plan(true), *r);
    EXPECT_NE(text.find("\n  Retry-After  15 answers asked to wait; the open model keeps its schedule\n"),
              std::string::npos)
        << text;
    r->retry_after_asked = 0;
    text = printed(p, *r);
    EXPECT_EQ(text.find("Retry-After"), std::string::npos) << "no line when no answer asked";

    // As written before them.
    std::string old = with(doc, {"run", "think_time"}, {}, true);
    old = with(old, {"run", "honour_retry_after"}, {}, true);
    old = with(old, {"retry_after"}, {}, true);
    const loaded_report before = must_read(old);
    EXPECT_FALSE(before.p.think.any());
    EXPECT_TRUE(before.p.honour_retry_after);
    EXPECT_EQ(before.r.retry_after_asked, 0u);
    expect_refused(with(doc, {"run", "think_time"}, "soon"), "run.think_time", "a think time that is not one");
    expect_refused(with(doc, {"retry_after", "held"}, "x"), "retry_after.held", "a count that is not one");
}

TEST(load_json, http2_fields_round_trip_and_older_files_still_read) {
    plan p = make_plan(false);
    p.http = plan::http_version::h2;
    p.streams = 100;
    auto r = make_results();
    auto ignored = make_results();
    record_random(*r, *ignored, 7, 200, 3);
    r->measured = std::chrono::seconds{3};
    r->retried_unprocessed = 42;
    r->errors[static_cast<std::size_t>(error_class::reset)] = 5;
    r->errors[static_cast<std::size_t>(error_class::refused)] = 6;
    const std::string doc = to_json(p, *r, evaluate(p, *r));
    EXPECT_NE(doc.find(R"("protocol":"h2c","streams":100)"), std::string::npos) << doc;
    EXPECT_NE(doc.find(R"("retried_unprocessed":42)"), std::string::npos) << doc;
    const loaded_report back = must_read(doc);
    EXPECT_EQ(json_of(back), doc);
    EXPECT_TRUE(back.p.h2());
    EXPECT_EQ(back.p.streams, 100u);
    EXPECT_EQ(back.r.retried_unprocessed, 42u);
    EXPECT_EQ(back.r.errors[static_cast<std::size_t>(error_class::refused)], 6u);
    expect_refused(with(doc, {"run", "protocol"}, "h3"), "run.protocol", "an unknown protocol");

    // As written before HTTP/2.
    std::string old = with(doc, {"run", "protocol"}, {}, true);
    old = with(old, {"run", "streams"}, {}, true);
    old = with(old, {"retried_unprocessed"}, {}, true);
    old = with(old, {"connections_h2"}, {}, true);
    old = with(old, {"errors", "reset"}, {}, true);
    old = with(old, {"errors", "refused"}, {}, true);
    const loaded_report before = must_read(old);
    EXPECT_FALSE(before.p.h2());
    EXPECT_EQ(before.r.retried_unprocessed, 0u);
    EXPECT_EQ(before.r.errors[static_cast<std::size_t>(error_class::reset)], 0u);
    EXPECT_EQ(before.r.errors[static_cast<std::size_t>(error_class::read)],
              back.r.errors[static_cast<std::size_t>(error_class::read)]);

    const std::string text = printed(back.p, back.r);
    EXPECT_NE(text.find("\n  Protocol     h2c (prior knowledge), 100 streams per connection; 42 requests sent "
                        "again after a GOAWAY left them unprocessed\n"),
              std::string::npos)
        << text;
    p.to.scheme = http::scheme::https;
    const std::string over_tls = printed(p, *r);
    EXPECT_NE(over_tls.find("\n  Protocol     h2 (ALPN), 100 streams"), std::string::npos) << over_tls;
    const std::string plain = printed(make_plan(false), *r);
    EXPECT_NE(plain.find("\n  Protocol     HTTP/1.1\n"), std::string::npos) << plain;

    // Chosen by ALPN per connection: how many spoke h2 is said, and kept.
    p.http = plan::http_version::automatic;
    r->connections_h2 = 40;
    const std::string chosen = to_json(p, *r, evaluate(p, *r));
    EXPECT_NE(chosen.find(R"("protocol":"auto","streams":100)"), std::string::npos) << chosen;
    const loaded_report chosen_back = must_read(chosen);
    EXPECT_EQ(json_of(chosen_back), chosen);
    EXPECT_EQ(chosen_back.r.connections_h2, 40u);
    const std::string chosen_text = printed(chosen_back.p, chosen_back.r);
    EXPECT_NE(chosen_text.find("\n  Protocol     h2 or HTTP/1.1 by ALPN: 40 of 64 connections spoke h2 (100 streams "
                               "each), the others HTTP/1.1; 42 requests"),
              std::string::npos)
        << chosen_text;
}

// Over https://, failed handshakes are counted by class under "tls" -> "failures", keyed by net::tls_errc_name in
// the classes' order (the keys of files written before, which `hotpath load merge` still reads), read back exactly,
// added by a merge, and told in the console report: one line per class that failed, saying what to do.
TEST(load_json, failed_handshakes_by_class_round_trip_merge_and_print) {
    const plan p = make_plan(false);
    auto r = make_results();
    auto ignored = make_results();
    record_random(*r, *ignored, 5, 200, 3);
    r->measured = std::chrono::seconds{3};
    r->tls = true;
    r->handshakes.handshakes = 64;
    r->handshakes.resumed = 60;
    r->handshakes.handshake_time.record_ns(2 * ms, 64);
    r->handshakes.failures_of(net::tls_errc::unknown_issuer) = 3;
    r->handshakes.failures_of(net::tls_errc::peer_certificate_required) = 1;
    const std::string doc = to_json(p, *r, evaluate(p, *r));
    EXPECT_NE(doc.find(R"("failures":{"certificate_expired":0,"unknown_issuer":3,"name_mismatch":0,)"
                       R"("certificate_invalid":0,"handshake":0,"client_certificate":1,"alpn":0})"),
              std::string::npos)
        << doc;
    auto back = std::make_unique<loaded_report>(must_read(doc));
    EXPECT_EQ(json_of(*back), doc);
    EXPECT_EQ(back->r.handshakes.failures_of(net::tls_errc::unknown_issuer), 3u);
    EXPECT_EQ(back->r.handshakes.failures_of(net::tls_errc::peer_certificate_required), 1u);
    EXPECT_EQ(back->r.handshakes.failures_of(net::tls_errc::handshake_failed), 0u);
    expect_refused(with(doc, {"tls", "failures", "handshake"}, {}, true), "tls.failures", "a class missing");

    const std::string path = write_temp("tls.json", doc);
    std::string out;
    std::string report;
    ASSERT_TRUE(ok(merge_files({path, path}, out, report)));
    std::filesystem::remove(path);
    EXPECT_NE(out.find(R"("failures":{"certificate_expired":0,"unknown_issuer":6,"name_mismatch":0,)"
                       R"("certificate_invalid":0,"handshake":0,"client_certificate":2,"alpn":0})"),
              std::string::npos)
        << out;
    EXPECT_NE(
        report.find("\n  TLS failed   6 handshakes: the certificate's issuer is not trusted (self-signed, or a CA "
                    "not in the store: --cacert FILE, or -k to skip verification)\n"),
        std::string::npos)
        << report;
    EXPECT_NE(report.find("\n  TLS failed   2 handshakes: a client certificate is required and none was accepted\n"),
              std::string::npos)
        << report;
    std::size_t lines = 0;
    for (auto at = report.find("TLS failed"); at != std::string::npos; at = report.find("TLS failed", at + 1)) {
        ++lines;
    }
    EXPECT_EQ(lines, 2u) << report;
}

TEST(load_json, every_field_of_the_wrong_kind_is_refused_or_ignored_without_crashing) {
    const std::string doc = valid_document();
    // Derived fields are recomputed from the exact state, so a wrong kind there is ignored; any other member
    // replaced by a value of another kind must be refused.
    const std::vector<std::string> derived = {"requests_per_second",
                                              "error_rate",
                                              "dropped_rate",
                                              "measured_s",
                                              "held_s",
                                              "planned_s",
                                              "warmup_s",
                                              "count",
                                              "min_us",
                                              "mean_us",
                                              "stdev_us",
                                              "max_us",
                                              "percentiles_us",
                                              "p50_us",
                                              "p95_us",
                                              "p99_us",
                                              "actual",
                                              "pass"};
    std::size_t refused = 0;
    std::size_t visited = 0;
    std::vector<std::string> path;
    const boost::json::value original = boost::json::parse(doc);
    std::function<void(const boost::json::value&)> walk = [&](const boost::json::value& v) {
        if (v.is_object()) {
            for (const auto& [key, member] : v.get_object()) {
                path.emplace_back(key);
                const bool is_derived = std::find(derived.begin(), derived.end(), std::string(key)) != derived.end();
                for (const boost::json::value& other :
                     {boost::json::value("x"), boost::json::value(boost::json::object{}), boost::json::value(true)}) {
                    if (other.kind() == member.kind()) {
                        continue;
                    }
                    const auto l = from_json(with(doc, path, other));
                    ++visited;
                    if (!is_derived && path.back() != "percentiles_us") {
                        EXPECT_FALSE(l.has_value()) << joined(path);
                        EXPECT_FALSE(l.error().message.empty());
                    }
                    refused += l.has_value() ? 0 : 1;
                }
                if (path.size() < 4 && !is_derived) {
                    walk(member);
                }
                path.pop_back();
            }
        } else if (v.is_array() && !v.get_array().empty()) {
            path.emplace_back("0");
            walk(v.get_array()[0]);
            path.pop_back();
        }
    };
    walk(original);
    EXPECT_GT(visited, 100u);
    EXPECT_GT(refused, 80u);
}

TEST(load_json, truncations_and_byte_flips_never_crash) {
    const std::string doc = valid_document();
    for (std::size_t cut = 0; cut < doc.size(); cut += 1 + cut / 64) {
        EXPECT_FALSE(from_json(std::string_view(doc).substr(0, cut)).has_value()) << cut;
    }
    std::mt19937_64 rng(3);
    for (int i = 0; i < 2000; ++i) {
        std::string broken = doc;
        broken[rng() % broken.size()] = "0123456789-.eE\"{}[],:x "[rng() % 24];
        (void)from_json(broken); // refused or read: either way no crash, no exception
    }
}

TEST(load_json, merging_refuses_other_layouts_models_and_missing_files) {
    plan closed = make_plan(false);
    plan open = make_plan(true);
    auto r = make_results();
    auto ignored = make_results();
    record_random(*r, *ignored, 9, 100, 2);
    const std::string good = write_temp("good.json", to_json(closed, *r, {}));
    const std::string open_run = write_temp("open.json", to_json(open, *r, {}));
    const std::string other_layout =
        write_temp("layout.json", with(to_json(closed, *r, {}), {"latency", "state", "sub_bucket_bits"}, 8));
    std::string out = "untouched";
    std::string report;
    std::string why;
    why = failure_of(merge_files({good, other_layout}, out, report));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why.rfind(other_layout + ": latency.state: histogram layout", 0), 0u) << why;
    why = failure_of(merge_files({good, open_run}, out, report));
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why.find("open-model run with a closed-model run"), std::string::npos) << why;
    r->per_request[1].name = "other";
    const std::string other_scenario = write_temp("scenario.json", to_json(closed, *r, {}));
    why = failure_of(merge_files({good, other_scenario}, out, report));
    EXPECT_FALSE(why.empty());
    EXPECT_NE(why.find("scenario request 1 is 'other' here but 'detail'"), std::string::npos) << why;
    std::filesystem::remove(other_scenario);
    why = failure_of(merge_files({good, "/nonexistent/run.json"}, out, report));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why, "cannot open /nonexistent/run.json");
    why = failure_of(merge_files({}, out, report));
    EXPECT_FALSE(why.empty());
    EXPECT_EQ(why, "no files to merge");
    EXPECT_EQ(out, "untouched");
    for (const auto& path : {good, open_run, other_layout}) {
        std::filesystem::remove(path);
    }
}

} // namespace
} // namespace hotpath::load
