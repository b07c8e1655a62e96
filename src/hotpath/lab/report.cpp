// The console verdict and the result.json of a case.
#include <hotpath/lab/report.hpp>

#include <hotpath/load/report.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace hotpath::lab {

namespace {

double seconds(std::chrono::nanoseconds d) {
    return std::chrono::duration<double>(d).count();
}

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

double rps(const variant_outcome& v) {
    const double s = seconds(v.results.measured);
    return s > 0 ? static_cast<double>(v.results.responses) / s : 0;
}

double success_rps(const variant_outcome& v) {
    const double s = seconds(v.results.measured);
    return s > 0 ? static_cast<double>(v.results.successes) / s : 0;
}

double p95_ns(const variant_outcome& v) {
    return static_cast<double>(v.results.latency.value_at_percentile(95));
}

const variant_outcome* find(const case_outcome& c, const std::string& name) {
    for (const auto& v : c.variants) {
        if (v.name == name) {
            return &v;
        }
    }
    return nullptr;
}

double figure(const variant_outcome& v, headline::metric m) {
    switch (m) {
    case headline::metric::p95:
        return p95_ns(v);
    case headline::metric::rps:
        return rps(v);
    case headline::metric::success_rps:
        return success_rps(v);
    }
    return 0;
}

const char* metric_name(headline::metric m) {
    switch (m) {
    case headline::metric::p95:
        return "p95";
    case headline::metric::rps:
        return "rps";
    case headline::metric::success_rps:
        return "success_rps";
    }
    return "?";
}

// A throughput ratio whose denominator had no success in its whole measured window: as if it had one, a lower
// bound of the ratio (the true one is larger). nullopt when that does not apply.
std::optional<double> lower_bound(const case_outcome& c, const headline& h) {
    const variant_outcome* n = find(c, h.numerator);
    const variant_outcome* d = find(c, h.denominator);
    if (h.what == headline::metric::p95 || n == nullptr || d == nullptr || figure(*d, h.what) > 0 ||
        seconds(d->results.measured) <= 0) {
        return std::nullopt;
    }
    return figure(*n, h.what) * seconds(d->results.measured);
}

// The heap allocations per request of the variant's busiest route, from its report; nullopt when the report has
// none (no report, or a build without the allocation counter).
std::optional<double> allocations_per_request(const variant_outcome& v) {
    if (v.routes_json.empty()) {
        return std::nullopt;
    }
    const auto report = parse_route_report(v.routes_json);
    if (!report || report->routes.empty()) {
        return std::nullopt;
    }
    const auto busiest = std::max_element(report->routes.begin(), report->routes.end(),
                                          [](const auto& a, const auto& b) { return a.requests < b.requests; });
    return busiest->allocations_per_request;
}

std::string headline_label(const headline& h) {
    const char* m = h.what == headline::metric::p95           ? "p95"
                    : h.what == headline::metric::success_rps ? "successes/s"
                                                              : "requests/s";
    return h.denominator.empty() ? fmt::format("{} {}", h.numerator, m)
                                 : fmt::format("{}/{} {}", h.numerator, h.denominator, m);
}

boost::json::array findings_json(const std::vector<finding>& fs) {
    boost::json::array a;
    for (const auto& f : fs) {
        a.push_back({{"kind", to_string(f.what)},
                     {"problem", f.problem},
                     {"method", f.method},
                     {"route", f.route},
                     {"text", f.text}});
    }
    return a;
}

boost::json::value routes_json(const std::string& text) {
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    return ec ? boost::json::value(nullptr) : v;
}

boost::json::object latency_json(const metrics::histogram& h) {
    return {{"mean", h.mean_ns() / 1e6},
            {"p50", ms(h.value_at_percentile(50))},
            {"p90", ms(h.value_at_percentile(90))},
            {"p95", ms(h.value_at_percentile(95))},
            {"p99", ms(h.value_at_percentile(99))},
            {"max", ms(h.max_ns())}};
}

} // namespace

std::optional<double> headline_value(const case_outcome& c) {
    return headline_value(c, c.spec.judged_by);
}

headline original_headline(const headline& h) {
    headline o = h;
    o.numerator = original_name(h.numerator);
    o.denominator = h.denominator.empty() ? "" : original_name(h.denominator);
    return o;
}

