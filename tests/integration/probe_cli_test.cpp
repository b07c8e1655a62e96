// `hotpath probe` as users type it, against `hotpath serve platform` and scripted raw peers on 127.0.0.1: phases in
// order, sizes, repetitions, JSON, Server-Timing, and the failures it names (refused, timeout, malformed, closed).
#include "support/child_process.hpp"
#include "support/raw_peer.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using test::child;
using test::port_from;

// Runs `hotpath probe ARGS` and returns its exit code and output (stdout and stderr together).
std::pair<int, std::string> probe(std::vector<std::string> args, std::chrono::milliseconds timeout = 20s) {
    args.insert(args.begin(), "probe");
    child c(args);
    std::string out = c.rest();
    return {c.wait_exit(timeout), std::move(out)};
}

std::string url(std::uint16_t port, const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(port) + path;
}

// A platform server for one test, stopped (and checked to stop cleanly) at the end.
class platform {
public:
    platform() : server_({"serve", "platform", "--port", "0", "--threads", "1"}) { port_ = port_from(server_.line()); }
    ~platform() {
        server_.signal(SIGTERM);
        EXPECT_EQ(server_.wait_exit(), 0);
    }
    std::uint16_t port() const { return port_; }

private:
    child server_;
    std::uint16_t port_ = 0;
};

double number(const boost::json::value& v) {
    return v.to_number<double>();
}

// The readings of one successful sample never go backwards, and every phase is non-negative.
void expect_ordered(const boost::json::object& sample) {
    const auto& r = sample.at("readings_us").as_object();
    const double resolved = number(r.at("resolved"));
    const double connected = number(r.at("connected"));
    const double sent = number(r.at("sent"));
    const double first_byte = number(r.at("first_byte"));
    const double total = number(r.at("total"));
    EXPECT_GE(resolved, 0);
    EXPECT_LE(resolved, connected);
    EXPECT_LE(connected, sent);
    EXPECT_LE(sent, first_byte);
    EXPECT_LE(first_byte, total);
    EXPECT_GT(total, 0);
    EXPECT_LT(total, 10e6) << "over the 10 s timeout";
    for (const auto& [name, length] : sample.at("phases_us").as_object()) {
        EXPECT_GE(number(length), 0) << name;
    }
}

TEST(probe_cli_test, one_request_shows_its_phases_status_and_sizes) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const auto [code, out] = probe({url(srv.port(), "/plaintext")});
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(out.rfind("hotpath probe GET " + url(srv.port(), "/plaintext") + "\n", 0), 0u) << out;
    EXPECT_NE(out.find("Connected    127.0.0.1:" + std::to_string(srv.port()) + " (new connection)"), std::string::npos)
        << out;
    EXPECT_NE(out.find("HTTP/1.1 200 OK: head "), std::string::npos) << out;
    EXPECT_NE(out.find(", body 13 B"), std::string::npos) << out;
    for (const char* label : {"Resolve", "Connect", "Send", "Wait", "Receive", "resolved 0ns", "connected ", "sent ",
                              "first byte ", "total "}) {
        EXPECT_NE(out.find(label), std::string::npos) << label << "\n" << out;
    }
}

