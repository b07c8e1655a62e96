// `hotpath probe URL`: one HTTP request at a time, each phase (resolve, connect, send, first byte, done) timed by its
// own clock reading, with the status, the sizes and the server's own Server-Timing metrics.
#pragma once

#include <hotpath/load/plan.hpp>
#include <hotpath/net/tls_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace hotpath::probe {

using clock = std::chrono::steady_clock;

// The command line as typed; make_plan() checks it.
struct probe_options {
    std::string url;
    std::optional<std::string> method; // default GET, or POST with a body (as curl -d)
    std::vector<std::string> headers;  // "Name: value", each replacing a default field of that name
    std::optional<std::string> body;
    std::uint64_t requests = 1;
    bool keep_alive = false; // one connection for all requests instead of a new one each
    std::string timeout = "10s";
    net::tls_client_options tls; // for an https:// URL: -k, --cacert, --cert/--key, --tls-min, --sni, resumption
};

// What a probe sends, checked.
struct plan {
    http::url to;
    std::string method = "GET";
    std::string request; // the request's bytes: head and body
    std::uint64_t requests = 1;
    bool keep_alive = false;
    bool idempotent = true;          // the method is (RFC 9110 §9.2.2) or an Idempotency-Key field says so
    bool upgrade = false;            // an Upgrade field asks to switch protocols: a 101 is then the final answer
    std::size_t keep_body_bytes = 0; // the first bytes of each body kept in sample::body
    // Per request, from its start to its response's last byte, every phase included (resolution and connect too).
    std::chrono::nanoseconds timeout = std::chrono::seconds{10};
    net::tls_client_options tls; // https://: its sessions resumed from one request to the next
    // The client context made of `tls`, once: by make_plan (which so tells a file that cannot be used), used by run().
    // Null for http://, or in a plan built by hand: run() then makes one for itself. Shared by the plan's copies
    // (their runs resume each other's sessions); made again only by setting it to null, after a change of `tls`.
    std::shared_ptr<net::tls_context> tls_context;
};

// The plan `o` describes, checked; errc::invalid_value and a one-line reason for bad usage (a bad URL, a bad header,
// method or timeout, TLS files that cannot be used). For an https:// URL, makes the run's TLS context (tls_context).
result<plan, problem> make_plan(const probe_options& o);

// One metric of the response's Server-Timing fields, copied out of the response.
struct server_timing_entry {
    std::string name;
    std::optional<double> duration_ms; // dur: milliseconds
    std::string description;           // desc, unescaped; empty when absent
};

// One request. Each reading is the time from the request's start (just before name resolution) to the end of a
// phase, so they never decrease: resolved <= connected <= handshaken <= sent <= first_byte <= done.
struct sample {
    std::chrono::nanoseconds resolved{};   // the name resolved: 0 for an IP literal or a reused connection
    std::chrono::nanoseconds connected{};  // the TCP connection established: equals resolved on a reused one
    std::chrono::nanoseconds handshaken{}; // https://: the TLS handshake done (curl's appconnect); else connected
    std::string tls_version;               // https://: "TLSv1.3", on a new connection
    bool tls_resumed = false;              // ... whose handshake resumed a session
    std::string alpn;                      // ... and the protocol ALPN agreed
    std::chrono::nanoseconds sent{};       // the request's last byte handed to the kernel
    std::chrono::nanoseconds first_byte{}; // the first byte of the response read
    std::chrono::nanoseconds done{};       // the response complete (head and body)
    bool reused = false;                   // on the connection of the previous request (--keep-alive)
    std::string address;                   // the address connected to, as host:port ("127.0.0.1:8080")

    unsigned status = 0;
    std::string reason;
    unsigned version_minor = 1;       // HTTP/1.<minor>
    std::uint64_t head_bytes = 0;     // status line, fields and empty line, 1xx interim heads included
    std::uint64_t body_bytes = 0;     // the body as delivered (after chunked decoding)
    std::uint64_t received_bytes = 0; // every byte read from the connection for this response
    std::string body;                 // the body's first plan::keep_body_bytes, decoded
    std::vector<server_timing_entry> server_timing;

    // A failed request: `error` is its class (errc::refused, timeout, connect_timeout, reset, closed,
    // malformed_response, resolve_failed, or a system error) and `message` says what happened in one line. The
    // readings of the phases that ended before it are kept.
    std::error_code error;
    std::string message;

    bool ok() const noexcept { return !error; }
};

// Runs the plan's requests one after another on the calling thread (blocking; nothing runs in parallel, so each
// reading is the phase's alone). Every phase waits at most until the request's deadline (start + timeout),
// resolution included. A name that does not resolve stops the run after its first request (each next would fail the
// same way). Returns one sample per request made.
std::vector<sample> run(const plan& p);

// What fetch() got: the final status and the body (its first max_body_bytes).
struct fetched {
    unsigned status = 0;
    std::string body;
};

// One GET of `url` on a connection of its own (closed after), within `timeout` for all of it, on the calling thread
// (blocking), keeping the body's first `max_body_bytes`: what a program asks of a service it watches (the lab reads
// /debug/routes and /metrics with it). A failure is one line, as probe prints it ("connection refused by
// 127.0.0.1:5060").
result<fetched, problem> fetch(std::string_view url, std::chrono::nanoseconds timeout,
                               std::size_t max_body_bytes = 64 * 1024 * 1024, const net::tls_client_options& tls = {});
// The same for any one request `o` describes (its method, headers and body, binary or not): a program's POST, as
// `hotpath load --out` pushes its metrics. o.requests, o.keep_alive and o.timeout are not used.
result<fetched, problem> fetch(const probe_options& o, std::chrono::nanoseconds timeout,
                               std::size_t max_body_bytes = 64 * 1024 * 1024);

} // namespace hotpath::probe
