// HTTPS with real peers: `hotpath serve --tls-cert` answering curl, openssl s_client, Python's ssl module and
// headless Chromium; certificates chosen by SNI, close_notify, mutual TLS, handshake timeout and bound, SIGHUP reload
// and usage errors.
#include "integration/https_support.hpp"

#include <gtest/gtest.h>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using namespace https_support;
using test::test_cert;

TEST(https_test, serve_announces_https_and_kernel_tls_and_answers_curl_over_tls_1_3_with_alpn) {
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    EXPECT_EQ(srv.first_line().rfind("hotpath: serving platform on https://127.0.0.1:", 0), 0u) << srv.first_line();
    const std::string second = srv.line();
    EXPECT_NE(second.find("kernel TLS"), std::string::npos) << second;
    EXPECT_NE(second.find("TLS 1.2+"), std::string::npos) << second;
    EXPECT_NE(second.find(test_cert("server.pem")), std::string::npos) << second;

    const std::string ca = "--cacert " + test_cert("ca.pem") + " ";
    auto [code, out] = curl(ca + srv.url("/plaintext"));
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "Hello, World!");
    std::tie(code, out) = curl(ca + srv.url("/json"));
    EXPECT_EQ(out, R"({"message":"Hello, World!"})");
    std::tie(code, out) = curl("-v " + ca + srv.url("/plaintext"));
    EXPECT_EQ(code, 0) << out;
    EXPECT_NE(out.find("ALPN: server accepted h2"), std::string::npos) << out; // HTTP/2 first, as curl prefers
    EXPECT_NE(out.find("< HTTP/2 200"), std::string::npos) << out;
    EXPECT_NE(out.find("SSL connection using TLSv1.3"), std::string::npos) << out;
    EXPECT_NE(out.find("Hello, World!"), std::string::npos) << out;
    // Plain HTTP to the HTTPS port is no request.
    std::tie(code, out) = curl("http://127.0.0.1:" + std::to_string(srv.port()) + "/plaintext");
    EXPECT_NE(code, 0) << out;
    EXPECT_EQ(out.find("Hello, World!"), std::string::npos) << out;
    // Without the test CA, curl refuses the certificate: the checks above did verify it.
    std::tie(code, out) = curl(srv.url("/plaintext"));
    EXPECT_EQ(code, 60) << out;

    ASSERT_EQ(srv.stop(), 0) << srv.rest();
    static const std::regex exit_line(R"(hotpath: TLS: (\d+) handshakes \(0 resumed\), (\d+) failed)");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(srv.rest(), m, exit_line)) << srv.rest();
    EXPECT_GE(std::stoi(m[1]), 3) << srv.rest();
    EXPECT_GE(std::stoi(m[2]), 1) << "the client without the CA\n" << srv.rest();
}

TEST(https_test, tls_min_1_3_refuses_a_tls_1_2_client_that_is_served_by_default) {
    const std::string tls12 = "--cacert " + test_cert("ca.pem") + " --tlsv1.2 --tls-max 1.2 -v ";
    {
        https_server srv(serve_test_cert());
        ASSERT_NE(srv.port(), 0) << srv.first_line();
        const auto [code, out] = curl(tls12 + srv.url("/plaintext"));
        EXPECT_EQ(code, 0) << out;
        EXPECT_NE(out.find("SSL connection using TLSv1.2"), std::string::npos) << out;
        EXPECT_NE(out.find("Hello, World!"), std::string::npos) << out;
    }
    https_server srv(serve_test_cert({"--tls-min", "1.3"}));
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    EXPECT_NE(srv.line().find("TLS 1.3+"), std::string::npos);
    auto [code, out] = curl(tls12 + srv.url("/plaintext"));
    EXPECT_NE(code, 0) << out;
    EXPECT_EQ(out.find("Hello, World!"), std::string::npos) << out;
    EXPECT_NE(out.find("protocol version"), std::string::npos) << out;
    std::tie(code, out) = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/plaintext"));
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "Hello, World!");
    EXPECT_GE(tls_handshakes(srv, "failed"), 1);
}