TEST(probe_cli_test, json_has_the_fields_in_order_and_the_exact_sizes) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const auto [code, out] = probe({"--json", url(srv.port(), "/json")});
    ASSERT_EQ(code, 0) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << "one document, nothing else:\n" << out;
    const auto doc = boost::json::parse(out).as_object();
    EXPECT_EQ(doc.at("schema").as_string(), "hotpath-probe/1");
    EXPECT_EQ(doc.at("url").as_string(), url(srv.port(), "/json"));
    EXPECT_EQ(doc.at("method").as_string(), "GET");
    EXPECT_EQ(doc.at("succeeded").to_number<int>(), 1);
    EXPECT_EQ(doc.at("failed").to_number<int>(), 0);
    const auto& samples = doc.at("samples").as_array();
    ASSERT_EQ(samples.size(), 1u);
    const auto& s = samples[0].as_object();
    EXPECT_EQ(s.at("status").to_number<int>(), 200);
    EXPECT_EQ(s.at("reason").as_string(), "OK");
    EXPECT_EQ(s.at("body_bytes").to_number<int>(), 27); // {"message":"Hello, World!"}
    const auto head = s.at("head_bytes").to_number<int>();
    EXPECT_GT(head, 60);
    EXPECT_EQ(s.at("received_bytes").to_number<int>(), head + 27);
    EXPECT_EQ(number(s.at("readings_us").as_object().at("resolved")), 0) << "an IP literal is not resolved";
    EXPECT_FALSE(s.at("reused_connection").as_bool());
    expect_ordered(s);
    EXPECT_TRUE(s.at("server_timing").as_array().empty());
}

TEST(probe_cli_test, repetitions_print_aggregates_of_each_phase) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    auto [code, out] = probe({url(srv.port(), "/plaintext"), "-n", "5"});
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find(": 5 requests, a new connection each"), std::string::npos) << out;
    EXPECT_NE(out.find("(5 connections opened)"), std::string::npos) << out;
    EXPECT_NE(out.find("Statuses     200: 5"), std::string::npos) << out;
    EXPECT_NE(out.find("Sizes        head "), std::string::npos) << out;
    EXPECT_NE(out.find("min     median        p95        max"), std::string::npos) << out;
    for (const char* row :
         {"\n  resolve ", "\n  connect ", "\n  send ", "\n  wait ", "\n  receive ", "\n  first byte ", "\n  total "}) {
        EXPECT_NE(out.find(row), std::string::npos) << row << "\n" << out;
    }

    std::tie(code, out) = probe({"-n", "5", "--json", url(srv.port(), "/plaintext")});
    ASSERT_EQ(code, 0) << out;
    const auto doc = boost::json::parse(out).as_object();
    ASSERT_EQ(doc.at("samples").as_array().size(), 5u);
    for (const auto& s : doc.at("samples").as_array()) {
        expect_ordered(s.as_object());
        EXPECT_EQ(s.as_object().at("body_bytes").to_number<int>(), 13);
    }
    const auto& total = doc.at("summary").as_object().at("phases_us").as_object().at("total").as_object();
    EXPECT_EQ(total.at("count").to_number<int>(), 5);
    EXPECT_LE(number(total.at("min")), number(total.at("median")));
    EXPECT_LE(number(total.at("median")), number(total.at("p95")));
    EXPECT_LE(number(total.at("p95")), number(total.at("max")));
    EXPECT_EQ(doc.at("statuses").as_object().at("200").to_number<int>(), 5);
}

TEST(probe_cli_test, keep_alive_reuses_one_connection) {
    platform srv;
    ASSERT_NE(srv.port(), 0);
    const auto [code, out] = probe({url(srv.port(), "/plaintext"), "-n", "3", "--keep-alive", "--json"});
    ASSERT_EQ(code, 0) << out;
    const auto doc = boost::json::parse(out).as_object();
    const auto& samples = doc.at("samples").as_array();
    ASSERT_EQ(samples.size(), 3u);
    EXPECT_FALSE(samples[0].as_object().at("reused_connection").as_bool());
    EXPECT_GT(number(samples[0].as_object().at("readings_us").as_object().at("connected")), 0);
    for (std::size_t i = 1; i < samples.size(); ++i) {
        const auto& s = samples[i].as_object();
        EXPECT_TRUE(s.at("reused_connection").as_bool()) << i;
        EXPECT_EQ(number(s.at("readings_us").as_object().at("connected")), 0) << i;
        EXPECT_EQ(number(s.at("phases_us").as_object().at("connect")), 0) << i;
        expect_ordered(s);
    }
}

