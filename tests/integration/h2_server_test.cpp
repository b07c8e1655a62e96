// The server over HTTP/2 (h2c with prior knowledge, h2 through ALPN over TLS), against real clients: curl, nghttp,
// h2load, Python's h2 package, and hotpath load itself. The same routes and handlers as over HTTP/1.1, on the same
// port; every request answered on its own stream, in any order; limits and failures as statuses or resets.
#include "integration/https_support.hpp"
#include "support/test_server.hpp"

#include <hotpath/net/sleep.hpp>
#include <hotpath/server/json.hpp>
#include <hotpath/server/server.hpp>

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <charconv>
#include <string>

namespace hotpath {
namespace {

using namespace std::chrono_literals;
using https_support::have_program;
using https_support::shell;
using test::test_server;
using test::to_unsigned;

app make_app() {
    app a;
    a.get("/hello", [](request&, response& res) { res.text("hello"); });
    a.get("/users/{id}", [](request& req, response& res) {
        res.header("X-Id", req.param("id"));
        res.text(std::string(req.param("id")) + "|" + std::string(req.query_param("q")) + "|" +
                 std::string(req.host()) + "|" + std::string(req.header("x-test")));
    });
    a.post("/echo", [](request& req, response& res) { res.body(req.body(), "application/octet-stream"); });
    a.post("/size", [](request& req, response& res) -> task<void> {
        auto piece = co_await req.read_body();
        res.text(std::to_string(piece ? piece->size() : 0));
    });
    a.get("/slow", [](request& req, response& res) -> task<void> {
        co_await net::sleep_for(std::chrono::milliseconds{to_unsigned(req.query_param("ms"))});
        res.text("slow " + std::string(req.query_param("ms")));
    });
    a.get("/throw", [](request&, response&) { throw std::runtime_error("boom"); });
    a.get("/async-throw", [](request&, response&) -> task<void> {
        co_await net::sleep_for(1ms);
        throw std::runtime_error("boom later");
    });
    a.get("/json", [](request&, response& res) {
        boost::json::object o(json_storage(res));
        o.emplace("message", "Hello, World!");
        res.json(o);
    });
    a.get("/stream", [](request& req, response& res) -> task<void> {
        const unsigned n = to_unsigned(req.query_param("n"));
        for (unsigned i = 0; i < n; ++i) {
            co_await res.write("piece " + std::to_string(i) + "\n");
        }
    });
    a.get("/big",
          [](request& req, response& res) { res.text(std::string(to_unsigned(req.query_param("kb")) * 1024, 'x')); });
    a.get("/empty", [](request&, response& res) { res.status(http::status::no_content); });
    a.streaming(
        http::method::put, "/up",
        [](request& req, response& res) -> task<void> {
            std::size_t bytes = 0;
            for (;;) {
                auto piece = co_await req.read_body();
                if (!piece || piece->empty()) {
                    break;
                }
                bytes += piece->size();
            }
            res.text(std::to_string(bytes));
        },
        4096);
    a.metrics("/metrics");
    return a;
}

class h2_server : public ::testing::Test {
protected:
    void SetUp() override {
        if (!have_program("curl")) {
            GTEST_SKIP() << "curl is not installed";
        }
        ASSERT_TRUE(srv_.ok());
        base_ = "http://127.0.0.1:" + std::to_string(srv_.port());
    }
    std::pair<int, std::string> curl(const std::string& args) { return shell("curl -sS --max-time 10 " + args, 15); }

    app app_ = make_app();
    test_server srv_{app_};
    std::string base_;
};

TEST_F(h2_server, curl_with_prior_knowledge_speaks_h2c_and_the_routes_answer_as_over_http1) {
    auto [rc, out] = curl("--http2-prior-knowledge -H 'X-Test: yes' -w ' %{http_version} %{http_code}' '" + base_ +
                          "/users/42?q=a%20b'");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "42|a%20b|127.0.0.1:" + std::to_string(srv_.port()) + "|yes 2 200");

