// `hotpath lab diagnose URL --dotnet PID` on the .NET originals (peers/dotnet, published with dotnet-counters by
// scripts/build-peers.sh into HOTPATH_PEERS_DIR): a planted problem in a .NET service it never saw as hotpath,
// named from the runtime's own counters read while the lab loads it. Each test skips, naming what is missing, where
// the originals or the tool are not there (no dotnet).
#include "support/peers.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;

using test::child;
using test::port_from;
using test::running_peer;

// What is missing for these tests, as a line for GTEST_SKIP; "" when nothing is.
std::string missing(std::initializer_list<const char*> names) {
    if (auto m = test::missing_original(names); !m.empty()) {
        return m;
    }
    if (::access(test::dotnet_counters_path().c_str(), X_OK) != 0) {
        return "no " + test::dotnet_counters_path() + " (scripts/build-peers.sh installs it where dotnet is)";
    }
    return {};
}

// An original on Kestrel on a free port: its process, and its port once it accepts connections (0 if never).
running_peer start(const std::string& name, std::vector<std::string> args) {
    args.insert(args.begin(), {"--urls", "http://127.0.0.1:{port}"});
    return test::start_original(name, std::move(args));
}

// Runs `hotpath lab diagnose ...` to its end: its exit code and everything it printed.
std::pair<int, std::string> diagnose(std::vector<std::string> args) {
    args.insert(args.begin(), {"lab", "diagnose"});
    args.insert(args.end(), {"--dotnet-counters", test::dotnet_counters_path()});
    child run(std::move(args));
    std::string out = run.rest();
    return {run.wait_exit(60s), out};
}

TEST(dotnet_diagnose_test, a_blocking_handler_is_named_thread_pool_starvation) {
    if (const auto m = missing({"profile"}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const running_peer profile = start("profile", {"--delay", "500"});
    ASSERT_NE(profile.port, 0);
    const auto [code, out] =
        diagnose({"http://127.0.0.1:" + std::to_string(profile.port) + "/profile/sync/42", "--dotnet",
                  std::to_string(profile.process->pid()), "-c", "100", "-d", "5s", "--timeout", "10s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  thread_pool_starvation thread-pool starvation on GET /profile/sync/42"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find("verdict: see the problems above"), std::string::npos) << out;
}

TEST(dotnet_diagnose_test, the_same_wait_awaited_is_nothing_wrong) {
    if (const auto m = missing({"profile"}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const running_peer profile = start("profile", {"--delay", "500"});
    ASSERT_NE(profile.port, 0);
    const auto [code, out] = diagnose({"http://127.0.0.1:" + std::to_string(profile.port) + "/profile/async/42",
                                       "--dotnet", std::to_string(profile.process->pid()), "-c", "100", "-d", "5s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out.find("problem "), std::string::npos) << out;
    EXPECT_NE(out.find("verdict: nothing wrong"), std::string::npos) << out;
}

TEST(dotnet_diagnose_test, calls_awaited_one_after_another_are_named_with_their_count) {
    if (const auto m = missing({"weather", "aggregator"}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const running_peer weather = start("weather", {});
    ASSERT_NE(weather.port, 0);
    const running_peer aggregator =
        start("aggregator", {"--upstream", "http://127.0.0.1:" + std::to_string(weather.port)});
    ASSERT_NE(aggregator.port, 0);
    const auto [code, out] =
        diagnose({"http://127.0.0.1:" + std::to_string(aggregator.port) + "/?strategy=sequential&limit=10", "--dotnet",
                  std::to_string(aggregator.process->pid()), "-c", "4", "-d", "5s"});
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("problem  sequential_calls"), std::string::npos) << out;
    EXPECT_NE(out.find("outbound HTTP calls per request"), std::string::npos) << out;
}

TEST(dotnet_diagnose_test, a_process_that_is_not_there_or_not_dotnet_gets_one_line) {
    if (const auto m = missing({}); !m.empty()) {
        GTEST_SKIP() << m;
    }
    child server({"serve", "platform", "--port", "0", "--threads", "1"});
    const std::uint16_t port = port_from(server.line());
    ASSERT_NE(port, 0);
    const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/plaintext";

    auto [gone, gone_out] = diagnose({url, "--dotnet", "999999999", "-d", "1s"});
    EXPECT_EQ(gone, 2) << gone_out;
    EXPECT_NE(gone_out.find("--dotnet 999999999: no such process"), std::string::npos) << gone_out;

    auto [native, native_out] = diagnose({url, "--dotnet", std::to_string(server.pid()), "-d", "1s"});
    EXPECT_EQ(native, 1) << native_out;
    EXPECT_NE(native_out.find("dotnet-counters could not attach to process"), std::string::npos) << native_out;
}

// Bad usage, with or without dotnet on the machine: one line naming the accepted range, exit 2.
TEST(dotnet_diagnose_test, a_pid_that_is_not_a_process_id_is_bad_usage) {
    for (const char* pid : {"0", "-3", "abc"}) {
        child run({"lab", "diagnose", "http://127.0.0.1:1/x", "--dotnet", pid});
        const std::string out = run.rest();
        EXPECT_EQ(run.wait_exit(10s), 2) << pid << ": " << out;
        EXPECT_NE(out.find("--dotnet: Value " + std::string(pid) + " not in range 1 to"), std::string::npos) << out;
    }
}

} // namespace
} // namespace hotpath
