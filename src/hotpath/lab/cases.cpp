// The lab's five cases (CASES.md 1-5), their profiles as the write-ups ran them, scaled down by --quick.
#include <hotpath/lab/cases.hpp>

#include <fmt/core.h>
#include <fmt/format.h>

#include <utility>

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

// The original's arguments: Kestrel on the port and scheme the lab chose, then the service's own.
original_spec on_kestrel(const char* program, std::vector<std::string> args, std::string ready_path) {
    original_spec o{program, {"--urls", "{scheme}://127.0.0.1:{port}"}, std::move(ready_path)};
    o.args.insert(o.args.end(), args.begin(), args.end());
    return o;
}

// Quick runs load the originals of the variants the headline compares only: they are what the verdict puts beside
// hotpath's, and the rest would double the time of `lab all --quick`.
void keep_headline_originals(case_spec& c, bool quick) {
    if (!quick) {
        return;
    }
    for (variant_spec& v : c.variants) {
        if (v.name != c.judged_by.numerator && v.name != c.judged_by.denominator) {
            v.original.reset();
        }
    }
}

case_spec fanout(bool quick) {
    case_spec c;
    c.name = "fanout";
    c.title = "an API calling another API 100 times per request: sequential, all at once, or at most 10 in flight";
    c.shared = {{"weather"}};
    c.shared_originals = {on_kestrel("weather", {}, "/nope")};
    for (const char* strategy : {"sequential", "all", "bounded"}) {
        variant_spec v;
        v.name = strategy;
        v.serve = {"aggregator", "--upstream", "{upstream}"};
        v.path_and_query = fmt::format("/?strategy={}&limit=10", strategy);
        v.load = nbomber_profile(quick ? 0.2 : 1.0);
        v.original = on_kestrel("aggregator", {"--upstream", "{upstream}"}, "/nope");
        c.variants.push_back(std::move(v));
    }
    c.judged_by = {headline::metric::p95, "sequential", "bounded", 3.0, "about 3x (p95 1.5 s -> 0.5 s)"};
    keep_headline_originals(c, quick);
    return c;
}

// Case 2's scenario (examples/freight/quote.toml without its [load]): random carts from the case's carts.csv,
// ~7.5 % of them to CEPs in no range, whose 404 is an expected answer. The url is replaced by the service's.
constexpr const char* freight_scenario = R"(url = "http://127.0.0.1:1"

[feed]
csv = "carts.csv"

[[request]]
name = "quote"
method = "POST"
path = "/freight/quote"
headers = { "Content-Type" = "application/json" }
body = '''{"cep": "{{cep}}", "items": {{{items}}} }'''
expect_status = [404]
check_status = [200, 404]
)";

case_spec freight(bool quick) {
    case_spec c;
    c.name = "freight";
    c.title = "a freight quote API: allocation churn on the hot path (churn) against none (lean), 240 then 480 users";
    c.files = {{"quote.toml", freight_scenario}};
    c.setup = {{"freight", "init", "--db", "{dir}/freight.sqlite"},
               {"freight", "carts", "--count", "1000", "--seed", "1", "--out", "{dir}/carts.csv"}};
    c.show_allocations = true;
    for (const char* variant : {"churn", "lean"}) {
        variant_spec v;
        v.name = variant;
        v.serve = {"freight", "--db", "{dir}/freight.sqlite", "--variant", variant};
        // The write-up's load: 240 virtual users ramping up, held (120 s in all), then doubled to 480.
        v.load.scenario = "{dir}/quote.toml";
        v.load.stages = quick ? "vus=0..240:1s, vus=240:2s, vus=240..480:1s, vus=480:3s"
                              : "vus=0..240:60s, vus=240:60s, vus=240..480:30s, vus=480:90s";
        v.load.threads = 1; // the other core serves
        v.load.timeout = "10s";
        v.original = on_kestrel("freight", {"--db", "{dir}/freight.sqlite", "--variant", variant}, "/nope");
        c.variants.push_back(std::move(v));
    }
    c.judged_by = {headline::metric::p95, "churn", "lean", 5.0,
                   "5x better response time and 30 % more capacity; mean 59 ms at 480 users (limit 150 ms)"};
    keep_headline_originals(c, quick);
    return c;
}