TEST(https_test, openssl_s_client_verifies_the_chain_and_the_name_and_negotiates_alpn) {
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const std::string ca = "-CAfile " + test_cert("ca.pem");
    std::string out = s_client(srv.port(), "-servername localhost -verify_hostname localhost -alpn http/1.1 " + ca);
    EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
    EXPECT_NE(out.find("subject=CN = server"), std::string::npos) << out;
    EXPECT_NE(out.find("ALPN protocol: http/1.1"), std::string::npos) << out;
    out = s_client(srv.port(), "-servername localhost -alpn h2,http/1.1 " + ca);
    EXPECT_NE(out.find("ALPN protocol: h2"), std::string::npos) << out;
    // A client that offers no protocol the server has goes on without ALPN.
    out = s_client(srv.port(), "-servername localhost -alpn spdy/3.1 " + ca);
    EXPECT_NE(out.find("No ALPN negotiated"), std::string::npos) << out;
    EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
    {
        // Without HTTP/2, h2 is not agreed to.
        https_server h1_only(serve_test_cert({"--no-http2"}));
        out = s_client(h1_only.port(), "-servername localhost -alpn h2 " + ca);
        EXPECT_NE(out.find("No ALPN negotiated"), std::string::npos) << out;
        out = s_client(h1_only.port(), "-servername localhost -alpn h2,http/1.1 " + ca);
        EXPECT_NE(out.find("ALPN protocol: http/1.1"), std::string::npos) << out;
    }
    // A request typed into the session is answered.
    out = shell("printf 'GET /plaintext HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' | "
                "openssl s_client -quiet -connect 127.0.0.1:" +
                    std::to_string(srv.port()) + " -servername localhost " + ca,
                10)
              .second;
    EXPECT_NE(out.find("HTTP/1.1 200 OK"), std::string::npos) << out;
    EXPECT_NE(out.find("Hello, World!"), std::string::npos) << out;
    // The same chain against another root does not verify: the 0 above is not a default.
    out = s_client(srv.port(), "-servername localhost -CAfile " + test_cert("self-signed.pem"));
    EXPECT_EQ(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
    EXPECT_NE(out.find("Verify return code: "), std::string::npos) << out;
}

TEST(https_test, python_ssl_gets_json_over_one_keep_alive_connection) {
    if (!have_program("python3")) {
        GTEST_SKIP() << "no python3";
    }
    temp_dir dir("python");
    write_file(dir / "client.py", python_client);
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const auto [code, out] = shell("python3 " + dir / "client.py" + " " + test_cert("ca.pem") + " " +
                                   std::to_string(srv.port()) + " /json 0");
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "200 {\"message\":\"Hello, World!\"} TLSv1.3\n200 {\"message\":\"Hello, World!\"} TLSv1.3\n");
    EXPECT_EQ(tls_handshakes(srv, "full"), 2) << "one for Python's two requests, one for the metrics";
}

// RFC 9112 §9.8: "TLS implementations MUST initiate an exchange of closure alerts before closing a connection"
// (RFC 8446 §6.1: close_notify), as nginx does after a "Connection: close" response; without it s_client reports
// "unexpected eof while reading".
TEST(https_test, a_connection_close_response_ends_with_close_notify) {
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    // The request, then stdin held open for a second: the server closes first.
    const std::string request = R"(printf 'GET /plaintext HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n')";
    const std::string out =
        shell("(" + request + "; sleep 1) | openssl s_client -msg -connect 127.0.0.1:" + std::to_string(srv.port()) +
                  " -servername localhost -CAfile " + test_cert("ca.pem"),
              10)
            .second;
    EXPECT_NE(out.find("Hello, World!"), std::string::npos) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(<<< TLS [0-9.]+, Alert \[length 0002\], warning close_notify)")))
        << out;
    EXPECT_EQ(out.find("unexpected eof"), std::string::npos) << out;
}

