// TLS sessions on the transport seam (net/tls): a client session and a server session over in-memory transports,
// their records relayed between them split into pieces of every size from one byte up, so that the glue is fed
// records cut at every point; each class of certificate refusal with its own error; mutual TLS; ALPN; resumption.
// Certificates are made for the run by scripts/make-test-certs.sh (openssl), never committed.
#include "support/memory_transport.hpp"
#include "support/test_certs.hpp"

#include <hotpath/net/loop.hpp>
#include <hotpath/net/timer.hpp>
#include <hotpath/net/tls.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>

namespace hotpath::net {
namespace {

using namespace std::chrono_literals;

std::string cert(const std::string& name) {
    return test::test_cert(name);
}

const std::string& certs() {
    return test::test_certs();
}

// The plain side of a session: what it read, how it ended, its writes told.
struct plain_end final : transport_owner {
    std::string got;
    bool ended = false;
    std::error_code end_error;
    int written = 0;
    std::error_code write_error;
    bool closed = false;
    std::function<void()> changed = [] {};

    void on_transport_data(std::string_view bytes) override {
        got.append(bytes);
        changed();
    }
    void on_transport_end(std::error_code e) override {
        ended = true;
        end_error = e;
        changed();
    }
    void on_transport_written(std::error_code e) override {
        ++written;
        write_error = e;
        changed();
    }
    void on_transport_closed() override {
        closed = true;
        changed();
    }
};

// Moves what one memory peer received to the other, in pieces of `piece` bytes.
void relay(test::memory_peer& from, test::memory_peer& to, std::size_t piece, std::size_t& moved) {
    const std::string& bytes = from.received();
    while (moved < bytes.size()) {
        const std::size_t n = std::min(piece, bytes.size() - moved);
        to.send(std::string_view(bytes).substr(moved, n));
        moved += n;
    }
    from.read_all();
}

struct exchange {
    std::shared_ptr<tls_context> client_context;
    std::shared_ptr<tls_context> server_context;
    std::string server_name = "localhost";
    std::size_t piece = 1 << 20;
    std::string request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

    plain_end client;
    plain_end server;
    tls_session_info client_info;
    tls_session_info server_info;

