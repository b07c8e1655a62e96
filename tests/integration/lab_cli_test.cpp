// `hotpath lab` as a child process: quick runs of the redirect, fanout and freight cases end to end, their result
// files, the direction of the fan-out and freight ratios, bad usage, and no child service outliving an
// interrupted lab.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using namespace std::chrono_literals;

std::string temp_dir(const std::string& name) {
    const std::string d = ::testing::TempDir() + "hotpath_lab_" + std::to_string(::getpid()) + "_" + name;
    std::filesystem::remove_all(d);
    return d;
}

boost::json::object read_result(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    boost::system::error_code ec;
    auto v = boost::json::parse(text, ec);
    EXPECT_FALSE(ec) << path << ": " << ec.message();
    EXPECT_TRUE(v.is_object()) << path;
    return v.is_object() ? v.as_object() : boost::json::object{};
}

// The fields docs/lab.md promises on every variant.
void expect_variant_fields(const boost::json::object& v) {
    for (const char* key :
         {"name", "url", "requests", "errors", "rps", "latency_ms", "seconds", "routes", "diagnosis", "load"}) {
        EXPECT_TRUE(v.contains(key)) << key;
    }
    for (const char* p : {"p50", "p95", "p99", "mean", "max"}) {
        EXPECT_TRUE(v.at("latency_ms").as_object().contains(p)) << p;
    }
    EXPECT_FALSE(v.at("seconds").as_array().empty());
    EXPECT_FALSE(v.at("diagnosis").as_array().empty());
}

const boost::json::object& variant(const boost::json::object& doc, const std::string& name) {
    for (const auto& v : doc.at("variants").as_array()) {
        if (v.at("name").as_string() == name) {
            return v.as_object();
        }
    }
    static const boost::json::object none;
    ADD_FAILURE() << "no variant " << name;
    return none;
}

TEST(lab_cli_test, redirect_quick_writes_its_result) {
    const std::string out = temp_dir("redirect");
    child lab({"lab", "redirect", "--quick", "--out", out});
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(60s), 0) << said;
    EXPECT_NE(said.find("write-up: 8,791 req/s"), std::string::npos) << said;
    const auto doc = read_result(out + "/redirect/result.json");
    EXPECT_EQ(doc.at("schema").as_string(), "hotpath-lab/1");
    EXPECT_EQ(doc.at("case").as_string(), "redirect");
    const auto& v = variant(doc, "avatar");
    expect_variant_fields(v);
    EXPECT_EQ(v.at("requests").to_number<double>(), 10000);
    EXPECT_EQ(v.at("errors").to_number<double>(), 0);
    EXPECT_GT(v.at("rps").to_number<double>(), 0);
    EXPECT_TRUE(doc.at("headline").as_object().at("value").is_number());
    // The HTML report beside the results, named on the last line (its page: tests/lab/html_report_*_test.cpp).
    EXPECT_TRUE(std::filesystem::is_regular_file(out + "/report.html")) << said;
    EXPECT_NE(said.find("report: " + out + "/report.html\n"), std::string::npos) << said;
    std::filesystem::remove_all(out);
}

// The write-up's own avatar on Kestrel, where scripts/build-peers.sh published it beside this build (build/peers):
// loaded with the same plan, marked as an original, its headline beside hotpath's. --no-originals and a --peers
// folder without them run hotpath's side alone and say so.
TEST(lab_cli_test, redirect_quick_runs_the_original_on_kestrel_where_it_is_built) {
    const auto peers = std::filesystem::path(HOTPATH_BINARY).parent_path().parent_path() / "peers";
    for (const std::string how : {"default", "--no-originals", "--peers"}) {
        const std::string out = temp_dir("redirect_originals");
        std::vector<std::string> args{"lab", "--quick", "redirect", "--out", out};
        if (how == "--no-originals") {
            args.push_back(how);
        } else if (how == "--peers") {
            args.insert(args.end(), {"--peers", out + "/nowhere"});
        }
        child lab(args);
        const std::string said = lab.rest();
        ASSERT_EQ(lab.wait_exit(60s), 0) << said;
        const auto doc = read_result(out + "/redirect/result.json");
        const bool built = std::filesystem::exists(peers / "platform" / "platform");
        if (how != "default" || !built) {
            EXPECT_EQ(doc.at("variants").as_array().size(), 1u) << how;
            EXPECT_NE(said.find("hotpath's side alone"), std::string::npos) << how << ": " << said;
            EXPECT_TRUE(doc.at("headline").at("original_value").is_null());
        } else {
            const auto& o = variant(doc, "avatar (Kestrel)");
            EXPECT_TRUE(o.at("original").as_bool());
            EXPECT_FALSE(variant(doc, "avatar").at("original").as_bool());
            EXPECT_EQ(o.at("requests").to_number<double>(), 10000);
            EXPECT_EQ(o.at("errors").to_number<double>(), 0);
            EXPECT_TRUE(doc.at("headline").at("original_value").is_number());
            EXPECT_NE(said.find("avatar: hotpath "), std::string::npos) << said;
            EXPECT_NE(said.find(" vs Kestrel "), std::string::npos) << said;
        }
        std::filesystem::remove_all(out);
    }
    if (!std::filesystem::exists(peers / "platform" / "platform")) {
        GTEST_SKIP() << "the .NET originals are not built in " << peers.string() << " (scripts/build-peers.sh)";
    }
}

