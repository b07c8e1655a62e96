// The lean variant's cart reader: one pass over the body, nothing allocated, the same verdicts as Boost.JSON.
#include "apps/freight/cart.hpp"

#include <hotpath/http/char_class.hpp>

#include <fmt/format.h>

#include <cstring>

namespace hotpath::freight {
namespace {

// A string's decoded length in bytes and its first bytes decoded (enough to compare member names and CEPs;
// a non-ASCII character decodes to bytes that match neither).
struct decoded_string {
    static constexpr std::size_t head_capacity = 16;
    std::size_t bytes = 0;
    char head[head_capacity] = {};

    void add(char c, std::size_t n = 1) noexcept {
        for (std::size_t i = 0; i < n; ++i) {
            if (bytes < head_capacity) {
                head[bytes] = c;
            }
            ++bytes;
        }
    }
    bool is(std::string_view s) const noexcept {
        return bytes == s.size() && bytes <= head_capacity && std::memcmp(head, s.data(), bytes) == 0;
    }
    std::string_view view() const noexcept { return {head, bytes <= head_capacity ? bytes : 0}; }
};

struct number_value {
    bool integral = false; // no fraction, no exponent, and within std::int64_t
    std::int64_t value = 0;
    bool in(std::int64_t lo, std::int64_t hi) const noexcept { return integral && value >= lo && value <= hi; }
};

// Everything the checks need from the root object, filled as its members go by.
struct cart_state {
    bool cep_seen = false;
    bool cep_ok = false;
    std::uint32_t cep = 0;
    bool items_seen = false;
    bool items_array = false;
    std::uint32_t count = 0;
    cart_error item_error;
    std::uint64_t total_grams = 0;
};

// A recursive-descent JSON reader (RFC 8259) over the body's bytes; each function starts at its value's first
// byte and returns false on malformed input.
class reader {
public:
    explicit reader(std::string_view s) noexcept : p_(s.data()), end_(s.data() + s.size()) {}

    bool at_end() noexcept {
        ws();
        return p_ == end_;
    }
    bool peek(char c) noexcept {
        ws();
        return p_ < end_ && *p_ == c;
    }

    bool root(cart_state& st) noexcept {
        return members([&](const decoded_string& key) {
            if (key.is("cep")) {
                st.cep_seen = true;
                st.cep_ok = false;
                if (peek('"')) {
                    decoded_string v;
                    if (!string(v)) {
                        return false;
                    }
                    st.cep_ok = parse_cep(v.view(), st.cep);
                    return true;
                }
                return skip_value();
            }
            if (key.is("items")) {
                // The last "items" counts, as in Boost.JSON's object.
                st.items_seen = true;
                st.items_array = false;
                st.count = 0;
                st.item_error = {};
                st.total_grams = 0;
                if (peek('[')) {
                    st.items_array = true;
                    return items(st);
                }
                return skip_value();
            }
            return skip_value();
        });
    }

    bool skip_value() noexcept {
        ws();
        if (p_ == end_) {
            return false;
        }
        switch (*p_) {
        case '{':
            return members([&](const decoded_string&) { return skip_value(); });
        case '[':
            return elements([&] { return skip_value(); });
        case '"': {
            decoded_string s;
            return string(s);
        }
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default: {
            number_value n;
            return number(n);
        }
        }
    }

private:
    void ws() noexcept {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) {
            ++p_;
        }
    }
    bool eat(char c) noexcept {
        if (peek(c)) {
            ++p_;
            return true;
        }
        return false;
    }
    bool literal(std::string_view word) noexcept {
        if (static_cast<std::size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
            return false;
        }
        p_ += word.size();
        return true;
    }

    // An object at '{': `on_member(key)` reads each member's value.
    template <class OnMember>
    bool members(OnMember&& on_member) noexcept {
        if (++depth_ > max_json_depth) {
            return false;
        }
        ++p_;
        if (!eat('}')) {
            do {
                decoded_string key;
                if (!peek('"') || !string(key) || !eat(':') || !on_member(key)) {
                    return false;
                }
            } while (eat(','));
            if (!eat('}')) {
                return false;
            }
        }
        --depth_;
        return true;
    }

    // An array at '[': `on_element()` reads each element.
    template <class OnElement>
    bool elements(OnElement&& on_element) noexcept {
        if (++depth_ > max_json_depth) {
            return false;
        }
        ++p_;
        if (!eat(']')) {
            do {
                if (!on_element()) {
                    return false;
                }
            } while (eat(','));
            if (!eat(']')) {
                return false;
            }
        }
        --depth_;
        return true;
    }

