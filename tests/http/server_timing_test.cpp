// Table-driven tests of the Server-Timing parser: each case is parsed whole and as every prefix, always ending at a
// guard page so that any read past the field value crashes the test; then seeded random junk.
#include <hotpath/http/server_timing.hpp>

#include "support/guard_page.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <random>
#include <sstream>
#include <string>

namespace hotpath::http {
namespace {

using test::guarded_buffer;

struct row {
    std::string_view label;
    std::string_view input;
    // The metrics as render() writes them: "name;dur=<ms>;desc=<text>" joined by "|", dur and desc only when
    // present.
    std::string_view metrics;
    std::size_t rejected = 0;
    std::size_t ignored_params = 0;
};

std::string render(const std::vector<server_timing_metric>& metrics) {
    std::ostringstream s;
    for (std::size_t i = 0; i < metrics.size(); ++i) {
        const auto& m = metrics[i];
        s << (i == 0 ? "" : "|") << m.name;
        if (m.duration) {
            s << ";dur=" << m.duration->count();
        }
        if (!m.raw_description.empty()) {
            s << ";desc=" << m.description();
        }
    }
    return s.str();
}

bool within(std::string_view inner, std::string_view outer) {
    return inner.empty() ||
           (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

bool is_token(std::string_view s) {
    constexpr std::string_view symbols = "!#$%&'*+-.^_`|~";
    for (const char c : s) {
        if (!std::isalnum(static_cast<unsigned char>(c)) && symbols.find(c) == std::string_view::npos) {
            return false;
        }
    }
    return !s.empty();
}

// What holds for any input: the counts match what was appended, names are tokens, views stay inside the input,
// durations are finite.
void check_invariants(std::string_view input, const std::vector<server_timing_metric>& out,
                      const server_timing_result& r) {
    ASSERT_EQ(r.metrics, out.size());
    for (const auto& m : out) {
        EXPECT_TRUE(is_token(m.name)) << "name '" << m.name << "' of '" << input << "'";
        EXPECT_TRUE(within(m.name, input));
        EXPECT_TRUE(within(m.raw_description, input));
        if (m.duration) {
            EXPECT_TRUE(std::isfinite(m.duration->count()));
        }
        EXPECT_LE(m.description().size(), m.raw_description.size());
    }
}

const row rows[] = {
    // The spec's own examples (W3C Server Timing §3).
    {"spec miss", "miss", "miss"},
    {"spec db dur", "db;dur=53", "db;dur=53"},
    {"spec app dur", "app;dur=47.2", "app;dur=47.2"},
    {"spec customView", "customView, dc;desc=atl", "customView|dc;desc=atl"},
    {"spec quoted desc", R"(cache;desc="Cache Read";dur=23.2)", "cache;dur=23.2;desc=Cache Read"},
    {"spec total", "total;dur=123.4", "total;dur=123.4"},
    {"list of two", "db;dur=53, app;dur=47.2", "db;dur=53|app;dur=47.2"},
    {"list without spaces", "a;dur=1,b;dur=2,c", "a;dur=1|b;dur=2|c"},
    {"all three", R"(handler;dur=1.25;desc="GET /users/{id}")", "handler;dur=1.25;desc=GET /users/{id}"},
    {"desc before dur", R"(x;desc="d";dur=3)", "x;dur=3;desc=d"},
    {"token desc", "cpu;dur=2.4;desc=cpu-time", "cpu;dur=2.4;desc=cpu-time"},
    {"name with tchar symbols", "a.b_c-d~e!f#g$h%i&j'k*l+m^n`o|p;dur=1", "a.b_c-d~e!f#g$h%i&j'k*l+m^n`o|p;dur=1"},
    {"name case kept", "DB;dur=1", "DB;dur=1"},

    // Quoted-strings (RFC 9110 §5.6.4).
    {"escaped quote", R"(a;desc="say \"hi\"")", R"(a;desc=say "hi")"},
    {"escaped backslash", R"(a;desc="C:\\tmp")", R"(a;desc=C:\tmp)"},
    {"escaped ordinary byte", R"(a;desc="\x\y")", "a;desc=xy"},
    {"comma inside quotes", R"(a;desc="x, y";dur=1, b)", "a;dur=1;desc=x, y|b"},
    {"semicolon inside quotes", R"(a;desc="x;dur=9";dur=1)", "a;dur=1;desc=x;dur=9"},
    {"empty quoted desc", R"(a;desc="";dur=1)", "a;dur=1"},
    {"obs-text in quotes", "a;desc=\"caf\xc3\xa9\"", "a;desc=caf\xc3\xa9"},
    {"tab in quotes", "a;desc=\"x\ty\"", "a;desc=x\ty"},

    // Missing or odd dur values.
    {"no dur", "a;desc=x", "a;desc=x"},
    {"dur without value", "a;dur", "a;dur=0"},
    {"dur with empty value", "a;dur=", "a;dur=0"},
    {"dur not a number", "a;dur=abc", "a;dur=0"},
    {"dur quoted number", R"(a;dur="12.5")", "a;dur=12.5"},
    {"dur with unit suffix", "a;dur=12ms", "a;dur=12"},
    {"dur exponent", "a;dur=1.5e3", "a;dur=1500"},
    {"dur negative", "a;dur=-2.5", "a;dur=-2.5"},
    {"dur plus sign", "a;dur=+2", "a;dur=2"},
    {"dur leading dot", "a;dur=.5", "a;dur=0.5"},
    {"dur inf is not a number", "a;dur=inf", "a;dur=0"},
    {"dur nan is not a number", "a;dur=nan", "a;dur=0"},
    {"dur overflow", "a;dur=1e999", "a;dur=0"},
    {"dur plus minus", "a;dur=+-1", "a;dur=0"},
    {"dur lone minus", "a;dur=-", "a;dur=0"},

    // Parameter rules: case-insensitive names, first wins, unknown ignored, OWS anywhere OWS is allowed.
    {"param names case-insensitive", "a;DUR=1;Desc=x", "a;dur=1;desc=x"},
    {"first dur wins", "a;dur=1;dur=2", "a;dur=1"},
    {"first desc wins", "a;desc=x;desc=y", "a;desc=x"},
    {"first desc wins even empty", R"(a;desc="";desc=y)", "a"},
    {"unknown param ignored", "a;foo=bar;dur=1;baz", "a;dur=1"},
    {"whitespace everywhere", " \t a \t ; dur = 1 \t ;\tdesc = \"x\" , \t b ", "a;dur=1;desc=x|b"},
    {"empty elements", ", ,a,, ,b,", "a|b"},
    {"only commas", ",,,", ""},
    {"empty", "", ""},
    {"only spaces", "   ", ""},
    {"trailing semicolon", "a;dur=1;", "a;dur=1", 0, 1},

    // Junk: the element or the parameter is skipped, the rest parsed.
    {"quoted name", R"("quoted";dur=1, b)", "b", 1},
    {"name with space", "a b;dur=1, c", "c", 1},
    {"name then equals", "a=1, b", "b", 1},
    {"leading semicolon", ";dur=1, b", "b", 1},
    {"non-token name byte", "a/b;dur=1", "", 1},
    {"param without name", "a;=1;dur=2", "a;dur=2", 0, 1},
    {"bytes after a param value", "a;dur=1 2;desc=x", "a;desc=x", 0, 1},
    {"bytes after a quoted value", R"(a;desc="x"junk;dur=1)", "a;dur=1", 0, 1},
    {"unterminated quote", R"(a;dur=1;desc="never ends, b;dur=2)", "a;dur=1", 0, 1},
    {"backslash at the end", R"(a;desc="x\)", "a", 0, 1},
    {"control byte in quotes", "a;desc=\"x\x01y\";dur=1", "a;dur=1", 0, 1},
    {"CR LF after a value", "a;dur=1\r\n, b", "a|b", 0, 1},
    {"NUL byte after a value", std::string_view("a;dur=1\0, b", 11), "a|b", 0, 1},
    {"rejected element with quoted comma", R"(x y="1, 2", b;dur=3)", "b;dur=3", 1},
    {"junk between metrics", "a;dur=1, @@@, b;dur=2", "a;dur=1|b;dur=2", 1},
};

class server_timing_table : public testing::TestWithParam<row> {};

TEST_P(server_timing_table, parses_as_the_spec_says) {
    const row& r = GetParam();
    guarded_buffer buffer(r.input.size() + 1);
    const std::string_view placed = buffer.place(r.input);
    std::vector<server_timing_metric> out;
    const auto result = parse_server_timing(placed, out);
    check_invariants(placed, out, result);
    EXPECT_EQ(render(out), r.metrics);
    EXPECT_EQ(result.rejected, r.rejected);
    EXPECT_EQ(result.ignored_params, r.ignored_params);

    // Every prefix (a field cut short) parses without reading past its end.
    for (std::size_t k = 0; k < r.input.size(); ++k) {
        const std::string_view prefix = buffer.place(r.input.substr(0, k));
        std::vector<server_timing_metric> some;
        check_invariants(prefix, some, parse_server_timing(prefix, some));
    }
}

std::string test_name(const testing::TestParamInfo<row>& info) {
    std::string name = "c" + std::to_string(info.index) + "_";
    for (const char c : info.param.label) {
        name += std::isalnum(static_cast<unsigned char>(c)) != 0 ? c : '_';
    }
    return name;
}

INSTANTIATE_TEST_SUITE_P(rows, server_timing_table, testing::ValuesIn(rows), test_name);

TEST(server_timing, appends_to_what_the_vector_holds) {
    std::vector<server_timing_metric> out;
    EXPECT_EQ(parse_server_timing("a;dur=1", out).metrics, 1u);
    EXPECT_EQ(parse_server_timing("b;dur=2, c", out).metrics, 2u);
    EXPECT_EQ(render(out), "a;dur=1|b;dur=2|c");
}

TEST(server_timing, description_of_a_token_is_the_token) {
    std::vector<server_timing_metric> out;
    (void)parse_server_timing("a;desc=plain", out);
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].raw_description, "plain");
    EXPECT_EQ(out[0].description(), "plain");
}

// Seeded random field values, from the grammar's bytes and from any byte: never a crash or a read past the end, and
// the invariants hold.
TEST(server_timing, random_junk_never_breaks_it) {
    std::mt19937 random(14);
    constexpr std::string_view grammar = "ab;,=\"\\ \tdurdesc0123.-+e";
    guarded_buffer buffer(64);
    std::string input;
    for (int n = 0; n < 50000; ++n) {
        input.clear();
        const std::size_t length = random() % 48;
        const bool any_byte = n % 4 == 0;
        for (std::size_t i = 0; i < length; ++i) {
            input.push_back(any_byte ? static_cast<char>(random() % 256) : grammar[random() % grammar.size()]);
        }
        const std::string_view placed = buffer.place(input);
        std::vector<server_timing_metric> out;
        const auto result = parse_server_timing(placed, out);
        check_invariants(placed, out, result);
        if (HasFatalFailure() || HasNonfatalFailure()) {
            FAIL() << "input: '" << input << "'";
        }
    }
}

} // namespace
} // namespace hotpath::http
