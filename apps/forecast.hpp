// Case 1's WeatherForecast as a C++ type, with its camelCase JSON conversions (for the aggregator's client).
#pragma once

#include <boost/json/conversion.hpp>
#include <boost/json/value.hpp>

#include <string>

namespace hotpath::apps {

struct forecast {
    std::string date; // ISO-8601 day, YYYY-MM-DD
    int temperature_c = 0;
    int temperature_f = 0;
    std::string summary;
};

// {"date","temperatureC","temperatureF","summary"}: all four required, numbers integral.
boost::json::result_for<forecast, boost::json::value>::type tag_invoke(boost::json::try_value_to_tag<forecast>,
                                                                       const boost::json::value& v);
void tag_invoke(boost::json::value_from_tag, boost::json::value& v, const forecast& f);

} // namespace hotpath::apps
