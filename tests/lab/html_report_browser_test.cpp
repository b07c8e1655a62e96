// report.html in a real browser: Debian's chromium, headless, opens the page written by lab::write_report_html and
// the test reads back what the page's own script wrote into the DOM (charts drawn, their series, script errors,
// colour scheme, width), checks in chromium's net log that the page asked for nothing over the network, and keeps
// screenshots (light, dark, phone) under the build folder. Skipped when chromium is absent.
#include <hotpath/lab/html_report.hpp>

#include "lab/lab_documents.hpp"

#include "support/result_assert.hpp"
#include <boost/json.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <poll.h>
#include <regex>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

constexpr auto browser_timeout = 60s;

// HOTPATH_CHROMIUM names the browser when set (none when it is not executable); else Debian's.
std::string chromium_path() {
    if (const char* p = std::getenv("HOTPATH_CHROMIUM"); p != nullptr) {
        return ::access(p, X_OK) == 0 ? p : "";
    }
    for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
        if (::access(p, X_OK) == 0) {
            return p;
        }
    }
    return {};
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// True while a process of process group `group` exists (a zombie not yet reaped counts).
bool group_alive(pid_t group) {
    for (const auto& entry : fs::directory_iterator("/proc")) {
        const std::string name = entry.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) {
            continue;
        }
        const std::string stat = read_file(entry.path().string() + "/stat");
        const std::size_t close = stat.rfind(')');
        if (close == std::string::npos) {
            continue;
        }
        char state = 0;
        int parent = 0;
        int pgrp = 0;
        if (std::sscanf(stat.c_str() + close + 2, "%c %d %d", &state, &parent, &pgrp) == 3 && pgrp == group &&
            state != 'Z') {
            return true;
        }
    }
    return false;
}

struct browser_run {
    int exit_code = -1; // -1: killed at the timeout or by a signal
    std::string out;    // its stdout (the DOM with --dump-dom)
};

