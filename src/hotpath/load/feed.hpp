// Feeds for scenarios: RFC 4180 CSV into columns and rows, and the {{column}} placeholders filled per send.
#pragma once

#include <hotpath/load/plan.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hotpath::load {

// Parses RFC 4180 CSV into `out.columns` (the header row) and `out.rows` (`out.source` is left alone): fields
// separated by commas, quoted fields with "" for a quote and embedded commas and line breaks, CRLF or LF line
// ends, an optional final line end and a UTF-8 byte order mark at the start are accepted; empty lines are
// skipped. Column names must be non-empty and distinct, every row must have as many fields as the header, and
// there must be at least one row. Fails with errc::invalid_value, a one-line reason (with the line number) and
// `out` unchanged. Throws only std::bad_alloc.
result<void, problem> load_csv(std::string_view text, feed& out);

// A placeholder: "{{" NAME "}}" where NAME, trimmed of spaces and tabs, is non-empty and has no braces or line
// breaks ("{{ cep }}" names the column "cep"). "{{{" NAME "}}}" is the same placeholder asking for the value as
// it is, never escaped (as in Mustache). Anything else between braces is plain text.
struct placeholder {
    std::size_t begin = 0; // offset of "{{" (or "{{{")
    std::size_t end = 0;   // offset just past "}}" (or "}}}")
    std::string_view name; // points into the text searched
    bool raw = false;      // written with three braces: the value goes in unescaped
};

// How values are written into a template: as they are, or as the inside of a JSON string (quote, backslash and
// control characters escaped, RFC 8259 §7), for bodies that are JSON.
enum class escaping : std::uint8_t { none, json };

// True when a request body is JSON: its Content-Type names json (application/json, application/problem+json,
// ...) or, without a Content-Type, it starts with '{' or '['. Placeholders in such a body are JSON-escaped.
bool is_json_body(std::string_view body, std::string_view content_type) noexcept;

// The first placeholder of `text` starting at or after offset `from`; allocates nothing.
std::optional<placeholder> next_placeholder(std::string_view text, std::size_t from) noexcept;

// True when `text` holds at least one placeholder; allocates nothing.
bool has_placeholders(std::string_view text) noexcept;

// The index of column `name` in `f.columns`.
std::optional<std::size_t> column_index(const feed& f, std::string_view name) noexcept;

// `templ` with every placeholder replaced by the value of that column in row `row` of `f`, escaped as `how` says
// (raw placeholders never are). Placeholders that name no column, and all of them when `row` is out of range,
// are left verbatim (load_scenario refuses such names beforehand). Allocates the returned string; throws only
// std::bad_alloc.
std::string render(std::string_view templ, const feed& f, std::size_t row, escaping how = escaping::none);

} // namespace hotpath::load