TEST(lab_cli_test, fanout_quick_shows_sequential_slower_than_bounded) {
    const std::string out = temp_dir("fanout");
    child lab({"lab", "fanout", "--quick", "--out", out});
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(100s), 0) << said;
    const auto doc = read_result(out + "/fanout/result.json");
    EXPECT_EQ(doc.at("case").as_string(), "fanout");
    for (const char* name : {"sequential", "all", "bounded"}) {
        expect_variant_fields(variant(doc, name));
    }
    const double sequential = variant(doc, "sequential").at("latency_ms").at("p95").to_number<double>();
    const double bounded = variant(doc, "bounded").at("latency_ms").at("p95").to_number<double>();
    EXPECT_GT(sequential, bounded) << said;
    // The diagnosis comes from the aggregator's own report: calls awaited one after another.
    const auto& first = variant(doc, "sequential").at("diagnosis").as_array().at(0).as_object();
    EXPECT_EQ(first.at("kind").as_string(), "sequential_calls") << said;
    EXPECT_EQ(doc.at("shared").as_array().size(), 1u);
    std::filesystem::remove_all(out);
}

// --tls: every service over HTTPS with a certificate made for the run, the originals on Kestrel too (the aggregator
// calling its weather upstream over HTTPS, trusting the run's CA), scraped over HTTPS; the verdict holds, and the
// certificates' folder is gone afterwards.
TEST(lab_cli_test, fanout_quick_over_tls_keeps_its_verdict_and_the_originals_serve_https_too) {
    const std::string out = temp_dir("fanout_tls");
    child lab({"lab", "fanout", "--quick", "--out", out, "--tls"});
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(150s), 0) << said;
    EXPECT_NE(said.find("(over HTTPS)"), std::string::npos) << said;
    const auto doc = read_result(out + "/fanout/result.json");
    EXPECT_TRUE(doc.at("https").as_bool());
    for (const auto& v : doc.at("variants").as_array()) {
        EXPECT_EQ(v.at("url").as_string().subview().substr(0, 8), "https://") << v.at("name").as_string();
        EXPECT_EQ(v.at("errors").to_number<double>(), 0) << v.at("name").as_string() << "\n" << said;
        EXPECT_GT(v.at("requests").to_number<double>(), 0) << v.at("name").as_string();
    }
    const double sequential = variant(doc, "sequential").at("latency_ms").at("p95").to_number<double>();
    const double bounded = variant(doc, "bounded").at("latency_ms").at("p95").to_number<double>();
    EXPECT_GT(sequential, bounded) << said;
    // The aggregator's report, read over HTTPS.
    const auto& first = variant(doc, "sequential").at("diagnosis").as_array().at(0).as_object();
    EXPECT_EQ(first.at("kind").as_string(), "sequential_calls") << said;
    const auto peers = std::filesystem::path(HOTPATH_BINARY).parent_path().parent_path() / "peers";
    if (std::filesystem::exists(peers / "platform" / "platform")) {
        const auto& o = variant(doc, "sequential (Kestrel)");
        EXPECT_EQ(o.at("url").as_string().subview().substr(0, 8), "https://");
        EXPECT_GT(o.at("latency_ms").at("p95").to_number<double>(),
                  variant(doc, "bounded (Kestrel)").at("latency_ms").at("p95").to_number<double>())
            << said;
    }
    static const std::regex ca(R"(trusted through its CA alone \((\S+)/ca\.pem\))");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(said, m, ca)) << said;
    EXPECT_FALSE(std::filesystem::exists(m[1].str())) << "the run's certificates outlive it";
    std::filesystem::remove_all(out);
}

