// Two lab runs side by side: read both sides, pair cases and variants, judge each change against the noise.
#include <hotpath/lab/compare.hpp>

#include <hotpath/lab/html_report.hpp>

#include <hotpath/load/report.hpp>

#include <boost/json.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace hotpath::lab {

namespace {

namespace fs = std::filesystem;

double number(const boost::json::object& o, std::string_view key) {
    const auto* v = o.if_contains(key);
    if (v == nullptr) {
        return 0;
    }
    return v->is_double()   ? v->get_double()
           : v->is_int64()  ? static_cast<double>(v->get_int64())
           : v->is_uint64() ? static_cast<double>(v->get_uint64())
                            : 0;
}

// One result.json into `side`; a problem when it cannot be.
// A `lab capacity` result (docs/capacity.md) as the case "capacity": a variant per step ("8 users": its answers per
// second, p50 and p99, errors), and the most answers per second measured as its headline, so that two capacity runs
// compare step by step.
result<void, problem> read_capacity(const boost::json::object& o, const fs::path& file, lab_side& side) {
    const auto* steps = o.if_contains("steps");
    if (steps == nullptr || !steps->is_array()) {
        return problem{errc::invalid_value,
                       fmt::format("{}: a hotpath-capacity/1 result without \"steps\"", file.string())};
    }
    case_figures c;
    for (const auto& v : steps->get_array()) {
        const auto* so = v.if_object();
        if (so == nullptr || !so->contains("users")) {
            return problem{errc::invalid_value, fmt::format("{}: a step without its users", file.string())};
        }
        const double users = number(*so, "users");
        variant_figures f;
        f.rps = number(*so, "throughput");
        f.p50_ms = number(*so, "p50_s") * 1e3;
        f.p99_ms = number(*so, "p99_s") * 1e3;
        f.requests = number(*so, "requests");
        f.errors = std::round(number(*so, "error_share") * f.requests);
        c.variants.emplace_back(fmt::format("{:g} user{}", users, users == 1 ? "" : "s"), f);
    }
    c.headline_label = "peak answers/s";
    if (const auto* v = o.if_contains("verdict"); v != nullptr && v->is_object()) {
        if (const auto* peak = v->get_object().if_contains("peak_throughput"); peak != nullptr && peak->is_number()) {
            c.headline = peak->to_number<double>();
        }
        if (const auto* shape = v->get_object().if_contains("shape"); shape != nullptr && shape->is_string()) {
            c.headline_label += fmt::format(" ({})", std::string_view(shape->get_string()));
        }
    }
    side.cases["capacity"] = std::move(c);
    return {};
}

result<void, problem> read_result(const fs::path& file, lab_side& side) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        return problem{errc::invalid_value, fmt::format("{}: cannot be read", file.string())};
    }
    const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(text, ec);
    const auto* o = ec ? nullptr : doc.if_object();
    const auto* schema = o != nullptr ? o->if_contains("schema") : nullptr;
    if (o != nullptr && schema != nullptr && schema->is_string() && schema->get_string() == "hotpath-capacity/1") {
        return read_capacity(*o, file, side);
    }
    if (o == nullptr || schema == nullptr || !schema->is_string() || schema->get_string() != "hotpath-lab/1") {
        return problem{errc::invalid_value,
                       fmt::format("{}: not a hotpath-lab/1 result (docs/lab.md) nor a hotpath-capacity/1 one "
                                   "(docs/capacity.md)",
                                   file.string())};
    }
    const auto* name = o->if_contains("case");
    const auto* variants = o->if_contains("variants");
    if (name == nullptr || !name->is_string() || variants == nullptr || !variants->is_array()) {
        return problem{errc::invalid_value,
                       fmt::format("{}: a hotpath-lab/1 result without \"case\" or \"variants\"", file.string())};
    }
    case_figures c;
    for (const auto& v : variants->get_array()) {
        const auto* vo = v.if_object();
        const auto* vname = vo != nullptr ? vo->if_contains("name") : nullptr;
        if (vname == nullptr || !vname->is_string()) {
            return problem{errc::invalid_value, fmt::format("{}: a variant without a name", file.string())};
        }
        variant_figures f;
        f.rps = number(*vo, "rps");
        f.errors = number(*vo, "errors");
        f.requests = number(*vo, "requests");
        if (const auto* l = vo->if_contains("latency_ms"); l != nullptr && l->is_object()) {
            f.p50_ms = number(l->get_object(), "p50");
            f.p95_ms = number(l->get_object(), "p95");
            f.p99_ms = number(l->get_object(), "p99");
        }
        c.variants.emplace_back(std::string(vname->get_string()), f);
    }
    if (const auto* h = o->if_contains("headline"); h != nullptr && h->is_object()) {
        const auto& ho = h->get_object();
        if (const auto* label = ho.if_contains("label"); label != nullptr && label->is_string()) {
            c.headline_label = label->get_string();
        }
        if (const auto* value = ho.if_contains("value"); value != nullptr && value->is_number()) {
            c.headline = value->to_number<double>();
        }
    }
    side.cases[std::string(name->get_string())] = std::move(c);
    return {};
}