TEST(https_test, mutual_tls_needs_a_client_certificate_from_the_ca) {
    https_server srv(serve_test_cert({"--tls-client-ca", test_cert("ca.pem")}));
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const std::string ca = "--cacert " + test_cert("ca.pem") + " ";
    auto [code, out] = curl(ca + srv.url("/plaintext"));
    EXPECT_NE(code, 0) << out;
    EXPECT_EQ(out.find("Hello, World!"), std::string::npos) << out;
    std::tie(code, out) = curl(ca + "--cert " + test_cert("client.pem") + " --key " + test_cert("client.key") +
                               " -w ' %{http_code}' " + srv.url("/plaintext"));
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "Hello, World! 200");
    // A certificate the CA did not issue is refused as well.
    std::tie(code, out) = curl(ca + "--cert " + test_cert("self-signed.pem") + " --key " +
                               test_cert("self-signed.key") + " " + srv.url("/plaintext"));
    EXPECT_NE(code, 0) << out;
    EXPECT_EQ(out.find("Hello, World!"), std::string::npos) << out;

    // hotpath load: with the client certificate every request succeeds; without it nothing does.
    std::tie(code, out) =
        run({"load", srv.url("/plaintext"), "-c", "2", "-d", "500ms", "-t", "1", "-q", "--cacert", test_cert("ca.pem"),
             "--cert", test_cert("client.pem"), "--key", test_cert("client.key"), "--json", "-"});
    EXPECT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_GT(number(doc, {"successes"}), 0u) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"responses"})) << out;
    EXPECT_EQ(number(doc, {"tls", "handshakes"}), 2u) << out;
    std::tie(code, out) = run(
        {"load", srv.url("/plaintext"), "-c", "2", "-d", "500ms", "-t", "1", "-q", "--cacert", test_cert("ca.pem")});
    EXPECT_EQ(code, 4) << out;
    EXPECT_NE(out.find("FAIL: nothing succeeded"), std::string::npos) << out;
}

// A client the server refuses for want of a certificate is a failed handshake of its own class ("client
// certificate"), not completed handshakes followed by read errors: over TLS 1.3 the client's side of the handshake
// ends before the server has checked the client's certificate, and its alert (certificate required) arrives as the
// first read.
TEST(https_test, load_without_the_client_certificate_mutual_tls_requires_fails_as_client_certificate) {
    https_server srv(serve_test_cert({"--tls-client-ca", test_cert("ca.pem")}));
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const auto [code, out] = run({"load", srv.url("/plaintext"), "-c", "2", "-d", "500ms", "-t", "1", "-q", "--cacert",
                                  test_cert("ca.pem"), "--json", "-"});
    EXPECT_EQ(code, 4) << out;
    auto doc = load_json(out);
    EXPECT_GT(number(doc, {"tls", "failures", "client_certificate"}), 0u) << out;
    EXPECT_EQ(number(doc, {"tls", "handshakes"}), 0u) << "no handshake was accepted by the server\n" << out;
    EXPECT_EQ(number(doc, {"errors", "read"}), 0u) << out;
    EXPECT_NE(out.find("TLS failed"), std::string::npos) << out;
    EXPECT_NE(out.find("client certificate is required"), std::string::npos) << out;
}

