// libFuzzer target for request_parser: no crash or over-read, views inside the input, and any split of the input
// answers exactly like the whole.
#include <hotpath/http/request_parser.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string_view>

namespace {

using namespace hotpath::http;
using hotpath::fuzz::require;
using hotpath::fuzz::same;
using hotpath::fuzz::within;

const limits default_limits{};
// Small limits so that the fuzzer reaches 414 and 431 with short inputs.
const limits small_limits{.max_request_line_bytes = 40, .max_header_bytes = 96, .max_header_count = 4};

} // namespace

// The first byte picks the limits (high bit) and the split offset (low bits); the rest is the input.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const limits& lim = (data[0] & 0x80) != 0 ? small_limits : default_limits;
    const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::size_t split = (data[0] & 0x7fU) % (input.size() + 1);

    request_head head;
    request_parser whole(lim);
    const parse_result r = whole.parse(input, head);
    require(r.consumed <= input.size());
    if (r.status == parse_status::complete) {
        const std::string_view used = input.substr(0, r.consumed);
        require(head.field_count <= lim.max_header_count && head.field_count <= max_fields_capacity);
        for (const std::string_view v : {head.method_token, head.target, head.path, head.query, head.host}) {
            require(within(v, used));
        }
        for (std::size_t i = 0; i < head.field_count; ++i) {
            require(within(head.fields[i].name, used) && !head.fields[i].name.empty());
            require(within(head.fields[i].value, used));
        }
        require(head.version_minor <= 1);
        // The target's form fits the method: a path from '/', or "*" / host:port for OPTIONS / CONNECT.
        require(!head.path.empty());
        require(head.path.front() == '/' || head.method == method::options || head.method == method::connect);
        require(head.query.empty() || within(head.query, head.target));
        require(head.framing != body_framing::chunked || head.version_minor == 1);
        // A head is self-delimiting: exactly its bytes parse to the same result.
        request_parser alone(lim);
        request_head again;
        require(same(alone.parse(used, again), r));
    } else if (r.status == parse_status::error) {
        require(r.error != status::none);
    }

    // Split at `split`: the prefix answers incomplete or the same, then the whole answers the same.
    request_parser halves(lim);
    request_head scratch;
    const parse_result first = halves.parse(input.substr(0, split), scratch);
    require(first.status == parse_status::incomplete || same(first, r));
    require(same(halves.parse(input, scratch), r));

    // Growing one byte at a time (bounded so that each run stays fast).
    if (input.size() <= 2048) {
        request_parser growing(lim);
        for (std::size_t k = 0; k <= input.size(); ++k) {
            const parse_result step = growing.parse(input.substr(0, k), scratch);
            require(k == input.size() ? same(step, r) : step.status == parse_status::incomplete || same(step, r));
        }
    }
    return 0;
}
