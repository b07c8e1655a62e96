// What the HTTPS tests share (https_serve_test, https_load_test): children bounded in time, shell commands under
// timeout(1), a `hotpath serve` over TLS, the load's JSON, silent sockets, Python and openssl s_client as peers.
#pragma once

#include "support/child_process.hpp"
#include "support/test_certs.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace hotpath::https_support {

using namespace std::chrono_literals;
using test::child;
using test::test_cert;

// SIGKILLs a process still running `limit` after it started, so that reading its output ends and no test hangs
// on a child that never prints or never exits. Cancel it before reaping the process (child::wait_exit): the pid
// then names no other process.
class kill_after {
public:
    kill_after(pid_t pid, std::chrono::milliseconds limit)
        : thread_([this, pid, limit] {
              std::unique_lock hold(lock_);
              if (!woken_.wait_for(hold, limit, [this] { return cancelled_; }) && pid > 0) {
                  fired_ = true;
                  ::kill(pid, SIGKILL);
              }
          }) {}
    kill_after(const kill_after&) = delete;
    kill_after& operator=(const kill_after&) = delete;
    ~kill_after() { cancel(); }

    void cancel() {
        {
            const std::lock_guard hold(lock_);
            cancelled_ = true;
        }
        woken_.notify_one();
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    bool fired() const { return fired_; }

private:
    std::mutex lock_;
    std::condition_variable woken_;
    bool cancelled_ = false;
    std::atomic<bool> fired_{false};
    std::thread thread_; // last: started once the members it reads exist
};

inline std::string joined(const std::vector<std::string>& args) {
    std::string s;
    for (const auto& a : args) {
        s.append(s.empty() ? "" : " ").append(a);
    }
    return s;
}

// Runs `hotpath args` to its end, killed past `limit`: its exit code (-1 if killed) and its output.
inline std::pair<int, std::string> run(const std::vector<std::string>& args, std::chrono::milliseconds limit = 30s) {
    child c(args);
    kill_after guard(c.pid(), limit);
    std::string out = c.rest();
    guard.cancel();
    return {c.wait_exit(5s), std::move(out)};
}

inline std::string quoted(const std::string& s) {
    std::string q = "'";
    for (const char ch : s) {
        q += ch == '\'' ? std::string(R"('\'')") : std::string(1, ch);
    }
    return q + "'";
}

// Runs a shell command line (stdin from /dev/null, stderr with stdout) under timeout(1), which ends it and the
// processes it started past `limit_s` seconds: its exit code (124 when timed out) and its output.
inline std::pair<int, std::string> shell(const std::string& command, int limit_s = 20) {
    const std::string line =
        "timeout -k 5 " + std::to_string(limit_s) + " sh -c " + quoted(command) + " < /dev/null 2>&1";
    std::string out;
    FILE* p = ::popen(line.c_str(), "r");
    if (p == nullptr) {
        return {-1, out};
    }
    char buf[4096];
    std::size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) {
        out.append(buf, n);
    }
    const int status = ::pclose(p);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::move(out)};
}

inline bool have_program(const std::string& name) {
    return shell("command -v " + name + " > /dev/null", 5).first == 0;
}

inline std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

