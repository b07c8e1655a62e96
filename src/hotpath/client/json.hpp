// Typed JSON calls: client::get_json<T>(url) through Boost.JSON's value_to conversions.
#pragma once

#include <hotpath/client/client.hpp>
#include <hotpath/core/error.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/value_to.hpp>

namespace hotpath {

template <typename T>
task<result<T>> client::get_json(std::string url, call_options options) {
    auto response = co_await get(std::move(url), options);
    if (!response) {
        co_return response.error();
    }
    if (response->status() < 200 || response->status() > 299) {
        co_return make_error_code(errc::unexpected_status);
    }
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(response->body(), ec);
    if (ec) {
        co_return make_error_code(errc::invalid_json);
    }
    auto converted = boost::json::try_value_to<T>(v);
    if (!converted) {
        co_return make_error_code(errc::invalid_json);
    }
    co_return std::move(*converted);
}

} // namespace hotpath
