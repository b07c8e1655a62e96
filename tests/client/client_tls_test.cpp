// HTTPS end to end in the library: the client's pools over TLS sessions to a server serving TLS, on real sockets
// (once per I/O backend). Verification and its failure classes, pooling and resumption, the server's handshake
// timeout and bound, a certificate reloaded in place, mutual TLS. Certificates: tests/support/test_certs.hpp.
#include "support/eventually.hpp"
#include "support/loop_runner.hpp"
#include "support/test_certs.hpp"
#include "support/test_server.hpp"
#include <hotpath/client/client.hpp>
#include <hotpath/core/when_all.hpp>
#include <hotpath/net/tls.hpp>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::eventually;
using test::run_on_loop;
using test::test_cert;

app hello_routes() {
    app routes;
    routes.get("/hello", [](request&, response& res) { res.text("hello over tls"); });
    return routes;
}

server_options tls_options(const std::string& cert = "server", http::limits limits = {}) {
    server_options o;
    o.threads = 1;
    o.limits = limits;
    o.tls.cert_file = test_cert(cert + ".pem");
    o.tls.key_file = test_cert(cert + ".key");
    return o;
}

client_options trusting_test_ca() {
    client_options o;
    o.tls.ca_file = test_cert("ca.pem");
    return o;
}

std::string url_of(const test::test_server& s, std::string_view host = "127.0.0.1") {
    return "https://" + std::string(host) + ":" + std::to_string(s.port()) + "/hello";
}

// `n` GETs of `url` one after another: each call's error (empty on a 200 with the body).
std::vector<std::error_code> get_n(client& c, const std::string& url, int n) {
    auto got = run_on_loop([](client& cl, std::string u, int count) -> task<std::vector<std::error_code>> {
        std::vector<std::error_code> out;
        for (int i = 0; i < count; ++i) {
            auto r = co_await cl.get(u);
            if (!r) {
                out.push_back(r.error());
            } else if (r->status() != 200 || r->body() != "hello over tls") {
                out.push_back(make_error_code(errc::unexpected_status));
            } else {
                out.emplace_back();
            }
        }
        co_return out;
    }(c, url, n));
    return got ? *got : std::vector<std::error_code>{make_error_code(errc::timeout)};
}

// A TCP connection to 127.0.0.1:port that never sends a byte.
int idle_socket(std::uint16_t port) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        if (fd >= 0) {
            ::close(fd);
        }
        return -1;
    }
    return fd;
}

// Whether the peer closed `fd` within `limit` (a read returns 0 or fails).
bool closed_within(int fd, std::chrono::milliseconds limit) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) {
        return false;
    }
    char byte = 0;
    return ::recv(fd, &byte, 1, 0) <= 0;
}

TEST(client_tls_test, calls_over_https_share_one_pooled_connection) {
    const app routes = hello_routes();
    test::test_server s(routes, tls_options());
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s.get().url().rfind("https://", 0), 0u) << s.get().url();
    client c(trusting_test_ca());
    for (const auto& e : get_n(c, url_of(s), 5)) {
        EXPECT_FALSE(e) << e.message();
    }
    EXPECT_EQ(c.stats().connections_opened, 1u);
    EXPECT_EQ(c.stats().reused, 4u);
    EXPECT_TRUE(eventually([&] { return s.get().stats().tls_handshakes == 1; }));
    // The name in the URL is verified as well as the address.
    for (const auto& e : get_n(c, url_of(s, "localhost"), 1)) {
        EXPECT_FALSE(e) << e.message();
    }
}

