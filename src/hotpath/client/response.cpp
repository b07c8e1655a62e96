// Field lookup on a client response.
#include <hotpath/client/response.hpp>

#include <hotpath/http/request_head.hpp>

namespace hotpath {

std::string_view client_response::header(std::string_view name) const noexcept {
    for (const auto& [n, v] : fields_) {
        if (http::iequals(slice(n), name)) {
            return slice(v);
        }
    }
    return {};
}

} // namespace hotpath