    // Headers: lower-case names, no connection-specific fields, content-length of the body.
    std::tie(rc, out) = curl("--http2-prior-knowledge -i '" + base_ + "/users/7'");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("HTTP/2 200"), std::string::npos) << out;
    EXPECT_NE(out.find("x-id: 7"), std::string::npos) << out;
    EXPECT_NE(out.find("content-length: "), std::string::npos) << out;
    EXPECT_NE(out.find("content-type: text/plain; charset=utf-8"), std::string::npos) << out;
    EXPECT_EQ(out.find("connection:"), std::string::npos) << out;
    EXPECT_EQ(out.find("keep-alive"), std::string::npos) << out;

    // The same port still speaks HTTP/1.1.
    std::tie(rc, out) = curl("--http1.1 -w ' %{http_version}' '" + base_ + "/hello'");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "hello 1.1");
}

TEST_F(h2_server, every_kind_of_answer_over_h2c) {
    const std::string h2 = "--http2-prior-knowledge -w ' %{http_code}' ";
    EXPECT_EQ(curl(h2 + "'" + base_ + "/json'").second, R"({"message":"Hello, World!"} 200)");
    EXPECT_EQ(curl(h2 + "'" + base_ + "/slow?ms=30'").second, "slow 30 200");
    EXPECT_EQ(curl(h2 + "'" + base_ + "/stream?n=3'").second, "piece 0\npiece 1\npiece 2\n 200");
    EXPECT_EQ(curl(h2 + "'" + base_ + "/empty'").second, " 204");
    auto [rc, out] = curl(h2 + "'" + base_ + "/nope'");
    EXPECT_NE(out.find("\"status\":404"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with(" 404")) << out;
    std::tie(rc, out) = curl(h2 + "-X DELETE '" + base_ + "/hello'");
    EXPECT_TRUE(out.ends_with(" 405")) << out;
    std::tie(rc, out) = curl(h2 + "'" + base_ + "/throw'");
    EXPECT_NE(out.find("the handler failed"), std::string::npos) << out;
    EXPECT_TRUE(out.ends_with(" 500")) << out;
    std::tie(rc, out) = curl(h2 + "'" + base_ + "/async-throw'");
    EXPECT_TRUE(out.ends_with(" 500")) << out;
    // A streaming route reads the body (whole, over HTTP/2 for now) within its own limit.
    std::tie(rc, out) = shell("head -c 4096 /dev/zero | curl -sS --max-time 10 --http2-prior-knowledge -T - "
                              "-w ' %{http_code}' '" +
                                  base_ + "/up'",
                              15);
    EXPECT_EQ(out, "4096 200");
    std::tie(rc, out) = shell("head -c 4097 /dev/zero | curl -sS --max-time 10 --http2-prior-knowledge -T - "
                              "-w ' %{http_code}' '" +
                                  base_ + "/up'",
                              15);
    EXPECT_TRUE(out.ends_with(" 413")) << out;
    // HEAD: the fields with the body's length, no body.
    std::tie(rc, out) = curl("--http2-prior-knowledge -sI '" + base_ + "/big?kb=3'");
    EXPECT_NE(out.find("content-length: 3072"), std::string::npos) << out;
    // A body larger than the windows and the frame size, both ways.
    std::tie(rc, out) = curl(h2 + "-o /dev/null '" + base_ + "/big?kb=3000'");
    EXPECT_EQ(out, " 200");
    std::tie(rc, out) = shell("head -c 2500000 /dev/zero | curl -sS --max-time 10 --http2-prior-knowledge "
                              "--data-binary @- -w ' %{http_code}' '" +
                                  base_ + "/size'",
                              15);
    EXPECT_EQ(out, "2500000 200");
}

TEST_F(h2_server, limits_answer_as_over_http1) {
    http::limits limits;
    limits.max_body_bytes = 1000;
    limits.max_header_count = 5;
    test_server small(app_, limits);
    ASSERT_TRUE(small.ok());
    const std::string url = "http://127.0.0.1:" + std::to_string(small.port());
    auto [rc, out] = shell("head -c 5000 /dev/zero | curl -sS --max-time 10 --http2-prior-knowledge --data-binary @- "
                           "-w ' %{http_code}' '" +
                               url + "/echo'",
                           15);
    EXPECT_TRUE(out.ends_with(" 413")) << out;
    std::tie(rc, out) = curl("--http2-prior-knowledge -H 'a: 1' -H 'b: 2' -H 'c: 3' -H 'd: 4' -H 'e: 5' -H 'f: 6' "
                             "-w ' %{http_code}' '" +
                             url + "/hello'");
    EXPECT_TRUE(out.ends_with(" 431")) << out;
    if (!have_program("nghttp")) {
        return;
    }
    // The connection goes on after a refusal: two streams with bodies over the limit, each answered 413 on the same
    // connection, which the server does not end.
    https_support::temp_dir dir("h2_limits");
    https_support::write_file(dir / "body", std::string(5000, 'b'));
    std::tie(rc, out) = shell("nghttp -v -d " + (dir / "body") + " '" + url + "/echo' '" + url + "/hello'", 15);
    EXPECT_NE(out.find("recv (stream_id=13) :status: 413"), std::string::npos) << out;
    EXPECT_NE(out.find("recv (stream_id=15) :status: 413"), std::string::npos) << out;
    EXPECT_EQ(out.find("recv GOAWAY"), std::string::npos) << out;
}

TEST_F(h2_server, nghttp_multiplexes_streams_on_one_connection_answered_out_of_order) {
    if (!have_program("nghttp")) {
        GTEST_SKIP() << "nghttp (nghttp2-client) is not installed";
    }
    // The slow stream is sent first; the fast ones are answered before it on the same connection.
    auto [rc, out] = shell("nghttp -v '" + base_ + "/slow?ms=300' '" + base_ + "/hello' '" + base_ + "/json'", 15);
    ASSERT_EQ(rc, 0) << out;
    const auto slow = out.find("slow 300");
    const auto hello = out.find("hello");
    ASSERT_NE(slow, std::string::npos) << out;
    ASSERT_NE(hello, std::string::npos) << out;
    EXPECT_LT(hello, slow) << out;
    EXPECT_NE(out.find("SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100"), std::string::npos) << out;
    EXPECT_NE(out.find("SETTINGS_INITIAL_WINDOW_SIZE(0x04):786432"), std::string::npos) << out;
}

TEST_F(h2_server, h2load_with_many_streams_gets_every_answer) {
    if (!have_program("h2load")) {
        GTEST_SKIP() << "h2load (nghttp2-client) is not installed";
    }
    auto [rc, out] = shell("h2load -n 20000 -c 4 -m 50 '" + base_ + "/hello'", 60);
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("20000 succeeded, 0 failed, 0 errored"), std::string::npos) << out;
    EXPECT_NE(out.find("status codes: 20000 2xx"), std::string::npos) << out;
    // The metrics count them by protocol.
    std::tie(rc, out) = curl("'" + base_ + "/metrics'");
    (void)rc;
}