    bool items(cart_state& st) noexcept {
        return elements([&] {
            const std::uint32_t index = st.count++;
            if (!peek('{')) {
                if (st.item_error.what == cart_error::field::none) {
                    st.item_error = {cart_error::field::item, index};
                }
                return skip_value();
            }
            bool sku_ok = false;
            number_value quantity;
            number_value weight;
            const bool ok = members([&](const decoded_string& key) {
                const bool is_quantity = key.is("quantity");
                if (key.is("sku")) {
                    sku_ok = false;
                    if (peek('"')) {
                        decoded_string v;
                        if (!string(v)) {
                            return false;
                        }
                        sku_ok = v.bytes >= 1 && v.bytes <= max_sku_bytes;
                        return true;
                    }
                    return skip_value();
                }
                if (is_quantity || key.is("weightGrams")) {
                    number_value& n = is_quantity ? quantity : weight;
                    n = {};
                    ws();
                    if (p_ < end_ && (*p_ == '-' || (*p_ >= '0' && *p_ <= '9'))) {
                        return number(n);
                    }
                    return skip_value();
                }
                return skip_value();
            });
            if (ok && st.item_error.what == cart_error::field::none) {
                if (!sku_ok) {
                    st.item_error = {cart_error::field::sku, index};
                } else if (!quantity.in(1, max_quantity)) {
                    st.item_error = {cart_error::field::quantity, index};
                } else if (!weight.in(1, max_item_grams)) {
                    st.item_error = {cart_error::field::weight, index};
                } else {
                    st.total_grams += static_cast<std::uint64_t>(quantity.value) * weight.value;
                }
            }
            return ok;
        });
    }

    // A string at '"': checks escapes (surrogates paired), control characters and UTF-8 as Boost.JSON does.
    bool string(decoded_string& out) noexcept {
        ++p_;
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                ++p_;
                return true;
            }
            if (c < 0x20) {
                return false;
            }
            if (c == '\\') {
                if (!escape(out)) {
                    return false;
                }
                continue;
            }
            if (c < 0x80) {
                out.add(static_cast<char>(c));
                ++p_;
                continue;
            }
            if (!utf8(out)) {
                return false;
            }
        }
        return false;
    }

    bool hex4(unsigned& cp) noexcept {
        if (end_ - p_ < 4) {
            return false;
        }
        cp = 0;
        for (int i = 0; i < 4; ++i) {
            const int h = http::char_class::hex_digit_value(p_[i]);
            if (h < 0) {
                return false;
            }
            cp = cp * 16 + static_cast<unsigned>(h);
        }
        p_ += 4;
        return true;
    }

    bool escape(decoded_string& out) noexcept {
        ++p_;
        if (p_ == end_) {
            return false;
        }
        const char e = *p_++;
        switch (e) {
        case '"':
        case '\\':
        case '/':
            out.add(e);
            return true;
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            out.add('\x01'); // a control character: matches no name and no CEP
            return true;
        case 'u': {
            unsigned cp = 0;
            if (!hex4(cp)) {
                return false;
            }
            if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return false; // a low surrogate first
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned low = 0;
                if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') {
                    return false;
                }
                p_ += 2;
                if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) {
                    return false;
                }
                out.add('\x80', 4);
                return true;
            }
            if (cp < 0x80) {
                out.add(static_cast<char>(cp));
            } else {
                out.add('\x80', cp < 0x800 ? 2 : 3);
            }
            return true;
        }
        default:
            return false;
        }
    }

    // One UTF-8 sequence (RFC 3629 §4: no overlong forms, no surrogates, nothing above U+10FFFF).
    bool utf8(decoded_string& out) noexcept {
        const auto b0 = static_cast<unsigned char>(p_[0]);
        std::size_t n = 0;
        unsigned char lo = 0x80;
        unsigned char hi = 0xBF;
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            n = 2;
        } else if (b0 >= 0xE0 && b0 <= 0xEF) {
            n = 3;
            lo = b0 == 0xE0 ? 0xA0 : 0x80;
            hi = b0 == 0xED ? 0x9F : 0xBF;
        } else if (b0 >= 0xF0 && b0 <= 0xF4) {
            n = 4;
            lo = b0 == 0xF0 ? 0x90 : 0x80;
            hi = b0 == 0xF4 ? 0x8F : 0xBF;
        } else {
            return false;
        }
        if (static_cast<std::size_t>(end_ - p_) < n) {
            return false;
        }
        for (std::size_t i = 1; i < n; ++i) {
            const auto b = static_cast<unsigned char>(p_[i]);
            if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) {
                return false;
            }
        }
        p_ += n;
        out.add('\x80', n);
        return true;
    }

    // A number (RFC 8259 §6); integral when it has neither fraction nor exponent and fits std::int64_t.
    bool number(number_value& out) noexcept {
        const bool negative = eat('-');
        if (p_ == end_ || *p_ < '0' || *p_ > '9') {
            return false;
        }
        std::uint64_t magnitude = 0;
        bool fits = true;
        if (*p_ == '0') {
            ++p_;
        } else {
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
                const auto d = static_cast<std::uint64_t>(*p_ - '0');
                if (magnitude > (UINT64_MAX - d) / 10) {
                    fits = false;
                } else {
                    magnitude = magnitude * 10 + d;
                }
                ++p_;
            }
        }
        bool integral = true;
        if (p_ < end_ && *p_ == '.') {
            integral = false;
            ++p_;
            if (p_ == end_ || *p_ < '0' || *p_ > '9') {
                return false;
            }
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
                ++p_;
            }
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            integral = false;
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) {
                ++p_;
            }
            if (p_ == end_ || *p_ < '0' || *p_ > '9') {
                return false;
            }
            while (p_ < end_ && *p_ >= '0' && *p_ <= '9') {
                ++p_;
            }
        }
        constexpr auto int64_max = static_cast<std::uint64_t>(INT64_MAX);
        if (integral && fits && magnitude <= int64_max + (negative ? 1 : 0)) {
            out.integral = true;
            out.value = negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
        }
        return true;
    }

    const char* p_;
    const char* end_;
    int depth_ = 0;
};

