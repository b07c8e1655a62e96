// HAProxy (Debian's) in front of three `hotpath serve` instances, configured by deploy/haproxy/haproxy.cfg as a
// user would run it: the balanced address spreads requests over the instances, its health checks follow their
// /readyz, a rolling restart of every instance under load loses no request (--drain-delay), and `hotpath lab`
// measures the balanced address. Each test skips, naming it, where haproxy is not installed.
#include "support/child_process.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <array>
#include <csignal>
#include <fstream>
#include <iterator>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using test::child;
using test::free_port;
using test::port_from;
using test::wait_listening;
using namespace std::chrono_literals;

constexpr const char* haproxy_program = "/usr/sbin/haproxy";

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What curl prints for `args`, and its exit code.
std::pair<int, std::string> curl(const std::string& args) {
    child c("/bin/sh", {"-c", "curl -sS --max-time 5 " + args});
    std::string out = c.rest();
    return {c.wait_exit(), std::move(out)};
}

// One `hotpath serve platform` that goes on serving for 1.5 s after SIGTERM with /readyz answering 503.
struct instance {
    std::unique_ptr<child> process;
    std::uint16_t port = 0;

    void start(std::uint16_t at) {
        process = std::make_unique<child>(std::vector<std::string>{"serve", "platform", "--port", std::to_string(at),
                                                                   "--threads", "1", "--drain-delay", "1500"});
        port = port_from(process->line());
    }
    // SIGTERM, then its exit code once it has drained.
    int stop() {
        process->signal(SIGTERM);
        process->rest();
        return process->wait_exit(15s);
    }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port) + path; }
};

// HAProxy with the project's configuration in front of three instances.
class balanced {
public:
    balanced() {
        for (auto& i : instances) {
            i.start(0);
        }
        front_ = free_port();
        stats_ = free_port();
        std::string env =
            "HOTPATH_FRONT=127.0.0.1:" + std::to_string(front_) + " HOTPATH_STATS=127.0.0.1:" + std::to_string(stats_);
        for (std::size_t i = 0; i < instances.size(); ++i) {
            env += " HOTPATH_" + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(instances[i].port);
        }
        haproxy_ = std::make_unique<child>(
            "/bin/sh", std::vector<std::string>{"-c", env + " exec " + haproxy_program +
                                                          " -db -f " HOTPATH_SOURCE_DIR "/deploy/haproxy/haproxy.cfg"});
        up_ = wait_listening(front_, 10s) && wait_up(instances.size(), 10s);
    }
    ~balanced() {
        haproxy_->signal(SIGTERM);
        haproxy_->wait_exit(10s);
        for (auto& i : instances) {
            if (i.process != nullptr) {
                i.process->signal(SIGTERM);
                i.process->wait_exit(15s);
            }
        }
    }
    bool up() const { return up_; }
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(front_) + path; }
    // HAProxy's view of the instances, from its statistics page as CSV: server name -> status (UP, DOWN, ...).
    std::vector<std::pair<std::string, std::string>> states() const {
        std::vector<std::pair<std::string, std::string>> out;
        for (const auto& m : rows("^hotpath,(hotpath[0-9]),(?:[^,]*,){15}([A-Z]+)")) {
            out.emplace_back(m[1], m[2]);
        }
        return out;
    }
    // HAProxy's count, over every instance, of what it hid from the clients: connection errors, response errors,
    // retries and redispatches (the econ, eresp, wretr and wredis columns).
    std::uint64_t retried() const {
        std::uint64_t sum = 0;
        for (const auto& m : rows("^hotpath,hotpath[0-9],(?:[^,]*,){11}([0-9]*),([0-9]*),([0-9]*),([0-9]*),")) {
            for (std::size_t i = 1; i <= 4; ++i) {
                sum += m[i].empty() ? 0 : std::stoull(m[i]);
            }
        }
        return sum;
    }
    std::string state_of(std::size_t index) const {
        for (const auto& [name, status] : states()) {
            if (name == "hotpath" + std::to_string(index + 1)) {
                return status;
            }
        }
        return "missing";
    }
    // Whether `count` instances are UP within `timeout`.
    bool wait_up(std::size_t count, std::chrono::milliseconds timeout) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            std::size_t n = 0;
            for (const auto& s : states()) {
                n += s.second == "UP" ? 1 : 0;
            }
            if (n >= count) {
                return true;
            }
            std::this_thread::sleep_for(50ms);
        }
        return false;
    }
    bool wait_state(std::size_t index, const std::string& state, std::chrono::milliseconds timeout) const {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            if (state_of(index) == state) {
                return true;
            }
            std::this_thread::sleep_for(25ms);
        }
        return false;
    }

    std::array<instance, 3> instances;

private:
    // The lines of HAProxy's statistics (CSV) that match `pattern`, each as its groups.
    std::vector<std::vector<std::string>> rows(const std::string& pattern) const {
        const auto [code, csv] = curl("'http://127.0.0.1:" + std::to_string(stats_) + "/;csv'");
        const std::regex row(pattern);
        std::vector<std::vector<std::string>> out;
        std::size_t from = 0;
        while (from < csv.size()) {
            const std::size_t end = std::min(csv.find('\n', from), csv.size());
            const std::string line = csv.substr(from, end - from);
            from = end + 1;
            std::smatch m;
            if (std::regex_search(line, m, row)) {
                out.emplace_back(m.begin(), m.end());
            }
        }
        return out;
    }

    std::unique_ptr<child> haproxy_;
    std::uint16_t front_ = 0;
    std::uint16_t stats_ = 0;
    bool up_ = false;
};

