// `hotpath load --h2/--h2c` against real HTTP/2 servers: nginx with prior knowledge and over TLS through ALPN, its
// GOAWAY after keepalive_requests and its refused streams, a Node peer that resets, refuses and goes away on purpose,
// and nghttpd; and the usage errors of the HTTP/2 options.
#include "integration/https_support.hpp"
#include "support/peers.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using namespace https_support;
using test::test_cert;

// The run's protocol as the JSON names it (run.protocol): "http/1.1", "h2" or "h2c".
std::string protocol_of(const boost::json::object& doc) {
    const auto* run = doc.if_contains("run");
    const auto* v = run != nullptr && run->is_object() ? run->as_object().if_contains("protocol") : nullptr;
    if (v == nullptr || !v->is_string()) {
        ADD_FAILURE() << "no run.protocol string in " << boost::json::serialize(doc).substr(0, 2000);
        return {};
    }
    return std::string(v->as_string());
}

std::uint64_t streams_of(const boost::json::object& doc) {
    return number(doc, {"run", "streams"});
}

// Every error class of the run is 0, except those named in `allowed`.
void expect_no_errors(const boost::json::object& doc, const std::string& out,
                      const std::vector<std::string>& allowed = {}) {
    const auto* errors = doc.if_contains("errors");
    ASSERT_TRUE(errors != nullptr && errors->is_object()) << out;
    for (const auto& [name, count] : errors->as_object()) {
        if (std::find(allowed.begin(), allowed.end(), std::string(name)) == allowed.end()) {
            EXPECT_EQ(count.to_number<std::uint64_t>(), 0u) << "errors." << name << "\n" << out;
        }
    }
}

// The HTTP/2 runs' error classes exist beside HTTP/1.1's, so that a reset is never counted as something else.
void expect_h2_error_classes(const boost::json::object& doc, const std::string& out) {
    const auto* errors = doc.if_contains("errors");
    ASSERT_TRUE(errors != nullptr && errors->is_object()) << out;
    EXPECT_TRUE(errors->as_object().contains("reset")) << out;
    EXPECT_TRUE(errors->as_object().contains("refused")) << out;
}

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

TEST(h2_load_test, nginx_with_prior_knowledge_answers_every_request_on_ten_streams_per_connection) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    // A second listen of the same server speaks HTTP/1.1, for the plain run's protocol.
    const std::uint16_t http1_port = test::free_port();
    ASSERT_NE(http1_port, 0);
    nginx_peer nginx("h2c", "http2", "        listen 127.0.0.1:" + std::to_string(http1_port) + ";\n");
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const std::vector<std::string> load{
        "load", nginx.url("http"), "-c", "4", "--streams", "10", "-n", "2000", "-t", "1", "-q", "--h2c"};

    auto [code, out] = run(with(load, {"--json", "-"}));
    ASSERT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"responses"}), 2000u) << out;
    EXPECT_EQ(number(doc, {"successes"}), 2000u) << out;
    EXPECT_EQ(number(doc, {"statuses", "200"}), 2000u) << out;
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;
    expect_h2_error_classes(doc, out);
    expect_no_errors(doc, out);
    EXPECT_EQ(protocol_of(doc), "h2c") << out;
    EXPECT_EQ(streams_of(doc), 10u) << out;
    EXPECT_EQ(number(doc, {"retried_unprocessed"}), 0u) << "nginx's default keepalive_requests is 1000\n" << out;
    EXPECT_FALSE(doc.contains("tls")) << out;

    // The text report says how the requests went.
    std::tie(code, out) = run(load);
    ASSERT_EQ(code, 0) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  Protocol +h2c[^\n]*, 10 streams per connection)"))) << out;

    // A plain run says HTTP/1.1, with its one request in flight per connection.
    const std::string http1_url = "http://127.0.0.1:" + std::to_string(http1_port) + "/";
    std::tie(code, out) = run({"load", http1_url, "-c", "2", "-n", "200", "-t", "1", "-q", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 200u) << out;
    EXPECT_EQ(protocol_of(doc), "http/1.1") << out;
    EXPECT_EQ(streams_of(doc), 1u) << out;
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  Protocol +HTTP/1\.1\b)"))) << out;
}

