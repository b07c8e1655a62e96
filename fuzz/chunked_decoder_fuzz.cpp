// libFuzzer target for chunked_decoder: no crash or over-read, and decoding in place in two pieces or byte by byte
// gives exactly what decoding the whole input gives.
#include <hotpath/http/chunked_decoder.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using namespace hotpath::http;

void require(bool condition) {
    if (!condition) {
        std::abort();
    }
}

const limits default_limits{};
// Small limits so that the fuzzer reaches 413, 431 and the extension limit with short inputs.
const limits small_limits{.max_header_bytes = 48, .max_body_bytes = 256, .max_chunk_extension_bytes = 24};

} // namespace

// The first byte picks the limits (high bit) and the split offset (low bits); the rest is the input.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) {
        return 0;
    }
    const limits& lim = (data[0] & 0x80) != 0 ? small_limits : default_limits;
    const char* input = reinterpret_cast<const char*>(data + 1);
    const std::size_t n = size - 1;
    const std::size_t split = (data[0] & 0x7fU) % (n + 1);

    // Whole, into a separate buffer.
    std::vector<char> out(n + 1);
    chunked_decoder whole(lim);
    const chunk_result r = whole.decode(input, n, out.data());
    require(r.consumed <= n && r.produced <= r.consumed);
    require(r.status != chunk_status::incomplete || r.consumed == n);
    require((r.status == chunk_status::error) == (r.error != status::none));
    require(whole.body_bytes() == r.produced);
    require(r.status != chunk_status::error || r.error == status::bad_request || r.error == status::content_too_large ||
            r.error == status::request_header_fields_too_large);
    require(r.produced <= lim.max_body_bytes);

    // In place, in two pieces.
    std::vector<char> buffer(input, input + n);
    chunked_decoder halves(lim);
    chunk_result first = halves.decode(buffer.data(), split, buffer.data());
    std::size_t in = first.consumed;
    std::size_t produced = first.produced;
    chunk_result last = first;
    if (first.status == chunk_status::incomplete) {
        require(first.consumed == split);
        last = halves.decode(buffer.data() + in, n - in, buffer.data() + produced);
        in += last.consumed;
        produced += last.produced;
    }
    require(last.status == r.status && last.error == r.error);
    if (r.status != chunk_status::error) {
        require(in == r.consumed && produced == r.produced);
        require(produced == 0 || std::memcmp(buffer.data(), out.data(), produced) == 0);
    }

    // Byte by byte.
    chunked_decoder bytes(lim);
    std::vector<char> out_bytes(n + 1);
    in = 0;
    produced = 0;
    chunk_result step;
    while (in < n) {
        step = bytes.decode(input + in, 1, out_bytes.data() + produced);
        in += step.consumed;
        produced += step.produced;
        if (step.status != chunk_status::incomplete) {
            break;
        }
    }
    if (n > 0) {
        require(step.status == r.status && step.error == r.error);
        if (r.status != chunk_status::error) {
            require(in == r.consumed && produced == r.produced);
            require(std::memcmp(out_bytes.data(), out.data(), produced) == 0);
        }
    }
    return 0;
}