figure_change judge(std::string name, bool higher_is_better, bool judged, double old_value, double new_value,
                    double noise) {
    figure_change f{std::move(name), higher_is_better, judged, old_value, new_value, std::nullopt, ""};
    if (old_value != 0) {
        f.change = (new_value - old_value) / old_value;
    }
    const bool errors = f.name == "errors";
    if (!f.change) {
        f.verdict = new_value == 0 ? "" : errors ? "more errors" : "changed";
        return f;
    }
    if (std::abs(*f.change) < noise) {
        f.verdict = "within noise";
    } else if (!judged) {
        f.verdict = "changed";
    } else if (errors) {
        f.verdict = *f.change > 0 ? "more errors" : "fewer errors";
    } else {
        f.verdict = (*f.change > 0) == higher_is_better ? "faster" : "slower";
    }
    return f;
}

std::string show(const figure_change& f, double v) {
    if (f.name == "rps") {
        return fmt::format("{:.1f}/s", v);
    }
    if (f.name == "errors") {
        return fmt::format("{:.0f}", v);
    }
    if (f.name == "headline") {
        return fmt::format("{:.2f}", v);
    }
    return format_duration_ns(v * 1e6);
}

std::string change_text(const figure_change& f) {
    return f.change ? fmt::format("{:+.1f} %", *f.change * 100) : std::string("-");
}

// Two bars, old above new, scaled to the larger.
std::string bars(const figure_change& f) {
    const double most = std::max({f.old_value, f.new_value, 1e-12});
    const double w_old = 160 * f.old_value / most;
    const double w_new = 160 * f.new_value / most;
    return fmt::format(R"(<svg width="164" height="22" role="img" aria-label="old {} new {}">)"
                       R"(<rect class="old" x="0" y="1" width="{:.1f}" height="9"/>)"
                       R"(<rect class="new" x="0" y="12" width="{:.1f}" height="9"/></svg>)",
                       escape_html(show(f, f.old_value)), escape_html(show(f, f.new_value)), w_old, w_new);
}

std::string row_name(const variant_change& r) {
    if (!r.variant.empty()) {
        return r.case_name + "/" + r.variant;
    }
    return r.case_name + " headline" + (r.label.empty() ? "" : ": " + r.label);
}

} // namespace