TEST(client_tls_test, concurrent_calls_each_get_their_answer) {
    const app routes = hello_routes();
    test::test_server s(routes, tls_options());
    ASSERT_TRUE(s.ok());
    client c(trusting_test_ca());
    auto got = run_on_loop([](client& cl, std::string u) -> task<std::vector<result<client_response>>> {
        std::vector<task<result<client_response>>> calls;
        for (int i = 0; i < 40; ++i) {
            calls.push_back(cl.get(u));
        }
        co_return co_await when_all(std::move(calls));
    }(c, url_of(s)));
    ASSERT_TRUE(got);
    for (const auto& r : *got) {
        ASSERT_TRUE(r) << r.error().message();
        EXPECT_EQ(r->body(), "hello over tls");
    }
    // New connections after the first resume its session (TLS 1.3 tickets), unless they raced it.
    EXPECT_TRUE(eventually([&] { return s.get().stats().tls_handshakes == c.stats().connections_opened; }));
}

TEST(client_tls_test, certificates_refused_fail_with_their_class) {
    const app routes = hello_routes();
    struct refusal {
        std::string cert;
        client_options options;
        net::tls_errc expected;
    };
    client_options system_roots; // the test CA is not among them
    client_options other_name = trusting_test_ca();
    other_name.tls.server_name = "elsewhere.invalid";
    for (auto& [cert, options, expected] : std::vector<refusal>{
             {"server", system_roots, net::tls_errc::unknown_issuer},
             {"self-signed", trusting_test_ca(), net::tls_errc::unknown_issuer},
             {"expired", trusting_test_ca(), net::tls_errc::certificate_expired},
             {"other-name", trusting_test_ca(), net::tls_errc::name_mismatch},
             {"server", other_name, net::tls_errc::name_mismatch},
         }) {
        test::test_server s(routes, tls_options(cert));
        ASSERT_TRUE(s.ok()) << cert;
        client c(options);
        const auto errors = get_n(c, url_of(s), 1);
        ASSERT_EQ(errors.size(), 1u);
        EXPECT_EQ(errors[0], make_error_code(expected)) << cert << ": " << errors[0].message();
        // -k: the same server answers.
        client_options insecure = options;
        insecure.tls.verify = false;
        client k(insecure);
        for (const auto& e : get_n(k, url_of(s), 1)) {
            EXPECT_FALSE(e) << cert << ": " << e.message();
        }
    }
}

TEST(client_tls_test, a_ca_file_that_cannot_be_read_fails_each_https_call) {
    client_options o;
    o.tls.ca_file = test_cert("nothing-here.pem");
    client c(o);
    const auto errors = get_n(c, "https://127.0.0.1:1/hello", 2);
    ASSERT_EQ(errors.size(), 2u);
    EXPECT_EQ(errors[0], errc::invalid_value) << errors[0].message();
    EXPECT_EQ(c.stats().connections_opened, 0u);
}

TEST(client_tls_test, mutual_tls_needs_the_client_certificate) {
    const app routes = hello_routes();
    server_options so = tls_options();
    so.tls.client_ca_file = test_cert("ca.pem");
    test::test_server s(routes, so);
    ASSERT_TRUE(s.ok());
    client anonymous(trusting_test_ca());
    const auto refused = get_n(anonymous, url_of(s), 1);
    ASSERT_EQ(refused.size(), 1u);
    EXPECT_TRUE(refused[0]) << "answered without a client certificate";
    client_options with_cert = trusting_test_ca();
    with_cert.tls.cert_file = test_cert("client.pem");
    with_cert.tls.key_file = test_cert("client.key");
    client c(with_cert);
    for (const auto& e : get_n(c, url_of(s), 2)) {
        EXPECT_FALSE(e) << e.message();
    }
    EXPECT_TRUE(eventually([&] { return s.get().stats().tls_failures >= 1; }));
}

TEST(client_tls_test, a_handshake_never_begun_is_closed_at_its_timeout) {
    const app routes = hello_routes();
    http::limits limits;
    limits.tls_handshake_timeout = 1s;
    test::test_server s(routes, tls_options("server", limits));
    ASSERT_TRUE(s.ok());
    const int fd = idle_socket(s.port());
    ASSERT_GE(fd, 0);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(closed_within(fd, 4s));
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 900ms); // not before its time
    ::close(fd);
    EXPECT_TRUE(eventually([&] { return s.get().stats().tls_timeouts == 1; }));
    // Others are served meanwhile and after.
    client c(trusting_test_ca());
    for (const auto& e : get_n(c, url_of(s), 1)) {
        EXPECT_FALSE(e) << e.message();
    }
}