// A folder of this test's own, removed at its end.
class temp_dir {
public:
    explicit temp_dir(const std::string& name)
        : path_(::testing::TempDir() + "hotpath_https_" + std::to_string(::getpid()) + "_" + name) {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    std::string operator/(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// A `hotpath serve APP --port 0 ...` over HTTPS: its first line read, its port parsed from it, killed past
// `limit` so that reading its lines cannot hang; stopped with SIGTERM at the end (and checked to exit 0).
class https_server {
public:
    explicit https_server(std::vector<std::string> args, std::chrono::milliseconds limit = 60s)
        : process_(std::move(args)), guard_(process_.pid(), limit) {
        first_ = process_.line();
        static const std::regex re(R"(https://127\.0\.0\.1:(\d+))");
        if (std::smatch m; std::regex_search(first_, m, re)) {
            port_ = static_cast<std::uint16_t>(std::stoi(m[1]));
        }
    }
    https_server(const https_server&) = delete;
    https_server& operator=(const https_server&) = delete;
    ~https_server() {
        if (!stopped_) {
            EXPECT_EQ(stop(), 0) << rest_;
        }
    }

    const std::string& first_line() const { return first_; }
    std::uint16_t port() const { return port_; }
    std::string url(const std::string& path) const { return "https://127.0.0.1:" + std::to_string(port_) + path; }
    std::string line() { return process_.line(); }
    void signal(int sig) { process_.signal(sig); }
    pid_t pid() const { return process_.pid(); }

    // SIGTERM, then everything it printed until its exit (rest()); its exit code, -1 if it had to be killed.
    int stop() {
        stopped_ = true;
        process_.signal(SIGTERM);
        rest_ = process_.rest();
        guard_.cancel();
        return guard_.fired() ? -1 : process_.wait_exit(5s);
    }
    const std::string& rest() const { return rest_; }

private:
    child process_;
    kill_after guard_;
    std::string first_;
    std::uint16_t port_ = 0;
    bool stopped_ = false;
    std::string rest_;
};

inline std::vector<std::string> serve(const std::string& cert, const std::string& key,
                                      const std::vector<std::string>& more = {}) {
    std::vector<std::string> args{"serve", "platform",   "--port", "0",         "--threads",
                                  "1",     "--tls-cert", cert,     "--tls-key", key};
    args.insert(args.end(), more.begin(), more.end());
    return args;
}

inline std::vector<std::string> serve_test_cert(const std::vector<std::string>& more = {}) {
    return serve(test_cert("server.pem"), test_cert("server.key"), more);
}

// curl with a bound on its time: exit code and output (-v goes there too).
inline std::pair<int, std::string> curl(const std::string& args) {
    return shell("curl -sS --max-time 5 " + args, 10);
}

// A counter of the server's /metrics (read with curl over HTTPS); -1 when absent.
inline long long tls_handshakes(const https_server& srv, const std::string& result) {
    const auto [code, text] = curl("--cacert " + test_cert("ca.pem") + " " + srv.url("/metrics"));
    std::smatch m;
    const std::regex re("hotpath_tls_handshakes_total\\{result=\"" + result + "\"\\} (\\d+)");
    if (code != 0 || !std::regex_search(text, m, re)) {
        return -1;
    }
    return std::stoll(m[1]);
}

// The JSON document `hotpath load ... --json -` wrote on its own line among the report's lines.
inline boost::json::object load_json(const std::string& out) {
    const auto at = out.find(R"({"schema":"hotpath-load/)");
    if (at == std::string::npos) {
        ADD_FAILURE() << "no JSON document in:\n" << out;
        return {};
    }
    boost::system::error_code ec;
    auto doc = boost::json::parse(out.substr(at, out.find('\n', at) - at), ec);
    if (ec || !doc.is_object()) {
        ADD_FAILURE() << "not a JSON object: " << ec.message() << "\n" << out;
        return {};
    }
    return std::move(doc.as_object());
}

inline std::uint64_t number(const boost::json::object& o, std::initializer_list<const char*> path) {
    const boost::json::value* v = nullptr;
    const boost::json::object* at = &o;
    for (const char* key : path) {
        v = at == nullptr ? nullptr : at->if_contains(key);
        if (v == nullptr) {
            ADD_FAILURE() << "no " << key << " in " << boost::json::serialize(o).substr(0, 2000);
            return 0;
        }
        at = v->if_object();
    }
    return v->to_number<std::uint64_t>();
}

// A TCP connection to 127.0.0.1:port that sends nothing (a client that never starts its handshake); closed at the
// end of its scope.
class raw_socket {
public:
    explicit raw_socket(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    raw_socket(raw_socket&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)), connected_(std::exchange(other.connected_, false)) {}
    raw_socket(const raw_socket&) = delete;
    raw_socket& operator=(const raw_socket&) = delete;
    raw_socket& operator=(raw_socket&&) = delete;
    ~raw_socket() { close(); }

    bool connected() const { return connected_; }
    void close() {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    // Whether the peer has closed the connection (end of stream or reset) by now, without waiting.
    bool closed_by_peer() const {
        char byte = 0;
        const ssize_t n = ::recv(fd_, &byte, 1, MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    // How long until the peer closed it, waiting at most `limit`; nullopt if it did not.
    std::optional<std::chrono::milliseconds> wait_closed(std::chrono::milliseconds limit) const {
        const auto started = std::chrono::steady_clock::now();
        const auto deadline = started + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            pollfd p{fd_, POLLIN, 0};
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
            if (::poll(&p, 1, static_cast<int>(std::max(left, 1ms).count())) > 0 && closed_by_peer()) {
                return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                             started);
            }
        }
        return std::nullopt;
    }

private:
    int fd_ = -1;
    bool connected_ = false;
};

// Python's ssl and http.client: a client of the standard library, verifying against a CA file. Prints one line per
// request, "STATUS BODY TLS-VERSION", on one keep-alive connection; the second request after `pause` seconds.
constexpr const char* python_client = R"(import http.client, ssl, sys, time
ca, port, path, pause = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl.create_default_context(cafile=ca), timeout=5)
for i in range(2):
    if i == 1:
        time.sleep(pause)
    c.request("GET", path)
    r = c.getresponse()
    print(r.status, r.read().decode(), c.sock.version(), flush=True)
)";

// One keep-alive connection across a SIGHUP (sent by this script to `pid`): its certificate's CN and a response
// before, the same after on the same connection, and a new connection's once it sees `new_cn` (within 5 s).
constexpr const char* python_reload_client = R"(import http.client, os, signal, ssl, sys, time
ca, port, pid, new_cn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def connect(check_hostname):
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = check_hostname
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ctx, timeout=5)
    c.connect()
    return c
def cn(c):
    return dict(field[0] for field in c.sock.getpeercert()["subject"])["commonName"]
def get(c):
    c.request("GET", "/plaintext")
    r = c.getresponse()
    return "%d %s" % (r.status, r.read().decode())
kept = connect(True)
print("before:", cn(kept), get(kept), flush=True)
os.kill(pid, signal.SIGHUP)
deadline = time.time() + 5
while True:
    fresh = connect(False)
    if cn(fresh) == new_cn or time.time() > deadline:
        break
    fresh.close()
    time.sleep(0.05)
print("new connection:", cn(fresh), get(fresh), flush=True)
print("kept connection:", cn(kept), get(kept), flush=True)
)";

