// The response reader: heads through the response parser (interim ones skipped), bodies through the body reader.
#include <hotpath/http/response_reader.hpp>

namespace hotpath::http {

std::string_view describe(response_error e) noexcept {
    switch (e) {
    case response_error::none:
        return "no error";
    case response_error::malformed_head:
        return "not HTTP/1.x (RFC 9112)";
    case response_error::head_too_large:
        return "its head is over the limits";
    case response_error::malformed_body:
        return "bad chunked body (RFC 9112 §7.1)";
    case response_error::unsolicited_switch:
        return "101 Switching Protocols to a request that asked for no upgrade (RFC 9110 §15.2.2)";
    case response_error::truncated:
        return "the connection ended before the response did";
    }
    return "unknown";
}

void response_reader::expect(bool head_request, bool upgrade) noexcept {
    head_request_ = head_request;
    upgrade_ = upgrade;
    next_response();
}

void response_reader::next_response() noexcept {
    parser_.reset();
    phase_ = phase::head;
    error_ = response_error::none;
    started_ = false;
    interim_ = 0;
    head_bytes_ = 0;
}

read_step response_reader::fail(response_error e, std::size_t consumed) noexcept {
    phase_ = phase::failed;
    error_ = e;
    return {read_status::error, consumed, {}};
}

read_step response_reader::read(char* input, std::size_t size) noexcept {
    std::size_t used = 0;
    while (phase_ == phase::head) {
        if (used == size) {
            return {read_status::need_more, used, {}};
        }
        started_ = true;
        const parse_result r = parser_.parse({input + used, size - used}, head_, head_request_);
        if (r.status == parse_status::incomplete) {
            return {read_status::need_more, used, {}};
        }
        if (r.status == parse_status::error) {
            return fail(r.error == status::request_header_fields_too_large ? response_error::head_too_large
                                                                           : response_error::malformed_head,
                        used);
        }
        used += r.consumed;
        head_bytes_ += r.consumed;
        parser_.reset();
        if (head_.status == 101 && !upgrade_) {
            return fail(response_error::unsolicited_switch, used);
        }
        if (head_.status < 200 && head_.status != 101) {
            ++interim_; // 100 Continue, 103 Early Hints: the final response follows (RFC 9110 §15.2)
            continue;
        }
        body_.start(head_.framing, head_.content_length);
        phase_ = phase::body;
        return {read_status::head, used, {}};
    }
    if (phase_ == phase::failed) {
        return {read_status::error, 0, {}};
    }
    const body_step b = body_.read(input, size);
    if (b.status == body_status::error) {
        return fail(response_error::malformed_body, b.consumed);
    }
    if (b.status == body_status::incomplete) {
        return {read_status::need_more, b.consumed, b.data};
    }
    const bool switched = head_.status == 101;
    next_response();
    if (switched) {
        // What follows a 101 is the new protocol's: this reader reads no more of it.
        phase_ = phase::failed;
        error_ = response_error::none;
    }
    return {read_status::done, b.consumed, b.data};
}

end_status response_reader::end_of_input() noexcept {
    if (phase_ == phase::body && body_.ends_at_close()) {
        next_response();
        return end_status::complete;
    }
    if (phase_ == phase::body || (phase_ == phase::head && started_)) {
        phase_ = phase::failed;
        error_ = response_error::truncated;
        return end_status::truncated;
    }
    return end_status::idle;
}

} // namespace hotpath::http
