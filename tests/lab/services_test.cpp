// The lab's child services as real processes: a peer (a program that is not `hotpath serve`) on a port the lab
// chose, a peer that cannot start, one that exits at once, and one that writes far more than a pipe holds before
// it serves (its output is drained, so it never blocks).
#include <hotpath/lab/services.hpp>

#include "support/result_assert.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <string>
#include <vector>

namespace hotpath::lab {
namespace {

using namespace std::chrono_literals;

bool alive(pid_t pid) {
    return ::kill(pid, 0) == 0 || errno != ESRCH;
}

TEST(LabServices, APeerRunsOnThePortTheLabChoseAndIsStopped) {
    service_set set;
    const std::uint16_t port = free_loopback_port();
    ASSERT_NE(port, 0);
    const auto started =
        set.start_peer("avatar-peer", {HOTPATH_BINARY, "serve", "avatar", std::to_string(port), "10"}, port, "/", 10s);
    ASSERT_TRUE(test::ok(started));
    const service* s = *started;
    EXPECT_FALSE(s->hotpath);
    EXPECT_EQ(s->port, port);
    const pid_t pid = s->pid;
    auto answer = get_local(port, "/", 2s);
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->status, 302u);
    set.stop(s);
    EXPECT_FALSE(alive(pid));
    EXPECT_TRUE(set.pids().empty());
}

TEST(LabServices, APeerThatIsNotThereIsAOneLineReason) {
    service_set set;
    const std::string why =
        test::failure_of(set.start_peer("ghost", {"/nonexistent/peer", "--urls", "http://127.0.0.1:1"}, 1, "/", 2s));
    EXPECT_NE(why.find("not an executable"), std::string::npos) << why;
    EXPECT_TRUE(set.pids().empty());
}

TEST(LabServices, APeerThatExitsAtOnceFailsWithoutWaitingForTheTimeout) {
    service_set set;
    const auto start = std::chrono::steady_clock::now();
    const std::string why = test::failure_of(
        set.start_peer("quitter", {"/bin/sh", "-c", "echo no config; exit 3"}, free_loopback_port(), "/", 20s));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_NE(why.find("exited"), std::string::npos) << why;
    EXPECT_TRUE(set.pids().empty());
}

// 1 MiB of output before it serves: without a reader the child would block on a full pipe (64 KiB) and never answer.
TEST(LabServices, AChattyChildNeverBlocksOnItsOutput) {
    service_set set;
    const std::uint16_t port = free_loopback_port();
    ASSERT_NE(port, 0);
    const std::string script = "head -c 1048576 /dev/zero | tr '\\0' x; echo; exec '" + std::string{HOTPATH_BINARY} +
                               "' serve avatar " + std::to_string(port) + " 10";
    const auto started = set.start_peer("chatty", {"/bin/sh", "-c", script}, port, "/", 10s);
    ASSERT_TRUE(test::ok(started));
    auto answer = get_local(port, "/", 2s);
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->status, 302u);
    set.stop_all();
    EXPECT_TRUE(set.pids().empty());
}

} // namespace
} // namespace hotpath::lab
