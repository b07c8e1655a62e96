// The probe's requests: a name resolved, a socket connected, a request written and a response read, one at a time,
// with a clock reading at the end of each phase and one deadline for all of them.
#include <hotpath/probe/probe.hpp>

#include <hotpath/http/request_head.hpp>
#include <hotpath/http/response.hpp>
#include <hotpath/http/response_reader.hpp>
#include <hotpath/http/server_timing.hpp>
#include <hotpath/load/report.hpp>
#include <hotpath/net/address.hpp>
#include <hotpath/net/connect.hpp>
#include <hotpath/net/tls.hpp>
#include <hotpath/net/transport.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace hotpath::probe {
namespace {

using std::chrono::nanoseconds;

// A connected socket, closed when dropped.
class socket_fd {
public:
    socket_fd() = default;
    explicit socket_fd(int fd) noexcept : fd_(fd) {}
    socket_fd(socket_fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
    socket_fd& operator=(socket_fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd_ = std::exchange(o.fd_, -1);
        }
        return *this;
    }
    socket_fd(const socket_fd&) = delete;
    socket_fd& operator=(const socket_fd&) = delete;
    ~socket_fd() { reset(); }

    int get() const noexcept { return fd_; }
    bool open() const noexcept { return fd_ >= 0; }
    void reset() noexcept {
        if (fd_ >= 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }

private:
    int fd_ = -1;
};

// The timeout as a user would write it: "10s", "500ms", else with decimals.
std::string timeout_text(nanoseconds d) {
    if (d.count() % 1'000'000'000 == 0) {
        return fmt::format("{}s", d.count() / 1'000'000'000);
    }
    if (d.count() % 1'000'000 == 0) {
        return fmt::format("{}ms", d.count() / 1'000'000);
    }
    return format_duration_ns(static_cast<double>(d.count()));
}

problem timed_out(const plan& p, std::string_view doing, errc error = errc::timeout) {
    return {error, fmt::format("timed out after {} {} (--timeout)", timeout_text(p.timeout), doing)};
}

// A system error while `doing` something with `address` ("connecting", "sending the request", ...).
problem from_errno(int e, const std::string& address, std::string_view doing) {
    switch (e) {
    case ECONNREFUSED:
        return {errc::refused, fmt::format("connection refused by {}", address)};
    case ECONNRESET:
    case EPIPE:
        return {errc::reset, fmt::format("connection reset by {} while {}", address, doing)};
    default:
        return {std::error_code(e, std::system_category()),
                fmt::format("{} while {} ({})", std::system_category().message(e), doing, address)};
    }
}

// getaddrinfo has no timeout of its own: it runs on a thread of its own, which is left behind (detached) if the
// deadline passes first, and ends whenever the resolver gives up.
struct resolution {
    std::mutex mutex;
    std::condition_variable ready;
    bool done = false;
    std::optional<result<std::vector<net::endpoint>, problem>> found;
};

result<std::vector<net::endpoint>, problem> resolve(const plan& p, clock::time_point deadline) {
    auto shared = std::make_shared<resolution>();
    std::thread([shared, host = p.to.host, port = p.to.port] {
        auto found = net::resolve_now(host, port);
        const std::lock_guard lock(shared->mutex);
        shared->found.emplace(std::move(found));
        shared->done = true;
        shared->ready.notify_all();
    }).detach();
    std::unique_lock lock(shared->mutex);
    if (!shared->ready.wait_until(lock, deadline, [&] { return shared->done; })) {
        return timed_out(p, fmt::format("resolving {}", p.to.host));
    }
    return std::move(*shared->found);
}

// Connects to each address in turn (as curl does without happy eyeballs) until one accepts; the last failure
// otherwise. `address` is the last address tried, as host:port.
result<socket_fd, problem> connect_any(const plan& p, const std::vector<net::endpoint>& addresses,
                                       clock::time_point deadline, std::string& address) {
    problem failed{errc::refused, "no address to connect to"};
    for (const auto& to : addresses) {
        address = net::host_port(to.address_text(), to.port());
        socket_fd fd(::socket(to.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!fd.open()) {
            failed = from_errno(errno, address, "opening a socket");
            continue;
        }
        const int one = 1;
        ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int e = 0;
        if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&to.address), to.length) != 0) {
            e = errno;
            if (e == EINPROGRESS) {
                if (!net::wait_for_socket(fd.get(), POLLOUT, deadline)) {
                    return timed_out(p, fmt::format("connecting to {}", address), errc::connect_timeout);
                }
                socklen_t length = sizeof e;
                ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &e, &length);
            }
        }
        if (e == 0) {
            return fd;
        }
        failed = from_errno(e, address, "connecting");
    }
    return failed;
}

