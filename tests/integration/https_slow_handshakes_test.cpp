// 2,000 slow TLS handshakes (a partial ClientHello, then silence) held open against `hotpath serve` leave other
// clients' p99 where it was, every request answered: the loop waits on them without spending itself on them.
#include "integration/https_support.hpp"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <iostream>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using namespace https_support;
using test::test_cert;

constexpr std::size_t slow_count = 2000;

// The first 11 bytes of a ClientHello and nothing of what they announce: a handshake record header announcing 512
// bytes (RFC 8446 §5.1), the ClientHello's header announcing 508 (§4) and its legacy_version (§4.1.2). The server can
// only wait for the rest.
constexpr unsigned char partial_client_hello[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03};

// RLIMIT_NOFILE's soft limit raised to at least `wanted` (up to the hard limit) for this process and the children it
// starts from now on (the server holds one descriptor per slow connection, as this process does); put back at the
// end of its scope.
class raised_fd_limit {
public:
    explicit raised_fd_limit(rlim_t wanted) {
        ::getrlimit(RLIMIT_NOFILE, &old_);
        rlimit raised = old_;
        if (raised.rlim_cur < wanted) {
            raised.rlim_cur = std::min(wanted, raised.rlim_max);
            ::setrlimit(RLIMIT_NOFILE, &raised);
        }
        ::getrlimit(RLIMIT_NOFILE, &raised);
        now_ = raised.rlim_cur;
    }
    raised_fd_limit(const raised_fd_limit&) = delete;
    raised_fd_limit& operator=(const raised_fd_limit&) = delete;
    ~raised_fd_limit() { ::setrlimit(RLIMIT_NOFILE, &old_); }

    rlim_t now() const { return now_; }

private:
    rlimit old_{};
    rlim_t now_ = 0;
};

// TCP connections to 127.0.0.1:port that each sent partial_client_hello and then nothing; closed at the end of its
// scope (or by close_all). Close-on-exec: the load and curl started meanwhile do not hold them too.
class slow_handshakes {
public:
    slow_handshakes(std::uint16_t port, std::size_t count) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        fds_.reserve(count);
        for (std::size_t i = 0; i < count; ++i) {
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (fd < 0) {
                error_ = "socket: " + std::string(std::strerror(errno));
                return;
            }
            fds_.push_back(fd);
            if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                error_ = "connect: " + std::string(std::strerror(errno));
                return;
            }
            if (::send(fd, partial_client_hello, sizeof partial_client_hello, MSG_NOSIGNAL) !=
                static_cast<ssize_t>(sizeof partial_client_hello)) {
                error_ = "send: " + std::string(std::strerror(errno));
                return;
            }
        }
    }
    slow_handshakes(const slow_handshakes&) = delete;
    slow_handshakes& operator=(const slow_handshakes&) = delete;
    ~slow_handshakes() { close_all(); }

    // How many connected and sent their bytes; why the next one could not, if one could not.
    std::size_t opened() const { return error_.empty() ? fds_.size() : fds_.size() - 1; }
    const std::string& error() const { return error_; }

    // How many of them the server answered or closed (anything to read, an end of stream, a reset) within `wait`:
    // none, while it holds them waiting for the rest of their ClientHello.
    std::size_t answered(std::chrono::milliseconds wait) const {
        std::vector<pollfd> all;
        all.reserve(fds_.size());
        for (const int fd : fds_) {
            all.push_back({fd, POLLIN | POLLRDHUP, 0});
        }
        const int ready = ::poll(all.data(), all.size(), static_cast<int>(wait.count()));
        return ready < 0 ? all.size() : static_cast<std::size_t>(ready);
    }

    void close_all() {
        for (const int fd : fds_) {
            ::close(fd);
        }
        fds_.clear();
    }

private:
    std::vector<int> fds_;
    std::string error_;
};