std::optional<double> headline_value(const case_outcome& c, const headline& h) {
    const variant_outcome* n = find(c, h.numerator);
    if (n == nullptr) {
        return std::nullopt;
    }
    if (h.denominator.empty()) {
        return figure(*n, h.what);
    }
    const variant_outcome* d = find(c, h.denominator);
    if (d == nullptr) {
        return std::nullopt;
    }
    if (figure(*d, h.what) <= 0) {
        return lower_bound(c, h);
    }
    return figure(*n, h.what) / figure(*d, h.what);
}

namespace {

void print_headline(std::FILE* out, const case_outcome& c, const headline& h, std::string_view prefix) {
    const auto value = headline_value(c, h);
    if (!value) {
        return;
    }
    if (lower_bound(c, h)) {
        fmt::print(out, "  {}{}: at least {:.0f}x ({} had no success in its {:.0f}s; counted as one); write-up: {}\n",
                   prefix, headline_label(h), *value, h.denominator, seconds(find(c, h.denominator)->results.measured),
                   h.write_up_text);
    } else if (h.denominator.empty()) {
        fmt::print(out, "  {}{}: {:.0f}; write-up: {} ({:.2f}x the write-up)\n", prefix, headline_label(h), *value,
                   h.write_up_text, *value / h.write_up);
    } else {
        fmt::print(out, "  {}{}: {:.1f}x; write-up: {}\n", prefix, headline_label(h), *value, h.write_up_text);
    }
}

} // namespace

