// A response's fields for HTTP/2: lower-cased names, connection-specific fields dropped, in one reused buffer.
#include <hotpath/http/h2_fields.hpp>

#include <hotpath/http/request_head.hpp>
#include <hotpath/http/response.hpp>

#include <charconv>

namespace hotpath::http {

bool is_connection_specific(std::string_view name) noexcept {
    return iequals(name, "connection") || iequals(name, "keep-alive") || iequals(name, "proxy-connection") ||
           iequals(name, "transfer-encoding") || iequals(name, "upgrade");
}

void h2_response_fields::add(std::string_view name, std::string_view value, bool lower) {
    const auto name_at = static_cast<std::uint32_t>(text_.size());
    text_.append(name);
    if (lower) {
        for (std::size_t i = name_at; i < text_.size(); ++i) {
            const char c = text_[i];
            text_[i] = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
        }
    }
    const auto value_at = static_cast<std::uint32_t>(text_.size());
    text_.append(value);
    placed_.push_back(
        {name_at, static_cast<std::uint32_t>(name.size()), value_at, static_cast<std::uint32_t>(value.size())});
}

void h2_response_fields::build(const response& r, std::string_view date, std::optional<std::uint64_t> length) {
    text_.clear();
    placed_.clear();
    fields_.clear();
    const unsigned code = to_int(r.status());
    const char status[3] = {static_cast<char>('0' + code / 100 % 10), static_cast<char>('0' + code / 10 % 10),
                            static_cast<char>('0' + code % 10)};
    add(":status", std::string_view(status, 3), false);
    add("server", "hotpath", false);
    add("date", date, false);
    r.for_each_field([this](std::string_view name, std::string_view value) {
        if (!is_connection_specific(name)) {
            add(name, value, true);
        }
    });
    const bool has_content = allows_body(r.status());
    if (has_content && !r.content_type().empty()) {
        add("content-type", r.content_type(), false);
    }
    if (has_content && length) {
        char digits[20];
        const auto end = std::to_chars(digits, digits + sizeof digits, *length).ptr;
        add("content-length", std::string_view(digits, static_cast<std::size_t>(end - digits)), false);
    }
    for (const placed& p : placed_) {
        fields_.push_back({std::string_view(text_).substr(p.name_at, p.name_size),
                           std::string_view(text_).substr(p.value_at, p.value_size)});
    }
}

} // namespace hotpath::http