TEST_F(h2_server, python_h2_client_gets_the_response_and_the_reset_of_a_cancelled_stream_costs_nothing) {
    // Debian's Python, where python3-h2 is installed (a python3 earlier in the PATH may be another).
    if (shell("/usr/bin/python3 -c 'import h2'").first != 0) {
        GTEST_SKIP() << "python3-h2 is not installed";
    }
    // Opens a slow stream and resets it while its handler sleeps (the handler is abandoned), then asks for /hello on
    // the same connection and prints the answer.
    const std::string script = R"(
import socket, sys, time, h2.connection, h2.events, h2.config
s = socket.create_connection(('127.0.0.1', int(sys.argv[1])))
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
c.send_headers(1, [(':method','GET'),(':path','/slow?ms=5000'),(':scheme','http'),(':authority','t')], end_stream=True)
s.sendall(c.data_to_send())
time.sleep(0.2)
c.reset_stream(1)
c.send_headers(3, [(':method','GET'),(':path','/hello'),(':scheme','http'),(':authority','t')], end_stream=True)
s.sendall(c.data_to_send())
body = b''
status = None
while True:
    data = s.recv(65536)
    if not data:
        break
    for e in c.receive_data(data):
        if isinstance(e, h2.events.ResponseReceived) and e.stream_id == 3:
            status = dict(e.headers)[b':status'].decode()
        if isinstance(e, h2.events.DataReceived) and e.stream_id == 3:
            body += e.data
            c.acknowledge_received_data(e.flow_controlled_length, 3)
        if isinstance(e, h2.events.StreamEnded) and e.stream_id == 3:
            print(status, body.decode())
            sys.exit(0)
    s.sendall(c.data_to_send())
)";
    const https_support::temp_dir dir("h2_reset");
    https_support::write_file(dir / "c.py", script);
    const auto started = std::chrono::steady_clock::now();
    auto [rc, out] = shell("/usr/bin/python3 " + (dir / "c.py") + " " + std::to_string(srv_.port()), 15);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "200 hello\n");
    EXPECT_LT(std::chrono::steady_clock::now() - started, 3s) << "the reset stream held the connection";
    std::tie(rc, out) = curl("'" + base_ + "/metrics'");
    EXPECT_NE(out.find("hotpath_http2_streams_reset_total 1"), std::string::npos) << out;
    EXPECT_NE(out.find("hotpath_http_requests_abandoned_total 1"), std::string::npos) << out;
    EXPECT_NE(out.find("hotpath_http_requests_in_flight 1"), std::string::npos) << out; // this scrape's own
}

