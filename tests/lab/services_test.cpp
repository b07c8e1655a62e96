// The lab's child services as real processes: a peer (a program that is not `hotpath serve`) on a port the lab
// chose, a peer that cannot start, one that exits at once, and one that writes far more than a pipe holds before
// it serves (its output is drained, so it never blocks); over HTTPS with the certificates made for a run (--tls).
#include <hotpath/lab/services.hpp>

#include "support/result_assert.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <filesystem>
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
    auto answer = get_local(*s, "/", 2s);
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
    auto answer = get_local(**started, "/", 2s);
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->status, 302u);
    set.stop_all();
    EXPECT_TRUE(set.pids().empty());
}

// The run's certificates: a chain that openssl verifies for both names, a key its owner alone reads.
TEST(LabServices, TheRunsCertificatesVerifyForLocalhostAndTheLoopbackAddress) {
    const std::string dir = ::testing::TempDir() + "hotpath_lab_certs_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const auto made = make_lab_certificates(dir);
    ASSERT_TRUE(test::ok(made));
    for (const char* name : {"-verify_hostname localhost", "-verify_ip 127.0.0.1"}) {
        const std::string command =
            "openssl verify -CAfile " + made->ca_file + " " + name + " " + made->cert_file + " > /dev/null";
        EXPECT_EQ(std::system(command.c_str()), 0) << command;
    }
    struct stat st {};
    ASSERT_EQ(::stat(made->key_file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_FALSE(test::ok(make_lab_certificates(dir + "/nowhere")));
    std::filesystem::remove_all(dir);
}

// With certificates, a peer gets the certificate through Kestrel's configuration variables (here a shell that hands
// them to hotpath serve) and the CA in SSL_CERT_FILE, and is reached over HTTPS.
TEST(LabServices, WithCertificatesAPeerServesHttpsWithKestrelsVariables) {
    const std::string dir = ::testing::TempDir() + "hotpath_lab_tls_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const auto made = make_lab_certificates(dir);
    ASSERT_TRUE(test::ok(made));
    service_set set(&*made); // (start() runs this executable: hotpath's own services are lab_cli_test's)
    const std::uint16_t port = free_loopback_port();
    ASSERT_NE(port, 0);
    const std::string script = "test \"$SSL_CERT_FILE\" = '" + made->ca_file + "' || exit 9; exec '" +
                               std::string{HOTPATH_BINARY} + "' serve avatar " + std::to_string(port) +
                               " 10 --tls-cert \"$Kestrel__Certificates__Default__Path\" --tls-key "
                               "\"$Kestrel__Certificates__Default__KeyPath\"";
    const auto peer = set.start_peer("kestrel-like", {"/bin/sh", "-c", script}, port, "/", 10s);
    ASSERT_TRUE(test::ok(peer));
    EXPECT_EQ((*peer)->url(), "https://127.0.0.1:" + std::to_string(port));
    auto answer = get_local(**peer, "/", 2s);
    ASSERT_TRUE(answer) << answer.error().message;
    EXPECT_EQ(answer->status, 302u);
    set.stop_all();
    std::filesystem::remove_all(dir);
}

} // namespace
} // namespace hotpath::lab