// What openssl s_client prints of a session with 127.0.0.1:port (its stdin empty: it ends once connected).
inline std::string s_client(std::uint16_t port, const std::string& options) {
    return shell("openssl s_client -connect 127.0.0.1:" + std::to_string(port) + " " + options, 10).second;
}

// The first program called `name` in the PATH's folders, then in /usr/sbin and /usr/local/sbin (Debian installs nginx
// and nghttpd there, outside a user's PATH); "" when there is none. The child runs a path, not a name.
inline std::string program_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    const std::string dirs = std::string(path != nullptr ? path : "/usr/bin:/bin") + ":/usr/sbin:/usr/local/sbin";
    std::size_t at = 0;
    while (at <= dirs.size()) {
        const std::size_t end = std::min(dirs.find(':', at), dirs.size());
        const std::string candidate = dirs.substr(at, end - at) + "/" + name;
        if (end > at && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
        at = end + 1;
    }
    return {};
}

// nginx for the load tests, as bench/nginx.conf.in runs it: one process in the foreground, every path in its own
// folder. @LISTEN@ is the listen directive's parameters after the address (http2, ssl http2, ssl), @SERVER@ more
// directives of the server.
inline constexpr const char* nginx_conf = R"(worker_processes 1;
daemon off;
master_process off;
pid @PREFIX@/nginx.pid;
error_log @PREFIX@/error.log warn;
lock_file @PREFIX@/nginx.lock;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path @PREFIX@/client_body;
    proxy_temp_path @PREFIX@/proxy;
    fastcgi_temp_path @PREFIX@/fastcgi;
    uwsgi_temp_path @PREFIX@/uwsgi;
    scgi_temp_path @PREFIX@/scgi;
    server {
        listen 127.0.0.1:@PORT@ @LISTEN@;
@SERVER@
        location / { default_type text/plain; return 200 "ok"; }
    }
}
)";

// An nginx of one test (nginx 1.22's syntax: `listen ... http2` on a plain listen is prior knowledge only), killed
// past a minute, stopped with SIGTERM at the end and checked to exit 0.
class nginx_peer {
public:
    nginx_peer(const std::string& name, const std::string& listen, const std::string& server_directives = {})
        : dir_("h2_nginx_" + name), port_(test::free_port()) {
        std::string conf = nginx_conf;
        const bool tls = listen.find("ssl") != std::string::npos;
        const std::string server = (tls ? "        ssl_certificate " + test_cert("server.pem") +
                                              ";\n        ssl_certificate_key " + test_cert("server.key") + ";\n"
                                        : std::string()) +
                                   server_directives;
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"@PREFIX@", dir_.path()},
                                         {"@PORT@", std::to_string(port_)},
                                         {"@LISTEN@", listen},
                                         {"@SERVER@", server}}) {
            for (auto at = conf.find(key); at != std::string::npos; at = conf.find(key)) {
                conf.replace(at, key.size(), value);
            }
        }
        write_file(dir_ / "nginx.conf", conf);
        process_ = std::make_unique<child>(
            program_path("nginx"),
            std::vector<std::string>{"-p", dir_.path(), "-e", dir_ / "error.log", "-c", dir_ / "nginx.conf"});
        guard_ = std::make_unique<kill_after>(process_->pid(), 60s);
        up_ = port_ != 0 && test::wait_listening(port_, 10s);
    }
    nginx_peer(const nginx_peer&) = delete;
    nginx_peer& operator=(const nginx_peer&) = delete;
    ~nginx_peer() {
        process_->signal(SIGTERM);
        const std::string rest = process_->rest();
        guard_->cancel();
        EXPECT_EQ(process_->wait_exit(5s), 0) << rest << read_all(dir_ / "error.log");
    }

    bool up() const { return up_; }
    std::string log() const { return read_all(dir_ / "error.log"); }
    std::string url(const std::string& scheme, const std::string& path = "/") const {
        return scheme + "://127.0.0.1:" + std::to_string(port_) + path;
    }

private:
    temp_dir dir_;
    std::uint16_t port_ = 0;
    std::unique_ptr<child> process_;
    std::unique_ptr<kill_after> guard_; // cancelled before the process is reaped, so that its pid names no other
    bool up_ = false;
};

inline std::string missing_nginx() {
    return program_path("nginx").empty() ? "no nginx (Debian's nginx-light)" : "";
}

} // namespace hotpath::https_support