TEST_F(h2_server, node_http2_client_on_one_session_posts_bodies_and_reads_every_answer) {
    if (!have_program("node")) {
        GTEST_SKIP() << "node is not installed";
    }
    // Node's http2 module (nghttp2 inside Node, a client users run): 50 POSTs of growing bodies at once on one
    // session, each echoed, then a GET; prints what came back.
    const std::string script = R"(
const http2 = require('node:http2');
const session = http2.connect(process.argv[2]);
session.on('error', (e) => { console.log('session error', e.message); process.exit(1); });
const post = (i) => new Promise((resolve, reject) => {
    const body = Buffer.alloc(i * 1000, 'a');
    const req = session.request({':method': 'POST', ':path': '/echo', 'content-length': body.length});
    let got = 0, status = 0;
    req.on('response', (h) => { status = h[':status']; });
    req.on('data', (d) => { got += d.length; });
    req.on('end', () => resolve(status === 200 && got === body.length));
    req.on('error', reject);
    req.end(body);
});
Promise.all(Array.from({length: 50}, (_, i) => post(i + 1))).then((ok) => {
    const req = session.request({':path': '/users/5?q=n'});
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (d) => { text += d; });
    req.on('end', () => { console.log(ok.filter(Boolean).length, text); session.close(); });
}, (e) => { console.log('failed', e.message); process.exit(1); });
)";
    const https_support::temp_dir dir("h2_node");
    https_support::write_file(dir / "c.js", script);
    auto [rc, out] = shell("node " + (dir / "c.js") + " " + base_, 20);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "50 5|n|127.0.0.1:" + std::to_string(srv_.port()) + "|\n");
}

TEST_F(h2_server, hotpath_load_over_h2c_with_streams) {
    auto [rc, out] = https_support::run(
        {"load", "--h2c", "--streams", "20", "-c", "2", "-n", "5000", "--json", "-", base_ + "/hello"}, 60s);
    ASSERT_EQ(rc, 0) << out;
    const auto json = https_support::load_json(out);
    EXPECT_EQ(https_support::number(json, {"successes"}), 5000u) << out;
    EXPECT_EQ(https_support::number(json, {"connections_h2"}), 2u) << out;
    std::tie(rc, out) = curl("'" + base_ + "/metrics'");
    EXPECT_NE(out.find("hotpath_http_requests_by_protocol_total{protocol=\"h2\"} 5000"), std::string::npos) << out;
    EXPECT_NE(out.find("hotpath_http_connections_by_protocol_total{protocol=\"h2\"} 2"), std::string::npos) << out;
}

TEST_F(h2_server, a_connection_over_the_limit_is_answered_503_and_ended_with_a_goaway) {
    if (!have_program("nghttp")) {
        GTEST_SKIP() << "nghttp (nghttp2-client) is not installed";
    }
    http::limits limits;
    limits.max_connections = 1;
    test_server one(app_, limits);
    ASSERT_TRUE(one.ok());
    const std::string url = "http://127.0.0.1:" + std::to_string(one.port());
    // The first connection holds the only place (a slow request); the second is over the limit.
    std::pair<int, std::string> first;
    std::thread holder([&] { first = curl("--http2-prior-knowledge '" + url + "/slow?ms=600'"); });
    std::this_thread::sleep_for(200ms);
    auto [rc, out] = shell("nghttp -v '" + url + "/hello'", 15);
    holder.join();
    EXPECT_NE(out.find(":status: 503"), std::string::npos) << out;
    EXPECT_NE(out.find("retry-after: 1"), std::string::npos) << out;
    EXPECT_NE(out.find("recv GOAWAY"), std::string::npos) << out;
    EXPECT_EQ(first.second, "slow 600");
}