// One sample of the server's /metrics without labels ("hotpath_http_connections 2001"); -1 when absent.
long long metric(const https_server& srv, const std::string& name) {
    const auto [code, text] = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/metrics"));
    std::smatch m;
    if (code != 0 || !std::regex_search(text, m, std::regex("\n" + name + " (\\d+)\n"))) {
        return -1;
    }
    return std::stoll(m[1]);
}

// The server's resident memory, from /proc; 0 when unknown.
long long resident_kib(pid_t pid) {
    const std::string status = read_all("/proc/" + std::to_string(pid) + "/status");
    std::smatch m;
    return std::regex_search(status, m, std::regex(R"(VmRSS:\s+(\d+) kB)")) ? std::stoll(m[1]) : 0;
}

// The user plus system CPU time a process has spent, from /proc (in clock ticks, 10 ms on Linux); zero when unknown.
std::chrono::milliseconds cpu_time(pid_t pid) {
    const std::string stat = read_all("/proc/" + std::to_string(pid) + "/stat");
    // Fields after the command name (which may hold spaces): utime is the 14th, stime the 15th.
    const auto end_of_name = stat.rfind(')');
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    if (end_of_name == std::string::npos ||
        std::sscanf(stat.c_str() + end_of_name + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime,
                    &stime) != 2) {
        return {};
    }
    return std::chrono::milliseconds{(utime + stime) * 1000 / static_cast<unsigned long long>(::sysconf(_SC_CLK_TCK))};
}

// `hotpath load` on /plaintext over keep-alive connections for 2 s: its p99 in microseconds, after checking that
// every request succeeded (no connection refused, no TLS failure, no error of any class).
double load_p99_us(const https_server& srv, const std::string& label) {
    SCOPED_TRACE(label);
    const auto [code, out] = run({"load", srv.url("/plaintext"), "-c", "8", "-d", "2s", "-t", "1", "-q", "--cacert",
                                  test_cert("ca.pem"), "--json", "-"},
                                 30s);
    EXPECT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    if (doc.empty()) {
        return 0;
    }
    EXPECT_GT(number(doc, {"responses"}), 0u) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"responses"})) << out;
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;
    EXPECT_EQ(number(doc, {"tls", "handshakes"}), 8u) << out;
    for (const auto& [name, count] : doc.at("errors").as_object()) {
        EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
    }
    for (const auto& [name, count] : doc.at("tls").as_object().at("failures").as_object()) {
        EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
    }
    const auto* p99 = doc.at("latency").as_object().at("percentiles_us").as_object().if_contains("99");
    if (p99 == nullptr) {
        ADD_FAILURE() << "no latency.percentiles_us.99\n" << out;
        return 0;
    }
    return p99->to_number<double>();
}