TEST(client_tls_test, handshakes_past_the_bound_are_closed_at_once) {
    const app routes = hello_routes();
    http::limits limits;
    limits.max_tls_handshakes = 3;
    test::test_server s(routes, tls_options("server", limits));
    ASSERT_TRUE(s.ok());
    std::vector<int> held;
    for (int i = 0; i < 6; ++i) {
        held.push_back(idle_socket(s.port()));
        ASSERT_GE(held.back(), 0);
    }
    EXPECT_TRUE(eventually([&] { return s.get().stats().tls_refused == 3; })) << s.get().stats().tls_refused;
    int closed = 0;
    for (const int fd : held) {
        closed += closed_within(fd, 200ms) ? 1 : 0;
    }
    EXPECT_EQ(closed, 3);
    for (const int fd : held) {
        ::close(fd);
    }
    // Once they are gone, handshakes are taken again.
    client c(trusting_test_ca());
    EXPECT_TRUE(eventually(
        [&] {
            const auto e = get_n(c, url_of(s), 1);
            return e.size() == 1 && !e[0];
        },
        3s));
}

TEST(client_tls_test, a_reloaded_certificate_serves_new_connections_and_a_bad_one_is_refused) {
    const app routes = hello_routes();
    const std::filesystem::path dir = test::test_certs() + "/reload-" + std::to_string(::getpid());
    std::filesystem::create_directories(dir);
    const auto put = [&](const std::string& name) {
        std::filesystem::copy_file(test_cert(name + ".pem"), dir / "live.pem",
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::copy_file(test_cert(name + ".key"), dir / "live.key",
                                   std::filesystem::copy_options::overwrite_existing);
    };
    put("server");
    server_options so;
    so.threads = 2;
    so.tls.cert_file = (dir / "live.pem").string();
    so.tls.key_file = (dir / "live.key").string();
    test::test_server s(routes, so);
    ASSERT_TRUE(s.ok());
    // A connection opened before the reload goes on with the certificate it began with.
    client before(trusting_test_ca());
    auto kept = run_on_loop([](client& cl, std::string u, server& srv, std::function<void()> swap) -> task<int> {
        int ok = 0;
        ok += (co_await cl.get(u)) ? 1 : 0;
        swap();
        ok += srv.reload_tls() ? 1 : 0;
        ok += (co_await cl.get(u)) ? 1 : 0;
        co_return ok;
    }(before, url_of(s), s.get(), [&] { put("other-name"); }));
    ASSERT_TRUE(kept);
    EXPECT_EQ(*kept, 3);
    EXPECT_EQ(before.stats().connections_opened, 1u);
    EXPECT_EQ(before.stats().reused, 1u);
    // A new connection meets the new certificate (not for 127.0.0.1).
    client after(trusting_test_ca());
    EXPECT_TRUE(eventually([&] {
        const auto e = get_n(after, url_of(s), 1);
        return e.size() == 1 && e[0] == make_error_code(net::tls_errc::name_mismatch);
    }));
    std::filesystem::resize_file(dir / "live.pem", 10);
    const auto refused = s.get().reload_tls();
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::invalid_value);
    EXPECT_NE(refused.error().message.find("live.pem"), std::string::npos) << refused.error().message;
    std::filesystem::remove_all(dir);
}

TEST(client_tls_test, start_says_which_file_is_wrong) {
    const app routes = hello_routes();
    server_options so = tls_options();
    so.tls.key_file = test_cert("client.key"); // another certificate's key
    server s(routes, so);
    const auto started = s.start();
    ASSERT_FALSE(started);
    EXPECT_EQ(started.error().code, errc::invalid_value);
    EXPECT_NE(started.error().message.find("does not match"), std::string::npos) << started.error().message;
    EXPECT_EQ(s.threads(), 0u);
}

} // namespace
} // namespace hotpath
