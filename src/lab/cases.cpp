// The two cases of this stage: fanout (CASES.md 1) and redirect (CASES.md 5), their profiles as the write-ups ran them.
#include "lab/cases.hpp"

#include <fmt/core.h>

namespace hotpath::lab {

namespace {

// NBomber's profile from the write-up: a 5 s warm-up, then 1/s for 5 s, 2/s for 10 s, 3/s for 15 s. The warm-up
// runs at the first stage's rate and is left out of the results. `scale` shortens every period (--quick).
load::load_options nbomber_profile(double scale) {
    load::load_options o;
    auto secs = [scale](double s) { return fmt::format("{:g}s", s * scale); };
    o.stages = fmt::format("rate=1/s:{}, rate=1/s:{}, rate=2/s:{}, rate=3/s:{}", secs(5), secs(5), secs(10), secs(15));
    o.warmup = secs(5);
    o.connections = 4;      // opened at start; more open as requests overlap
    o.max_connections = 64; // far above what 3 req/s of 1 s requests need
    o.timeout = "30s";
    return o;
}

case_spec fanout(bool quick) {
    case_spec c;
    c.name = "fanout";
    c.title = "an API calling another API 100 times per request: sequential, all at once, or at most 10 in flight";
    c.shared = {{"weather"}};
    for (const char* strategy : {"sequential", "all", "bounded"}) {
        variant_spec v;
        v.name = strategy;
        v.serve = {"aggregator", "--upstream", "{upstream}"};
        v.path_and_query = fmt::format("/?strategy={}&limit=10", strategy);
        v.load = nbomber_profile(quick ? 0.3 : 1.0);
        c.variants.push_back(std::move(v));
    }
    c.judged_by = {headline::metric::p95, "sequential", "bounded", 3.0, "about 3x (p95 1.5 s -> 0.5 s)"};
    return c;
}

case_spec redirect(bool quick) {
    case_spec c;
    c.name = "redirect";
    c.title = "the smallest web app, a random 302; ab -n 100000 -c 10 without keep-alive";
    variant_spec v;
    v.name = "avatar";
    v.serve = {"avatar"};
    v.load.connections = 10;
    v.load.requests = quick ? 10'000 : 100'000;
    v.load.no_keepalive = true;
    v.load.timeout = "10s";
    c.variants.push_back(std::move(v));
    c.judged_by = {headline::metric::rps, "avatar", "", 8791.0, "8,791 req/s, mean 1.1 ms (a ten-year-old laptop)"};
    return c;
}

} // namespace

std::vector<std::string> case_names() {
    return {"fanout", "redirect"};
}

std::optional<std::vector<case_spec>> plan_cases(const lab_options& o, std::string& why) {
    std::vector<case_spec> out;
    if (o.which == "all" || o.which == "fanout") {
        out.push_back(fanout(o.quick));
    }
    if (o.which == "all" || o.which == "redirect") {
        out.push_back(redirect(o.quick));
    }
    if (out.empty()) {
        why = fmt::format("'{}' is not a lab case; try fanout, redirect or all", o.which);
        return std::nullopt;
    }
    return out;
}

} // namespace hotpath::lab