std::string_view finish(char* buf, fmt::format_to_n_result<char*> r) noexcept {
    return {buf, static_cast<std::size_t>(r.out - buf)};
}

} // namespace

cart_error read_cart(std::string_view body, cart& out) noexcept {
    using field = cart_error::field;
    if (body.size() > max_body_bytes) {
        return {field::body_size};
    }
    reader r(body);
    cart_state st;
    const bool object = r.peek('{');
    const bool ok = (object ? r.root(st) : r.skip_value()) && r.at_end();
    if (!ok) {
        return {field::body_json};
    }
    if (!object) {
        return {field::body_object};
    }
    if (!st.cep_seen || !st.cep_ok) {
        return {field::cep};
    }
    if (!st.items_seen || !st.items_array || st.count == 0 || st.count > max_items) {
        return {field::items};
    }
    if (st.item_error.what != field::none) {
        return st.item_error;
    }
    out.cep = st.cep;
    out.total_grams = st.total_grams;
    return {};
}

std::string_view describe(const cart_error& e, char (&buf)[128]) noexcept {
    using field = cart_error::field;
    const auto n = sizeof(buf);
    switch (e.what) {
    case field::none:
        return {};
    case field::body_size:
        return finish(buf, fmt::format_to_n(buf, n, "body: larger than {} bytes", max_body_bytes));
    case field::body_json:
        return "body: not valid JSON";
    case field::body_object:
        return "body: must be a JSON object";
    case field::cep:
        return "cep: must be a string of 8 digits, as 01310100 or 01310-100";
    case field::items:
        return finish(buf, fmt::format_to_n(buf, n, "items: must be an array of 1 to {} items", max_items));
    case field::item:
        return finish(buf, fmt::format_to_n(buf, n, "items[{}]: must be an object", e.item));
    case field::sku:
        return finish(
            buf, fmt::format_to_n(buf, n, "items[{}].sku: must be a string of 1 to {} bytes", e.item, max_sku_bytes));
    case field::quantity:
        return finish(
            buf, fmt::format_to_n(buf, n, "items[{}].quantity: must be an integer from 1 to {}", e.item, max_quantity));
    case field::weight:
        return finish(buf, fmt::format_to_n(buf, n, "items[{}].weightGrams: must be an integer from 1 to {}", e.item,
                                            max_item_grams));
    }
    return {};
}

std::string_view describe_unknown(std::uint32_t cep, char (&buf)[128]) noexcept {
    char text[9];
    format_cep(cep, text);
    return finish(buf, fmt::format_to_n(buf, sizeof(buf), "no freight range covers CEP {}",
                                        std::string_view(text, sizeof(text))));
}

std::string_view describe_too_heavy(std::uint32_t cep, std::uint64_t grams, const quote& q, char (&buf)[128]) noexcept {
    char text[9];
    format_cep(cep, text);
    return finish(buf, fmt::format_to_n(buf, sizeof(buf),
                                        "items: total weight {} g is over the heaviest bracket for CEP {} ({} g)",
                                        grams, std::string_view(text, sizeof(text)), q.max_grams));
}

std::string_view write_quote(std::uint32_t cep, std::uint64_t grams, const quote& q, char (&buf)[256]) noexcept {
    char text[9];
    format_cep(cep, text);
    return finish(buf, fmt::format_to_n(buf, sizeof(buf),
                                        R"({{"cep":"{}","state":"{}","totalWeightGrams":{},"bracket":{{"minGrams":{},)"
                                        R"("maxGrams":{}}},"priceCents":{},"deliveryDays":{}}})",
                                        std::string_view(text, sizeof(text)), std::string_view(q.uf, 2), grams,
                                        q.min_grams, q.max_grams, q.price_cents, q.delivery_days));
}

} // namespace hotpath::freight
