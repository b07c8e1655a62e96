// A quote request's cart, read without allocating, its limits and error messages, and the answer's bytes.
#pragma once

#include "apps/freight/index.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hotpath::freight {

// What a request may ask for: a larger body or cart is a 400 naming the field.
inline constexpr std::size_t max_body_bytes = 8192;
inline constexpr std::size_t max_items = 50;
inline constexpr std::int64_t max_quantity = 1000;
inline constexpr std::int64_t max_item_grams = 100'000; // 100 kg a unit, the heaviest bracket
inline constexpr std::size_t max_sku_bytes = 64;
// Nesting Boost.JSON's parser accepts by default (parse_options::max_depth): the churn variant's limit, kept
// here so that both variants refuse the same bodies.
inline constexpr int max_json_depth = 32;

// The first thing wrong with a request, in the order both variants check: the body, then cep, then items,
// then each item's fields in index order (sku, quantity, weightGrams).
struct cart_error {
    enum class field : std::uint8_t {
        none,
        body_size,
        body_json,
        body_object,
        cep,
        items,
        item,
        sku,
        quantity,
        weight
    };
    field what = field::none;
    std::uint32_t item = 0; // for item, sku, quantity, weight
};

struct cart {
    std::uint32_t cep = 0;
    std::uint64_t total_grams = 0; // Σ quantity × weightGrams
};

// Reads `body` ({"cep": "01310-100", "items": [{"sku": "...", "quantity": 2, "weightGrams": 350}, ...]}, other
// members ignored, the last of duplicate members counting, as Boost.JSON does) into `out`. Accepts exactly the
// JSON Boost.JSON's parser accepts by default (RFC 8259, UTF-8 checked, depth 32). Allocates nothing.
cart_error read_cart(std::string_view body, cart& out) noexcept;

// The 400's detail for `e` ("items[3].quantity: must be an integer from 1 to 1000"), written into `buf`; the
// view points into it.
std::string_view describe(const cart_error& e, char (&buf)[128]) noexcept;
// The 404's detail: "no freight range covers CEP 01310-100".
std::string_view describe_unknown(std::uint32_t cep, char (&buf)[128]) noexcept;
// The 400's detail for a cart heavier than the range's heaviest bracket.
std::string_view describe_too_heavy(std::uint32_t cep, std::uint64_t grams, const quote& q, char (&buf)[128]) noexcept;

// The 200's body: {"cep":"01310-100","state":"SP","totalWeightGrams":700,"bracket":{"minGrams":301,
// "maxGrams":1000},"priceCents":1590,"deliveryDays":3}, into `buf`.
std::string_view write_quote(std::uint32_t cep, std::uint64_t grams, const quote& q, char (&buf)[256]) noexcept;

} // namespace hotpath::freight