TEST(probe_cli_test, a_port_nobody_listens_on_is_refused_exit_4) {
    const auto port = test::closed_port();
    auto [code, out] = probe({url(port, "/")});
    EXPECT_EQ(code, 4) << out; // as hotpath load: 4 when no request succeeded at all
    EXPECT_EQ(out, "hotpath: connection refused by 127.0.0.1:" + std::to_string(port) + "\n");
    std::tie(code, out) = probe({url(port, "/"), "-n", "3"});
    EXPECT_EQ(code, 4) << out;
    EXPECT_NE(out.find("all 3 requests failed: 3 refused"), std::string::npos) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
}

TEST(probe_cli_test, bad_usage_exits_2_with_one_line) {
    const std::string ok = "http://127.0.0.1:1/";
    for (const auto& [args, expected] : std::vector<std::pair<std::vector<std::string>, std::string>>{
             {{"https://127.0.0.1:1/", "--tls-min", "1.1"}, "--tls-min"},
             {{"https://127.0.0.1:1/", "--cacert", HOTPATH_SOURCE_DIR "/README.md"}, "--cacert"},
             {{"127.0.0.1:8080/"}, "must start with http:// or https://"},
             {{"http://127.0.0.1:99999/"}, "bad port"},
             {{"http:///path"}, "the URL has no host"},
             {{}, "url is required"},
             {{ok, "--frobnicate"}, "--frobnicate"},
             {{ok, "-n", "0"}, "--requests"},
             {{ok, "-n", "-3"}, "--requests"},
             {{ok, "-H", "no colon"}, "a header is \"Name: value\""},
             {{ok, "-X", "GE T"}, "bad method"},
             {{ok, "--timeout", "soon"}, "bad --timeout 'soon'"},
             {{ok, "--timeout", "0s"}, "bad --timeout '0s'"},
         }) {
        const auto [code, out] = probe(args);
        EXPECT_EQ(code, 2) << out;
        EXPECT_NE(out.find(expected), std::string::npos) << expected << "\n" << out;
        EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
        EXPECT_EQ(out.rfind("hotpath: ", 0), 0u) << out;
    }
}

// A server that accepts (the kernel completes the handshake from the backlog) but never answers.
TEST(probe_cli_test, a_server_that_never_answers_times_out_on_time) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(fd, 16), 0);
    socklen_t length = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
    const auto started = std::chrono::steady_clock::now();
    const auto [code, out] = probe({url(ntohs(a.sin_port), "/"), "--timeout", "0.5s"}, 5s);
    const auto took = std::chrono::steady_clock::now() - started;
    ::close(fd);
    EXPECT_EQ(code, 4) << out;
    EXPECT_EQ(out, "hotpath: timed out after 500ms waiting for the first response byte (--timeout)\n");
    EXPECT_GE(took, 450ms);
    EXPECT_LT(took, 1500ms) << "the timeout was not honoured";
}

TEST(probe_cli_test, a_body_that_stops_coming_times_out_naming_the_body) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        s.read_request();
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        std::this_thread::sleep_for(1s);
    });
    const auto [code, out] = probe({url(peer.port(), "/"), "--timeout", "300ms"}, 5s);
    EXPECT_EQ(code, 4) << out;
    EXPECT_EQ(out, "hotpath: timed out after 300ms reading the response body (--timeout)\n");
}

constexpr std::string_view with_server_timing = "HTTP/1.1 200 OK\r\n"
                                                "Server-Timing: db;dur=12.5;desc=\"users \\\"all\\\"\", app;dur=3\r\n"
                                                "Content-Length: 5\r\n"
                                                "server-timing: cache;desc=miss, db;dur=0.5\r\n"
                                                "\r\n"
                                                "hello";