std::string missing_haproxy() {
    return ::access(haproxy_program, X_OK) == 0 ? "" : std::string(haproxy_program) + " is not installed";
}

std::uint64_t requests_served(const instance& i) {
    const auto [code, text] = curl(i.url("/metrics"));
    std::smatch m;
    static const std::regex sample(R"re(hotpath_http_requests_by_protocol_total\{protocol="http/1.1"\} ([0-9]+))re");
    return std::regex_search(text, m, sample) ? std::stoull(m[1]) : 0;
}

TEST(haproxy_test, the_balanced_address_spreads_requests_and_follows_readiness) {
    if (const auto m = missing_haproxy(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    balanced b;
    ASSERT_TRUE(b.up()) << "HAProxy did not come up with three instances UP";
    child load({"load", b.url("/plaintext"), "-n", "3000", "-c", "6", "-t", "1", "-q"});
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(30s), 0) << out;
    EXPECT_NE(out.find("3000 responses"), std::string::npos) << out;
    for (const auto& i : b.instances) {
        EXPECT_GT(requests_served(i), 500u) << "round robin over three: about 1000 each";
    }

    // SIGTERM: not ready at once, still serving; HAProxy takes it out within two checks; then it drains and ends.
    instance& first = b.instances[0];
    first.process->signal(SIGTERM);
    EXPECT_NE(first.process->line().find("not ready, still serving for 1500 ms (--drain-delay)"), std::string::npos);
    const auto [ready_code, ready] = curl("-w ' %{http_code}' " + first.url("/readyz"));
    EXPECT_NE(ready.find(" 503"), std::string::npos) << ready;
    EXPECT_EQ(curl(first.url("/plaintext")).second, "Hello, World!");
    EXPECT_TRUE(b.wait_state(0, "DOWN", 1500ms)) << b.state_of(0);
    first.process->rest();
    EXPECT_EQ(first.process->wait_exit(15s), 0);
    first.process.reset();
    EXPECT_EQ(curl(b.url("/plaintext")).second, "Hello, World!");
}

// Every instance restarted in turn (SIGTERM, its exit, started again on its port, UP again) while a load runs
// through HAProxy: every request answered 200, none failed, none retried.
TEST(haproxy_test, a_rolling_restart_loses_nothing) {
    if (const auto m = missing_haproxy(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    balanced b;
    ASSERT_TRUE(b.up()) << "HAProxy did not come up with three instances UP";
    const std::string json = ::testing::TempDir() + "hotpath_haproxy_rolling_" + std::to_string(::getpid()) + ".json";
    child load({"load", b.url("/plaintext"), "-d", "16s", "-c", "8", "-t", "1", "-q", "--json", json});
    std::this_thread::sleep_for(1s);
    for (std::size_t i = 0; i < b.instances.size(); ++i) {
        SCOPED_TRACE("instance " + std::to_string(i + 1));
        instance& one = b.instances[i];
        const std::uint16_t port = one.port;
        EXPECT_EQ(one.stop(), 0);
        EXPECT_EQ(b.state_of(i), "DOWN");
        one.start(port);
        ASSERT_EQ(one.port, port);
        EXPECT_TRUE(b.wait_state(i, "UP", 5s)) << b.state_of(i);
    }
    const std::string out = load.rest();
    EXPECT_EQ(load.wait_exit(30s), 0) << out;
    const auto doc = boost::json::parse(read_all(json)).as_object();
    const auto responses = doc.at("responses").to_number<std::uint64_t>();
    EXPECT_GT(responses, 1000u) << out;
    EXPECT_EQ(doc.at("successes").to_number<std::uint64_t>(), responses) << out;
    for (const auto& [name, count] : doc.at("errors").as_object()) {
        EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
    }
    for (const auto& i : b.instances) {
        EXPECT_GT(requests_served(i), 0u) << "each restarted instance took requests again";
    }
    // Nor did HAProxy retry any: each instance was out of rotation before it stopped accepting (without
    // --drain-delay, the clients see no error either, but only through HAProxy's retries and redispatches).
    EXPECT_EQ(b.retried(), 0u);
    std::remove(json.c_str());
}

// `hotpath lab capacity` measures the balanced address as any other.
TEST(haproxy_test, lab_capacity_measures_the_balanced_address) {
    if (const auto m = missing_haproxy(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    balanced b;
    ASSERT_TRUE(b.up()) << "HAProxy did not come up with three instances UP";
    child lab({"lab", "capacity", b.url("/plaintext"), "--max-users", "8", "--step", "1s", "--warmup", "200ms",
               "--min-steps", "3"});
    const std::string out = lab.rest();
    EXPECT_EQ(lab.wait_exit(120s), 0) << out;
    EXPECT_NE(out.find("capacity of " + b.url("/plaintext")), std::string::npos) << out;
    EXPECT_NE(out.find("verdict  "), std::string::npos) << out;
}

} // namespace
} // namespace hotpath