// The connection kept between requests with --keep-alive: its socket and, over https://, its TLS session.
struct connection {
    socket_fd fd;
    std::unique_ptr<net::tls_stream> tls;
    std::string address;
    void reset() noexcept {
        tls.reset();
        fd.reset();
    }
};

// A TLS session's failure while `doing` something, as a line: a certificate refused or the protocol (its own
// class), a timeout, or the socket's.
problem tls_problem(const plan& p, std::error_code e, const std::string& address, std::string_view doing) {
    if (e == make_error_code(errc::timeout)) {
        return timed_out(p, doing);
    }
    if (e.category() == net::tls_category()) {
        return {e, fmt::format("{} ({}, while {})", e.message(), address, doing)};
    }
    if (e == make_error_code(errc::closed)) {
        return {e, fmt::format("{} closed the connection while {}", address, doing)};
    }
    if (e.category() == std::system_category()) {
        return from_errno(e.value(), address, doing);
    }
    return {e, fmt::format("{} while {} ({})", e.message(), doing, address)};
}

result<void, problem> send_all(const plan& p, connection& c, const std::string& address, clock::time_point deadline) {
    if (c.tls != nullptr) {
        if (auto failed = c.tls->write(p.request, deadline)) {
            return tls_problem(p, failed, address, "sending the request");
        }
        return {};
    }
    const int fd = c.fd.get();
    std::size_t written = 0;
    while (written < p.request.size()) {
        const ssize_t n = ::send(fd, p.request.data() + written, p.request.size() - written, MSG_NOSIGNAL);
        if (n > 0) {
            written += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            return from_errno(errno, address, "sending the request");
        }
        if (!net::wait_for_socket(fd, POLLOUT, deadline)) {
            return timed_out(p, "sending the request");
        }
    }
    return {};
}

// The head's status, reason, version and Server-Timing metrics, copied into `s`.
void take_head(const http::response_head& head, sample& s) {
    s.status = head.status;
    s.reason = std::string(head.reason);
    s.version_minor = head.version_minor;
    std::vector<http::server_timing_metric> metrics;
    for (std::size_t i = 0; i < head.field_count; ++i) {
        if (http::iequals(head.fields[i].name, "server-timing")) {
            (void)http::parse_server_timing(head.fields[i].value, metrics);
        }
    }
    for (const auto& m : metrics) {
        s.server_timing.push_back({std::string(m.name),
                                   m.duration ? std::optional<double>(m.duration->count()) : std::nullopt,
                                   m.description()});
    }
}

// Reads one response on `fd` into `s` (status, sizes, Server-Timing, readings of the first byte and the end; the
// body's first p.keep_body_bytes). Sets `keep_alive` to whether the connection may carry the next request.
result<void, problem> receive(const plan& p, connection& c, clock::time_point start, clock::time_point deadline,
                              sample& s, bool& keep_alive) {
    const int fd = c.fd.get();
    static const http::limits limits{};
    http::response_reader reader(limits);
    reader.expect(p.method == "HEAD", p.upgrade);
    std::string buffer;
    bool in_body = false;
    keep_alive = false;
    const auto malformed = [&](http::response_error e) {
        const std::string what =
            e == http::response_error::head_too_large
                ? fmt::format("its head is over {} bytes", limits.max_header_bytes + limits.max_request_line_bytes)
                : std::string(http::describe(e));
        return problem{errc::malformed_response, fmt::format("malformed response from {}: {}", s.address, what)};
    };
    constexpr std::size_t read_size = 64 * 1024;
    for (;;) {
        const std::size_t old_size = buffer.size();
        buffer.resize(old_size + read_size);
        ssize_t n = 0;
        if (c.tls != nullptr) {
            auto got = c.tls->read(buffer.data() + old_size, read_size, deadline);
            if (!got) {
                buffer.resize(old_size);
                return tls_problem(p, got.error(), s.address,
                                   s.received_bytes == 0 ? "waiting for the first response byte"
                                   : in_body             ? "reading the response body"
                                                         : "reading the response head");
            }
            n = static_cast<ssize_t>(*got);
        } else {
            n = ::recv(fd, buffer.data() + old_size, read_size, 0);
        }
        const auto now = clock::now();
        buffer.resize(old_size + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                return from_errno(errno, s.address, "reading the response");
            }
            if (!net::wait_for_socket(fd, POLLIN, deadline)) {
                return timed_out(p, s.received_bytes == 0 ? "waiting for the first response byte"
                                    : in_body             ? "reading the response body"
                                                          : "reading the response head");
            }
            continue;
        }
        if (n == 0) {
            if (reader.end_of_input() == http::end_status::complete) {
                s.done = now - start;
                return {};
            }
            return problem{errc::closed,
                           s.received_bytes == 0
                               ? fmt::format("{} closed the connection without answering", s.address)
                               : fmt::format("{} closed the connection after {} bytes, before the response was "
                                             "complete",
                                             s.address, s.received_bytes)};
        }
        if (s.received_bytes == 0) {
            s.first_byte = now - start;
        }
        s.received_bytes += static_cast<std::uint64_t>(n);

        for (;;) {
            const http::read_step step = reader.read(buffer.data(), buffer.size());
            if (step.status == http::read_status::error) {
                return malformed(reader.error());
            }
            if (step.status == http::read_status::head) {
                s.head_bytes = reader.head_bytes();
                take_head(reader.head(), s);
                keep_alive = reader.head().keep_alive;
                in_body = true;
                buffer.erase(0, step.consumed);
                continue;
            }
            s.body_bytes += step.body.size();
            if (s.body.size() < p.keep_body_bytes) {
                s.body.append(step.body.substr(0, p.keep_body_bytes - s.body.size()));
            }
            buffer.erase(0, step.consumed);
            if (step.status == http::read_status::done) {
                s.done = now - start;
                // Bytes past the response mean the connection's framing cannot be trusted for another.
                keep_alive = keep_alive && buffer.empty();
                return {};
            }
            break; // need_more
        }
    }
}

