// Feeds: the RFC 4180 CSV reader and {{column}} placeholder filling.
#include <hotpath/load/feed.hpp>

#include <hotpath/http/char_class.hpp>
#include <hotpath/http/request_head.hpp>

#include <algorithm>
#include <iterator>

namespace hotpath::load {
namespace {

std::string fields(std::size_t n) {
    return std::to_string(n) + (n == 1 ? " field" : " fields");
}

} // namespace

std::optional<placeholder> next_placeholder(std::string_view text, std::size_t from) noexcept {
    while (true) {
        const auto open = text.find("{{", from);
        if (open == std::string_view::npos) {
            return std::nullopt;
        }
        const auto close = text.find("}}", open + 2);
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        const auto valid = [](std::string_view name) {
            return !name.empty() && name.find_first_of("{}\r\n") == std::string_view::npos;
        };
        if (text.substr(open + 2, 1) == "{") {
            const auto raw_close = text.find("}}}", open + 3);
            if (raw_close != std::string_view::npos) {
                const std::string_view name = http::char_class::trim_ows(text.substr(open + 3, raw_close - open - 3));
                if (valid(name)) {
                    return placeholder{open, raw_close + 3, name, true};
                }
            }
        }
        const std::string_view name = http::char_class::trim_ows(text.substr(open + 2, close - open - 2));
        if (valid(name)) {
            return placeholder{open, close + 2, name, false};
        }
        from = open + 1;
    }
}

std::optional<std::size_t> column_index(const feed& f, std::string_view name) noexcept {
    const auto it = std::find(f.columns.begin(), f.columns.end(), name);
    if (it == f.columns.end()) {
        return std::nullopt;
    }
    return static_cast<std::size_t>(it - f.columns.begin());
}

result<void, problem> load_csv(std::string_view text, feed& out) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") {
        text.remove_prefix(3);
    }
    std::vector<std::vector<std::string>> records;
    std::vector<std::size_t> lines; // where each record starts, for messages
    std::size_t line = 1;
    std::size_t i = 0;
    auto error = [](std::size_t at, std::string_view message) {
        return problem{errc::invalid_value, "line " + std::to_string(at) + ": " + std::string(message)};
    };
    while (i < text.size()) {
        if (text[i] == '\n' || text.substr(i, 2) == "\r\n") { // an empty line
            i += text[i] == '\n' ? 1 : 2;
            ++line;
            continue;
        }
        std::vector<std::string> record;
        lines.push_back(line);
        while (true) {
            std::string field;
            if (i < text.size() && text[i] == '"') { // RFC 4180 section 2, rules 5-7
                const std::size_t opened = line;
                for (++i;; ++i) {
                    if (i >= text.size()) {
                        return error(opened, "a quoted field is not closed");
                    }
                    if (text[i] == '"') {
                        if (i + 1 < text.size() && text[i + 1] == '"') {
                            field += '"';
                            ++i;
                            continue;
                        }
                        ++i;
                        break;
                    }
                    line += text[i] == '\n' ? 1 : 0;
                    field += text[i];
                }
                if (i < text.size() && text[i] != ',' && text[i] != '\r' && text[i] != '\n') {
                    return error(line, "text after the closing quote of a field");
                }
            } else {
                const auto stop = std::min(text.find_first_of(",\r\n\"", i), text.size());
                field.assign(text.substr(i, stop - i));
                i = stop;
                if (i < text.size() && text[i] == '"') {
                    return error(line, "a quote inside an unquoted field; quote the field and double the quote");
                }
            }
            record.push_back(std::move(field));
            if (i < text.size() && text[i] == ',') {
                ++i;
                continue;
            }
            if (i < text.size() && text.substr(i, 2) != "\r\n" && text[i] != '\n') {
                return error(line, "a carriage return without a line feed");
            }
            i += i >= text.size() ? 0 : (text[i] == '\n' ? 1 : 2);
            ++line;
            break;
        }
        records.push_back(std::move(record));
    }
    if (records.empty()) {
        return error(1, "the CSV is empty; it needs a header row of column names and at least one row");
    }
    for (std::size_t c = 0; c < records[0].size(); ++c) {
        const auto& name = records[0][c];
        if (name.empty()) {
            return error(lines[0], "column " + std::to_string(c + 1) + " of the header has no name");
        }
        if (std::find(records[0].begin(), records[0].begin() + static_cast<std::ptrdiff_t>(c), name) !=
            records[0].begin() + static_cast<std::ptrdiff_t>(c)) {
            return error(lines[0], "column '" + name + "' appears twice in the header");
        }
    }
    if (records.size() == 1) {
        return error(lines[0], "no rows after the header");
    }
    for (std::size_t r = 1; r < records.size(); ++r) {
        if (records[r].size() != records[0].size()) {
            return error(lines[r],
                         "this row has " + fields(records[r].size()) + ", the header " + fields(records[0].size()));
        }
    }
    out.columns = std::move(records[0]);
    out.rows.assign(std::make_move_iterator(records.begin() + 1), std::make_move_iterator(records.end()));
    return {};
}

bool has_placeholders(std::string_view text) noexcept {
    return next_placeholder(text, 0).has_value();
}

bool is_json_body(std::string_view body, std::string_view content_type) noexcept {
    if (!content_type.empty()) {
        for (std::size_t i = 0; i + 4 <= content_type.size(); ++i) {
            if (http::iequals(content_type.substr(i, 4), "json")) {
                return true;
            }
        }
        return false;
    }
    const auto first = body.find_first_not_of(" \t\r\n");
    return first != std::string_view::npos && (body[first] == '{' || body[first] == '[');
}

namespace {

void append_json_escaped(std::string& out, std::string_view value) {
    constexpr char hex[] = "0123456789abcdef";
    for (const char c : value) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(c);
        } else if (c == '\n') {
            out.append("\\n");
        } else if (c == '\r') {
            out.append("\\r");
        } else if (c == '\t') {
            out.append("\\t");
        } else if (u < 0x20) {
            out.append("\\u00").push_back(hex[u >> 4]);
            out.push_back(hex[u & 0xf]);
        } else {
            out.push_back(c);
        }
    }
}

} // namespace

std::string render(std::string_view templ, const feed& f, std::size_t row, escaping how) {
    std::string out;
    out.reserve(templ.size());
    std::size_t at = 0;
    for (auto ph = next_placeholder(templ, 0); ph; ph = next_placeholder(templ, ph->end)) {
        const auto column = column_index(f, ph->name);
        if (!column || row >= f.rows.size() || *column >= f.rows[row].size()) {
            continue; // left verbatim: copied with the text that follows
        }
        out.append(templ.substr(at, ph->begin - at));
        const std::string& value = f.rows[row][*column];
        if (how == escaping::json && !ph->raw) {
            append_json_escaped(out, value);
        } else {
            out.append(value);
        }
        at = ph->end;
    }
    return out.append(templ.substr(at));
}

} // namespace hotpath::load