result<lab_side, problem> read_lab_side(const std::string& path) {
    lab_side side;
    side.source = path;
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
        std::vector<fs::path> files;
        for (const auto& entry : fs::directory_iterator(path, ec)) {
            const fs::path file = entry.path() / "result.json";
            if (entry.is_directory() && fs::is_regular_file(file)) {
                files.push_back(file);
            }
        }
        if (fs::is_regular_file(fs::path(path) / "result.json")) {
            files.push_back(fs::path(path) / "result.json");
        }
        if (files.empty()) {
            return problem{errc::invalid_value, fmt::format("{}: no <case>/result.json in this folder", path)};
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            if (auto read = read_result(f, side); !read) {
                return std::move(read).error();
            }
        }
        return side;
    }
    if (!fs::exists(path, ec)) {
        return problem{errc::invalid_value, fmt::format("{}: no such file or folder", path)};
    }
    if (auto read = read_result(path, side); !read) {
        return std::move(read).error();
    }
    return side;
}

namespace {

// The figures of the variant named `name` in `c`, or nullptr when the case has none of that name.
const variant_figures* find_variant(const case_figures& c, const std::string& name) {
    const auto it = std::find_if(c.variants.begin(), c.variants.end(), [&](const auto& v) { return v.first == name; });
    return it == c.variants.end() ? nullptr : &it->second;
}

} // namespace

comparison compare(const lab_side& old_side, const lab_side& new_side, double noise) {
    comparison c;
    c.noise = noise;
    for (const auto& [name, old_case] : old_side.cases) {
        const auto found = new_side.cases.find(name);
        if (found == new_side.cases.end()) {
            c.only_old.push_back(name);
            continue;
        }
        const case_figures& new_case = found->second;
        for (const auto& [variant, o] : old_case.variants) {
            const variant_figures* n = find_variant(new_case, variant);
            if (n == nullptr) {
                c.only_old.push_back(name + "/" + variant);
                continue;
            }
            const variant_figures& nf = *n;
            variant_change row{name, variant, "", {judge("rps", true, true, o.rps, nf.rps, noise)}};
            row.figures.push_back(judge("p50", false, true, o.p50_ms, nf.p50_ms, noise));
            if (o.p95_ms != 0 || nf.p95_ms != 0) { // a capacity step has none
                row.figures.push_back(judge("p95", false, true, o.p95_ms, nf.p95_ms, noise));
            }
            row.figures.push_back(judge("p99", false, true, o.p99_ms, nf.p99_ms, noise));
            row.figures.push_back(judge("errors", false, true, o.errors, nf.errors, noise));
            c.rows.push_back(std::move(row));
        }
        for (const auto& [variant, unused] : new_case.variants) {
            if (find_variant(old_case, variant) == nullptr) {
                c.only_new.push_back(name + "/" + variant);
            }
        }
        if (old_case.headline && new_case.headline) {
            c.rows.push_back({name,
                              "",
                              new_case.headline_label,
                              {judge("headline", true, false, *old_case.headline, *new_case.headline, noise)}});
        }
    }
    for (const auto& [name, unused] : new_side.cases) {
        if (old_side.cases.count(name) == 0) {
            c.only_new.push_back(name);
        }
    }
    return c;
}

void print_comparison(std::FILE* out, const comparison& c, const lab_side& old_side, const lab_side& new_side) {
    fmt::print(out, "hotpath lab compare: {} (old) -> {} (new)\n", old_side.source, new_side.source);
    fmt::print(out,
               "noise: differences under {:.0f} % are not meaningful from one run of each on a shared machine; "
               "larger ones are marked faster or slower\n",
               c.noise * 100);
    fmt::print(out, "{:<40} {:<9} {:>12} {:>12} {:>9}  {}\n", "case/variant", "figure", "old", "new", "change",
               "verdict");
    for (const variant_change& r : c.rows) {
        bool first = true;
        for (const figure_change& f : r.figures) {
            fmt::print(out, "{:<40} {:<9} {:>12} {:>12} {:>9}  {}\n", first ? row_name(r) : "", f.name,
                       show(f, f.old_value), show(f, f.new_value), change_text(f), f.verdict);
            first = false;
        }
    }
    for (const auto& s : c.only_old) {
        fmt::print(out, "only in old: {}\n", s);
    }
    for (const auto& s : c.only_new) {
        fmt::print(out, "only in new: {}\n", s);
    }
    std::fflush(out);
}