// One request, on `c` when it is open (and then left open for the next if the response allows it). `tls`: the run's
// context for an https:// URL.
sample request_once(const plan& p, connection& c, const std::shared_ptr<net::tls_context>& tls) {
    sample s;
    const auto start = clock::now();
    const auto deadline = start + p.timeout;
    auto fail = [&](problem f) {
        s.error = f.code;
        s.message = std::move(f.message);
        c.reset();
        return s;
    };
    if (c.fd.open()) {
        s.reused = true;
        s.address = c.address;
    } else {
        std::vector<net::endpoint> addresses;
        if (auto literal = net::endpoint::from_literal(p.to.host, p.to.port)) {
            addresses.push_back(*literal);
        } else {
            auto found = resolve(p, deadline);
            if (!found) {
                return fail(std::move(found).error());
            }
            addresses = std::move(*found);
            s.resolved = clock::now() - start;
        }
        auto connected = connect_any(p, addresses, deadline, s.address);
        if (!connected) {
            return fail(std::move(connected).error());
        }
        c.fd = std::move(*connected);
        s.connected = clock::now() - start;
        s.handshaken = s.connected;
        c.address = s.address;
        if (tls != nullptr) {
            const std::string& name = p.tls.server_name.empty() ? p.to.host : p.tls.server_name;
            auto session = net::tls_stream::connect(tls, c.fd.get(), name, deadline);
            if (!session) {
                return fail(tls_problem(p, session.error(), s.address, "in the TLS handshake"));
            }
            c.tls = std::move(*session);
            s.handshaken = clock::now() - start;
            const auto info = c.tls->info();
            s.tls_version = info.version;
            s.tls_resumed = info.resumed;
            s.alpn = info.alpn;
        }
    }
    if (auto sent = send_all(p, c, s.address, deadline); !sent) {
        return fail(std::move(sent).error());
    }
    s.sent = clock::now() - start;
    bool keep_alive = false;
    if (auto received = receive(p, c, start, deadline, s, keep_alive); !received) {
        return fail(std::move(received).error());
    }
    if (!p.keep_alive || !keep_alive) {
        c.reset();
    }
    return s;
}

} // namespace

