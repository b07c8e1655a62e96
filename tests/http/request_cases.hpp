// The request parser's tables of requests that parse and requests that are refused (with the status to answer):
// run by the parser's own tests (tests/http/request_parser_test.cpp) and, through a real connection on in-memory
// transports, by tests/server/server_connection_test.cpp.
#pragma once

#include <hotpath/http/request_head.hpp>
#include <hotpath/http/status.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace hotpath::http::request_cases {

using namespace std::string_view_literals;

// Only the members that are set are checked.
struct head_expect {
    std::optional<std::size_t> consumed{}; // default: the whole input
    std::optional<http::method> method{};
    std::optional<std::string_view> method_token{};
    std::optional<std::string_view> target{};
    std::optional<std::string_view> path{};
    std::optional<std::string_view> query{};
    std::optional<int> minor{};
    std::optional<bool> keep_alive{};
    std::optional<bool> expect_continue{};
    std::optional<body_framing> framing{};
    std::optional<std::uint64_t> content_length{};
    std::optional<std::string_view> host{};
    std::optional<std::size_t> field_count{};
};

struct ok_case {
    std::string_view label;
    std::string_view input;
    head_expect head;
};

struct error_case {
    std::string_view label;
    std::string_view input;
    status error;
};

// ---------------------------------------------------------------------------------------------------------------
// Requests that parse.

