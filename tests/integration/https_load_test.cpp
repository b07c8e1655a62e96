// `hotpath load` over HTTPS: its handshakes timed and resumed, against hotpath serve and nginx, and each TLS failure
// named in its own class (a certificate refused either way, a client certificate missing).
#include "integration/https_support.hpp"

#include <gtest/gtest.h>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using namespace https_support;
using test::test_cert;

TEST(https_test, load_times_handshakes_and_resumes_sessions_unless_told_not_to) {
    https_server srv(serve_test_cert());
    ASSERT_NE(srv.port(), 0) << srv.first_line();
    const std::vector<std::string> load{"load",     srv.url("/plaintext"), "-c",     "4", "-d", "1s", "-t", "1", "-q",
                                        "--cacert", test_cert("ca.pem"),   "--json", "-"};

    auto [code, out] = run(load);
    ASSERT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_GT(number(doc, {"responses"}), 0u) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"responses"})) << out;
    EXPECT_EQ(number(doc, {"tls", "handshakes"}), 4u) << "one per keep-alive connection\n" << out;
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;
    EXPECT_GT(number(doc, {"tls", "handshake_time", "state", "max_ns"}), 0u) << out;
    for (const auto& [name, count] : doc.at("errors").as_object()) {
        EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
    }
    for (const auto& [name, count] : doc.at("tls").as_object().at("failures").as_object()) {
        EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
    }
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  TLS +4 handshakes, \d+ full and \d+ resumed; p50 )"))) << out;

    // A new connection per request: after the first ones, sessions are resumed, on both sides.
    auto args = load;
    args.push_back("--no-keepalive");
    std::tie(code, out) = run(args);
    ASSERT_EQ(code, 0) << out;
    doc = load_json(out);
    EXPECT_GT(number(doc, {"responses"}), 4u) << out;
    EXPECT_GE(number(doc, {"tls", "handshakes"}), number(doc, {"responses"})) << out;
    EXPECT_GT(number(doc, {"tls", "resumed"}), 0u) << out;
    const long long resumed_by_server = tls_handshakes(srv, "resumed");
    EXPECT_GT(resumed_by_server, 0);

    // --no-tls-resume: a full handshake every time.
    args.push_back("--no-tls-resume");
    std::tie(code, out) = run(args);
    ASSERT_EQ(code, 0) << out;
    doc = load_json(out);
    EXPECT_GT(number(doc, {"tls", "handshakes"}), 4u) << out;
    EXPECT_EQ(number(doc, {"tls", "resumed"}), 0u) << out;
    EXPECT_EQ(tls_handshakes(srv, "resumed"), resumed_by_server) << "the server resumed sessions all the same";
}

TEST(https_test, load_against_nginx_over_tls) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    nginx_peer nginx("tls", "ssl");
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const std::string url = nginx.url("https");
    const std::vector<std::string> load{"load", url, "-c", "4", "-d", "1s", "-t", "1", "-q", "--json", "-"};

    auto with = [&load](std::vector<std::string> more) {
        more.insert(more.begin(), load.begin(), load.end());
        return more;
    };
    auto [code, out] = run(with({"--cacert", test_cert("ca.pem")}));
    EXPECT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_GT(number(doc, {"successes"}), 0u) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"statuses", "200"})) << out;
    EXPECT_GE(number(doc, {"tls", "handshakes"}), 4u) << out;
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;

    // nginx resumes sessions from its tickets.
    std::tie(code, out) = run(with({"-k", "--no-keepalive"}));
    EXPECT_EQ(code, 0) << out;
    doc = load_json(out);
    EXPECT_GT(number(doc, {"successes"}), 4u) << out;
    EXPECT_GT(number(doc, {"tls", "resumed"}), 0u) << out;

    // --sni: the name to send and verify instead of the URL's address.
    std::tie(code, out) = run(with({"--cacert", test_cert("ca.pem"), "--sni", "localhost"}));
    EXPECT_EQ(code, 0) << out;
    std::tie(code, out) = run(with({"--cacert", test_cert("ca.pem"), "--sni", "elsewhere.invalid"}));
    EXPECT_EQ(code, 4) << out;
    EXPECT_GT(number(load_json(out), {"tls", "failures", "name_mismatch"}), 0u) << out;

    // Without the test CA (the system's roots do not have it): nothing succeeds, and the report says why.
    std::tie(code, out) = run(load);
    EXPECT_EQ(code, 4) << out;
    EXPECT_GT(number(load_json(out), {"tls", "failures", "unknown_issuer"}), 0u) << out;
    // nginx_peer stops nginx with SIGTERM and checks that it exits 0.
}

TEST(https_test, load_names_the_tls_failure_of_each_bad_certificate_and_k_skips_the_checks) {
    struct bad_certificate {
        const char* name;
        const char* failure; // the JSON's class
        const char* said;    // in the report's "TLS failed" line
    };
    for (const bad_certificate& bad : {bad_certificate{"expired", "certificate_expired", "expired"},
                                       bad_certificate{"other-name", "name_mismatch", "not for this host name"},
                                       bad_certificate{"self-signed", "unknown_issuer", "issuer is not trusted"}}) {
        SCOPED_TRACE(bad.name);
        https_server srv(serve(test_cert(std::string(bad.name) + ".pem"), test_cert(std::string(bad.name) + ".key")));
        ASSERT_NE(srv.port(), 0) << srv.first_line();
        const std::vector<std::string> load{"load", srv.url("/plaintext"), "-c", "2", "-d", "500ms", "-t", "1", "-q"};
        auto args = load;
        args.insert(args.end(), {"--cacert", test_cert("ca.pem"), "--json", "-"});
        auto [code, out] = run(args);
        EXPECT_EQ(code, 4) << out;
        const auto doc = load_json(out);
        EXPECT_EQ(number(doc, {"responses"}), 0u) << out;
        EXPECT_EQ(number(doc, {"tls", "handshakes"}), 0u) << out;
        EXPECT_GT(number(doc, {"connect_failures"}), 0u) << out;
        for (const auto& [name, count] : doc.at("tls").as_object().at("failures").as_object()) {
            if (name == bad.failure) {
                EXPECT_GT(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
            } else {
                EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << name << "\n" << out;
            }
        }
        const auto at = out.find("  TLS failed ");
        ASSERT_NE(at, std::string::npos) << out;
        const std::string failed_line = out.substr(at, out.find('\n', at) - at);
        EXPECT_NE(failed_line.find(bad.said), std::string::npos) << failed_line;
        EXPECT_NE(out.find("FAIL: nothing succeeded"), std::string::npos) << out;

        args = load;
        args.push_back("-k");
        std::tie(code, out) = run(args);
        EXPECT_EQ(code, 0) << out;
        EXPECT_NE(out.find("0 errors"), std::string::npos) << out;
        EXPECT_EQ(out.find("TLS failed"), std::string::npos) << out;
    }
}

} // namespace
} // namespace hotpath