TEST(probe_cli_test, server_timing_is_reported_per_request_and_aggregated) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        s.read_request();
        s.write(with_server_timing);
    });
    auto [code, out] = probe({url(peer.port(), "/st")});
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find("  Server-Timing\n"), std::string::npos) << out;
    EXPECT_NE(out.find("    db       12.50ms  users \"all\"\n"), std::string::npos) << out;
    EXPECT_NE(out.find("    app       3.00ms\n"), std::string::npos) << out;
    EXPECT_NE(out.find("    cache          -  miss\n"), std::string::npos) << out;

    std::tie(code, out) = probe({url(peer.port(), "/st"), "--json"});
    ASSERT_EQ(code, 0) << out;
    auto doc = boost::json::parse(out).as_object();
    const auto& metrics = doc.at("samples").as_array()[0].as_object().at("server_timing").as_array();
    ASSERT_EQ(metrics.size(), 4u) << out;
    EXPECT_EQ(metrics[0].as_object().at("name").as_string(), "db");
    EXPECT_EQ(number(metrics[0].as_object().at("dur_ms")), 12.5);
    EXPECT_EQ(metrics[0].as_object().at("desc").as_string(), "users \"all\"");
    EXPECT_EQ(metrics[1].as_object().at("name").as_string(), "app");
    EXPECT_EQ(number(metrics[1].as_object().at("dur_ms")), 3);
    EXPECT_EQ(metrics[2].as_object().at("name").as_string(), "cache");
    EXPECT_TRUE(metrics[2].as_object().at("dur_ms").is_null());
    EXPECT_EQ(metrics[2].as_object().at("desc").as_string(), "miss");
    EXPECT_EQ(doc.at("samples").as_array()[0].as_object().at("body_bytes").to_number<int>(), 5);

    // Three responses: each metric's dur per response (db twice in one: 12.5 + 0.5), aggregated.
    std::tie(code, out) = probe({url(peer.port(), "/st"), "-n", "3", "--json"});
    ASSERT_EQ(code, 0) << out;
    doc = boost::json::parse(out).as_object();
    const auto& timing = doc.at("summary").as_object().at("server_timing_ms").as_object();
    EXPECT_EQ(timing.at("db").as_object().at("count").to_number<int>(), 3);
    EXPECT_EQ(number(timing.at("db").as_object().at("median")), 13);
    EXPECT_EQ(number(timing.at("app").as_object().at("max")), 3);
    EXPECT_FALSE(timing.contains("cache")) << "no dur, nothing to aggregate";

    std::tie(code, out) = probe({url(peer.port(), "/st"), "-n", "3"});
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find("  Server-Timing (dur)\n"), std::string::npos) << out;
    EXPECT_NE(out.find("\n  db              13.00ms    13.00ms    13.00ms    13.00ms\n"), std::string::npos) << out;
}

TEST(probe_cli_test, interim_responses_and_chunked_bodies_are_measured_whole) {
    test::raw_peer peer([](test::peer_socket& s, int) {
        s.read_request();
        s.write("HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n");
        s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n");
    });
    const auto [code, out] = probe({url(peer.port(), "/"), "--json"});
    ASSERT_EQ(code, 0) << out;
    const auto s = boost::json::parse(out).as_object().at("samples").as_array()[0].as_object();
    EXPECT_EQ(s.at("status").to_number<int>(), 200);
    EXPECT_EQ(s.at("body_bytes").to_number<int>(), 11);
    const int interim = 44; // "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n"
    const int final_head = 47;
    EXPECT_EQ(s.at("head_bytes").to_number<int>(), interim + final_head);
    EXPECT_EQ(s.at("received_bytes").to_number<int>(), interim + final_head + 26);
    expect_ordered(s);
}

