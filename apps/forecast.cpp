// JSON conversions of case 1's forecast (camelCase fields, as ASP.NET Core writes them).
#include "apps/forecast.hpp"

#include <boost/json/value_from.hpp>

namespace hotpath::apps {

namespace {

bool get_int(const boost::json::object& o, std::string_view key, int& out) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || !v->is_int64() || v->get_int64() < -1000000 || v->get_int64() > 1000000) {
        return false;
    }
    out = static_cast<int>(v->get_int64());
    return true;
}

bool get_string(const boost::json::object& o, std::string_view key, std::string& out) {
    const auto* v = o.if_contains(key);
    if (v == nullptr || !v->is_string()) {
        return false;
    }
    out.assign(v->get_string().data(), v->get_string().size());
    return true;
}

} // namespace

boost::json::result_for<forecast, boost::json::value>::type tag_invoke(boost::json::try_value_to_tag<forecast>,
                                                                       const boost::json::value& v) {
    const auto* o = v.if_object();
    forecast f;
    if (o == nullptr || !get_string(*o, "date", f.date) || !get_int(*o, "temperatureC", f.temperature_c) ||
        !get_int(*o, "temperatureF", f.temperature_f) || !get_string(*o, "summary", f.summary)) {
        return make_error_code(boost::json::error::not_object);
    }
    return f;
}

void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const forecast& f) {
    auto& o = v.emplace_object();
    o.reserve(4);
    o.emplace("date", f.date);
    o.emplace("temperatureC", f.temperature_c);
    o.emplace("temperatureF", f.temperature_f);
    o.emplace("summary", f.summary);
}

} // namespace hotpath::apps
