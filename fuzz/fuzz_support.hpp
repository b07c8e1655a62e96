// Checks shared by the request and response parser fuzz targets: abort on a broken property, compare two parse
// results, and tell whether a view lies inside the input.
#pragma once

#include <hotpath/http/request_parser.hpp>

#include <cstdlib>
#include <string_view>

namespace hotpath::fuzz {

// Aborts, which libFuzzer reports as a crash with the input that caused it, when `condition` is false.
inline void require(bool condition) {
    if (!condition) {
        std::abort();
    }
}

// True when both parse results answer exactly the same: status, bytes consumed and error.
inline bool same(const http::parse_result& a, const http::parse_result& b) {
    return a.status == b.status && a.consumed == b.consumed && a.error == b.error;
}

// True when `inner` is empty or points entirely inside `outer`.
inline bool within(std::string_view inner, std::string_view outer) {
    return inner.empty() ||
           (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

} // namespace hotpath::fuzz