TEST(h2_load_test, nginx_over_tls_agrees_to_h2_through_alpn) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    nginx_peer nginx("h2_tls", "ssl http2");
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const auto [code, out] = run({"load", nginx.url("https"), "-c", "4", "--streams", "10", "-d", "1s", "-t", "1", "-q",
                                  "--h2", "--cacert", test_cert("ca.pem"), "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_GT(number(doc, {"successes"}), 0u) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"responses"})) << out;
    EXPECT_EQ(number(doc, {"successes"}), number(doc, {"statuses", "200"})) << out;
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;
    expect_h2_error_classes(doc, out);
    expect_no_errors(doc, out);
    EXPECT_EQ(protocol_of(doc), "h2") << out;
    EXPECT_EQ(streams_of(doc), 10u) << out;
    // One handshake per connection: HTTP/2 keeps its connections, and each one's requests share it.
    EXPECT_GE(number(doc, {"connections_opened"}), 4u) << out;
    EXPECT_EQ(number(doc, {"tls", "handshakes"}), number(doc, {"connections_opened"})) << out;
    // The report went to standard error, beside the JSON.
    EXPECT_TRUE(std::regex_search(out, std::regex(R"(\n  Protocol +h2 \(ALPN\)[^\n]*, 10 streams per connection)")))
        << out;
}

// --http auto: each connection speaks what its server agrees to through ALPN, h2 offered first: nginx with http2
// on its TLS listen speaks h2 on every connection, nginx without it HTTP/1.1 on every one; both without errors.
TEST(h2_load_test, http_auto_speaks_what_alpn_agrees_per_connection) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    for (const bool h2 : {true, false}) {
        nginx_peer nginx(h2 ? "auto_h2" : "auto_h1", h2 ? "ssl http2" : "ssl");
        ASSERT_TRUE(nginx.up()) << nginx.log();
        const auto [code, out] = run({"load", nginx.url("https"), "--http", "auto", "--streams", "10", "-c", "4", "-n",
                                      "1000", "-t", "1", "-q", "--cacert", test_cert("ca.pem"), "--json", "-"});
        ASSERT_EQ(code, 0) << out;
        const auto doc = load_json(out);
        EXPECT_EQ(protocol_of(doc), "auto") << out;
        EXPECT_EQ(number(doc, {"successes"}), 1000u) << out;
        expect_no_errors(doc, out);
        EXPECT_GE(number(doc, {"connections_opened"}), 4u) << out;
        EXPECT_EQ(number(doc, {"connections_h2"}), h2 ? number(doc, {"connections_opened"}) : 0u) << out;
    }
}

TEST(h2_load_test, a_tls_server_that_does_not_agree_to_h2_fails_every_attempt_and_the_run_ends) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    nginx_peer nginx("http1_tls", "ssl"); // ALPN: http/1.1 only
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const auto started = std::chrono::steady_clock::now();
    const auto [code, out] = run({"load", nginx.url("https"), "-c", "2", "-d", "1s", "-t", "1", "-q", "--h2",
                                  "--cacert", test_cert("ca.pem"), "--json", "-"},
                                 20s);
    const auto took = std::chrono::steady_clock::now() - started;
    // Nothing succeeded: the load's exit code 4 (judge() in load/report.cpp), not a kill (-1) past the limit.
    EXPECT_EQ(code, 4) << out;
    EXPECT_LT(took, 10s) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"responses"}), 0u) << out;
    EXPECT_EQ(number(doc, {"connections_opened"}), 0u) << out;
    EXPECT_GT(number(doc, {"connect_failures"}), 0u) << out;
    // Each attempt failed in a TLS failure class of its own: nginx ends the handshake when no protocol is common.
    EXPECT_EQ(number(doc, {"tls", "failures", "alpn"}), number(doc, {"connect_failures"})) << out;
    const auto* error = doc.if_contains("connect_error");
    ASSERT_TRUE(error != nullptr && error->is_string()) << out;
    EXPECT_TRUE(std::regex_search(std::string(error->as_string()), std::regex("HTTP/2", std::regex::icase))) << out;
    EXPECT_NE(out.find("FAIL: nothing succeeded; no connection could be opened ("), std::string::npos) << out;
}

