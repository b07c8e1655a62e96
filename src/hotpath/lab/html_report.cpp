// The lab's HTML report: web/report.html with uPlot, the page's CSS and JS, and the result documents filled in.
#include <hotpath/lab/html_report.hpp>

#include <hotpath/lab/web_assets.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace hotpath::lab {

std::string escape_html(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

namespace {

// JSON text safe inside <script type="application/json">: '<' and '/' only occur inside strings, where \u003c and
// \/ mean the same characters (RFC 8259 section 7), so neither "</script" nor "<!--" can appear in the block, and
// no URL a document holds (the loaded service's, a dead loopback port) reads as one in the file.
std::string json_for_script(const boost::json::value& v) {
    const std::string text = boost::json::serialize(v);
    std::string out;
    out.reserve(text.size() + text.size() / 16);
    for (const char c : text) {
        if (c == '<') {
            out += "\\u003c";
        } else if (c == '/') {
            out += "\\/";
        } else {
            out += c;
        }
    }
    return out;
}

std::string page_title(const std::vector<boost::json::value>& results) {
    std::string names;
    for (const auto& r : results) {
        const auto* doc = r.if_object();
        const auto* name = doc != nullptr ? doc->if_contains("case") : nullptr;
        const auto* schema = doc != nullptr ? doc->if_contains("schema") : nullptr;
        if (schema != nullptr && schema->is_string() && schema->as_string() == "hotpath-capacity/1") {
            names += names.empty() ? "capacity" : ", capacity";
        } else if (name != nullptr && name->is_string()) {
            names += names.empty() ? "" : ", ";
            names += name->as_string();
        }
    }
    return names.empty() ? "hotpath lab" : "hotpath lab: " + names;
}

} // namespace

std::string report_html(const std::vector<boost::json::value>& results) {
    const boost::json::array data(results.begin(), results.end());
    const std::string title = escape_html(page_title(results));
    const std::string json = json_for_script(data);
    const std::pair<std::string_view, std::string_view> fills[] = {
        {"@TITLE@", title}, {"@UPLOT_CSS@", web::uplot_css}, {"@REPORT_CSS@", web::report_css},
        {"@DATA@", json},   {"@UPLOT_JS@", web::uplot_js},   {"@REPORT_JS@", web::report_js},
    };
    const std::string_view page = web::report_html;
    std::string out;
    out.reserve(page.size() + json.size() + web::uplot_js.size() + web::report_js.size() + 4096);
    std::size_t at = 0;
    while (at < page.size()) {
        const std::size_t marker = page.find('@', at);
        if (marker == std::string_view::npos) {
            out.append(page.substr(at));
            break;
        }
        out.append(page.substr(at, marker - at));
        bool filled = false;
        for (const auto& [name, text] : fills) {
            if (page.substr(marker, name.size()) == name) {
                out.append(text);
                at = marker + name.size();
                filled = true;
                break;
            }
        }
        if (!filled) {
            out += '@';
            at = marker + 1;
        }
    }
    return out;
}

result<void, problem> write_report_html(const std::vector<boost::json::value>& results, const std::string& path) {
    std::error_code ec;
    const auto folder = std::filesystem::path(path).parent_path();
    if (!folder.empty()) {
        std::filesystem::create_directories(folder, ec);
    }
    std::ofstream f(path, std::ios::binary);
    f << report_html(results);
    f.close();
    if (ec || !f) {
        return problem{std::make_error_code(std::errc::io_error), fmt::format("cannot write {}", path)};
    }
    return {};
}

result<void, problem> write_report_html(const std::vector<std::string>& paths, const std::string& path) {
    std::vector<boost::json::value> results;
    for (const auto& p : paths) {
        std::ifstream in(p, std::ios::binary);
        const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        if (!in.good() && !in.eof()) {
            return problem{std::make_error_code(std::errc::io_error), fmt::format("cannot read {}", p)};
        }
        boost::system::error_code ec;
        auto v = boost::json::parse(text, ec);
        if (ec) {
            return problem{errc::invalid_value, fmt::format("{}: {}", p, ec.message())};
        }
        results.push_back(std::move(v));
    }
    return write_report_html(results, path);
}

} // namespace hotpath::lab