TEST(lab_cli_test, freight_quick_shows_churn_slower_than_lean_and_removes_its_folder) {
    const std::string out = temp_dir("freight");
    child lab({"lab", "--quick", "--out", out, "freight"}); // options before the case name too
    const std::string said = lab.rest();
    ASSERT_EQ(lab.wait_exit(110s), 0) << said;
    // The setup ran in a folder of the case's own, gone once the case ended.
    static const std::regex setup(R"(setup: hotpath freight init --db (\S+)/freight\.sqlite)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(said, m, setup)) << said;
    EXPECT_FALSE(std::filesystem::exists(m[1].str())) << m[1].str();
    const auto doc = read_result(out + "/freight/result.json");
    EXPECT_EQ(doc.at("case").as_string(), "freight");
    for (const char* name : {"churn", "lean"}) {
        const auto& v = variant(doc, name);
        expect_variant_fields(v);
        EXPECT_EQ(v.at("errors").to_number<double>(), 0) << said; // unknown CEPs answer an expected 404
        EXPECT_GT(v.at("success_rps").to_number<double>(), 0);
    }
    const auto& churn = variant(doc, "churn");
    const auto& lean = variant(doc, "lean");
    EXPECT_GT(churn.at("latency_ms").at("p95").to_number<double>(), lean.at("latency_ms").at("p95").to_number<double>())
        << said;
    EXPECT_GT(lean.at("rps").to_number<double>(), churn.at("rps").to_number<double>()) << said;
    const auto& headline = doc.at("headline").as_object();
    EXPECT_EQ(headline.at("label").as_string(), "churn/lean p95");
    EXPECT_GT(headline.at("value").to_number<double>(), 1.0) << said;
    // Allocations are shown only when the service counted them; a release build says so instead.
    if (churn.at("allocations_per_request").is_null()) {
        EXPECT_NE(said.find("allocs/req: not counted in this build"), std::string::npos) << said;
    } else {
        EXPECT_GT(churn.at("allocations_per_request").to_number<double>(),
                  lean.at("allocations_per_request").to_number<double>());
    }
    std::filesystem::remove_all(out);
}

TEST(lab_cli_test, bad_usage_is_one_line_and_exit_2) {
    child lab({"lab", "nope"});
    const std::string said = lab.rest();
    EXPECT_EQ(lab.wait_exit(), 2) << said;
    EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
}

bool alive(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno != ESRCH;
}

TEST(lab_cli_test, sigint_leaves_no_child_service_running) {
    const std::string out = temp_dir("sigint");
    child lab({"lab", "fanout", "--out", out});
    std::vector<pid_t> pids;
    static const std::regex started(R"(started \S+ \(pid (\d+)\))");
    // weather, then the first aggregator: both running once the second line is out, and the load starting.
    while (pids.size() < 2) {
        const std::string line = lab.line();
        ASSERT_FALSE(line.empty()) << "the lab ended before starting its services";
        std::smatch m;
        if (std::regex_search(line, m, started)) {
            pids.push_back(static_cast<pid_t>(std::stol(m[1].str())));
        }
    }
    for (const pid_t pid : pids) {
        EXPECT_TRUE(alive(pid)) << pid;
    }
    std::this_thread::sleep_for(500ms); // into the load
    lab.signal(SIGINT);
    EXPECT_EQ(lab.wait_exit(20s), 130) << lab.rest();
    for (const pid_t pid : pids) {
        EXPECT_FALSE(alive(pid)) << "service pid " << pid << " outlived the lab";
    }
    std::filesystem::remove_all(out);
}

// SIGTERM while the first service is still starting (its health check) or the next one is: the same clean end.
TEST(lab_cli_test, sigterm_during_start_up_leaves_no_child_service_running) {
    const std::string out = temp_dir("sigterm");
    child lab({"lab", "fanout", "--out", out});
    pid_t pid = 0;
    static const std::regex started(R"(started \S+ \(pid (\d+)\))");
    while (pid == 0) {
        const std::string line = lab.line();
        ASSERT_FALSE(line.empty()) << "the lab ended before starting its services";
        std::smatch m;
        if (std::regex_search(line, m, started)) {
            pid = static_cast<pid_t>(std::stol(m[1].str()));
        }
    }
    lab.signal(SIGTERM);
    EXPECT_EQ(lab.wait_exit(20s), 130) << lab.rest();
    EXPECT_FALSE(alive(pid)) << "service pid " << pid << " outlived the lab";
    std::filesystem::remove_all(out);
}

} // namespace
} // namespace hotpath
