// JSON for handlers through Boost.JSON: per-request storage that allocates nothing in steady state.
#pragma once

#include <hotpath/server/response.hpp>

#include <boost/json.hpp>

namespace hotpath {

// A memory resource reset after each request: values built on it allocate from a buffer kept with the
// response (allocated on the first call for that response, then reused) and must not outlive the request.
boost::json::storage_ptr json_storage(response& res);

// Serialises any type Boost.JSON can convert (tag_invoke value_from, containers, described structs).
template <typename T>
void write_json(response& res, const T& value, http::status s = http::status::ok) {
    res.json(boost::json::value_from(value, json_storage(res)), s);
}

} // namespace hotpath
