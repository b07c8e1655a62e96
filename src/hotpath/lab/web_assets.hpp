// The files the lab's HTML report embeds, compiled in by cmake/embed-assets.cmake (web/ and uPlot's npm package).
#pragma once

#include <string_view>

namespace hotpath::lab::web {

// Each views a static byte array that lives as long as the program; none holds "http://" or "https://" (the
// build fails otherwise), and the JS and CSS hold no "</script" or "</style".
extern const std::string_view uplot_js;    // uPlot.iife.min.js: defines the global uPlot
extern const std::string_view uplot_css;   // uPlot.min.css
extern const std::string_view report_html; // web/report.html: the page, with @...@ markers html_report.cpp fills
extern const std::string_view report_css;  // web/report.css
extern const std::string_view report_js;   // web/report.js: renders the data block

} // namespace hotpath::lab::web
