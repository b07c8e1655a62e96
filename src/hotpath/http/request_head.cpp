// Case-insensitive lookups over a parsed request head.
#include <hotpath/http/request_head.hpp>

namespace hotpath::http {
namespace {

// ASCII lower-casing by table: one load per byte; bytes outside 'A'..'Z' map to themselves.
constexpr std::array<unsigned char, 256> make_lower() noexcept {
    std::array<unsigned char, 256> table{};
    for (unsigned c = 0; c < 256; ++c) {
        table[c] = static_cast<unsigned char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    return table;
}

constexpr std::array<unsigned char, 256> lower = make_lower();

} // namespace

bool iequals(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (lower[static_cast<unsigned char>(a[i])] != lower[static_cast<unsigned char>(b[i])]) {
            return false;
        }
    }
    return true;
}

std::string_view request_head::find(std::string_view name) const noexcept {
    for (std::size_t i = 0; i < field_count; ++i) {
        if (iequals(fields[i].name, name)) {
            return fields[i].value;
        }
    }
    return {};
}

} // namespace hotpath::http
