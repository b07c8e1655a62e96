// HTTP request methods (RFC 9110 §9).
#pragma once

#include <cstdint>
#include <string_view>

namespace hotpath::http {

enum class method : std::uint8_t { get, head, post, put, del, patch, options, trace, connect, other };

inline constexpr std::size_t method_count = 10;

// The method for a token as sent on the wire; `other` for any valid token not listed. Case-sensitive (§9.1).
method to_method(std::string_view token) noexcept;

// The canonical name ("GET", "DELETE", ...); "OTHER" for method::other.
std::string_view to_string(method m) noexcept;

} // namespace hotpath::http