// The server and the load take a core each (the test waits meanwhile), without and with the slow connections held.
// What holding them could cost shows three ways: the load's connections refused or failing (its errors and connect
// failures), the server's CPU time while it only holds them (a loop spinning on them, or working through them on
// each turn), and the load's p99 (a loop slowed for every request). The p99's bound leaves room for a noisy 2-core
// machine, where neighbours busy on both cores alone take it to a few ms: 3 times the baseline, or 5 ms over it when
// that is more; and a p99 past it is measured once more before it counts, since noise passes and a cost of the held
// handshakes does not. In a closed model a stalled loop stalls the load too, so its p99 hides short stalls: the CPU
// time is what sees a loop kept busy by them.
TEST(https_test, slow_handshakes_held_open_leave_other_clients_p99_unchanged) {
    const raised_fd_limit fds(slow_count + 1024);
    if (fds.now() < slow_count + 256) {
        GTEST_SKIP() << "RLIMIT_NOFILE's hard limit " << fds.now() << " is too low for " << slow_count
                     << " connections";
    }
    for (const char* io : {"uring", "epoll"}) {
        SCOPED_TRACE(io);
        https_server srv(serve_test_cert({"--io", io, "--max-tls-handshakes", "4096", "--tls-handshake-timeout", "30"}),
                         90s);
        ASSERT_NE(srv.port(), 0) << srv.first_line();
        const double baseline_us = load_p99_us(srv, "baseline");
        const long long rss_before_kib = resident_kib(srv.pid());

        slow_handshakes slow(srv.port(), slow_count);
        ASSERT_EQ(slow.opened(), slow_count) << slow.error();
        // The server accepted them all and holds them: open in its count, none answered or closed.
        long long open = 0;
        const auto deadline = std::chrono::steady_clock::now() + 10s;
        while ((open = metric(srv, "hotpath_http_connections")) < static_cast<long long>(slow_count) &&
               std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(50ms);
        }
        ASSERT_GE(open, static_cast<long long>(slow_count)) << "connections the server counts open";
        // Held, they cost the server nothing: for a second none is answered or closed, and the server's CPU time
        // grows by little more than its once-a-second tick over the connections (a loop that spun on them would
        // take the whole second).
        const auto cpu_before = cpu_time(srv.pid());
        EXPECT_EQ(slow.answered(1s), 0u) << "the server answered or closed some of them";
        const auto idle_cpu = cpu_time(srv.pid()) - cpu_before;
        EXPECT_LT(idle_cpu, 100ms) << "the server's CPU time in a second of holding them";
        const long long rss_held_kib = resident_kib(srv.pid());

        double loaded_us = load_p99_us(srv, "with the slow handshakes held");
        const double bound_us = std::max(3 * baseline_us, baseline_us + 5000);
        if (loaded_us > bound_us) {
            std::cout << "[ p99 ] " << io << ": " << loaded_us << " us past " << bound_us << " us: measured again\n";
            loaded_us = std::min(loaded_us, load_p99_us(srv, "with the slow handshakes held, again"));
        }
        std::cout << "[ p99 ] " << io << ": baseline " << baseline_us << " us, with " << slow_count
                  << " slow handshakes held " << loaded_us << " us (bound " << bound_us << " us); server CPU "
                  << idle_cpu.count() << " ms in a second of holding them, resident " << rss_before_kib << " KiB, "
                  << rss_held_kib << " KiB with them\n";
        EXPECT_LE(loaded_us, bound_us) << "p99 without the slow handshakes " << baseline_us << " us";
        // They were held through the measurement: none answered, closed, cut at the timeout or refused.
        EXPECT_EQ(slow.answered(0ms), 0u);
        EXPECT_EQ(tls_handshakes(srv, "timeout"), 0);
        EXPECT_EQ(tls_handshakes(srv, "refused"), 0);
        const long long failed = tls_handshakes(srv, "failed");

        // Once they leave, the server lets them go (a peer leaving mid-handshake is no failed handshake) and serves
        // as before.
        slow.close_all();
        const auto gone = std::chrono::steady_clock::now() + 10s;
        while ((open = metric(srv, "hotpath_http_connections")) > 16 && std::chrono::steady_clock::now() < gone) {
            std::this_thread::sleep_for(50ms);
        }
        EXPECT_LE(open, 16) << "connections the server still counts open";
        EXPECT_GE(open, 1) << "the metrics' own connection";
        EXPECT_EQ(tls_handshakes(srv, "failed"), failed);
        EXPECT_EQ(tls_handshakes(srv, "timeout"), 0);
        const auto [code, out] = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/plaintext"));
        EXPECT_EQ(code, 0) << out;
        EXPECT_EQ(out, "Hello, World!");
        ASSERT_EQ(srv.stop(), 0) << srv.rest();
        EXPECT_NE(srv.rest().find(" failed, 0 timed out, 0 refused over --max-tls-handshakes"), std::string::npos)
            << srv.rest();
        EXPECT_EQ(srv.rest().find("accepting paused"), std::string::npos) << srv.rest();
    }
}

} // namespace
} // namespace hotpath