TEST(h2_load_test, nginx_goaway_after_keepalive_requests_is_followed_on_new_connections_without_errors) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    // nginx ends each connection with a GOAWAY after 100 requests (keepalive_requests applies to HTTP/2 since 1.19.7);
    // streams sent after it are unprocessed, and go again on another connection.
    nginx_peer nginx("goaway", "http2", "        keepalive_requests 100;\n");
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const auto [code, out] = run({"load", nginx.url("http"), "-c", "2", "--streams", "10", "-n", "3000", "-t", "1",
                                  "-q", "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 3000u) << out;
    EXPECT_EQ(number(doc, {"responses"}), 3000u) << out;
    expect_h2_error_classes(doc, out);
    expect_no_errors(doc, out);
    EXPECT_EQ(number(doc, {"connect_failures"}), 0u) << out;
    // At most 100 requests per connection: 3,000 take at least 30 of them.
    EXPECT_GE(number(doc, {"connections_opened"}), 30u) << out;
    const std::uint64_t retried = number(doc, {"retried_unprocessed"});
    std::cout << "retried_unprocessed: " << retried << " over " << number(doc, {"connections_opened"})
              << " connections\n";
    RecordProperty("retried_unprocessed", std::to_string(retried));
}

TEST(h2_load_test, streams_nginx_refuses_above_its_limit_are_counted_and_the_run_goes_on) {
    if (const auto m = missing_nginx(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    // 100 streams asked, 10 allowed: those sent before the client read nginx's SETTINGS may be refused.
    nginx_peer nginx("refused", "http2", "        http2_max_concurrent_streams 10;\n");
    ASSERT_TRUE(nginx.up()) << nginx.log();
    const auto [code, out] = run({"load", nginx.url("http"), "-c", "1", "--streams", "100", "-d", "1s", "-t", "1", "-q",
                                  "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_GT(number(doc, {"successes"}), 100u) << out;
    expect_h2_error_classes(doc, out);
    expect_no_errors(doc, out, {"refused"});
    std::cout << "refused: " << number(doc, {"errors", "refused"}) << ", successes: " << number(doc, {"successes"})
              << "\n";
}

// Runs `hotpath args` and checks it is bad usage: exit code 2, one line on standard error naming `named`, nothing on
// standard output.
void expect_usage_error(const std::vector<std::string>& args, const std::string& named) {
    SCOPED_TRACE(joined(args));
    const auto [code, out] = run(args, 10s);
    EXPECT_EQ(code, 2) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    EXPECT_NE(out.find(named), std::string::npos) << out;
    std::string command = quoted(HOTPATH_BINARY);
    for (const auto& a : args) {
        command += " " + quoted(a);
    }
    // Standard error only (standard output to /dev/null): the same line.
    const auto [stderr_code, stderr_out] = shell(command + " 2>&1 >/dev/null", 10);
    EXPECT_EQ(stderr_code, 2) << stderr_out;
    EXPECT_EQ(stderr_out, out);
}

TEST(h2_load_test, http2_options_that_do_not_fit_are_bad_usage) {
    // Nothing listens on port 1: a run that started would fail with another exit code.
    const std::string url = "http://127.0.0.1:1/";
    expect_usage_error({"load", url, "--streams", "10"}, "--streams");
    expect_usage_error({"load", "https://127.0.0.1:1/", "--h2c"}, "--h2c");
    expect_usage_error({"load", url, "--h2", "--pipeline", "2"}, "--pipeline");
    expect_usage_error({"load", url, "--h2", "--no-keepalive"}, "--no-keepalive");
    expect_usage_error({"load", url, "--streams", "0"}, "--streams");
    expect_usage_error({"load", url, "--h2", "--streams", "0"}, "--streams");
    expect_usage_error({"load", url, "--h2", "--streams", "1001"}, "--streams");
}

// What a peer that never listened printed: it is killed first, so that reading to its end cannot hang.
std::string stopped_output(const test::running_peer& peer) {
    peer.process->signal(SIGKILL);
    return "did not listen within 10 s: " + peer.process->rest();
}

// The Node peer of these tests (tests/integration/h2_peer.js) on a port of its own, killed at the test's end.
struct node_peer {
    test::running_peer peer;
    std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(peer.port) + path; }
};

std::string missing_node() {
    return program_path("node").empty() ? "no node on the PATH (the HTTP/2 peer is a Node script)" : "";
}

node_peer start_node_peer() {
    return node_peer{test::start_peer({program_path("node"), H2_PEER_SCRIPT, "{port}"}, 10s)};
}

TEST(h2_load_test, streams_reset_by_the_server_are_counted_as_reset) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    const auto [code, out] = run({"load", node.url("/reset"), "-c", "1", "--streams", "10", "-n", "200", "-t", "1",
                                  "-q", "--h2c", "--json", "-"});
    EXPECT_EQ(code, 4) << "nothing succeeded\n" << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"errors", "reset"}), 200u) << out;
    EXPECT_EQ(number(doc, {"responses"}), 0u) << out;
    expect_no_errors(doc, out, {"reset"});
}