TEST_F(h2_server, the_access_log_and_the_request_say_http2) {
    const https_support::temp_dir dir("h2_log");
    server_options o;
    o.access_log = dir / "access.log";
    o.access_log_format = log_line_format::common;
    {
        app a;
        a.get("/v", [](request& req, response& res) {
            res.text(std::to_string(req.version_major()) + "." + std::to_string(req.version_minor()));
        });
        test_server logged(a, o);
        ASSERT_TRUE(logged.ok());
        const std::string url = "http://127.0.0.1:" + std::to_string(logged.port()) + "/v";
        EXPECT_EQ(curl("--http2-prior-knowledge '" + url + "'").second, "2.0");
        EXPECT_EQ(curl("--http1.1 '" + url + "'").second, "1.1");
    } // stopped: the log is written
    const std::string log = https_support::read_all(dir / "access.log");
    EXPECT_NE(log.find("\"GET /v HTTP/2.0\" 200 "), std::string::npos) << log;
    EXPECT_NE(log.find("\"GET /v HTTP/1.1\" 200 "), std::string::npos) << log;
}

TEST_F(h2_server, without_http2_the_preface_is_a_bad_request) {
    server_options o;
    o.http2 = false;
    test_server plain(app_, o);
    ASSERT_TRUE(plain.ok());
    auto [rc, out] =
        curl("--http2-prior-knowledge '" + std::string("http://127.0.0.1:") + std::to_string(plain.port()) + "/hello'");
    EXPECT_NE(rc, 0) << out;
}

TEST_F(h2_server, graceful_stop_answers_the_open_streams_then_goes_away) {
    server_options o;
    auto stopping = std::make_unique<test_server>(app_, o);
    ASSERT_TRUE(stopping->ok());
    const std::string url = "http://127.0.0.1:" + std::to_string(stopping->port());
    std::pair<int, std::string> got;
    std::thread client([&] { got = curl("--http2-prior-knowledge -w ' %{http_code}' '" + url + "/slow?ms=400'"); });
    std::this_thread::sleep_for(150ms); // the request is in its handler
    const auto started = std::chrono::steady_clock::now();
    stopping.reset(); // stop() and wait(): the stream is answered first
    client.join();
    EXPECT_EQ(got.second, "slow 400 200");
    EXPECT_LT(std::chrono::steady_clock::now() - started, 5s);
}

TEST(h2_server_tls, alpn_h2_over_https_and_http1_for_clients_that_ask_for_it) {
    if (!have_program("curl")) {
        GTEST_SKIP() << "curl is not installed";
    }
    https_support::https_server srv(https_support::serve_test_cert());
    const std::string url = "https://127.0.0.1:" + std::to_string(srv.port()) + "/plaintext";
    const std::string ca = "--cacert " + test::test_cert("ca.pem") + " ";
    auto [rc, out] = https_support::curl(ca + "--http2 -w ' %{http_version}' '" + url + "'");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "Hello, World! 2");
    std::tie(rc, out) = https_support::curl(ca + "--http1.1 -w ' %{http_version}' '" + url + "'");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "Hello, World! 1.1");
    if (have_program("h2load")) {
        std::tie(rc, out) = shell("h2load -n 2000 -c 2 -m 10 '" + url + "'", 30);
        EXPECT_NE(out.find("2000 succeeded, 0 failed"), std::string::npos) << out;
        EXPECT_NE(out.find("Application protocol: h2"), std::string::npos) << out;
    }
    std::tie(rc, out) = https_support::run(
        {"load", "--h2", "--streams", "10", "-c", "2", "-n", "2000", "--insecure", "--json", "-", url}, 60s);
    ASSERT_EQ(rc, 0) << out;
    const auto json = https_support::load_json(out);
    EXPECT_EQ(https_support::number(json, {"successes"}), 2000u) << out;
    EXPECT_EQ(https_support::number(json, {"connections_h2"}), 2u) << out;
}

} // namespace
} // namespace hotpath
