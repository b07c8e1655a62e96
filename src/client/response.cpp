// Field lookup on a client response.
#include "client/response.hpp"

#include <algorithm>

namespace hotpath {

std::string_view client_response::header(std::string_view name) const noexcept {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (const auto& [n, v] : fields_) {
        const std::string_view field_name = slice(n);
        if (field_name.size() == name.size() && std::equal(name.begin(), name.end(), field_name.begin(),
                                                           [&](char a, char b) { return lower(a) == lower(b); })) {
            return slice(v);
        }
    }
    return {};
}

} // namespace hotpath