    // Runs the exchange: the client writes its request, the server answers once it has it all; ends when the
    // client has the reply or either side ended (a refusal), or after 10 s.
    void run() {
        loop l(0);
        test::memory_transports client_side;
        test::memory_transports server_side;
        tls_transports client_tls(client_context, client_side, server_name);
        tls_transports server_tls(server_context, server_side);
        std::unique_ptr<transport> c;
        std::unique_ptr<transport> s;
        std::size_t to_server = 0;
        std::size_t to_client = 0;
        bool answered = false;
        auto check = [&] {
            if (!answered && server.got.size() >= request.size()) {
                answered = true;
                s->write(reply);
            }
            if (client.got.size() >= reply.size() || client.ended || server.ended) {
                l.stop();
            }
        };
        client.changed = check;
        server.changed = check;
        l.post([&] {
            c = client_tls.make(l, -1, client);
            s = server_tls.make(l, -1, server);
            auto& cp = client_side.peers().front();
            auto& sp = server_side.peers().front();
            cp.on_change([&] { relay(cp, sp, piece, to_server); });
            sp.on_change([&] { relay(sp, cp, piece, to_client); });
            relay(cp, sp, piece, to_server); // the client's hello, written as it was made
            s->start_reading();
            c->start_reading();
            c->write(request);
        });
        timer guard(l);
        guard.arm_after(10s, [&l] { l.stop(); });
        l.run();
        client_info = static_cast<tls_transport&>(*c).info();
        server_info = static_cast<tls_transport&>(*s).info();
        // Closed before the loop goes: the sessions' deferred calls run while it still turns.
        bool stopped = false;
        l.post([&] {
            c->close();
            s->close();
            l.defer([&] { stopped = true; });
        });
        client.changed = [&] {
            if (client.closed && server.closed)
                l.stop();
        };
        server.changed = client.changed;
        guard.arm_after(2s, [&l] { l.stop(); });
        l.run();
        (void)stopped;
    }
};

std::shared_ptr<tls_context> client_context(tls_client_options o = {}) {
    if (o.ca_file.empty() && o.verify) {
        o.ca_file = cert("ca.pem");
    }
    auto c = tls_context::client(o);
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c ? *c : nullptr;
}

std::shared_ptr<tls_context> server_context(const std::string& name = "server", tls_server_options o = {}) {
    o.cert_file = cert(name + ".pem");
    o.key_file = cert(name + ".key");
    auto c = tls_context::server(o);
    EXPECT_TRUE(c.has_value()) << c.error().message;
    return c ? *c : nullptr;
}

TEST(tls_test, a_request_and_its_reply_cross_with_records_split_at_every_size) {
    const auto client = client_context();
    const auto server = server_context();
    for (const std::size_t piece : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{7},
                                    std::size_t{64}, std::size_t{517}, std::size_t{16'389}, std::size_t{1} << 20}) {
        exchange x;
        x.client_context = client;
        x.server_context = server;
        x.piece = piece;
        x.run();
        EXPECT_EQ(x.server.got, x.request) << "pieces of " << piece;
        EXPECT_EQ(x.client.got, x.reply) << "pieces of " << piece;
        EXPECT_EQ(x.client.written, 1) << "pieces of " << piece;
        EXPECT_FALSE(x.client.write_error) << x.client.write_error.message();
        EXPECT_TRUE(x.client_info.done);
        EXPECT_EQ(x.client_info.version, "TLSv1.3");
        EXPECT_TRUE(x.client.closed && x.server.closed) << "pieces of " << piece;
    }
}

TEST(tls_test, a_large_write_and_alpn_and_tls_1_2) {
    tls_client_options co;
    co.alpn = {"h2", "http/1.1"};
    co.min_version = tls_1_2;
    tls_server_options so;
    so.alpn = {"http/1.1"};
    exchange x;
    x.client_context = client_context(co);
    x.server_context = server_context("server", so);
    x.request = std::string(300'000, 'q'); // many records, one write
    x.piece = 1'000;
    x.run();
    EXPECT_EQ(x.server.got.size(), x.request.size());
    EXPECT_EQ(x.client.got, x.reply);
    EXPECT_EQ(x.client_info.alpn, "http/1.1");
    EXPECT_EQ(x.server_info.alpn, "http/1.1");
}

// The one table of failure classes: their order and numbers (the load's counts are indexed by them), the short names
// the load's JSON and probe print (fixed: files written earlier are read by `hotpath load merge`), and a line each.
TEST(tls_test, each_failure_class_has_one_short_name_and_one_line) {
    const struct {
        tls_errc e;
        std::string_view name;
        std::string_view says;
    } classes[] = {
        {tls_errc::certificate_expired, "certificate_expired", "TLS: the certificate has expired"},
        {tls_errc::unknown_issuer, "unknown_issuer", "TLS: the certificate's issuer is not trusted"},
        {tls_errc::name_mismatch, "name_mismatch", "TLS: the certificate is not for this host name"},
        {tls_errc::certificate_invalid, "certificate_invalid", "TLS: the certificate failed verification"},
        {tls_errc::handshake_failed, "handshake", "TLS: the handshake failed"},
        {tls_errc::peer_certificate_required, "client_certificate", "TLS: a client certificate is required"},
        {tls_errc::no_common_protocol, "alpn", "TLS: the server agreed to none of the protocols offered"},
    };
    ASSERT_EQ(std::size(classes), tls_errcs.size());
    for (std::size_t i = 0; i < tls_errcs.size(); ++i) {
        const auto& c = classes[i];
        EXPECT_EQ(tls_errcs[i], c.e) << c.name;
        EXPECT_EQ(static_cast<std::size_t>(c.e), i + 1) << c.name;
        EXPECT_EQ(tls_errc_name(c.e), c.name);
        const std::error_code code = c.e; // is_error_code_enum
        EXPECT_EQ(code.category(), tls_category());
        EXPECT_STREQ(code.category().name(), "tls");
        EXPECT_EQ(code.message().rfind(c.says, 0), 0u) << code.message();
    }
    static_assert(tls_errc_name(tls_errc::unknown_issuer) == "unknown_issuer"); // usable at compile time
    EXPECT_EQ(tls_errc_name(static_cast<tls_errc>(0)), "");
    EXPECT_EQ(tls_errc_name(static_cast<tls_errc>(tls_errcs.size() + 1)), "");
}

TEST(tls_test, each_refused_certificate_has_its_own_error) {
    const struct {
        const char* server_cert;
        std::string name;
        tls_errc expected;
    } cases[] = {
        {"expired", "localhost", tls_errc::certificate_expired},
        {"other-name", "localhost", tls_errc::name_mismatch},
        {"self-signed", "localhost", tls_errc::unknown_issuer},
        {"server", "elsewhere.invalid", tls_errc::name_mismatch},
        {"server", "127.0.0.2", tls_errc::name_mismatch}, // an address the certificate does not name
    };
    for (const auto& c : cases) {
        exchange x;
        x.client_context = client_context();
        x.server_context = server_context(c.server_cert);
        x.server_name = c.name;
        x.run();
        EXPECT_TRUE(x.client.got.empty()) << c.server_cert;
        EXPECT_EQ(x.client.write_error, make_error_code(c.expected))
            << c.server_cert << " as " << c.name << ": " << x.client.write_error.message();
        EXPECT_FALSE(x.client_info.done);
        EXPECT_FALSE(make_error_code(c.expected).message().empty());
    }
}

TEST(tls_test, an_address_in_the_certificate_and_verification_off_are_accepted) {
    exchange by_address;
    by_address.client_context = client_context();
    by_address.server_context = server_context();
    by_address.server_name = "127.0.0.1"; // no SNI for an address; verified against the IP SAN
    by_address.run();
    EXPECT_EQ(by_address.client.got, by_address.reply);

    tls_client_options insecure;
    insecure.verify = false;
    exchange x;
    x.client_context = client_context(insecure);
    x.server_context = server_context("self-signed");
    x.run();
    EXPECT_EQ(x.client.got, x.reply);
}

TEST(tls_test, mutual_tls_needs_the_client_certificate) {
    tls_server_options so;
    so.client_ca_file = cert("ca.pem");
    exchange without;
    without.client_context = client_context();
    without.server_context = server_context("server", so);
    without.run();
    EXPECT_TRUE(without.client.got.empty());
    EXPECT_TRUE(without.server.got.empty());
    EXPECT_EQ(without.server.end_error, make_error_code(tls_errc::peer_certificate_required))
        << without.server.end_error.message();

    tls_client_options co;
    co.cert_file = cert("client.pem");
    co.key_file = cert("client.key");
    exchange with;
    with.client_context = client_context(co);
    with.server_context = server_context("server", so);
    with.run();
    EXPECT_EQ(with.client.got, with.reply);
}

TEST(tls_test, a_second_connection_resumes_the_first_ones_session) {
    const auto client = client_context();
    const auto server = server_context();
    exchange first;
    first.client_context = client;
    first.server_context = server;
    first.run();
    EXPECT_FALSE(first.client_info.resumed);
    exchange second;
    second.client_context = client;
    second.server_context = server;
    second.run();
    EXPECT_EQ(second.client.got, second.reply);
    EXPECT_TRUE(second.client_info.resumed);

    tls_client_options fresh;
    fresh.resume = false;
    const auto no_resume = client_context(fresh);
    for (int i = 0; i < 2; ++i) {
        exchange x;
        x.client_context = no_resume;
        x.server_context = server;
        x.run();
        EXPECT_FALSE(x.client_info.resumed) << i;
    }
}

// A server with several certificates: "other-name" first, then by SNI "server" (localhost), "api" (api.test),
// "wildcard" (*.apps.test) and "cn-only.test" (a common name, no alternative names).
tls_server_options several_certificates() {
    tls_server_options so;
    so.cert_file = cert("other-name.pem");
    so.key_file = cert("other-name.key");
    for (const char* name : {"server", "api", "wildcard", "cn-only.test"}) {
        so.sni_certificates.push_back({cert(std::string(name) + ".pem"), cert(std::string(name) + ".key")});
    }
    return so;
}

TEST(tls_test, the_certificate_is_chosen_by_the_name_the_client_asks_for) {
    auto server = tls_context::server(several_certificates());
    ASSERT_TRUE(server.has_value()) << server.error().message;
    const auto client = client_context();
    const struct {
        std::string name;
        bool verified; // the certificate served is for the name
    } cases[] = {
        {"localhost", true},         {"API.test", true},         {"x.apps.test", true},
        {"a.b.apps.test", false},    {"apps.test", false},       {"cn-only.test", true},
        {"elsewhere.invalid", true}, {"unknown.example", false}, {"127.0.0.1", false}, // no SNI: the first
    };
    for (const auto& c : cases) {
        exchange x;
        x.client_context = client;
        x.server_context = *server;
        x.server_name = c.name;
        x.run();
        if (c.verified) {
            EXPECT_EQ(x.client.got, x.reply) << c.name << ": " << x.client.write_error.message();
            EXPECT_EQ(x.server_info.alpn, "http/1.1") << c.name; // ALPN still chosen after the switch
        } else {
            EXPECT_EQ(x.client.write_error, make_error_code(tls_errc::name_mismatch))
                << c.name << ": " << x.client.write_error.message();
        }
    }
    exchange again; // resumes the session of the certificate chosen by name
    again.client_context = client;
    again.server_context = *server;
    again.server_name = "API.test";
    again.run();
    EXPECT_EQ(again.client.got, again.reply);
    EXPECT_TRUE(again.client_info.resumed);
}

TEST(tls_test, a_certificate_chosen_by_name_still_needs_the_client_certificate) {
    tls_server_options so = several_certificates();
    so.client_ca_file = cert("ca.pem");
    auto server = tls_context::server(so);
    ASSERT_TRUE(server.has_value()) << server.error().message;
    exchange without;
    without.client_context = client_context();
    without.server_context = *server;
    without.server_name = "api.test";
    without.run();
    EXPECT_TRUE(without.client.got.empty());
    EXPECT_EQ(without.server.end_error, make_error_code(tls_errc::peer_certificate_required))
        << without.server.end_error.message();
    tls_client_options co;
    co.cert_file = cert("client.pem");
    co.key_file = cert("client.key");
    exchange with;
    with.client_context = client_context(co);
    with.server_context = *server;
    with.server_name = "api.test";
    with.run();
    EXPECT_EQ(with.client.got, with.reply) << with.client.write_error.message();
}

TEST(tls_test, a_bad_certificate_among_several_is_named) {
    tls_server_options so = several_certificates();
    so.sni_certificates.push_back({cert("api.pem"), cert("wildcard.key")});
    auto r = tls_context::server(so);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("api.pem"), std::string::npos) << r.error().message;
    so = several_certificates();
    so.sni_certificates.push_back({certs() + "/nothing.pem", cert("api.key")});
    r = tls_context::server(so);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("nothing.pem"), std::string::npos) << r.error().message;
    so = several_certificates();
    so.sni_certificates.push_back({cert("api.pem"), ""});
    EXPECT_FALSE(tls_context::server(so).has_value());
}

TEST(tls_test, bad_files_and_versions_are_refused_in_one_line) {
    tls_server_options so;
    so.cert_file = cert("server.pem");
    so.key_file = cert("client.key"); // not its key
    auto r = tls_context::server(so);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("does not match"), std::string::npos) << r.error().message;
    so.key_file = certs() + "/nothing.key";
    r = tls_context::server(so);
    ASSERT_FALSE(r.has_value());
    EXPECT_NE(r.error().message.find("nothing.key"), std::string::npos) << r.error().message;
    tls_client_options co;
    co.ca_file = certs() + "/nothing.pem";
    EXPECT_FALSE(tls_context::client(co).has_value());
    co = {};
    co.min_version = 0x0301; // TLS 1.0
    EXPECT_FALSE(tls_context::client(co).has_value());
    co = {};
    co.cert_file = cert("client.pem"); // without its key
    EXPECT_FALSE(tls_context::client(co).has_value());
}

} // namespace
} // namespace hotpath::net
