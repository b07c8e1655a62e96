// libFuzzer target for response_parser and the body_reader after it: no crash or over-read, views inside the input,
// framing consistent with the status, and any split of the input answers exactly like the whole.
#include <hotpath/http/body_reader.hpp>
#include <hotpath/http/response_parser.hpp>

#include "fuzz_support.hpp"

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;
using hotpath::fuzz::same;
using hotpath::fuzz::within;

const limits default_limits{};
// Small limits so that the fuzzer reaches 431 with short inputs: a head of at most 96 bytes and 4 fields.
const limits small_limits{.max_request_line_bytes = 32, .max_header_bytes = 64, .max_header_count = 4};

struct body_outcome {
    body_status status = body_status::incomplete;
    std::size_t consumed = 0;
    std::string body;
};

// Reads `rest` as the body in pieces ending at `cuts`, each piece (with what is left unconsumed) in a buffer of
// its own, as a connection holds it.
body_outcome read_body(const limits& lim, const response_head& head, std::string_view rest,
                       std::initializer_list<std::size_t> cuts) {
    body_reader reader(lim);
    reader.start(head.framing, head.content_length);
    body_outcome out;
    std::string pending;
    std::size_t from = 0;
    for (std::size_t to : cuts) {
        to = std::min(std::max(to, from), rest.size());
        pending.append(rest.substr(from, to - from));
        from = to;
        const body_step s = reader.read(pending.data(), pending.size());
        require(s.consumed <= pending.size() && s.data.size() <= s.consumed);
        require(s.data.empty() || s.data.data() == pending.data());
        out.body.append(s.data);
        out.consumed += s.consumed;
        pending.erase(0, s.consumed);
        out.status = s.status;
        if (s.status != body_status::incomplete) {
            break;
        }
    }
    return out;
}

// The body after a complete head: the same bytes, end and length whether read whole or split, and within
// what the framing allows.
void check_body(const limits& lim, const response_head& head, std::string_view rest, std::size_t split) {
    const body_outcome whole = read_body(lim, head, rest, {rest.size()});
    const body_outcome halves = read_body(lim, head, rest, {split, rest.size()});
    require(whole.status == halves.status);
    if (whole.status != body_status::error) {
        require(whole.body == halves.body && whole.consumed == halves.consumed);
    }
    require(whole.consumed <= rest.size() && whole.body.size() <= whole.consumed);
    switch (head.framing) {
    case body_framing::none:
        require(whole.status == body_status::done && whole.consumed == 0);
        break;
    case body_framing::content_length:
        require(whole.body == rest.substr(0, whole.consumed) && whole.consumed <= head.content_length);
        require((whole.status == body_status::done) == (whole.consumed == head.content_length));
        break;
    case body_framing::chunked:
        require(whole.status != body_status::done || whole.body.size() <= lim.max_body_bytes);
        break;
    case body_framing::until_close:
        require(whole.status == body_status::incomplete && whole.body == rest);
        break;
    }
}

} // namespace

// The first byte picks the limits (high bit), whether the request was HEAD (bit 6) and the split offset (low
// bits); the rest is the input.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const limits& lim = (data[0] & 0x80) != 0 ? small_limits : default_limits;
    const bool head_request = (data[0] & 0x40) != 0;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::size_t split = (data[0] & 0x3fU) % (input.size() + 1);

    response_head head;
    response_parser whole(lim);
    const parse_result r = whole.parse(input, head, head_request);
    require(r.consumed <= input.size());
    if (r.status == parse_status::complete) {
        const std::string_view used = input.substr(0, r.consumed);
        require(r.consumed <= lim.max_header_bytes + lim.max_request_line_bytes);
        require(used.starts_with("HTTP/1.") && used.ends_with("\r\n\r\n"));
        require(head.field_count <= lim.max_header_count && head.field_count <= max_fields_capacity);
        require(within(head.reason, used));
        for (std::size_t i = 0; i < head.field_count; ++i) {
            require(within(head.fields[i].name, used) && !head.fields[i].name.empty());
            require(within(head.fields[i].value, used));
        }
        require(head.version_minor <= 1);
        require(head.status >= 100 && head.status <= 999);
        const bool bodiless = head_request || head.status < 200 || head.status == 204 || head.status == 304;
        require(bodiless == (head.framing == body_framing::none));
        require(head.framing != body_framing::chunked || head.version_minor == 1);
        require(head.framing != body_framing::until_close || !head.keep_alive);
        // A head is self-delimiting: exactly its bytes parse to the same result.
        response_parser alone(lim);
        response_head again;
        require(same(alone.parse(used, again, head_request), r));
        require(again.framing == head.framing && again.keep_alive == head.keep_alive && again.status == head.status);
        check_body(lim, head, input.substr(r.consumed), split);
    } else if (r.status == parse_status::error) {
        require(r.error == status::bad_request || r.error == status::request_header_fields_too_large);
    }

    // Split at `split`: the prefix answers incomplete or the same, then the whole answers the same.
    response_parser halves(lim);
    response_head scratch;
    const parse_result first = halves.parse(input.substr(0, split), scratch, head_request);
    require(first.status == parse_status::incomplete || same(first, r));
    require(same(halves.parse(input, scratch, head_request), r));

    // Growing one byte at a time (bounded so that each run stays fast).
    if (input.size() <= 2048) {
        response_parser growing(lim);
        for (std::size_t k = 0; k <= input.size(); ++k) {
            const parse_result step = growing.parse(input.substr(0, k), scratch, head_request);
            require(k == input.size() ? same(step, r) : step.status == parse_status::incomplete || same(step, r));
        }
    }
    return 0;
}
