// Byte classes of the HTTP/1.x grammar in one 256-entry table shared by the parsers and the chunked decoder
// (internal: included by .cpp files only).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace hotpath::http::char_class {

// One bit per class: a byte is tested with one table load and one AND, no range comparisons.
enum : std::uint8_t {
    tchar_bit = 1, // RFC 9110 §5.6.2 tchar: method, field-name, chunk-ext-name bytes
    vchar_bit = 2, // VCHAR 0x21-0x7E (no SP, CTL, DEL or obs-text): the request-target bytes accepted
    value_bit = 4, // RFC 9110 §5.5 field-value bytes: VCHAR, obs-text 0x80-0xFF, SP and HTAB; also the bytes of
                   // a reason-phrase (RFC 9112 §4) and of qdtext/quoted-pair besides '"' and '\'
    hex_bit = 8,   // HEXDIG, either case (RFC 9112 §7.1 chunk-size)
    host_bit = 16, // RFC 3986 §3.2.2 reg-name bytes: unreserved, sub-delims and '%' of pct-encoded
};

constexpr std::array<std::uint8_t, 256> make_table() noexcept {
    constexpr std::string_view tchar_symbols = "!#$%&'*+-.^_`|~";
    constexpr std::string_view host_symbols = "-._~!$&'()*+,;=%";
    std::array<std::uint8_t, 256> table{};
    for (unsigned c = 0; c < 256; ++c) {
        const bool digit = c >= '0' && c <= '9';
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        const bool vchar = c >= 0x21 && c <= 0x7e;
        unsigned bits = 0;
        if (digit || alpha || tchar_symbols.find(static_cast<char>(c)) != std::string_view::npos) {
            bits |= tchar_bit;
        }
        if (vchar) {
            bits |= vchar_bit;
        }
        if (vchar || c >= 0x80 || c == ' ' || c == '\t') {
            bits |= value_bit;
        }
        if (digit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')) {
            bits |= hex_bit;
        }
        if (digit || alpha || host_symbols.find(static_cast<char>(c)) != std::string_view::npos) {
            bits |= host_bit;
        }
        table[c] = static_cast<std::uint8_t>(bits);
    }
    return table;
}

inline constexpr std::array<std::uint8_t, 256> table = make_table();

// True when `c` is in any of the classes in `bits`. CR, LF and NUL are in none, so a loop over a class stops at
// the end of its line.
constexpr bool is(unsigned char c, std::uint8_t bits) noexcept {
    return (table[c] & bits) != 0;
}

constexpr bool is(char c, std::uint8_t bits) noexcept {
    return is(static_cast<unsigned char>(c), bits);
}

// RFC 9110 §5.6.3: OWS = *( SP / HTAB ).
constexpr bool is_ows(char c) noexcept {
    return c == ' ' || c == '\t';
}

constexpr std::string_view trim_ows(std::string_view s) noexcept {
    while (!s.empty() && is_ows(s.front())) {
        s.remove_prefix(1);
    }
    while (!s.empty() && is_ows(s.back())) {
        s.remove_suffix(1);
    }
    return s;
}

// The value of a hexadecimal digit of either case; -1 for any other byte.
constexpr int hex_digit_value(char c) noexcept {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace hotpath::http::char_class