TEST(https_test, a_connection_that_sends_nothing_is_closed_after_the_handshake_timeout) {
    if (!have_program("python3")) {
        GTEST_SKIP() << "no python3";
    }
    temp_dir dir("timeout");
    write_file(dir / "client.py", python_client);
    for (const char* io : {"uring", "epoll"}) {
        SCOPED_TRACE(io);
        https_server srv(serve_test_cert({"--tls-handshake-timeout", "1", "--io", io}));
        ASSERT_NE(srv.port(), 0) << srv.first_line();
        raw_socket silent(srv.port());
        ASSERT_TRUE(silent.connected());
        const auto closed_after = silent.wait_closed(3s);
        ASSERT_TRUE(closed_after.has_value()) << "still open after 3 s";
        EXPECT_GE(*closed_after, 800ms) << "closed before its timeout";
        EXPECT_GE(tls_handshakes(srv, "timeout"), 1);
        // A connection whose handshake is done is not held to that timeout: 1.5 s between its two requests.
        const auto [code, out] = shell("python3 " + dir / "client.py" + " " + test_cert("ca.pem") + " " +
                                       std::to_string(srv.port()) + " /plaintext 1.5");
        EXPECT_EQ(code, 0) << out;
        EXPECT_EQ(out, "200 Hello, World! TLSv1.3\n200 Hello, World! TLSv1.3\n");
        ASSERT_EQ(srv.stop(), 0) << srv.rest();
        EXPECT_NE(srv.rest().find(", 1 timed out"), std::string::npos) << srv.rest();
    }
}

TEST(https_test, connections_past_the_handshakes_bound_are_closed_at_once) {
    for (const char* io : {"uring", "epoll"}) {
        SCOPED_TRACE(io);
        https_server srv(serve_test_cert({"--max-tls-handshakes", "5", "--io", io}));
        ASSERT_NE(srv.port(), 0) << srv.first_line();
        std::vector<raw_socket> idle;
        for (int i = 0; i < 20; ++i) {
            idle.emplace_back(srv.port());
            ASSERT_TRUE(idle.back().connected()) << i;
        }
        std::this_thread::sleep_for(500ms); // far from the 10 s handshake timeout
        int closed = 0;
        for (const auto& s : idle) {
            closed += s.closed_by_peer() ? 1 : 0;
        }
        EXPECT_EQ(closed, 15) << "5 handshakes may be in progress; the 15 past them are closed at once";
        // The bound holds: with its 5 taken, curl is refused too.
        auto [code, out] = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/plaintext"));
        EXPECT_NE(code, 0) << out;
        idle.clear();
        // Once the idle connections are gone, their places are free again.
        const auto deadline = std::chrono::steady_clock::now() + 3s;
        do {
            std::tie(code, out) = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/plaintext"));
        } while (code != 0 && std::chrono::steady_clock::now() < deadline);
        EXPECT_EQ(code, 0) << out;
        EXPECT_EQ(out, "Hello, World!");
        EXPECT_GE(tls_handshakes(srv, "refused"), 16);
        ASSERT_EQ(srv.stop(), 0) << srv.rest();
        EXPECT_NE(srv.rest().find("refused over --max-tls-handshakes"), std::string::npos) << srv.rest();
    }
}