// Runs chromium headless on `url` with `flags` in a process group of its own, a fresh profile and every host name
// but 127.0.0.1 unresolvable (its own background requests cannot leave the machine; they still show in a net
// log). The whole group is killed with SIGKILL when the run ends or `browser_timeout` passes, and the test fails
// should any of it outlive that.
browser_run run_chromium(const std::string& chromium, std::vector<std::string> flags, const std::string& url,
                         const std::string& profile) {
    std::vector<std::string> args{chromium,
                                  "--headless",
                                  "--no-sandbox",
                                  "--disable-gpu",
                                  "--no-first-run",
                                  "--no-default-browser-check",
                                  "--disable-background-networking",
                                  "--disable-component-update",
                                  "--disable-sync",
                                  "--disable-extensions",
                                  "--disable-default-apps",
                                  "--hide-scrollbars",
                                  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
                                  "--user-data-dir=" + profile,
                                  "--virtual-time-budget=10000"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back(url);
    browser_run run;
    int out[2];
    if (::pipe(out) != 0) {
        ADD_FAILURE() << "pipe";
        return run;
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) {
            ::_exit(127);
        }
        ::dup2(out[1], STDOUT_FILENO);
        ::close(out[0]);
        ::close(out[1]);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDERR_FILENO);
        std::vector<char*> argv;
        for (auto& a : args) {
            argv.push_back(a.data());
        }
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    ::setpgid(pid, pid); // either side may run first; both ask for the same
    ::close(out[1]);
    const auto deadline = std::chrono::steady_clock::now() + browser_timeout;
    char buf[65536];
    while (std::chrono::steady_clock::now() < deadline) {
        pollfd p{out[0], POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) {
            continue;
        }
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n <= 0) {
            break;
        }
        run.out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(out[0]);
    bool reaped = false;
    while (std::chrono::steady_clock::now() < deadline) {
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == pid) {
            reaped = true;
            run.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    ::kill(-pid, SIGKILL); // the group: the browser and whatever it started
    if (!reaped) {
        ::waitpid(pid, nullptr, 0);
    }
    const auto gone_by = std::chrono::steady_clock::now() + 5s;
    while (group_alive(pid) && std::chrono::steady_clock::now() < gone_by) {
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_FALSE(group_alive(pid)) << "a chromium process of group " << pid << " outlived its run";
    return run;
}

std::string unescape_html(std::string s) {
    static const std::pair<const char*, const char*> entities[] = {
        {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#39;", "'"}, {"&amp;", "&"}};
    for (const auto& [from, to] : entities) {
        for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + 1)) {
            s.replace(at, std::strlen(from), to);
        }
    }
    return s;
}

// The value of attribute `name` in the first <body ...> tag of `dom`.
std::string body_attribute(const std::string& dom, const std::string& name) {
    std::smatch tag;
    static const std::regex body_tag("<body([^>]*)>");
    if (!std::regex_search(dom, tag, body_tag)) {
        return {};
    }
    const std::string attrs = tag[1];
    std::smatch value;
    if (!std::regex_search(attrs, value, std::regex(" " + name + "=\"([^\"]*)\""))) {
        return {};
    }
    return unescape_html(value[1]);
}

struct drawn_chart {
    std::string kind;
    std::vector<std::string> series;
    int width = 0;
};

// The uPlot charts in the DOM, in order, with the series names the page wrote on them.
std::vector<drawn_chart> charts(const std::string& dom) {
    std::vector<drawn_chart> found;
    static const std::regex chart(
        R"re(<div class="chart" data-chart="([^"]*)" data-series="([^"]*)"[^>]*data-width="(\d+)")re");
    for (auto it = std::sregex_iterator(dom.begin(), dom.end(), chart); it != std::sregex_iterator(); ++it) {
        drawn_chart c;
        c.kind = (*it)[1];
        const auto names = boost::json::parse(unescape_html((*it)[2]));
        for (const auto& s : names.as_array()) {
            c.series.emplace_back(s.as_string());
        }
        c.width = std::stoi((*it)[3]);
        found.push_back(std::move(c));
    }
    return found;
}

// URLs the page itself asked for (chromium's own requests, with no initiating origin, left out).
std::vector<std::string> page_requests(const std::string& net_log_path) {
    boost::system::error_code ec;
    const auto log = boost::json::parse(read_file(net_log_path), ec);
    EXPECT_FALSE(ec) << net_log_path << ": " << ec.message();
    if (ec) {
        return {};
    }
    const auto start_job = log.at("constants").at("logEventTypes").at("URL_REQUEST_START_JOB").to_number<int>();
    std::vector<std::string> urls;
    for (const auto& e : log.at("events").as_array()) {
        const auto* params = e.as_object().if_contains("params");
        if (e.at("type").to_number<int>() != start_job || params == nullptr || !params->is_object()) {
            continue;
        }
        const auto* initiator = params->as_object().if_contains("initiator");
        const auto* url = params->as_object().if_contains("url");
        if (url != nullptr && url->is_string() && initiator != nullptr && initiator->is_string() &&
            initiator->as_string() != "not an origin") {
            urls.emplace_back(url->as_string());
        }
    }
    return urls;
}

// PNG width and height from its IHDR chunk.
std::pair<std::uint32_t, std::uint32_t> png_size(const std::string& path) {
    const std::string png = read_file(path);
    if (png.size() < 24 || png.compare(1, 3, "PNG") != 0) {
        return {0, 0};
    }
    auto be32 = [&](std::size_t at) {
        std::uint32_t v = 0;
        for (std::size_t i = 0; i < 4; ++i) {
            v = (v << 8) | static_cast<unsigned char>(png[at + i]);
        }
        return v;
    };
    return {be32(16), be32(20)};
}

class html_report_browser_test : public ::testing::Test {
protected:
    void SetUp() override {
        chromium_ = chromium_path();
        if (chromium_.empty()) {
            GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
        }
        dir_ = HOTPATH_LAB_REPORT_DIR;
        fs::create_directories(dir_);
        profile_ = ::testing::TempDir() + "hotpath_chromium_" + std::to_string(::getpid());
        fs::remove_all(profile_);
        ASSERT_TRUE(test::ok(lab::write_report_html(test::lab_documents(), dir_ + "/report.html")));
    }
    void TearDown() override {
        if (!profile_.empty()) {
            fs::remove_all(profile_);
        }
    }
    browser_run open(const std::string& file, std::vector<std::string> flags) {
        return run_chromium(chromium_, std::move(flags), "file://" + dir_ + "/" + file, profile_);
    }

    std::string chromium_;
    std::string dir_;
    std::string profile_;
};

TEST_F(html_report_browser_test, draws_every_chart_of_every_case_without_errors_or_requests) {
    const std::string net_log = dir_ + "/net-log.json";
    fs::remove(net_log);
    const auto run = open("report.html", {"--dump-dom", "--window-size=1280,2400", "--log-net-log=" + net_log});
    ASSERT_EQ(run.exit_code, 0) << run.out.substr(0, 2000);
    const std::string& dom = run.out;
    EXPECT_EQ(body_attribute(dom, "data-errors"), "0") << body_attribute(dom, "data-first-error");
    EXPECT_EQ(body_attribute(dom, "data-cases"), "2");
    // Case 1: requests/s over time, the distribution, one latency-over-time per variant (3); case 2: 1 + 1 + 1.
    EXPECT_EQ(body_attribute(dom, "data-rendered"), "8 charts");
    const std::string evil = "</script><script>alert(1)</script>";
    const std::vector<std::string> names{evil, "a & b", "bounded \"10\" 'x'"};
    const std::vector<std::string> percentiles{"p50", "p90", "p95", "p99", "max"};
    const auto drawn = charts(dom);
    ASSERT_EQ(drawn.size(), 8u) << dom.substr(0, 4000);
    EXPECT_EQ(drawn[0].kind, "rate-over-time");
    EXPECT_EQ(drawn[0].series, (std::vector<std::string>{names[0], names[1], names[2], names[0] + " errors",
                                                         names[1] + " errors", names[2] + " errors"}));
    EXPECT_EQ(drawn[1].kind, "latency-distribution");
    EXPECT_EQ(drawn[1].series, names);
    for (std::size_t i = 2; i < 5; ++i) {
        EXPECT_EQ(drawn[i].kind, "latency-over-time");
        EXPECT_EQ(drawn[i].series, percentiles);
    }
    EXPECT_EQ(drawn[5].series, (std::vector<std::string>{"avatar", "avatar errors"}));
    EXPECT_EQ(drawn[6].series, std::vector<std::string>{"avatar"});
    EXPECT_EQ(drawn[7].series, percentiles);
    for (const auto& c : drawn) {
        EXPECT_GE(c.width, 400) << c.kind;
        EXPECT_LE(c.width, 1280) << c.kind;
    }
    // Text from the documents is text: the title's <script> did not run (it would have set data-errors).
    EXPECT_NE(dom.find("&lt;/script&gt;&lt;script&gt;document.body.dataset.errors='pwned'"), std::string::npos);
    EXPECT_NE(dom.find("about 3x &amp; more"), std::string::npos) << "the verdict";
    EXPECT_NE(dom.find("3.0x"), std::string::npos) << "the verdict";
    EXPECT_NE(dom.find("1.02x the write-up"), std::string::npos) << "the verdict";
    EXPECT_NE(dom.find("5 calls one after another, &lt;b&gt;bold&lt;/b&gt;"), std::string::npos) << "the diagnosis";
    EXPECT_EQ(body_attribute(dom, "data-scheme"), "light");
    const auto requests = page_requests(net_log);
    EXPECT_TRUE(requests.empty()) << "the page asked for " << requests.front();
}

// The net log check above can fail: a page that loads an image and fetches over http(s) shows in it.
TEST_F(html_report_browser_test, net_log_shows_a_page_that_asks_for_urls) {
    std::ofstream(dir_ + "/control.html") << "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/x.png\">"
                                             "<script>fetch(\"https://127.0.0.1:9/y\").catch(() => {});</script>"
                                             "</body></html>\n";
    const std::string net_log = dir_ + "/control-net-log.json";
    fs::remove(net_log);
    const auto run = open("control.html", {"--dump-dom", "--log-net-log=" + net_log});
    ASSERT_EQ(run.exit_code, 0);
    const auto requests = page_requests(net_log);
    EXPECT_NE(std::find(requests.begin(), requests.end(), "http://127.0.0.1:9/x.png"), requests.end());
    EXPECT_NE(std::find(requests.begin(), requests.end(), "https://127.0.0.1:9/y"), requests.end());
}

// A phone: chromium's window is at least 500 px wide, so the page goes in a 390 px iframe (an iPhone's width in
// CSS pixels), whose DOM the wrapper copies out for --dump-dom (file:// pages may read each other only with
// --allow-file-access-from-files).
constexpr int phone_width = 390;
const char* const phone_page = R"(<!DOCTYPE html>
<html><body style="margin:0">
<iframe id="page" src="report.html" style="width:390px;height:3200px;border:0"></iframe>
<script>
const frame = document.getElementById("page");
frame.addEventListener("load", () => {
    const inner = frame.contentDocument;
    for (const [k, v] of Object.entries(inner.body.dataset)) {
        document.body.dataset[k] = v;
    }
    const charts = [...inner.querySelectorAll("[data-chart]")];
    document.body.dataset.chartWidths = JSON.stringify(charts.map((c) => Number(c.dataset.width)));
});
</script>
</body></html>
)";

TEST_F(html_report_browser_test, dark_scheme_and_phone_width) {
    const auto dark = open("report.html", {"--dump-dom", "--force-dark-mode", "--window-size=1280,2400"});
    ASSERT_EQ(dark.exit_code, 0);
    EXPECT_EQ(body_attribute(dark.out, "data-scheme"), "dark");
    EXPECT_EQ(body_attribute(dark.out, "data-errors"), "0") << body_attribute(dark.out, "data-first-error");

    std::ofstream(dir_ + "/phone.html") << phone_page;
    const auto phone = open("phone.html", {"--dump-dom", "--allow-file-access-from-files", "--window-size=500,3200"});
    ASSERT_EQ(phone.exit_code, 0);
    EXPECT_EQ(body_attribute(phone.out, "data-errors"), "0") << body_attribute(phone.out, "data-first-error");
    EXPECT_EQ(body_attribute(phone.out, "data-rendered"), "8 charts") << phone.out.substr(0, 2000);
    // The page's scroll width over its width: wider would scroll sideways (tables scroll inside their own box).
    EXPECT_EQ(body_attribute(phone.out, "data-width"), std::to_string(phone_width) + "/" + std::to_string(phone_width));
    const auto widths = boost::json::parse(body_attribute(phone.out, "data-chart-widths"));
    ASSERT_EQ(widths.as_array().size(), 8u);
    for (const auto& w : widths.as_array()) {
        EXPECT_LE(w.to_number<int>(), phone_width) << "a chart wider than the phone";
        EXPECT_GE(w.to_number<int>(), phone_width / 2) << "a chart that did not take the phone's width";
    }
}

// Screenshots to look at, kept under the build folder: light and dark at desktop width, and a phone.
TEST_F(html_report_browser_test, screenshots) {
    struct shot {
        const char* name;
        std::uint32_t width;
        std::vector<std::string> flags;
    };
    const shot shots[] = {{"light.png", 1280, {}},
                          {"dark.png", 1280, {"--force-dark-mode"}},
                          {"phone-light.png", phone_width, {}},
                          {"phone-dark.png", phone_width, {"--force-dark-mode"}}};
    std::ofstream(dir_ + "/phone.html") << phone_page;
    for (const auto& s : shots) {
        const std::string path = dir_ + "/" + s.name;
        fs::remove(path);
        auto flags = s.flags;
        flags.push_back("--screenshot=" + path);
        flags.push_back("--window-size=" + std::to_string(s.width) + ",3200");
        // The phone's page in its 390 px frame: the screenshot is the window's first 390 px.
        const bool phone = s.width == phone_width;
        if (phone) {
            flags.push_back("--allow-file-access-from-files");
        }
        const auto run = open(phone ? "phone.html" : "report.html", flags);
        EXPECT_EQ(run.exit_code, 0) << s.name;
        EXPECT_EQ(png_size(path), std::make_pair(s.width, std::uint32_t{3200})) << path;
        // A blank page of that size compresses to a few KB; text and charts do not.
        EXPECT_GT(fs::file_size(path), 50'000u) << path;
    }
    EXPECT_NE(read_file(dir_ + "/light.png"), read_file(dir_ + "/dark.png"));
    EXPECT_NE(read_file(dir_ + "/phone-light.png"), read_file(dir_ + "/phone-dark.png"));
}

// Documents of cases and schemas this build has not seen: a new metric, no histograms, no variants, not an object.
TEST_F(html_report_browser_test, draws_documents_it_has_not_seen_the_like_of) {
    const auto odd = boost::json::parse(R"([
        {"schema": "hotpath-lab/2", "case": "sync-io", "title": "new",
         "variants": [{"name": "blocking", "rps": 5, "latency_ms": {"p50": 1.5, "p999": 9},
                       "seconds": [{"second": 0, "responses": 5, "errors": 0, "latency_ms": {"p50": 1.5, "p999": 9}},
                                   {"second": 1, "responses": 0, "errors": 0, "latency_ms": {}}]}],
         "headline": {"label": "blocking p999", "metric": "p999", "numerator": "blocking", "denominator": "",
                      "value": null, "write_up": 0}},
        {},
        42,
        {"case": "empty", "variants": []}
    ])");
    ASSERT_TRUE(test::ok(lab::write_report_html(
        std::vector<boost::json::value>(odd.as_array().begin(), odd.as_array().end()), dir_ + "/odd.html")));
    const auto run = open("odd.html", {"--dump-dom", "--window-size=1280,2400"});
    ASSERT_EQ(run.exit_code, 0);
    EXPECT_EQ(body_attribute(run.out, "data-errors"), "0") << body_attribute(run.out, "data-first-error");
    EXPECT_EQ(body_attribute(run.out, "data-cases"), "4");
    EXPECT_EQ(body_attribute(run.out, "data-rendered"), "2 charts");
    const auto drawn = charts(run.out);
    ASSERT_EQ(drawn.size(), 2u);
    EXPECT_EQ(drawn[0].series, std::vector<std::string>{"blocking"});
    EXPECT_EQ(drawn[1].series, (std::vector<std::string>{"p50", "p999"}));
    EXPECT_NE(run.out.find("not computed"), std::string::npos);
}

// A `lab capacity` result: its verdict, the steps' table (the step measured again at the end among them), and
// throughput (measured, fitted, and measured again) and latency against users on a logarithmic axis; a document
// without a fit or a second look draws the measured curve alone.
TEST_F(html_report_browser_test, draws_a_capacity_result_with_its_fitted_curve) {
    const auto docs = boost::json::parse(R"([
        {"schema": "hotpath-capacity/1", "url": "http://127.0.0.1:5300/pool?ms=20",
         "steps": [{"users": 1, "throughput": 50, "mean_latency_s": 0.02, "p99_s": 0.021, "error_share": 0,
                    "in_flight": 1, "fitted": true},
                   {"users": 2, "throughput": 99, "mean_latency_s": 0.02, "p99_s": 0.021, "error_share": 0,
                    "in_flight": 2, "fitted": true},
                   {"users": 4, "throughput": 197, "mean_latency_s": 0.02, "p99_s": 0.022, "error_share": 0,
                    "in_flight": 4, "fitted": true},
                   {"users": 8, "throughput": 395, "mean_latency_s": 0.02, "p99_s": 0.021, "error_share": 0,
                    "in_flight": 8, "fitted": true}],
         "fit": {"lambda": 51.3, "sigma": 0.005, "kappa": 0.003, "lambda_se": 3.9, "sigma_se": null,
                 "kappa_se": 0.001, "r_squared": 0.96, "points": 4, "peak_users": 18, "peak_throughput": 457},
         "recheck": {"users": 4, "first_throughput": 197, "first_mean_latency_s": 0.02, "change": "faster",
                     "again": {"users": 4, "throughput": 310, "mean_latency_s": 0.013, "p99_s": 0.02,
                               "error_share": 0, "in_flight": 4}},
         "verdict": {"shape": "pool", "text": "a fixed pool: 413/s <b>at</b> a 80 ms latency", "knee_users": 8,
                     "peak_throughput": 413, "peak_users": 32, "pool_size": 8.1},
         "stopped": "throughput stopped growing for two steps"},
        {"schema": "hotpath-capacity/1", "url": "x", "steps": [{"users": 1, "throughput": 5}], "fit": null,
         "verdict": {}}
    ])");
    ASSERT_TRUE(test::ok(lab::write_report_html(
        std::vector<boost::json::value>(docs.as_array().begin(), docs.as_array().end()), dir_ + "/capacity.html")));
    const auto run = open("capacity.html", {"--dump-dom", "--window-size=1280,2400"});
    ASSERT_EQ(run.exit_code, 0);
    EXPECT_EQ(body_attribute(run.out, "data-errors"), "0") << body_attribute(run.out, "data-first-error");
    EXPECT_EQ(body_attribute(run.out, "data-rendered"), "4 charts");
    const auto drawn = charts(run.out);
    ASSERT_EQ(drawn.size(), 4u);
    EXPECT_EQ(drawn[0].kind, "capacity-throughput");
    EXPECT_EQ(drawn[0].series, (std::vector<std::string>{"measured", "fitted", "again, at the end"}));
    EXPECT_NE(run.out.find("4, again at the end"), std::string::npos);
    EXPECT_EQ(drawn[1].kind, "capacity-latency");
    EXPECT_EQ(drawn[1].series, (std::vector<std::string>{"mean", "p99"}));
    EXPECT_EQ(drawn[2].series, std::vector<std::string>{"measured"});
    EXPECT_NE(run.out.find("a fixed pool: 413/s &lt;b&gt;at&lt;/b&gt; a 80 ms latency"), std::string::npos);
    EXPECT_NE(run.out.find("<title>hotpath lab: capacity, capacity</title>"), std::string::npos);
    EXPECT_NE(run.out.find("Measured from the outside by hotpath lab capacity"), std::string::npos);
}

} // namespace
} // namespace hotpath