TEST(h2_load_test, streams_the_server_refuses_are_counted_as_refused) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    const auto [code, out] = run({"load", node.url("/refuse"), "-c", "1", "--streams", "10", "-n", "200", "-t", "1",
                                  "-q", "--h2c", "--json", "-"});
    EXPECT_EQ(code, 4) << "nothing succeeded\n" << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"errors", "refused"}), 200u) << out;
    EXPECT_EQ(number(doc, {"responses"}), 0u) << out;
    expect_no_errors(doc, out, {"refused"});
}

TEST(h2_load_test, requests_above_a_goaways_last_stream_are_sent_again_on_another_connection) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    // The peer answers 50 requests per connection; at the next stream it goes away, naming the 50th as the last it
    // processed: the streams the load sent after the 50th are unprocessed, neither answered nor failed.
    const auto [code, out] = run({"load", node.url("/goaway"), "-c", "2", "--streams", "10", "-n", "1000", "-t", "1",
                                  "-q", "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 1000u) << out;
    EXPECT_EQ(number(doc, {"responses"}), 1000u) << out;
    expect_no_errors(doc, out);
    EXPECT_GT(number(doc, {"retried_unprocessed"}), 0u) << out;
    // 50 answered per connection: 1,000 take at least 20 of them.
    EXPECT_GE(number(doc, {"connections_opened"}), 20u) << out;
}

// Request bodies larger than the peer's stream window (Node's 64 KiB) go out as its WINDOW_UPDATEs allow, whole: the
// peer answers 200 only when it got as many bytes as content-length said, and echoes them.
TEST(h2_load_test, request_bodies_past_the_flow_control_window_arrive_whole) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    const auto body_file = std::filesystem::path(::testing::TempDir()) / "h2_load_test_body.bin";
    std::ofstream(body_file, std::ios::binary) << std::string(200 * 1024, 'x');
    const auto [code, out] = run({"load", node.url("/echo"), "-m", "POST", "--body-file", body_file.string(), "-c", "2",
                                  "--streams", "4", "-n", "40", "-t", "1", "-q", "--h2c", "--json", "-"});
    std::filesystem::remove(body_file);
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 40u) << out;
    EXPECT_EQ(number(doc, {"statuses", "200"}), 40u) << out;
    expect_no_errors(doc, out);
    EXPECT_GE(number(doc, {"bytes_sent"}), 40u * 200 * 1024) << out;
    EXPECT_GE(number(doc, {"bytes_received"}), 40u * 200 * 1024) << "the echoes\n" << out;
}