TEST(https_test, sighup_reloads_the_certificate_for_new_connections_and_keeps_the_old_on_a_broken_file) {
    if (!have_program("python3")) {
        GTEST_SKIP() << "no python3";
    }
    temp_dir dir("reload");
    const std::string cert = dir / "served.pem";
    const std::string key = dir / "served.key";
    std::filesystem::copy_file(test_cert("server.pem"), cert);
    std::filesystem::copy_file(test_cert("server.key"), key);
    write_file(dir / "client.py", python_reload_client);
    https_server srv(serve(cert, key));
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    EXPECT_NE(srv.line().find("SIGHUP reloads it"), std::string::npos);
    const std::string ca = test_cert("ca.pem");

    // Renewed in place (other-name's, signed by the same CA), then SIGHUP (sent by the script, between its
    // connections).
    std::filesystem::copy_file(test_cert("other-name.pem"), cert, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::copy_file(test_cert("other-name.key"), key, std::filesystem::copy_options::overwrite_existing);
    auto [code, out] = shell("python3 " + dir / "client.py" + " " + ca + " " + std::to_string(srv.port()) + " " +
                             std::to_string(srv.pid()) + " other-name");
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "before: server 200 Hello, World!\n"
                   "new connection: other-name 200 Hello, World!\n"
                   "kept connection: server 200 Hello, World!\n");
    std::string said = srv.line();
    EXPECT_NE(said.find("SIGHUP: reloaded"), std::string::npos) << said;
    out = s_client(srv.port(), "-servername localhost -CAfile " + ca);
    EXPECT_NE(out.find("subject=CN = other-name"), std::string::npos) << out;

    // A broken file: the running certificate stays, and the line says so.
    write_file(cert, "not a certificate\n");
    srv.signal(SIGHUP);
    said = srv.line();
    EXPECT_NE(said.find("kept the running"), std::string::npos) << said;
    EXPECT_NE(said.find(cert), std::string::npos) << said;
    out = s_client(srv.port(), "-servername localhost -CAfile " + ca);
    EXPECT_NE(out.find("subject=CN = other-name"), std::string::npos) << out;
    EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;

    // A certificate with the wrong key is refused too; the right pair is taken again.
    std::filesystem::copy_file(test_cert("server.pem"), cert, std::filesystem::copy_options::overwrite_existing);
    srv.signal(SIGHUP);
    said = srv.line();
    EXPECT_NE(said.find("kept the running"), std::string::npos) << said;
    EXPECT_NE(said.find("does not match"), std::string::npos) << said;
    std::filesystem::copy_file(test_cert("server.key"), key, std::filesystem::copy_options::overwrite_existing);
    srv.signal(SIGHUP);
    said = srv.line();
    EXPECT_NE(said.find("SIGHUP: reloaded"), std::string::npos) << said;
    std::tie(code, out) = curl("--cacert " + ca + " " + srv.url("/plaintext"));
    EXPECT_EQ(code, 0) << out;
    EXPECT_EQ(out, "Hello, World!");
}

TEST(https_test, several_certificates_are_served_by_the_name_curl_openssl_and_load_ask_for) {
    https_server srv(
        serve_test_cert({"--tls-cert", test_cert("api.pem"), "--tls-key", test_cert("api.key"), "--tls-cert",
                         test_cert("wildcard.pem"), "--tls-key", test_cert("wildcard.key")}));
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const std::string second = srv.line();
    EXPECT_NE(second.find(test_cert("wildcard.pem")), std::string::npos) << second;
    EXPECT_NE(second.find("SIGHUP reloads them"), std::string::npos) << second;
    const std::string port = std::to_string(srv.port());
    const std::string ca = test_cert("ca.pem");
    // curl asks for each name (resolved to the server) and verifies what it is given.
    for (const std::string name : {"api.test", "Portal.Apps.Test", "localhost"}) {
        const auto [code, out] = curl("--cacert " + ca + " --resolve " + name + ":" + port + ":127.0.0.1 https://" +
                                      name + ":" + port + "/plaintext");
        EXPECT_EQ(code, 0) << name << ": " << out;
        EXPECT_EQ(out, "Hello, World!") << name;
    }
    // A name no certificate is for gets the first (localhost's): curl refuses it as not for that name.
    auto [code, out] = curl("--cacert " + ca + " --resolve nothing.test:" + port +
                            ":127.0.0.1 https://nothing.test:" + port + "/plaintext");
    EXPECT_EQ(code, 60) << out;
    out = s_client(srv.port(), "-servername api.test -verify_hostname api.test -CAfile " + ca);
    EXPECT_NE(out.find("subject=CN = api"), std::string::npos) << out;
    EXPECT_NE(out.find("Verify return code: 0 (ok)"), std::string::npos) << out;
    out = s_client(srv.port(), "-noservername -CAfile " + ca);
    EXPECT_NE(out.find("subject=CN = server"), std::string::npos) << out;
    // hotpath load to the address, naming the host with --sni: verified, every request answered.
    std::tie(code, out) = run({"load", srv.url("/plaintext"), "-c", "2", "-n", "200", "-t", "1", "-q", "--cacert", ca,
                               "--sni", "x.apps.test", "--json", "-"});
    EXPECT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 200u) << out;
    srv.signal(SIGHUP);
    const std::string said = srv.line();
    EXPECT_NE(said.find("reloaded the TLS certificates"), std::string::npos) << said;
    EXPECT_NE(said.find(test_cert("api.pem")), std::string::npos) << said;
}

