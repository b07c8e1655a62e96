// libFuzzer target for response_parser: no crash or over-read, views inside the input, framing consistent with the
// status, and any split of the input answers exactly like the whole.
#include "http/response_parser.hpp"

#include "fuzz_support.hpp"

#include <cstdint>
#include <string_view>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;
using hotpath::fuzz::same;
using hotpath::fuzz::within;

const limits default_limits{};
// Small limits so that the fuzzer reaches 431 with short inputs: a head of at most 96 bytes and 4 fields.
const limits small_limits{.max_request_line_bytes = 32, .max_header_bytes = 64, .max_header_count = 4};

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