case_spec platform(bool quick) {
    case_spec c;
    c.name = "platform";
    c.title = "the server itself: TechEmpower plaintext and JSON, 64 connections, plain and 16 requests pipelined; and "
              "over HTTP/2 (h2c), 16 connections of 100 streams";
    for (const char* path : {"plaintext", "json"}) {
        for (const unsigned depth : {1U, 16U}) {
            variant_spec v;
            v.name = depth > 1 ? fmt::format("{}-pipe{}", path, depth) : path;
            v.serve = {"platform"};
            v.path_and_query = fmt::format("/{}", path);
            v.load.connections = 64;
            v.load.duration = quick ? "3s" : "12s";
            v.load.warmup = quick ? "1s" : "2s";
            v.load.timeout = "10s";
            if (depth > 1) {
                v.load.pipeline = depth;
            }
            v.original = on_kestrel("platform", {}, "/nope");
            c.variants.push_back(std::move(v));
        }
    }
    // HTTP/2 with prior knowledge, as h2load runs it in the TechEmpower-style HTTP/2 comparisons: 16 connections of 100
    // streams each. hotpath serves it on the same port as HTTP/1.1; Kestrel serves h2c only on an endpoint of HTTP/2
    // alone (an HTTP/1.1 request there gets a 400, which the lab's readiness check takes as an answer).
    for (const char* path : {"plaintext", "json"}) {
        variant_spec v;
        v.name = fmt::format("{}-h2c", path);
        v.serve = {"platform"};
        v.path_and_query = fmt::format("/{}", path);
        v.load.connections = 16;
        v.load.h2c = true;
        v.load.streams = 100;
        v.load.duration = quick ? "3s" : "12s";
        v.load.warmup = quick ? "1s" : "2s";
        v.load.timeout = "10s";
        v.original = on_kestrel("platform", {"--Kestrel:EndpointDefaults:Protocols", "Http2"}, "/nope");
        c.variants.push_back(std::move(v));
    }
    c.judged_by = {headline::metric::rps, "plaintext-pipe16", "", 14.6e6,
                   "plaintext 2.4 M -> 14.6 M req/s, JSON 270 k -> 1.1 M req/s (80-core ARM server)"};
    keep_headline_originals(c, quick);
    return c;
}

// bench/profile.sh's step load: 250 -> 500 -> 1000 -> 2000 -> 4000 virtual users, the lower steps the warm-up,
// a 2 s backing call, 4 loops, offload's pool of 32 threads with 64 queued calls. The client timeout bounds
// every request, so that the case ends by itself however far the server has fallen behind.
case_spec sync_io(bool quick) {
    case_spec c;
    c.name = "sync-io";
    c.title = "a 2 s backing call blocking the loop (sync), awaited (async) or on a bounded pool (offload), "
              "up to 4,000 users";
    const int step_s = quick ? 1 : 15;
    const int top_s = quick ? 4 : 30;
    for (const char* way : {"sync", "async", "offload"}) {
        variant_spec v;
        v.name = way;
        v.serve = {"profile", "--delay", "2s", "--threads", "4", "--blocking-threads", "32", "--blocking-queue", "64"};
        v.path_and_query = fmt::format("/profile/{}/42", way);
        v.load.stages =
            fmt::format("vus=250:{0}s, vus=500:{0}s, vus=1000:{0}s, vus=2000:{0}s, vus=4000:{1}s", step_s, top_s);
        v.load.warmup = fmt::format("{}s", 4 * step_s);
        v.load.threads = 1;
        v.load.timeout = "10s"; // bench/profile.sh's: a queued offload call can wait 4 s, then run 2 s
        v.original = on_kestrel("profile", {"--delay", "2000"}, "/nope");
        c.variants.push_back(std::move(v));
    }
    c.judged_by = {headline::metric::success_rps, "async", "sync", 10.0,
                   ">= 10x the throughput, >= 25x lower mean response time (sync: queued, timed out, 503)"};
    keep_headline_originals(c, quick);
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
    // The seven-line original takes its port and the number of pictures as arguments (PORT N), and the scheme.
    v.original = original_spec{"avatar", {"{port}", "10", "{scheme}"}, "/nope"};
    c.variants.push_back(std::move(v));
    c.judged_by = {headline::metric::rps, "avatar", "", 8791.0, "8,791 req/s, mean 1.1 ms (a ten-year-old laptop)"};
    return c;
}

} // namespace

std::string original_name(const std::string& variant) {
    return variant + " (Kestrel)";
}

std::vector<std::string> case_names() {
    return {"fanout", "freight", "platform", "sync-io", "redirect"};
}

result<std::vector<case_spec>, problem> plan_cases(const lab_options& o) {
    using maker = case_spec (*)(bool);
    const std::pair<const char*, maker> all[] = {
        {"fanout", fanout}, {"freight", freight}, {"platform", platform}, {"sync-io", sync_io}, {"redirect", redirect}};
    std::vector<case_spec> out;
    for (const auto& [name, make] : all) {
        if (o.which == "all" || o.which == name) {
            out.push_back(make(o.quick));
        }
    }
    if (out.empty()) {
        return problem{errc::invalid_value,
                       fmt::format("'{}' is not a lab case; try {} or all", o.which, fmt::join(case_names(), ", "))};
    }
    return out;
}

} // namespace hotpath::lab