// A stream past --timeout is reset alone and counted as a timeout; the connection and its other streams go on (one
// connection for the whole run), and the run ends by itself.
TEST(h2_load_test, a_stream_past_the_timeout_is_reset_alone) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    const auto [code, out] = run({"load", node.url("/half"), "-c", "1", "--streams", "10", "-n", "40", "--timeout",
                                  "300ms", "-t", "1", "-q", "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 20u) << out;
    EXPECT_EQ(number(doc, {"errors", "timeout"}), 20u) << out;
    expect_no_errors(doc, out, {"timeout"});
    EXPECT_EQ(number(doc, {"connections_opened"}), 1u) << "the connection outlived its late streams\n" << out;
}

// The open model over HTTP/2: sends at the planned rate go on free streams of the connections it has; a templated
// scenario's requests are rendered per stream.
TEST(h2_load_test, the_open_model_and_a_templated_scenario_run_over_h2c) {
    if (const auto m = missing_node(); !m.empty()) {
        GTEST_SKIP() << m;
    }
    const node_peer node = start_node_peer();
    ASSERT_NE(node.peer.port, 0) << stopped_output(node.peer);
    auto [code, out] = run({"load", node.url("/ok"), "-R", "400", "-d", "1s", "-c", "2", "--streams", "10", "-t", "1",
                            "-q", "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    auto doc = load_json(out);
    EXPECT_GE(number(doc, {"successes"}), 360u) << out;
    EXPECT_LE(number(doc, {"connections_opened"}), 2u) << out;
    expect_no_errors(doc, out);

    const auto dir = std::filesystem::path(::testing::TempDir()) / "h2_load_test_scenario";
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "rows.csv") << "word\nalpha\nbeta\n";
    std::ofstream(dir / "run.toml") << "url = \"" << node.url("/") << "\"\n"
                                    << "[load]\nhttp = \"2\"\nstreams = 5\nconnections = 1\nrequests = 100\n"
                                    << "threads = 1\n[feed]\ncsv = \"rows.csv\"\n"
                                    << "[[request]]\nname = \"echo\"\nmethod = \"POST\"\npath = \"/echo\"\n"
                                    << "body = \"word={{word}}\"\ncheck_body_contains = [\"word=\"]\n";
    std::tie(code, out) = run({"load", "--scenario", (dir / "run.toml").string(), "-q", "--json", "-"});
    std::filesystem::remove_all(dir);
    ASSERT_EQ(code, 0) << out;
    doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 100u) << out;
    EXPECT_EQ(std::string(doc.at("run").at("protocol").as_string()), "h2c") << out;
    expect_no_errors(doc, out);
}

TEST(h2_load_test, nghttpd_serves_a_file_on_ten_streams_per_connection) {
    // nghttp2's own server, a second implementation besides nginx's (the load's HTTP/2 is nghttp2's too).
    const std::string nghttpd = program_path("nghttpd");
    if (nghttpd.empty()) {
        GTEST_SKIP() << "no nghttpd (Debian's nghttp2-server)";
    }
    temp_dir dir("h2_nghttpd");
    write_file(dir / "hello.txt", "Hello, HTTP/2!\n");
    const test::running_peer peer =
        test::start_peer({nghttpd, "--no-tls", "-a", "127.0.0.1", "-d", dir.path(), "{port}"}, 10s);
    ASSERT_NE(peer.port, 0) << stopped_output(peer);
    const std::string url = "http://127.0.0.1:" + std::to_string(peer.port) + "/hello.txt";
    const auto [code, out] =
        run({"load", url, "-c", "2", "--streams", "10", "-n", "1000", "-t", "1", "-q", "--h2c", "--json", "-"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = load_json(out);
    EXPECT_EQ(number(doc, {"successes"}), 1000u) << out;
    EXPECT_EQ(number(doc, {"statuses", "200"}), 1000u) << out;
    expect_no_errors(doc, out);
    EXPECT_EQ(protocol_of(doc), "h2c") << out;
    EXPECT_GT(number(doc, {"bytes_received"}), 0u) << out;
}

} // namespace
} // namespace hotpath