TEST(probe_cli_test, malformed_and_missing_responses_are_named) {
    test::raw_peer garbage([](test::peer_socket& s, int) {
        s.read_request();
        s.write("SSH-2.0-OpenSSH_9.2\r\n");
        std::this_thread::sleep_for(200ms);
    });
    auto [code, out] = probe({url(garbage.port(), "/")});
    EXPECT_EQ(code, 4) << out;
    EXPECT_EQ(out, "hotpath: malformed response from 127.0.0.1:" + std::to_string(garbage.port()) +
                       ": not HTTP/1.x (RFC 9112)\n");

    test::raw_peer hangs_up([](test::peer_socket& s, int) {
        s.read_request();
        s.close();
    });
    std::tie(code, out) = probe({url(hangs_up.port(), "/")});
    EXPECT_EQ(code, 4) << out;
    EXPECT_NE(out.find("closed the connection without answering"), std::string::npos) << out;

    test::raw_peer cut_short([](test::peer_socket& s, int) {
        s.read_request();
        s.write("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        s.close();
    });
    std::tie(code, out) = probe({url(cut_short.port(), "/")});
    EXPECT_EQ(code, 4) << out;
    EXPECT_NE(out.find("before the response was complete"), std::string::npos) << out;

    test::raw_peer resets([](test::peer_socket& s, int) {
        s.read_request();
        s.reset();
    });
    std::tie(code, out) = probe({url(resets.port(), "/")});
    EXPECT_EQ(code, 4) << out;
    EXPECT_EQ(out, "hotpath: connection reset by 127.0.0.1:" + std::to_string(resets.port()) +
                       " while reading the response\n");
}

// A TLS failure is named by its class: "tls_" and the class's name in the load's JSON. A peer that answers the
// ClientHello in plain text fails the handshake itself: "tls_handshake", in the JSON and in the failures counted.
TEST(probe_cli_test, a_failed_tls_handshake_is_named_by_its_class) {
    test::raw_peer plain_text([](test::peer_socket& s, int) {
        s.write("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        std::this_thread::sleep_for(200ms);
    });
    const std::string address = "127.0.0.1:" + std::to_string(plain_text.port());
    auto [code, out] = probe({"https://" + address + "/", "-n", "2", "--json"});
    EXPECT_EQ(code, 4) << out;
    const auto json_end = out.find('\n');
    ASSERT_NE(json_end, std::string::npos) << out;
    const auto doc = boost::json::parse(out.substr(0, json_end)).as_object();
    EXPECT_EQ(doc.at("errors"), boost::json::parse(R"({"tls_handshake":2})")) << out;
    for (const auto& sample : doc.at("samples").as_array()) {
        EXPECT_EQ(sample.as_object().at("error").as_string(), "tls_handshake") << out;
    }
    EXPECT_EQ(out.substr(json_end + 1),
              "hotpath: all 2 requests failed: 2 tls_handshake (first: TLS: the handshake failed (no common version or "
              "cipher, or an alert from the peer) (" +
                  address + ", while in the TLS handshake))\n");
}

TEST(probe_cli_test, method_headers_and_body_go_on_the_wire) {
    std::string seen; // written by the peer's thread, read once it is joined
    std::uint16_t port = 0;
    int code = 0;
    std::string out;
    {
        test::raw_peer peer([&seen](test::peer_socket& s, int) {
            seen = s.read_request();
            s.write("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        });
        port = peer.port();
        std::tie(code, out) = probe({url(port, "/items?x=1"), "-d", "{\"a\":1}", "-H", "Content-Type: application/json",
                                     "-H", "User-Agent: probe-test"});
    }
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find("HTTP/1.1 201 Created"), std::string::npos) << out;
    EXPECT_EQ(seen.rfind("POST /items?x=1 HTTP/1.1\r\n", 0), 0u) << seen;
    EXPECT_NE(seen.find("\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("\r\nUser-Agent: probe-test\r\n"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("hotpath-probe"), std::string::npos) << "the default User-Agent was replaced\n" << seen;
    EXPECT_NE(seen.find("\r\nContent-Type: application/json\r\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("\r\nContent-Length: 7\r\n"), std::string::npos) << seen;
    EXPECT_NE(seen.find("\r\nConnection: close\r\n"), std::string::npos) << seen;
    ASSERT_GE(seen.size(), 7u);
    EXPECT_EQ(seen.substr(seen.size() - 7), "{\"a\":1}") << seen;
}

} // namespace
} // namespace hotpath