inline const ok_case ok_cases[] = {
    {"simple GET",
     "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
     {.method = method::get,
      .method_token = "GET",
      .target = "/",
      .path = "/",
      .query = "",
      .minor = 1,
      .keep_alive = true,
      .expect_continue = false,
      .framing = body_framing::none,
      .host = "a",
      .field_count = 1}},
    {"wrk-like GET",
     "GET /index.html HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: wrk\r\nAccept: */*\r\n\r\n",
     {.method = method::get, .path = "/index.html", .host = "localhost:8080", .field_count = 3}},
    {"HTTP/1.0 without Host",
     "GET / HTTP/1.0\r\n\r\n",
     {.minor = 0, .keep_alive = false, .host = "", .field_count = 0}},
    {"pipelined stops at first head",
     "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n",
     {.consumed = 28, .target = "/a"}},
    {"pipelined after partial second", "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGARBAGE(", {.consumed = 28}},
    {"body bytes not consumed",
     "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello",
     {.consumed = 47, .method = method::post, .framing = body_framing::content_length, .content_length = 5}},
    {"one leading CRLF skipped", "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", {.consumed = 29, .method = method::get}},
    {"eight leading CRLFs skipped", "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.0\r\n\r\n", {.consumed = 34}},
    // Methods (RFC 9110 §9): the nine known ones, and any other token.
    {"method HEAD", "HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::head}},
    {"method POST", "POST / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::post}},
    {"method PUT", "PUT / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::put}},
    {"method DELETE", "DELETE / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::del}},
    {"method PATCH", "PATCH / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::patch}},
    {"method OPTIONS star",
     "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
     {.method = method::options, .target = "*", .path = "*", .query = ""}},
    {"method TRACE", "TRACE / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::trace}},
    {"method CONNECT authority-form",
     "CONNECT a.example:443 HTTP/1.1\r\nHost: a.example:443\r\n\r\n",
     {.method = method::connect, .target = "a.example:443", .path = "a.example:443", .query = ""}},
    {"extension method",
     "PROPFIND /d HTTP/1.1\r\nHost: a\r\n\r\n",
     {.method = method::other, .method_token = "PROPFIND"}},
    {"methods are case-sensitive",
     "get / HTTP/1.1\r\nHost: a\r\n\r\n",
     {.method = method::other, .method_token = "get"}},
    {"method of tchar symbols", "!#$%&'*+-.^_`|~09az / HTTP/1.1\r\nHost: a\r\n\r\n", {.method = method::other}},
    // Target and query split (origin-form only).
    {"query split",
     "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: a\r\n\r\n",
     {.target = "/a/b?x=1&y=2", .path = "/a/b", .query = "x=1&y=2"}},
    {"empty query", "GET /a? HTTP/1.1\r\nHost: a\r\n\r\n", {.path = "/a", .query = ""}},
    {"split at first question mark", "GET /a?b?c HTTP/1.1\r\nHost: a\r\n\r\n", {.path = "/a", .query = "b?c"}},
    // absolute-form (RFC 9112 §3.2.2): path and query from the target, its authority replaces Host.
    {"absolute-form split",
     "GET http://a/p?q HTTP/1.1\r\nHost: a\r\n\r\n",
     {.target = "http://a/p?q", .path = "/p", .query = "q", .host = "a"}},
    {"absolute-form authority replaces Host",
     "GET http://b.example:8080/x/y HTTP/1.1\r\nHost: a\r\n\r\n",
     {.path = "/x/y", .query = "", .host = "b.example:8080"}},
    {"absolute-form scheme is case-insensitive",
     "GET HTTPS://b/ HTTP/1.1\r\nHost: b\r\n\r\n",
     {.path = "/", .host = "b"}},
    {"absolute-form empty path is /",
     "GET http://b HTTP/1.1\r\nHost: b\r\n\r\n",
     {.path = "/", .query = "", .host = "b"}},
    {"absolute-form empty path with query",
     "GET http://b?x=1 HTTP/1.1\r\nHost: b\r\n\r\n",
     {.path = "/", .query = "x=1", .host = "b"}},
    {"absolute-form in HTTP/1.0 without Host", "GET http://b/c HTTP/1.0\r\n\r\n", {.path = "/c", .host = "b"}},
    {"absolute-form with an IPv6 literal and port",
     "GET http://[::1]:8080/x HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
     {.path = "/x", .host = "[::1]:8080"}},
    // Host values (RFC 9112 §3.2, RFC 3986 §3.2.2): reg-name, IPv4, IP literal, port, empty.
    {"Host with port", "GET / HTTP/1.1\r\nHost: api.example.com:8080\r\n\r\n", {.host = "api.example.com:8080"}},
    {"Host IPv4", "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", {.host = "127.0.0.1"}},
    {"Host IPv6 literal", "GET / HTTP/1.1\r\nHost: [fe80::1]\r\n\r\n", {.host = "[fe80::1]"}},
    {"Host reg-name symbols",
     "GET / HTTP/1.1\r\nHost: a-b_c~d!$&'()*+,;=%41\r\n\r\n",
     {.host = "a-b_c~d!$&'()*+,;=%41"}},
    {"Host empty", "GET / HTTP/1.1\r\nHost:\r\n\r\n", {.host = ""}},
    {"Host with empty port", "GET / HTTP/1.1\r\nHost: a:\r\n\r\n", {.host = "a:"}},
    {"target with all VCHAR symbols",
     "GET /!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ HTTP/1.1\r\nHost: a\r\n\r\n",
     {.path = "/!\"#$%&'()*+,-./:;<=>", .query = "@[\\]^_`{|}~"}},
    // Fields: OWS trimmed, obs-text allowed in values, names case-insensitive.
    {"OWS trimmed", "GET / HTTP/1.1\r\nHost: \t a \t\r\nX-A:b\r\n\r\n", {.host = "a", .field_count = 2}},
    {"empty value", "GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\n\r\n", {.field_count = 2}},
    {"value of only OWS", "GET / HTTP/1.1\r\nHost: a\r\nX-Empty:  \t \r\n\r\n", {.field_count = 2}},
    {"obs-text in value", "GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9 \xff\x80\r\n\r\n", {.field_count = 2}},
    {"inner spaces kept", "GET / HTTP/1.1\r\nHost: a\r\nUser-Agent: a b  c\r\n\r\n", {.field_count = 2}},
    {"Host name case-insensitive", "GET / HTTP/1.1\r\nhOsT: x\r\n\r\n", {.host = "x"}},
    {"empty Host allowed", "GET / HTTP/1.1\r\nHost:\r\n\r\n", {.host = "", .field_count = 1}},
    {"underscore name is another field",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n\r\n",
     {.framing = body_framing::none}},
    {"Content-Length with OWS",
     "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:  42 \r\n\r\n",
     {.framing = body_framing::content_length, .content_length = 42}},
    {"Content-Length zero",
     "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
     {.framing = body_framing::content_length, .content_length = 0}},
    {"Content-Length leading zeros",
     "POST / HTTP/1.1\r\nHost: a\r\ncontent-length: 007\r\n\r\n",
     {.content_length = 7}},
    {"Content-Length 2^63-1",
     "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775807\r\n\r\n",
     {.content_length = 9223372036854775807ULL}},
    {"Content-Length on 1.0", "POST / HTTP/1.0\r\nContent-Length: 3\r\n\r\n", {.content_length = 3}},
    {"chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n", {.framing = body_framing::chunked}},
    {"chunked with OWS",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:  chunked \t\r\n\r\n",
     {.framing = body_framing::chunked}},
    {"chunked uppercase",
     "POST / HTTP/1.1\r\nHost: a\r\ntransfer-encoding: CHUNKED\r\n\r\n",
     {.framing = body_framing::chunked}},
    // Connection (RFC 9112 §9.3) is a list of case-insensitive tokens.
    {"1.1 keep-alive by default", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", {.keep_alive = true}},
    {"1.1 close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", {.keep_alive = false}},
    {"1.1 Close mixed case", "GET / HTTP/1.1\r\nHost: a\r\nconnection: CLOSE\r\n\r\n", {.keep_alive = false}},
    {"1.1 close in a list", "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade , close\r\n\r\n", {.keep_alive = false}},
    {"1.1 keep-alive, Upgrade",
     "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Upgrade\r\n\r\n",
     {.keep_alive = true}},
    {"1.1 closed is not close",
     "GET / HTTP/1.1\r\nHost: a\r\nConnection: closed, x-close\r\n\r\n",
     {.keep_alive = true}},
    {"1.1 close in second field",
     "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n",
     {.keep_alive = false}},
    {"1.0 close by default", "GET / HTTP/1.0\r\n\r\n", {.keep_alive = false}},
    {"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", {.keep_alive = true}},
    {"1.0 Keep-Alive in a list", "GET / HTTP/1.0\r\nConnection: Upgrade,\tKeep-Alive\r\n\r\n", {.keep_alive = true}},
    {"1.0 close beats keep-alive", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", {.keep_alive = false}},
    {"1.0 empty Connection", "GET / HTTP/1.0\r\nConnection:\r\n\r\n", {.keep_alive = false}},
    // Expect (RFC 9110 §10.1.1).
    {"Expect 100-continue", "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n", {.expect_continue = true}},
    {"Expect case-insensitive",
     "POST / HTTP/1.1\r\nHost: a\r\nexpect:  100-Continue \r\n\r\n",
     {.expect_continue = true}},
    {"Expect other value", "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue-x\r\n\r\n", {.expect_continue = false}},
    {"Expect ignored on 1.0", "POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", {.expect_continue = false}},
    // Limits at exactly their value (small_limits: line 32, section 64, 3 fields) are tested in limit_cases.
};

// ---------------------------------------------------------------------------------------------------------------
// Requests that are refused, with the status to answer.

inline const error_case error_cases[] = {
    // RFC 9112 §2.2: CRLF only; a few leading empty lines at most.
    {"bare LF ends request line", "GET / HTTP/1.1\nHost: a\r\n\r\n", status::bad_request},
    {"bare LF ends a field", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", status::bad_request},
    {"bare LF inside a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\nb\r\n\r\n", status::bad_request},
    {"bare LF as empty line", "GET / HTTP/1.1\r\nHost: a\r\n\n\r\n\r\n", status::bad_request},
    {"bare LF refused before the head ends", "GET / HTTP/1.1\r\nHost: a\r\n\n", status::bad_request},
    {"bare LF request line refused at once", "GET / HTTP/1.1\n", status::bad_request},
    {"bare LF request line then CRLF", "GET / HTTP/1.1\n\r\n", status::bad_request},
    {"bare CR in request line", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"bare CR ends request line", "GET / HTTP/1.1\rHost: a\r\n\r\n", status::bad_request},
    {"bare CR inside a value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n", status::bad_request},
    {"bare CR in field name", "GET / HTTP/1.1\r\nHost: a\r\nX\r: b\r\n\r\n", status::bad_request},
    {"leading bare LF", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"leading CRLF then bare LF", "\r\n\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"leading bare CR", "\rGET / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"nine leading CRLFs", "\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.0\r\n\r\n", status::bad_request},
    // §3: request line.
    {"empty method", " / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"method with (", "GE(T / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"TLS client hello", "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03"sv, status::bad_request},
    {"method without end, then a control byte", "GET\x01"sv, status::bad_request},
    {"method with @", "G@T / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"method with slash", "GET/ / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"method with NUL", "G\0T / HTTP/1.1\r\nHost: a\r\n\r\n"sv, status::bad_request},
    {"method with obs-text", "G\xc9T / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"tab after method", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"two spaces after method", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"missing target", "GET HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"space inside target", "GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"tab inside target", "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"NUL in target", "GET /a\0b HTTP/1.1\r\nHost: a\r\n\r\n"sv, status::bad_request},
    {"DEL in target", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"control in target", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"obs-text in target", "GET /caf\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    // §3.2: the four target forms, each only where it belongs.
    {"asterisk-form without OPTIONS", "GET * HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"asterisk-form with more", "OPTIONS *x HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"authority-form without CONNECT", "GET a.example:443 HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"relative path", "GET a/b HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"absolute-form other scheme", "GET ftp://a/x HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"absolute-form without authority", "GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"absolute-form scheme only", "GET http:// HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"absolute-form with userinfo", "GET http://u@a/ HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"absolute-form still needs Host in 1.1", "GET http://a/ HTTP/1.1\r\n\r\n", status::bad_request},
    {"absolute-form with a bad port", "GET http://x:ab/ HTTP/1.1\r\nHost: x\r\n\r\n", status::bad_request},
    {"absolute-form with an open IP literal", "GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n", status::bad_request},
    {"Host with a space", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", status::bad_request},
    {"Host with a slash", "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", status::bad_request},
    {"Host with userinfo", "GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", status::bad_request},
    {"Host with a bad port", "GET / HTTP/1.1\r\nHost: a:80x\r\n\r\n", status::bad_request},
    {"Host with two ports", "GET / HTTP/1.1\r\nHost: a:80:81\r\n\r\n", status::bad_request},
    {"Host with an open IP literal", "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", status::bad_request},
    {"Host with obs-text", "GET / HTTP/1.1\r\nHost: caf\xc3\xa9\r\n\r\n", status::bad_request},
    {"two spaces before version", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"space after version", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n", status::bad_request},
    {"no version (HTTP/0.9)", "GET /\r\n\r\n", status::bad_request},
    {"lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"version without minor", "GET / HTTP/1\r\nHost: a\r\n\r\n", status::bad_request},
    {"version two-digit minor", "GET / HTTP/1.10\r\nHost: a\r\n\r\n", status::bad_request},
    {"version two-digit major", "GET / HTTP/11.1\r\nHost: a\r\n\r\n", status::bad_request},
    {"version letter", "GET / HTTP/1.x\r\nHost: a\r\n\r\n", status::bad_request},
    {"version comma", "GET / HTTP/1,1\r\nHost: a\r\n\r\n", status::bad_request},
    {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n", status::http_version_not_supported},
    {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n", status::http_version_not_supported},
    {"HTTP/0.9 spelled out", "GET / HTTP/0.9\r\n\r\n", status::http_version_not_supported},
    {"HTTP/9.9", "GET / HTTP/9.9\r\n\r\n", status::http_version_not_supported},
    // §5: field lines.
    {"space before colon", "GET / HTTP/1.1\r\nHost : a\r\n\r\n", status::bad_request},
    {"tab before colon", "GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", status::bad_request},
    {"empty field name", "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n", status::bad_request},
    {"missing colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A b\r\n\r\n", status::bad_request},
    {"name with (", "GET / HTTP/1.1\r\nHost: a\r\nX(A: b\r\n\r\n", status::bad_request},
    {"name with slash", "GET / HTTP/1.1\r\nHost: a\r\nX/A: b\r\n\r\n", status::bad_request},
    {"name with NUL", "GET / HTTP/1.1\r\nHost: a\r\nX\0A: b\r\n\r\n"sv, status::bad_request},
    {"name with obs-text", "GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: b\r\n\r\n", status::bad_request},
    {"obs-fold with SP", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", status::bad_request},
    {"obs-fold with HTAB", "GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n\tb\r\n\r\n", status::bad_request},
    {"first field line folded", "GET / HTTP/1.1\r\n Host: a\r\n\r\n", status::bad_request},
    {"NUL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n"sv, status::bad_request},
    {"DEL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", status::bad_request},
    {"ESC in value", "GET / HTTP/1.1\r\nHost: a\r\nX: \x1b[0m\r\n\r\n", status::bad_request},
    {"vertical tab in value", "GET / HTTP/1.1\r\nHost: a\r\nX: a\vb\r\n\r\n", status::bad_request},
    // RFC 9112 §3.2: Host.
    {"1.1 without Host", "GET / HTTP/1.1\r\nX: a\r\n\r\n", status::bad_request},
    {"1.1 without any field", "GET / HTTP/1.1\r\n\r\n", status::bad_request},
    {"two Host fields", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", status::bad_request},
    {"two Host fields any case", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", status::bad_request},
    {"two Host fields on 1.0", "GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", status::bad_request},
    // RFC 9112 §6.3: Content-Length, and request smuggling.
    {"CL twice equal", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
     status::bad_request},
    {"CL twice different", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\ncontent-length: 6\r\n\r\n",
     status::bad_request},
    {"CL list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n", status::bad_request},
    {"CL list no space", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5,5\r\n\r\n", status::bad_request},
    {"CL plus sign", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n", status::bad_request},
    {"CL minus sign", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n", status::bad_request},
    {"CL inner space", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5 5\r\n\r\n", status::bad_request},
    {"CL hex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n", status::bad_request},
    {"CL trailing letter", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5a\r\n\r\n", status::bad_request},
    {"CL decimal point", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5.0\r\n\r\n", status::bad_request},
    {"CL empty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n", status::bad_request},
    {"CL 2^63", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n", status::bad_request},
    {"CL 2^64", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 18446744073709551616\r\n\r\n", status::bad_request},
    {"CL 30 digits", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 100000000000000000000000000005\r\n\r\n",
     status::bad_request},
    {"CL space before colon", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n", status::bad_request},
    {"TE then CL", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
     status::bad_request},
    {"CL then TE", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
     status::bad_request},
    {"CL then TE with CL zero", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n",
     status::bad_request},
    {"TE on 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", status::bad_request},
    {"TE with CL on 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
     status::bad_request},
    {"TE unknown coding on 1.0", "POST / HTTP/1.0\r\nTransfer-Encoding: gzip\r\n\r\n", status::bad_request},
    {"TE gzip, chunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
     status::not_implemented},
    {"TE chunked, gzip", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
     status::not_implemented},
    {"TE identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", status::not_implemented},
    {"TE xchunked", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n", status::not_implemented},
    {"TE chunkedx", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunkedx\r\n\r\n", status::not_implemented},
    {"TE chunked with parameter", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n",
     status::not_implemented},
    {"TE chunked twice in a list", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
     status::not_implemented},
    {"TE trailing comma", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked,\r\n\r\n", status::not_implemented},
    {"TE empty", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", status::not_implemented},
    {"TE quoted", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", status::not_implemented},
    {"TE two fields chunked",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
     status::not_implemented},
    {"TE two fields gzip then chunked",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
     status::not_implemented},
    {"TE two fields chunked then identity",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n",
     status::not_implemented},
    // The empty coding is refused at its own line, before the fold that would have made it "chunked" arrives.
    {"TE obs-fold", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", status::not_implemented},
    {"TE obs-fold continuation", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n , identity\r\n\r\n",
     status::bad_request},
    {"TE space before colon", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\n\r\n", status::bad_request},
    {"TE with vertical tab", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\vchunked\r\n\r\n", status::bad_request},
    {"TE with NUL", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\0\r\n\r\n"sv, status::bad_request},
    // A whole line that cannot be valid is refused as soon as its LF arrives, not after the rest of the head
    // (or the headers timeout): these inputs stop right after that line.
    {"request line without version refused at once", "GET /plaintext\r\n", status::bad_request},
    {"request line with HTTP/2.0 refused at once", "GET / HTTP/2.0\r\n", status::http_version_not_supported},
    {"request line with lowercase version refused at once", "GET / http/1.1\r\n", status::bad_request},
    {"asterisk-form without OPTIONS refused at once", "GET * HTTP/1.1\r\n", status::bad_request},
    {"field without colon refused at once", "GET / HTTP/1.1\r\nHost a\r\n", status::bad_request},
    {"space before colon refused at once", "GET / HTTP/1.1\r\nHost : a\r\n", status::bad_request},
    {"obs-fold refused at once", "GET / HTTP/1.1\r\nHost: a\r\n folded\r\n", status::bad_request},
    {"control in value refused at once", "GET / HTTP/1.1\r\nHost: a\r\nX: \x1b\r\n", status::bad_request},
    {"second Host refused at once", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n", status::bad_request},
    {"invalid Host refused at once", "GET / HTTP/1.1\r\nHost: a@b\r\n", status::bad_request},
    {"bad Content-Length refused at once", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5x\r\n", status::bad_request},
    {"CL then TE refused at once", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
     status::bad_request},
    {"TE then CL refused at once", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n",
     status::bad_request},
    {"TE on 1.0 refused at once", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n", status::bad_request},
    {"unknown TE refused at once", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n",
     status::not_implemented},
    {"second TE refused at once",
     "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
     status::not_implemented},
    // The first line that breaks a rule decides, whatever follows.
    {"unknown TE then CL is 501", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\nContent-Length: 5\r\n\r\n",
     status::not_implemented},
};

} // namespace hotpath::http::request_cases
