// DIR/report.html: one self-contained page (uPlot, CSS and data inlined, no external URL) drawn from the cases'
// result.json documents (schema hotpath-lab/1, docs/lab.md), so that it can be made again from the files alone.
#pragma once

#include <hotpath/core/result.hpp>

#include <boost/json/value.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace hotpath::lab {

// The page for `results`, one hotpath-lab/1 document per case in the order given. Renders any case from its JSON
// alone (variants, metrics and headline as the documents hold them); documents that are not objects are listed as
// unreadable by the page. The documents are embedded as a JSON array in a <script type="application/json"> block
// with every '<' written as \u003c and every '/' as \/, so that no text from them can end the block or open
// markup, and the file holds no "http://" or "https://" at all (a document's loopback URLs included).
std::string report_html(const std::vector<boost::json::value>& results);

// `s` as HTML text or a quoted attribute value: & < > " ' as entities (lab compare's page uses it too).
std::string escape_html(std::string_view s);

// Writes report_html(results) to `path`; a one-line problem when it cannot.
result<void, problem> write_report_html(const std::vector<boost::json::value>& results, const std::string& path);

// Reads the result files at `paths` (each one JSON document) and writes their report to `path`; a one-line problem
// naming the file when one cannot be read or parsed, or the report cannot be written.
result<void, problem> write_report_html(const std::vector<std::string>& paths, const std::string& path);

} // namespace hotpath::lab
