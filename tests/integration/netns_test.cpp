// Emulated hosts: load generators each in a network namespace of its own, reaching the target through a veth pair
// as another machine would through its network card, run one plan split in segments and started together; their
// merged result is the plan's exactly and agrees with one process running the whole plan. Skips, saying why, where
// network namespaces cannot be made (not root, no CAP_NET_ADMIN, no `ip`).
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using namespace std::chrono_literals;
namespace json = boost::json;

std::pair<int, std::string> sh(const std::string& command) {
    child c("/bin/sh", {"-c", command + " 2>&1"});
    std::string out = c.rest();
    return {c.wait_exit(60s), std::move(out)};
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// N namespaces, host i's side of its veth pair 10.213.i.1/30 and its own 10.213.i.2/30, its default route through
// the first: each reaches this machine's addresses as a host on its own link would. Removed on destruction (a
// namespace's end removes its veth pair).
class hosts {
public:
    explicit hosts(int n) {
        const std::string tag = std::to_string(::getpid() % 100000);
        for (int i = 0; i < n; ++i) {
            const std::string ns = "hp" + tag + "h" + std::to_string(i);
            const std::string outside = "hp" + tag + "o" + std::to_string(i); // at most 15 characters
            const std::string inside = "hp" + tag + "i" + std::to_string(i);
            const std::string net = "10.213." + std::to_string(i) + ".";
            names_.push_back(ns);
            const auto [code, out] =
                sh("set -e; ip netns add " + ns + "; ip link add " + outside + " type veth peer name " + inside +
                   "; ip link set " + inside + " netns " + ns + "; ip addr add " + net + "1/30 dev " + outside +
                   "; ip link set " + outside + " up; ip -n " + ns + " addr add " + net + "2/30 dev " + inside +
                   "; ip -n " + ns + " link set " + inside + " up; ip -n " + ns + " link set lo up; ip -n " + ns +
                   " route add default via " + net + "1");
            if (code != 0) {
                why_ = out;
                return;
            }
            addresses_.push_back(net + "1");
        }
    }
    ~hosts() {
        for (const auto& ns : names_) {
            sh("ip netns del " + ns);
        }
    }
    bool ok() const { return why_.empty(); }
    const std::string& why() const { return why_; }
    const std::string& name(int i) const { return names_.at(static_cast<std::size_t>(i)); }
    // This machine's address as host i sees it across its link.
    const std::string& target(int i) const { return addresses_.at(static_cast<std::size_t>(i)); }

private:
    std::vector<std::string> names_;
    std::vector<std::string> addresses_;
    std::string why_;
};

std::string cannot_make_namespaces() {
    if (::geteuid() != 0) {
        return "network namespaces need root";
    }
    if (sh("command -v ip").first != 0) {
        return "no ip command (iproute2)";
    }
    return {};
}

double p_us(const json::object& doc, const char* p) {
    return doc.at("latency").at("percentiles_us").at(p).to_number<double>();
}

TEST(netns_test, generators_on_emulated_hosts_send_the_plan_exactly_and_agree_with_one_process) {
    if (const auto why = cannot_make_namespaces(); !why.empty()) {
        GTEST_SKIP() << why;
    }
    constexpr int n = 3;
    hosts h(n);
    if (!h.ok()) {
        GTEST_SKIP() << "cannot make network namespaces here: " << h.why();
    }
    // The target: 5 ms a request (an awaited call), so that latency is the service's, not the link's.
    child server({"serve", "weather", "--address", "0.0.0.0", "--port", "0", "--threads", "1", "--delay", "5ms"});
    const std::string announced = server.line();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(announced, m, std::regex(R"(http://0\.0\.0\.0:(\d+))"))) << announced;
    const auto port = static_cast<std::uint16_t>(std::stoi(m[1]));
    const auto dir = std::filesystem::path(::testing::TempDir()) / ("hotpath_netns_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const std::vector<std::string> plan{"-R", "600", "-d", "3s", "-c", "12", "-t", "1", "-q", "--no-thresholds"};

    // Host i's part, from its namespace, all three starting at one time.
    const std::string at = std::to_string(
        std::chrono::ceil<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch() + 2s).count());
    std::vector<std::unique_ptr<child>> parts;
    std::string merge = HOTPATH_BINARY " load merge";
    for (int i = 0; i < n; ++i) {
        const std::string json_file = (dir / ("part-" + std::to_string(i) + ".json")).string();
        std::vector<std::string> args{
            "netns",        "exec", h.name(i),
            HOTPATH_BINARY, "load", "http://" + h.target(i) + ":" + std::to_string(port) + "/weatherForecast"};
        args.insert(args.end(), plan.begin(), plan.end());
        for (const std::string& more : {std::string("--segment"), std::to_string(i) + "/" + std::to_string(n),
                                        std::string("--start-at"), at, std::string("--json"), json_file}) {
            args.push_back(more);
        }
        parts.push_back(std::make_unique<child>("/usr/sbin/ip", args));
        merge += " " + json_file;
    }
    for (auto& p : parts) {
        const std::string out = p->rest();
        EXPECT_EQ(p->wait_exit(30s), 0) << out;
    }
    const std::string merged_file = (dir / "merged.json").string();
    const auto [merged_code, merged_report] = sh("{ " + merge + " > " + merged_file + "; }");
    ASSERT_EQ(merged_code, 0) << merged_report;
    const std::string merged_text = read_all(merged_file);
    const json::value merged_value = json::parse(merged_text);
    const json::object& merged = merged_value.as_object();

    // The whole plan from one process on this machine's loopback, for comparison.
    const std::string whole_file = (dir / "whole.json").string();
    std::vector<std::string> args{"load", "http://127.0.0.1:" + std::to_string(port) + "/weatherForecast"};
    args.insert(args.end(), plan.begin(), plan.end());
    args.insert(args.end(), {"--json", whole_file});
    child whole(args);
    const std::string whole_out = whole.rest();
    ASSERT_EQ(whole.wait_exit(30s), 0) << whole_out;
    const json::value whole_value = json::parse(read_all(whole_file));
    const json::object& one = whole_value.as_object();

    // Exactly the plan: 600/s for 3 s, every one answered, as the one process's.
    EXPECT_EQ(merged.at("responses").to_number<std::uint64_t>(), 1800u) << merged_text;
    EXPECT_EQ(one.at("responses").to_number<std::uint64_t>(), 1800u) << whole_out;
    EXPECT_EQ(merged.at("successes").to_number<std::uint64_t>(), 1800u);
    EXPECT_FALSE(merged.at("run").as_object().contains("segment"));
    EXPECT_LT(merged.at("run").at("start_spread_ns").to_number<std::int64_t>(), 100'000'000);
    // Latency within noise of the one process's: the median within a fifth (5 ms a request either way, a veth hop
    // adds tens of microseconds), the p99 within a factor of two (a few requests: the machine's noise).
    EXPECT_NEAR(p_us(merged, "50") / p_us(one, "50"), 1.0, 0.2) << merged_report << "\n" << whole_out;
    EXPECT_LT(p_us(merged, "99"), 2 * p_us(one, "99") + 2000) << merged_report << "\n" << whole_out;
    EXPECT_LT(p_us(one, "99"), 2 * p_us(merged, "99") + 2000) << merged_report << "\n" << whole_out;

    server.signal(SIGTERM);
    server.wait_exit();
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace hotpath