std::string comparison_html(const comparison& c, const lab_side& old_side, const lab_side& new_side) {
    std::string h;
    h += R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>hotpath lab compare</title>
<style>
:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #ffffff; --muted: #6b6b6b; --line: #dddddd;
        --old: #9a9a9a; --new: #2f6fdb; --good: #1a7f37; --bad: #c62828; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6e6e6; --bg: #161616; --muted: #a0a0a0; --line: #333333;
          --old: #6f6f6f; --new: #6ea8ff; --good: #56d364; --bad: #ff7b72; }
}
body { font: 14px/1.4 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 2em; }
table { border-collapse: collapse; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: right; }
th:first-child, td:first-child, .fig, .verdict { text-align: left; }
rect.old { fill: var(--old); } rect.new { fill: var(--new); }
.faster, .fewer-errors { color: var(--good); } .slower, .more-errors { color: var(--bad); }
.within-noise, .muted { color: var(--muted); }
</style></head><body>
)";
    h += fmt::format("<h1>hotpath lab compare</h1>\n<p>old: <code>{}</code><br>new: <code>{}</code></p>\n",
                     escape_html(old_side.source), escape_html(new_side.source));
    h += fmt::format("<p class=\"muted\">Differences under {:.0f} % are not meaningful from one run of each on a "
                     "shared machine; larger ones are marked faster or slower. Bars: old (grey) above new.</p>\n",
                     c.noise * 100);
    h += "<table>\n<tr><th>case/variant</th><th class=\"fig\">figure</th><th>old</th><th>new</th><th>change</th>"
         "<th></th><th class=\"verdict\">verdict</th></tr>\n";
    for (const variant_change& r : c.rows) {
        bool first = true;
        for (const figure_change& f : r.figures) {
            std::string css = f.verdict;
            std::replace(css.begin(), css.end(), ' ', '-');
            h += fmt::format("<tr><td>{}</td><td class=\"fig\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                             "<td class=\"verdict {}\">{}</td></tr>\n",
                             first ? escape_html(row_name(r)) : "", escape_html(f.name),
                             escape_html(show(f, f.old_value)), escape_html(show(f, f.new_value)),
                             escape_html(change_text(f)), bars(f), css, escape_html(f.verdict));
            first = false;
        }
    }
    h += "</table>\n";
    for (const auto& s : c.only_old) {
        h += fmt::format("<p>only in old: {}</p>\n", escape_html(s));
    }
    for (const auto& s : c.only_new) {
        h += fmt::format("<p>only in new: {}</p>\n", escape_html(s));
    }
    h += "</body></html>\n";
    return h;
}

int run_compare(const std::string& old_path, const std::string& new_path, const std::string& html_path, std::FILE* out,
                std::FILE* err) {
    const auto old_side = read_lab_side(old_path);
    if (!old_side) {
        fmt::print(err, "hotpath: lab compare: {}\n", old_side.error().message);
        return 2;
    }
    const auto new_side = read_lab_side(new_path);
    if (!new_side) {
        fmt::print(err, "hotpath: lab compare: {}\n", new_side.error().message);
        return 2;
    }
    const comparison c = compare(*old_side, *new_side);
    if (html_path == "-") {
        // The page on standard output, alone; the comparison's text goes to standard error.
        print_comparison(err, c, *old_side, *new_side);
        fmt::print(out, "{}", comparison_html(c, *old_side, *new_side));
        return 0;
    }
    print_comparison(out, c, *old_side, *new_side);
    if (!html_path.empty()) {
        std::ofstream file(html_path, std::ios::binary | std::ios::trunc);
        file << comparison_html(c, *old_side, *new_side);
        file.close();
        if (!file) {
            fmt::print(err, "hotpath: lab compare: cannot write {}\n", html_path);
            return 1;
        }
        fmt::print(out, "html: {}\n", html_path);
    }
    return 0;
}

} // namespace hotpath::lab