void print_verdict(std::FILE* out, const case_outcome& c) {
    fmt::print(out, "\n{}: {}{}\n", c.spec.name, c.spec.title, c.https ? " (over HTTPS)" : "");
    std::size_t width = 14; // a column per variant, wide enough for its name
    for (const auto& v : c.variants) {
        width = std::max(width, v.name.size() + 2);
    }
    fmt::print(out, "  {:<10}", "");
    for (const auto& v : c.variants) {
        fmt::print(out, "{:>{}}", v.name, width);
    }
    fmt::print(out, "\n");
    auto row = [&](const char* label, auto cell) {
        fmt::print(out, "  {:<10}", label);
        for (const auto& v : c.variants) {
            fmt::print(out, "{:>{}}", cell(v), width);
        }
        fmt::print(out, "\n");
    };
    row("protocol", [](const variant_outcome& v) {
        const std::string_view name = load::protocol_name(v.plan);
        return v.plan.h2() && v.plan.streams > 1 ? fmt::format("{} x{}", name, v.plan.streams)
               : v.plan.pipeline > 1             ? fmt::format("{} pipe{}", name, v.plan.pipeline)
                                                 : std::string(name);
    });
    for (const double p : {50.0, 95.0, 99.0}) {
        row(p == 50   ? "p50"
            : p == 95 ? "p95"
                      : "p99",
            [p](const variant_outcome& v) {
                return v.results.latency.count() == 0
                           ? std::string("-") // no response: no latency (not 0)
                           : format_duration_ns(static_cast<double>(v.results.latency.value_at_percentile(p)));
            });
    }
    row("mean", [](const variant_outcome& v) {
        return v.results.latency.count() == 0 ? std::string("-") : format_duration_ns(v.results.latency.mean_ns());
    });
    row("req/s", [](const variant_outcome& v) { return fmt::format("{:.1f}", rps(v)); });
    row("ok/s", [](const variant_outcome& v) { return fmt::format("{:.1f}", success_rps(v)); });
    row("requests", [](const variant_outcome& v) { return fmt::format("{}", v.results.responses); });
    row("errors", [](const variant_outcome& v) {
        return fmt::format("{}", v.results.error_total() + v.results.connect_failures);
    });
    row("timeouts", [](const variant_outcome& v) {
        return fmt::format("{}", v.results.errors[static_cast<std::size_t>(load::error_class::timeout)]);
    });
    if (c.spec.show_allocations) {
        row("allocs/req", [](const variant_outcome& v) {
            const auto a = allocations_per_request(v);
            return a ? fmt::format("{:.1f}", *a) : std::string("-");
        });
        if (std::none_of(c.variants.begin(), c.variants.end(),
                         [](const variant_outcome& v) { return allocations_per_request(v).has_value(); })) {
            fmt::print(out, "  allocs/req: not counted in this build (the profile preset counts them: "
                            "HOTPATH_COUNT_ALLOCATIONS)\n");
        }
    }
    const headline& h = c.spec.judged_by;
    print_headline(out, c, h, "");
    // The write-up's own system, measured here: the same figure, then hotpath's against it variant by variant.
    const headline oh = original_headline(h);
    if (find(c, oh.numerator) != nullptr) {
        print_headline(out, c, oh, "on Kestrel, ");
        for (const auto& v : c.variants) {
            const variant_outcome* o = v.original ? nullptr : find(c, original_name(v.name));
            if (o == nullptr) {
                continue;
            }
            const double mine = figure(v, h.what);
            const double theirs = figure(*o, h.what);
            const bool latency = h.what == headline::metric::p95;
            auto shown = [&](const variant_outcome& x, double f) {
                return latency ? (x.results.latency.count() == 0 ? std::string("-") : format_duration_ns(f))
                               : fmt::format("{:.1f}/s", f);
            };
            const bool both =
                latency ? v.results.latency.count() > 0 && o->results.latency.count() > 0 : mine > 0 && theirs > 0;
            fmt::print(out, "  {}: hotpath {} vs Kestrel {}{}\n", v.name, shown(v, mine), shown(*o, theirs),
                       !both     ? std::string("")
                       : latency ? fmt::format(" ({:.2f}x the time)", mine / theirs)
                                 : fmt::format(" ({:.2f}x the throughput)", mine / theirs));
        }
    }
    fmt::print(out, "  diagnosis (from what the services report: /debug/routes, else their stall lines; the originals' "
                    ".NET runtime counters):\n");
    std::string originals;
    for (const auto& v : c.variants) {
        if (v.original && v.diagnosis.empty()) {
            originals += (originals.empty() ? "" : ", ") + v.name;
            continue;
        }
        if (v.original) {
            // Read through dotnet-counters: the runtime's own figures, not a route report.
        } else if (!v.scrape_error.empty() && v.diagnosis.empty()) {
            fmt::print(out, "    {}: no report after the load: {}\n", v.name, v.scrape_error);
        } else if (!v.scrape_error.empty()) {
            fmt::print(out, "    {}: no report after the load ({}); from its output:\n", v.name, v.scrape_error);
        }
        for (const auto& f : v.diagnosis) {
            fmt::print(out, "    {}: {}{}\n", v.name, f.problem ? "" : "(ok) ", f.text);
        }
    }
    if (!originals.empty()) {
        // Why: the first original's reason (dotnet-counters missing is every original's).
        const auto first = std::find_if(c.variants.begin(), c.variants.end(),
                                        [](const auto& v) { return v.original && v.diagnosis.empty(); });
        fmt::print(out, "    {}: no .NET counters read ({}): their figures are the load's\n", originals,
                   first != c.variants.end() && !first->scrape_error.empty() ? first->scrape_error : "not asked for");
    }
    for (const auto& s : c.shared) {
        if (!s.scrape_error.empty()) {
            fmt::print(out, "    {} (shared): no report: {}\n", s.name, s.scrape_error);
        }
        for (const auto& f : s.diagnosis) {
            fmt::print(out, "    {} (shared): {}{}\n", s.name, f.problem ? "" : "(ok) ", f.text);
        }
    }
}

namespace {

// An original's runtime figures over its load, as lab/dotnet_counters summarised them; null where a counter never
// reported.
boost::json::object dotnet_json(const dotnet_figures& f) {
    auto figure = [](const std::optional<double>& v) {
        return v ? boost::json::value(*v) : boost::json::value(nullptr);
    };
    boost::json::object j{{"seconds", f.seconds},
                          {"cpu_percent", figure(f.cpu_percent)},
                          {"threads_first", figure(f.threads_first)},
                          {"threads_last", figure(f.threads_last)},
                          {"threads_max", figure(f.threads_max)},
                          {"queue_mean", figure(f.queue_mean)},
                          {"queue_max", figure(f.queue_max)},
                          {"queue_held", figure(f.queue_held)},
                          {"queue_readings", f.queue_readings},
                          {"allocated_bytes", figure(f.allocated_bytes)},
                          {"gc_paused_ms", figure(f.gc_paused_ms)},
                          {"gc_collections", figure(f.gc_collections)},
                          {"lock_contentions", figure(f.lock_contentions)},
                          {"exceptions", figure(f.exceptions)},
                          {"outbound_started", figure(f.outbound_started)},
                          {"outbound_failed", figure(f.outbound_failed)},
                          {"outbound_in_flight", figure(f.outbound_in_flight)},
                          {"outbound_in_flight_max", figure(f.outbound_in_flight_max)},
                          {"inbound_in_flight", figure(f.inbound_in_flight)},
                          {"inbound_in_flight_max", figure(f.inbound_in_flight_max)},
                          {"connections_queued", figure(f.connections_queued)}};
    boost::json::array routes;
    for (const auto& r : f.routes) {
        routes.push_back(
            {{"method", r.method}, {"route", r.route}, {"p50_s", figure(r.p50_s)}, {"p95_s", figure(r.p95_s)}});
    }
    j["routes"] = std::move(routes);
    return j;
}

} // namespace

