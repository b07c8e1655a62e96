// The one reader of HTTP/1.x responses: fed bytes, it gives the head, the body's pieces and the end, skipping
// interim responses (RFC 9112, RFC 9110 §15.2). No I/O, no allocation. The client, the load generator and probe
// read every response through it.
#pragma once

#include <hotpath/http/body_reader.hpp>
#include <hotpath/http/response_parser.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hotpath::http {

enum class read_status : std::uint8_t {
    need_more, // all the input given was used (`body` may hold body bytes): call again with more
    head,      // the final head is parsed: head() is valid; call again (even with no input left) for the body
    done,      // the response is complete (its last body bytes in `body`); input past `consumed` is the next's
    error,     // the response is broken: error() says how; the connection cannot be used further
};

// Why a response was refused.
enum class response_error : std::uint8_t {
    none,
    malformed_head,     // not an HTTP/1.0 or 1.1 head (RFC 9112 §2-§5), or framing fields that contradict
    head_too_large,     // a head over the limits (bytes or fields)
    malformed_body,     // bad chunked coding (RFC 9112 §7.1)
    unsolicited_switch, // 101 Switching Protocols to a request that asked for no upgrade (RFC 9110 §15.2.2)
    truncated,          // the connection ended before the response did
};

// A one-line description of `e` for a person ("bad chunked body (RFC 9112 §7.1)").
std::string_view describe(response_error e) noexcept;

struct read_step {
    read_status status = read_status::need_more;
    std::size_t consumed = 0; // input bytes used: the caller drops them and passes the rest, plus what arrives
    std::string_view body;    // body bytes found by this step, decoded: a view into the input
};

// What the end of the connection makes of the response being read.
enum class end_status : std::uint8_t {
    idle,      // no byte of a response had arrived: nothing is lost
    complete,  // the body ran to the close (RFC 9112 §6.3 ¶8): the response is done
    truncated, // a response was cut short
};

// One per connection, on its loop. Responses follow one another (pipelined ones too): after `done` the reader
// waits for the next head with the same expectation; after a 101's `done` (an upgrade asked for) it reads no
// more: read() returns `error` with error() none.
//
// Feeding: the caller keeps the bytes it has not seen consumed and passes them first, followed by what arrived
// since, in one contiguous buffer: read(buf, n). Until `head`, a call consumes nothing but interim heads; the
// head's views (and `body`) point into that buffer and stay valid while the caller neither modifies nor moves
// it. Chunked bodies are decoded in place: read() rewrites the body's bytes in the buffer.
class response_reader {
public:
    explicit response_reader(const limits& l) noexcept : parser_(l), body_(l) {}

    // The responses that follow answer requests such that: `head_request`, no body follows whatever the head
    // says (RFC 9110 §9.3.2); `upgrade`, the request asked to switch protocols (an Upgrade field), so a 101 is its
    // final response and what follows it is no longer HTTP/1.1. Also forgets any response in progress.
    void expect(bool head_request, bool upgrade = false) noexcept;
    // Whether the response to be read next answers a HEAD request, for a connection whose requests differ (a load
    // scenario's): call before its head is complete. Keeps the response in progress, unlike expect().
    void answer_to_head(bool head_request) noexcept { head_request_ = head_request; }

    read_step read(char* input, std::size_t size) noexcept;
    // The peer ended the stream (EOF). A body that runs to the close is complete; then the reader waits for the
    // next response as after `done`.
    end_status end_of_input() noexcept;

    // The final head of the response being read: valid from `head` until the next response's read().
    const response_head& head() const noexcept { return head_; }
    response_error error() const noexcept { return error_; }
    // Bytes of this response's heads, interim ones included.
    std::size_t head_bytes() const noexcept { return head_bytes_; }
    // Interim (1xx) responses skipped before this response's final head.
    unsigned interim_count() const noexcept { return interim_; }
    // Whether a byte of the response being read has arrived (an interim response's counts).
    bool started() const noexcept { return phase_ != phase::head || started_; }

private:
    enum class phase : std::uint8_t { head, body, failed };

    read_step fail(response_error e, std::size_t consumed) noexcept;
    void next_response() noexcept;

    response_parser parser_;
    body_reader body_;
    response_head head_;
    phase phase_ = phase::head;
    response_error error_ = response_error::none;
    bool head_request_ = false;
    bool upgrade_ = false;
    bool started_ = false; // a byte of the current head has arrived
    unsigned interim_ = 0;
    std::size_t head_bytes_ = 0;
};

} // namespace hotpath::http