TEST(https_test, serve_tls_usage_errors_exit_2_with_one_line) {
    const std::string cert = test_cert("server.pem");
    const std::string key = test_cert("server.key");
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
        {{"--tls-cert", cert}, "--tls-key"},
        {{"--tls-key", key}, "--tls-cert"},
        {{"--tls-cert", cert, "--tls-key", key, "--tls-cert", test_cert("api.pem")}, "one --tls-key for each"},
        {{"--tls-cert", cert, "--tls-key", key, "--tls-cert", test_cert("api.pem"), "--tls-key", key}, "api.pem"},
        {{"--tls-client-ca", test_cert("ca.pem")}, "--tls-client-ca"},
        {{"--tls-cert", "/nonexistent/server.pem", "--tls-key", key}, "/nonexistent/server.pem"},
        {{"--tls-cert", cert, "--tls-key", "/nonexistent/server.key"}, "/nonexistent/server.key"},
        {{"--tls-cert", cert, "--tls-key", test_cert("client.key")}, "does not match"},
        {{"--tls-cert", HOTPATH_SOURCE_DIR "/README.md", "--tls-key", key}, "README.md"},
        {{"--tls-cert", cert, "--tls-key", key, "--tls-client-ca", "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
        {{"--tls-cert", cert, "--tls-key", key, "--tls-min", "1.1"}, "--tls-min"},
        {{"--tls-cert", cert, "--tls-key", key, "--tls-handshake-timeout", "0"}, "--tls-handshake-timeout"},
    };
    for (const auto& [more, expected] : cases) {
        std::vector<std::string> args{"serve", "platform", "--port", "0", "--threads", "1"};
        args.insert(args.end(), more.begin(), more.end());
        const auto [code, out] = run(args, 10s);
        EXPECT_EQ(code, 2) << joined(args) << "\n" << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << joined(args) << "\n" << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << joined(args) << "\n" << out;
        EXPECT_NE(out.find(expected), std::string::npos) << joined(args) << "\n" << out;
    }
}

TEST(https_test, headless_chromium_gets_json_when_told_to_trust_only_this_certificate) {
    if (!have_program("chromium")) {
        GTEST_SKIP() << "no chromium (Debian's chromium package)";
    }
    // The SHA-256 of the leaf's SubjectPublicKeyInfo, in base64: what --ignore-certificate-errors-spki-list takes.
    auto [code, spki] = shell("openssl x509 -in " + test_cert("server.pem") +
                              " -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | "
                              "base64");
    ASSERT_EQ(code, 0) << spki;
    spki = spki.substr(0, spki.find('\n'));
    ASSERT_EQ(spki.size(), 44u) << spki;
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    temp_dir profile("chromium");
    const std::string chromium =
        "chromium --headless --disable-gpu --no-sandbox --user-data-dir=" + profile.path() + " --dump-dom ";
    // stderr is Chromium's own logging (D-Bus and the like): only the page is read.
    auto [trusted_code, trusted] =
        shell(chromium + "--ignore-certificate-errors-spki-list=" + spki + " " + srv.url("/json") + " 2>/dev/null", 30);
    EXPECT_EQ(trusted_code, 0) << trusted;
    EXPECT_NE(trusted.find(R"({"message":"Hello, World!"})"), std::string::npos) << trusted;
    // Without it the certificate (from a CA Chromium does not know) is refused and the page is not shown.
    auto [refused_code, refused] = shell(chromium + srv.url("/json") + " 2>/dev/null", 30);
    EXPECT_NE(refused_code, 124) << "timed out";
    EXPECT_EQ(refused.find(R"({"message":"Hello, World!"})"), std::string::npos) << refused;
    EXPECT_GE(tls_handshakes(srv, "full"), 1);
}

} // namespace
} // namespace hotpath
