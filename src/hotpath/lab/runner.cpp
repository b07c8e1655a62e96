// The lab's run: services up, load, scrape, diagnose, stop; one progress line per phase.
#include <hotpath/lab/runner.hpp>

#include <hotpath/lab/certificates.hpp>
#include <hotpath/lab/dotnet_collector.hpp>
#include <hotpath/lab/html_report.hpp>
#include <hotpath/lab/report.hpp>
#include <hotpath/lab/services.hpp>
#include <hotpath/load/options.hpp>
#include <hotpath/load/runner.hpp>

#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <unistd.h>

namespace hotpath::lab {

namespace {

using clock = std::chrono::steady_clock;

constexpr std::chrono::seconds start_timeout{10};
constexpr std::chrono::seconds scrape_timeout{5};
constexpr std::chrono::seconds setup_timeout{60}; // a setup command (writing the freight table takes ~1 s)

// How long a variant's load is expected to take: its profile, or a guess for a fixed number of requests.
double expected_seconds(const load::plan& p) {
    if (p.requests > 0) {
        return static_cast<double>(p.requests) / 8000.0;
    }
    return std::chrono::duration<double>(p.total_time()).count();
}

// `text` with every `name` replaced by `value`.
std::string replaced(std::string text, std::string_view name, const std::string& value) {
    for (auto at = text.find(name); at != std::string::npos; at = text.find(name, at + value.size())) {
        text.replace(at, name.size(), value);
    }
    return text;
}

// Arguments with "{upstream}" (the first shared service's URL) and "{dir}" (the case's folder) filled in.
std::vector<std::string> filled(std::vector<std::string> args, const std::string& upstream, const std::string& dir) {
    for (auto& a : args) {
        a = replaced(replaced(std::move(a), "{upstream}", upstream), "{dir}", dir);
    }
    return args;
}

// Where the originals are: o.peers_dir, or <this executable's folder>/../peers (build/release/hotpath ->
// build/peers, where scripts/build-peers.sh publishes them). A problem saying why when they are off or none is
// built there.
result<std::string, problem> originals_folder(const lab_options& o) {
    if (!o.originals) {
        return problem{errc::invalid_value, "--no-originals"};
    }
    const std::filesystem::path dir = o.peers_dir.empty() ? default_peers_folder() : o.peers_dir;
    // Every case's originals are published together: the platform one stands for them all.
    if (dir.empty() || ::access((dir / "platform" / "platform").c_str(), X_OK) != 0) {
        return problem{errc::invalid_value,
                       fmt::format("the .NET originals are not built in {} (bash scripts/build-peers.sh needs dotnet)",
                                   dir.string())};
    }
    return dir.string();
}

// The plan of a variant; its port is the service's, set once it runs. With `dir` empty (before the case's folder
// exists) a scenario is left out: the plan then serves only to check the profile and to say how long it takes.
// With `tls`, over HTTPS, trusting its CA alone.
result<load::plan, problem> variant_plan(const variant_spec& v, const std::string& dir, const lab_certificates* tls) {
    load::load_options lo = v.load;
    // The services are loaded as the write-ups' tools load them (wrk, bombardier): a 503's Retry-After is counted,
    // not waited for, so that an overloaded variant shows what it refuses.
    lo.ignore_retry_after = true;
    lo.url = (tls != nullptr ? "https://127.0.0.1:1" : "http://127.0.0.1:1") + v.path_and_query;
    if (tls != nullptr) {
        lo.tls.ca_file = tls->ca_file;
    }
    lo.scenario = dir.empty() ? "" : replaced(lo.scenario, "{dir}", dir);
    return load::make_plan(lo);
}

// What a plan sends, for a progress line: its URL, or a scenario's first request and its feed.
std::string describe(const load::plan& p) {
    if (p.scenario.empty()) {
        return p.to.text();
    }
    const load::request_spec& r = p.scenario.front();
    return fmt::format("{} {}{} (a scenario{})", r.method, p.to.text(), r.path_and_query.substr(1),
                       p.data.rows.empty() ? "" : fmt::format(", {} rows of {}", p.data.rows.size(), p.data.source));
}

// The case's own folder under the temporary directory, removed with everything in it when the case ends.
class case_folder {
public:
    case_folder() = default;
    case_folder(const case_folder&) = delete;
    case_folder& operator=(const case_folder&) = delete;
    ~case_folder() {
        if (!path_.empty()) {
            std::error_code ec;
            std::filesystem::remove_all(path_, ec);
        }
    }
    result<void, problem> create(const std::string& case_name) {
        std::error_code ec;
        auto base = std::filesystem::temp_directory_path(ec);
        if (ec) {
            base = "/tmp";
        }
        std::string pattern = (base / ("hotpath-lab-" + case_name + "-XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            const int error = errno;
            return problem{std::error_code(error, std::generic_category()),
                           fmt::format("cannot create {}: {}", pattern, std::strerror(error))};
        }
        path_ = pattern;
        return {};
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// Scrapes and diagnoses one service; a problem saying why when it cannot (a service whose loops are all blocked
// does not answer: an outcome of the case, recorded, not a failure of the lab).
result<void, problem> scrape(const service& s, std::string& json, std::vector<finding>& findings) {
    auto got = get_local(s, "/debug/routes", scrape_timeout);
    if (!got) {
        return std::move(got).error();
    }
    if (got->status != 200) {
        return problem{errc::unexpected_status, fmt::format("GET /debug/routes answered {}", got->status)};
    }
    json = got->body;
    auto parsed = parse_route_report(json);
    if (!parsed) {
        return std::move(parsed).error();
    }
    findings = diagnose(*parsed);
    return {};
}

struct lab_run {
    const lab_options& options;
    std::FILE* progress;
    std::vector<case_spec> cases;
    std::size_t variant_count = 0; // in all the cases, originals included
    std::size_t phase = 0;
    double seconds_left = 0;
    std::string peers;                        // the originals' folder, "" when they are not run
    std::optional<std::string> counters_tool; // dotnet-counters, where found
    std::optional<lab_certificates> tls;      // --tls: what every service serves with

    const lab_certificates* certificates() const { return tls ? &*tls : nullptr; }

    void say(const std::string& line) {
        fmt::print(progress, "hotpath lab: {}\n", line);
        std::fflush(progress);
    }

    // Runs one case; a problem when it could not. Its services are stopped before its folder is removed.
    result<void, problem> run_case(const case_spec& c, service_set& services, case_outcome& outcome) {
        case_folder folder; // removed when the case ends, however it ends
        if (!c.files.empty() || !c.setup.empty()) {
            if (auto created = folder.create(c.name); !created) {
                return created;
            }
            if (auto prepared = prepare(c, folder.path()); !prepared) {
                return prepared;
            }
        }
        auto ran = run_case_in(c, folder.path(), services, outcome);
        services.stop_all();
        if (ran && !peers.empty()) {
            ran = run_originals(c, folder.path(), services, outcome);
            services.stop_all();
        }
        return ran;
    }

    // Loads one variant's service (hotpath's or an original) with the variant's plan; a problem when the load could
    // not run or the lab was interrupted.
    // `before` runs once the plan is made, just before the load starts (an original's counters attach there).
    result<void, problem> load_variant(const case_spec& c, const variant_spec& v, const std::string& dir,
                                       const service& target, variant_outcome& vo,
                                       const std::function<void(const load::plan&)>& before = {}) {
        auto planned = variant_plan(v, dir, certificates());
        if (!planned) {
            return problem{planned.error().code, fmt::format("{}/{}: {}", c.name, vo.name, planned.error().message)};
        }
        vo.plan = std::move(*planned);
        vo.plan.to.port = target.port;
        const double expected = expected_seconds(vo.plan);
        say(fmt::format("[{}/{}] {}/{}: loading {} for about {:.0f}s (about {:.0f}s left in the lab)", phase + 1,
                        variant_count, c.name, vo.name, describe(vo.plan), expected, seconds_left));
        if (before) {
            before(vo.plan);
        }
        const auto mode = ::isatty(::fileno(progress)) != 0 ? load::progress_mode::terminal : load::progress_mode::none;
        auto r = run_load(vo.plan, mode, progress);
        if (!r) {
            return std::move(r).error();
        }
        vo.results = std::move(*r);
        seconds_left = std::max(0.0, seconds_left - expected);
        ++phase;
        return {};
    }

    // The write-up's own services on Kestrel: the shared ones, then each variant that has an original, loaded as
    // hotpath's was. They have no /debug/routes: dotnet-counters reads their runtime's own counters during the load
    // instead (lab/dotnet_collector), and the .NET rules diagnose from those with the load's figures.
    result<void, problem> run_originals(const case_spec& c, const std::string& dir, service_set& services,
                                        case_outcome& outcome) {
        if (std::none_of(c.variants.begin(), c.variants.end(), [](const auto& v) { return v.original.has_value(); })) {
            return {};
        }
        auto start = [&](const original_spec& o, const std::string& upstream, const std::string& label) {
            const std::uint16_t port = free_loopback_port();
            std::vector<std::string> argv{(std::filesystem::path(peers) / o.program / o.program).string()};
            for (const std::string& a : filled(o.args, upstream, dir)) {
                argv.push_back(
                    replaced(replaced(a, "{port}", std::to_string(port)), "{scheme}", tls ? "https" : "http"));
            }
            auto started = services.start_peer(o.program, argv, port, o.ready_path, start_timeout);
            if (started) {
                const service* s = *started;
                say(fmt::format("{}: started the original {} on Kestrel (pid {}) on {}", label, o.program, s->pid,
                                s->url()));
            }
            return started;
        };
        std::string upstream;
        for (const original_spec& o : c.shared_originals) {
            auto s = start(o, "", c.name);
            if (!s) {
                return std::move(s).error();
            }
            if (upstream.empty()) {
                upstream = (*s)->url();
            }
        }
        for (const variant_spec& v : c.variants) {
            if (!v.original) {
                continue;
            }
            variant_outcome vo;
            vo.name = original_name(v.name);
            vo.original = true;
            auto target = start(*v.original, upstream, fmt::format("{}/{}", c.name, vo.name));
            if (!target) {
                return std::move(target).error();
            }
            std::unique_ptr<dotnet_collector> counters;
            auto attach = [&](const load::plan& p) {
                if (!counters_tool) {
                    vo.scrape_error = "dotnet-counters not found (scripts/build-peers.sh installs it beside them)";
                    return;
                }
                // The session ends by itself a reading or so after the load (a guess for a count of requests).
                const auto length = std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::duration<double>(expected_seconds(p) + 1.0));
                auto started = dotnet_collector::start(*counters_tool, (*target)->pid, length);
                if (!started) {
                    vo.scrape_error = std::move(started).error().message;
                    say(fmt::format("{}/{}: no .NET counters: {}", c.name, vo.name, vo.scrape_error));
                    return;
                }
                counters = std::move(*started);
            };
            if (auto loaded = load_variant(c, v, dir, **target, vo, attach); !loaded) {
                return loaded;
            }
            if (counters) {
                if (auto read = counters->finish(); read) {
                    vo.dotnet = summarize(*read, std::chrono::duration<double>(vo.plan.warmup).count());
                    vo.diagnosis =
                        diagnose_dotnet(*vo.dotnet, load_window_of(vo.plan, vo.results), target_name(vo.plan));
                } else {
                    vo.scrape_error = std::move(read).error().message;
                    say(fmt::format("{}/{}: no .NET counters: {}", c.name, vo.name, vo.scrape_error));
                }
            }
            services.stop(*target);
            outcome.variants.push_back(std::move(vo));
        }
        return {};
    }

    result<void, problem> run_case_in(const case_spec& c, const std::string& dir, service_set& services,
                                      case_outcome& outcome) {
        outcome.spec = c;
        outcome.https = tls.has_value();
        std::vector<const service*> shared;
        for (const auto& args : c.shared) {
            auto started = services.start(filled(args, "", dir), start_timeout);
            if (!started) {
                return std::move(started).error();
            }
            const service* s = *started;
            say(fmt::format("{}: started {} (pid {}) on {}", c.name, s->name, s->pid, s->url()));
            shared.push_back(s);
        }
        const std::string upstream = shared.empty() ? "" : shared.front()->url();
        for (const variant_spec& v : c.variants) {
            const service* target = shared.empty() ? nullptr : shared.front();
            if (!v.serve.empty()) {
                auto started = services.start(filled(v.serve, upstream, dir), start_timeout);
                if (!started) {
                    return std::move(started).error();
                }
                target = *started;
                say(fmt::format("{}/{}: started {} (pid {}) on {}", c.name, v.name, target->name, target->pid,
                                target->url()));
            }
            variant_outcome vo;
            vo.name = v.name;
            if (auto loaded = load_variant(c, v, dir, *target, vo); !loaded) {
                return loaded;
            }
            if (auto scraped = scrape(*target, vo.routes_json, vo.diagnosis); !scraped) {
                vo.scrape_error = std::move(scraped).error().message;
                say(fmt::format("{}/{}: no report from {}: {}", c.name, v.name, target->name, vo.scrape_error));
                // A service too busy to answer may still have said why on its output (the stall watchdog).
                vo.diagnosis = diagnose_stall_lines(target->last_output());
            }
            if (!v.serve.empty()) {
                services.stop(target);
            }
            outcome.variants.push_back(std::move(vo));
        }
        for (const service* s : shared) {
            shared_outcome so;
            so.name = s->name;
            if (auto scraped = scrape(*s, so.routes_json, so.diagnosis); !scraped) {
                so.scrape_error = std::move(scraped).error().message;
                say(fmt::format("{}: no report from {}: {}", c.name, s->name, so.scrape_error));
            }
            outcome.shared.push_back(std::move(so));
        }
        services.stop_all();
        return {};
    }

    // Writes the case's files into `dir`, then runs its setup commands there, in order.
    result<void, problem> prepare(const case_spec& c, const std::string& dir) {
        for (const case_file& f : c.files) {
            const auto path = std::filesystem::path(dir) / f.name;
            std::ofstream out(path, std::ios::binary);
            out << f.text;
            out.close();
            if (!out) {
                return problem{std::make_error_code(std::errc::io_error),
                               fmt::format("cannot write {}", path.string())};
            }
        }
        for (const auto& command : c.setup) {
            const auto args = filled(command, "", dir);
            say(fmt::format("{}: setup: hotpath {}", c.name, fmt::join(args, " ")));
            if (auto ran = run_command(args, setup_timeout); !ran) {
                return ran;
            }
        }
        return {};
    }
};

} // namespace

int run_lab(const lab_options& o, std::FILE* out, std::FILE* progress) {
    block_stop_signals();
    lab_run run{o, progress, {}, 0, 0, 0, {}, {}, {}};
    auto cases = plan_cases(o);
    if (!cases) {
        fmt::print(stderr, "hotpath: {}\n", cases.error().message);
        return 2;
    }
    run.cases = std::move(*cases);
    if (auto peers = originals_folder(o); !peers) {
        run.say(fmt::format("hotpath's side alone: {}", peers.error().message));
    } else {
        run.peers = std::move(*peers);
        run.counters_tool = find_dotnet_counters("", {run.peers});
        run.say(fmt::format("with the write-ups' own services on Kestrel from {}{}", run.peers,
                            run.counters_tool
                                ? fmt::format(", their runtime counters read with {}", *run.counters_tool)
                                : std::string(" (dotnet-counters not found: their own counters unread)")));
    }
    for (const case_spec& c : run.cases) {
        for (const variant_spec& v : c.variants) {
            // The profile checked before anything starts; the case makes its own with its scenario.
            const auto p = variant_plan(v, "", nullptr);
            if (!p) {
                fmt::print(stderr, "hotpath: {}/{}: {}\n", c.name, v.name, p.error().message);
                return 1;
            }
            const int runs = v.original && !run.peers.empty() ? 2 : 1;
            run.seconds_left += runs * expected_seconds(*p);
            run.variant_count += runs;
        }
    }
    std::error_code ec;
    std::filesystem::create_directories(o.out_dir, ec);
    if (ec) {
        fmt::print(stderr, "hotpath: cannot create {}: {}\n", o.out_dir, ec.message());
        return 1;
    }
    case_folder tls_folder; // the run's certificates, removed when it ends
    if (o.tls) {
        auto created = tls_folder.create("tls");
        auto made = created ? make_lab_certificates(tls_folder.path())
                            : result<lab_certificates, problem>(std::move(created).error());
        if (!made) {
            fmt::print(stderr, "hotpath: {}\n", made.error().message);
            return 1;
        }
        run.tls = std::move(*made);
        run.say(fmt::format("over HTTPS: every service serves a certificate made for this run, trusted through its CA "
                            "alone ({})",
                            run.tls->ca_file));
    }
    std::vector<case_outcome> outcomes;
    for (const case_spec& c : run.cases) {
        service_set services(run.certificates()); // stops whatever is still running when the case ends
        case_outcome outcome;
        const auto ran = run.run_case(c, services, outcome);
        if (!ran || interrupted()) { // a signal during the last scrape still ends the lab
            services.stop_all();
            if (interrupted()) {
                fmt::print(stderr, "hotpath: lab interrupted; every service stopped\n");
                return 130;
            }
            fmt::print(stderr, "hotpath: lab {}: {}\n", c.name, ran.error().message);
            return 1;
        }
        const std::string path = (std::filesystem::path(o.out_dir) / c.name / "result.json").string();
        if (auto written = write_result(outcome, o, path); !written) {
            fmt::print(stderr, "hotpath: {}\n", written.error().message);
            return 1;
        }
        outcomes.push_back(std::move(outcome));
    }
    // The verdicts together at the end, each on one screen, after the progress lines.
    for (const case_outcome& c : outcomes) {
        print_verdict(out, c);
    }
    // The HTML report, drawn from the result files just written (html_report.hpp), so that it shows what they hold.
    std::vector<std::string> result_paths;
    for (const case_spec& c : run.cases) {
        result_paths.push_back((std::filesystem::path(o.out_dir) / c.name / "result.json").string());
    }
    const std::string report_path = (std::filesystem::path(o.out_dir) / "report.html").string();
    const auto reported = write_report_html(result_paths, report_path);
    for (const std::string& p : result_paths) { // where each case's figures are, as a path the user can open
        fmt::print(out, "results: {} (docs/lab.md)\n", p);
    }
    if (reported) {
        fmt::print(out, "report: {}\n", report_path);
    }
    std::fflush(out);
    if (!reported) {
        fmt::print(stderr, "hotpath: {}\n", reported.error().message);
        return 1;
    }
    return 0;
}

} // namespace hotpath::lab
