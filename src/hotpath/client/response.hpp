// What a client call returns: status, fields and body, owned (the connection's buffers are reused at once).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace hotpath {

namespace client_detail {
class client_connection;
}

class client_response {
public:
    unsigned status() const noexcept { return status_; }
    std::string_view reason() const noexcept { return slice(reason_); }
    // The first field named `name` (case-insensitive); empty when absent. Views live as long as this object.
    std::string_view header(std::string_view name) const noexcept;
    std::size_t header_count() const noexcept { return fields_.size(); }
    std::string_view header_name(std::size_t i) const noexcept { return slice(fields_[i].first); }
    std::string_view header_value(std::size_t i) const noexcept { return slice(fields_[i].second); }
    // The body, with any chunked coding removed.
    const std::string& body() const noexcept { return body_; }
    std::string& body() noexcept { return body_; }

private:
    friend class client_detail::client_connection;
    struct span {
        std::uint32_t offset = 0;
        std::uint32_t size = 0;
    };
    std::string_view slice(span s) const noexcept { return std::string_view(head_).substr(s.offset, s.size); }

    unsigned status_ = 0;
    std::string head_; // the response head's bytes; fields point into it
    span reason_;
    std::vector<std::pair<span, span>> fields_;
    std::string body_;
};

} // namespace hotpath
