// The body reader: a Content-Length countdown, the chunked decoder, or everything until EOF.
#include <hotpath/http/body_reader.hpp>

#include <algorithm>
#include <cstring>

namespace hotpath::http {

void body_reader::start(body_framing framing, std::uint64_t content_length) noexcept {
    framing_ = framing;
    left_ = framing == body_framing::content_length ? content_length : 0;
    if (framing == body_framing::chunked) {
        chunked_.reset();
    }
}

void body_reader::start(body_framing framing, std::uint64_t content_length, std::uint64_t max_body_bytes) noexcept {
    start(framing, content_length);
    if (framing == body_framing::chunked) {
        chunked_.reset(max_body_bytes);
    }
}

body_step body_reader::read(char* input, std::size_t size, char* out) noexcept {
    switch (framing_) {
    case body_framing::none:
        return {body_status::done, 0, {}};
    case body_framing::content_length: {
        const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(left_, size));
        left_ -= take;
        if (out != input) {
            std::memmove(out, input, take);
        }
        return {left_ == 0 ? body_status::done : body_status::incomplete, take, {out, take}};
    }
    case body_framing::chunked: {
        const chunk_result r = chunked_.decode(input, size, out);
        const body_status s = r.status == chunk_status::done         ? body_status::done
                              : r.status == chunk_status::incomplete ? body_status::incomplete
                                                                     : body_status::error;
        return {s, r.consumed, {out, r.produced}, r.error};
    }
    case body_framing::until_close:
        break;
    }
    if (out != input) {
        std::memmove(out, input, size);
    }
    return {body_status::incomplete, size, {out, size}};
}

} // namespace hotpath::http