result<plan, problem> make_plan(const probe_options& o) {
    const auto refuse = [](std::string message) { return problem{errc::invalid_value, std::move(message)}; };
    plan p;
    auto to = http::parse_url(o.url);
    if (!to) {
        return refuse(std::move(to).error().message);
    }
    p.to = std::move(*to);
    p.tls = o.tls;
    if (p.to.tls()) {
        auto made = net::tls_context::client(p.tls);
        if (!made) {
            return refuse(std::move(made).error().message); // a file that cannot be used: told before any request
        }
        p.tls_context = std::move(*made);
    }
    p.method = o.method.value_or(o.body ? "POST" : "GET");
    if (!http::is_token(p.method)) {
        return refuse("bad method '" + p.method + "'");
    }
    std::vector<std::pair<std::string, std::string>> fields{
        {"Host", p.to.authority()}, {"User-Agent", "hotpath-probe"}, {"Accept", "*/*"}};
    for (const auto& h : o.headers) {
        const auto colon = h.find(':');
        if (colon == std::string::npos || colon == 0 || !http::is_token(h.substr(0, colon)) ||
            h.find_first_of("\r\n") != std::string::npos) {
            return refuse("a header is \"Name: value\"; got '" + h + "'");
        }
        std::string name = h.substr(0, colon);
        const auto value = h.find_first_not_of(' ', colon + 1);
        std::string text = value == std::string::npos ? "" : h.substr(value);
        // A header the user gives replaces the default of that name (curl -H does the same).
        bool replaced = false;
        for (std::size_t i = 0; i < 3 && i < fields.size(); ++i) {
            if (http::iequals(fields[i].first, name)) {
                fields[i] = {std::move(name), std::move(text)};
                replaced = true;
                break;
            }
        }
        if (!replaced) {
            fields.emplace_back(std::move(name), std::move(text));
        }
    }
    const auto given = [&](std::string_view name) {
        for (const auto& f : fields) {
            if (http::iequals(f.first, name)) {
                return true;
            }
        }
        return false;
    };
    const std::string body = o.body.value_or("");
    if ((o.body || p.method == "POST" || p.method == "PUT" || p.method == "PATCH") && !given("content-length") &&
        !given("transfer-encoding")) {
        fields.emplace_back("Content-Length", std::to_string(body.size()));
    }
    constexpr std::string_view idempotent[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"};
    p.idempotent = std::find(std::begin(idempotent), std::end(idempotent), p.method) != std::end(idempotent) ||
                   given("idempotency-key");
    p.upgrade = given("upgrade");
    p.keep_alive = o.keep_alive;
    if (!p.keep_alive && !given("connection")) {
        fields.emplace_back("Connection", "close");
    }
    p.request = p.method + " " + p.to.target + " HTTP/1.1\r\n";
    for (const auto& [name, value] : fields) {
        p.request.append(name).append(": ").append(value).append("\r\n");
    }
    p.request.append("\r\n").append(body);

    if (o.requests == 0) {
        return refuse("-n must be at least 1");
    }
    p.requests = o.requests;
    const auto timeout = parse_duration(o.timeout);
    if (!timeout || timeout->count() <= 0) {
        return refuse("bad --timeout '" + o.timeout + "' (e.g. 10s, 500ms)");
    }
    p.timeout = *timeout;
    return p;
}

namespace {

// The run's TLS context for an https:// plan: make_plan's, or one made now for a plan built by hand (a problem when
// its files cannot be used). Null for http://.
result<std::shared_ptr<net::tls_context>, problem> context_for(const plan& p) {
    if (!p.to.tls()) {
        return std::shared_ptr<net::tls_context>();
    }
    if (p.tls_context != nullptr) {
        return p.tls_context;
    }
    return net::tls_context::client(p.tls);
}

} // namespace

std::vector<sample> run(const plan& p) {
    std::vector<sample> samples;
    samples.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(p.requests, 100'000)));
    auto tls = context_for(p);
    if (!tls) {
        sample s;
        s.error = tls.error().code;
        s.message = tls.error().message;
        samples.push_back(std::move(s));
        return samples;
    }
    connection c;
    for (std::uint64_t i = 0; i < p.requests; ++i) {
        sample s = request_once(p, c, *tls);
        // A kept-alive connection the server closed meanwhile fails before any byte comes back: an idempotent request
        // is made again on a new connection, as curl does, and timed from there (RFC 9110 §9.2.2: never a POST).
        if (s.reused && s.received_bytes == 0 && p.idempotent &&
            (s.error == make_error_code(errc::closed) || s.error == make_error_code(errc::reset))) {
            s = request_once(p, c, *tls);
        }
        const bool unresolved = s.error == make_error_code(errc::resolve_failed);
        samples.push_back(std::move(s));
        if (unresolved) {
            break;
        }
    }
    return samples;
}

result<fetched, problem> fetch(std::string_view url, std::chrono::nanoseconds timeout, std::size_t max_body_bytes,
                               const net::tls_client_options& tls_options) {
    probe_options o;
    o.url = std::string(url);
    o.headers = {"User-Agent: hotpath"};
    o.tls = tls_options;
    return fetch(o, timeout, max_body_bytes);
}

result<fetched, problem> fetch(const probe_options& o, std::chrono::nanoseconds timeout, std::size_t max_body_bytes) {
    probe_options one = o;
    one.requests = 1;
    one.keep_alive = false;
    auto planned = make_plan(one);
    if (!planned) {
        return problem{errc::invalid_url, std::move(planned).error().message};
    }
    plan p = std::move(*planned);
    p.timeout = timeout;
    p.keep_body_bytes = max_body_bytes;
    auto tls = context_for(p);
    if (!tls) {
        return std::move(tls).error();
    }
    connection c;
    sample s = request_once(p, c, *tls);
    if (!s.ok()) {
        return problem{s.error, std::move(s.message)};
    }
    return fetched{s.status, std::move(s.body)};
}

} // namespace hotpath::probe
