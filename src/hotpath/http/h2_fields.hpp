// A response's header block as HTTP/2 sends it (RFC 9113 §8.3.2, §8.2): ":status" first, then what HTTP/1.1's
// serialisation writes (server, date, the handler's fields, content-type, content-length) with names in lower case,
// and the connection-specific fields HTTP/2 forbids left out. Kept by a stream and built again for each response: its
// buffers keep their capacity, so the steady state allocates nothing.
#pragma once

#include <hotpath/http/h2_session.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::http {

class response;

class h2_response_fields {
public:
    // The fields of `r`, dated `date` (an IMF-fixdate). `length`: the content-length to announce (a whole body's
    // size, or a streamed body's declared length); none for a body whose length is not known (its END_STREAM ends
    // it). A status that has no content (1xx, 204, 304) gets neither content-type nor content-length, as over
    // HTTP/1.1. The views stay valid until the next build().
    void build(const response& r, std::string_view date, std::optional<std::uint64_t> length);
    std::span<const h2_field> fields() const noexcept { return fields_; }

private:
    struct placed {
        std::uint32_t name_at, name_size, value_at, value_size;
    };
    void add(std::string_view name, std::string_view value, bool lower);

    std::string text_;             // the names (lower-cased) and values, back to back
    std::vector<placed> placed_;   // where each field's name and value are in text_
    std::vector<h2_field> fields_; // views into text_, made once text_ is whole
};

// Whether HTTP/2 forbids a field named `name` (any case) in a message (RFC 9113 §8.2.2): Connection, Keep-Alive,
// Proxy-Connection, Transfer-Encoding, Upgrade.
bool is_connection_specific(std::string_view name) noexcept;

} // namespace hotpath::http