std::string result_json(const case_outcome& c, const lab_options& o) {
    boost::json::object doc;
    doc["schema"] = "hotpath-lab/1";
    doc["case"] = c.spec.name;
    doc["title"] = c.spec.title;
    doc["quick"] = o.quick;
    doc["https"] = c.https;
    boost::json::array variants;
    for (const auto& v : c.variants) {
        const load::results& r = v.results;
        boost::json::object j;
        j["name"] = v.name;
        j["original"] = v.original;
        j["url"] = v.plan.to.text();
        j["requests"] = r.responses;
        j["successes"] = r.successes;
        j["errors"] = r.error_total() + r.connect_failures;
        j["measured_s"] = seconds(r.measured);
        j["rps"] = rps(v);
        j["success_rps"] = success_rps(v);
        j["timeouts"] = r.errors[static_cast<std::size_t>(load::error_class::timeout)];
        j["status_503"] = r.statuses[503];
        if (const auto a = allocations_per_request(v)) {
            j["allocations_per_request"] = *a;
        } else {
            j["allocations_per_request"] = nullptr;
        }
        j["latency_ms"] = latency_json(r.latency);
        boost::json::array series;
        for (std::size_t i = 0; i < r.seconds.size(); ++i) {
            const auto& s = r.seconds[i];
            series.push_back({{"second", i},
                              {"responses", s.responses},
                              {"errors", s.errors},
                              {"latency_ms", latency_json(*s.latency)}});
        }
        j["seconds"] = std::move(series);
        j["routes"] = v.routes_json.empty() ? boost::json::value(nullptr) : routes_json(v.routes_json);
        j["routes_error"] = v.scrape_error;
        j["diagnosis"] = findings_json(v.diagnosis);
        j["dotnet"] = v.dotnet ? dotnet_json(*v.dotnet) : boost::json::value(nullptr);
        j["load"] = routes_json(load::to_json(v.plan, r, {})); // the full hotpath-load/1 document, histograms included
        variants.push_back(std::move(j));
    }
    doc["variants"] = std::move(variants);
    boost::json::array shared;
    for (const auto& s : c.shared) {
        shared.push_back({{"name", s.name},
                          {"routes", s.routes_json.empty() ? boost::json::value(nullptr) : routes_json(s.routes_json)},
                          {"routes_error", s.scrape_error},
                          {"diagnosis", findings_json(s.diagnosis)}});
    }
    doc["shared"] = std::move(shared);
    const headline& h = c.spec.judged_by;
    boost::json::object head;
    head["label"] = headline_label(h);
    head["metric"] = metric_name(h.what);
    head["numerator"] = h.numerator;
    head["denominator"] = h.denominator;
    if (const auto value = headline_value(c)) {
        head["value"] = *value;
    } else {
        head["value"] = nullptr;
    }
    head["lower_bound"] = lower_bound(c, h).has_value();
    // The same figure over the originals on Kestrel, where they ran (null otherwise).
    if (const auto original = headline_value(c, original_headline(h))) {
        head["original_value"] = *original;
    } else {
        head["original_value"] = nullptr;
    }
    head["write_up"] = h.write_up;
    head["write_up_text"] = h.write_up_text;
    doc["headline"] = std::move(head);
    return boost::json::serialize(doc);
}

result<void, problem> write_result(const case_outcome& c, const lab_options& o, const std::string& path) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
    std::ofstream f(path, std::ios::binary);
    f << result_json(c, o) << "\n";
    if (ec || !f) {
        return problem{std::make_error_code(std::errc::io_error), fmt::format("cannot write {}", path)};
    }
    return {};
}

} // namespace hotpath::lab
