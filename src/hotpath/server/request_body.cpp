// The request body stream: the body reader's pieces laid one after the other right after the head.
#include <hotpath/server/request_body.hpp>

#include <cstring>

namespace hotpath {

void request_body::start(http::body_framing framing, std::uint64_t content_length,
                         std::uint64_t max_body_bytes) noexcept {
    start(framing, content_length);
    if (!complete_) {
        reader_.start(framing, content_length, max_body_bytes);
    }
}

http::status request_body::read(char* at, std::size_t arrived) noexcept {
    if (complete_ || arrived <= used_) {
        return http::status::none;
    }
    const http::body_step step = reader_.read(at + used_, arrived - used_, at + held_);
    if (step.status == http::body_status::error) {
        return step.error == http::status::none ? http::status::bad_request : step.error;
    }
    used_ += step.consumed;
    held_ += step.data.size();
    complete_ = step.status == http::body_status::done;
    return http::status::none;
}

std::size_t request_body::drop(char* at, std::size_t arrived) noexcept {
    const std::size_t rest = arrived - used_;
    if (used_ != 0 && rest != 0) {
        std::memmove(at, at + used_, rest);
    }
    held_ = used_ = 0;
    return rest;
}

std::size_t request_body::forget_framing() noexcept {
    used_ = held_;
    return held_;
}

} // namespace hotpath
