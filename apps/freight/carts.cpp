// Random carts for `hotpath load` scenarios of the freight service.
#include "apps/freight/carts.hpp"

#include "apps/freight/table.hpp"

#include <random>
#include <string>

namespace hotpath::freight {

void write_carts_csv(std::ostream& out, std::size_t count, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    // Raw generator output mapped by hand: the file must not depend on the standard library's distributions.
    const auto draw = [&](std::uint64_t lo, std::uint64_t hi) { return lo + rng() % (hi - lo + 1); };
    out << "cep,items\n";
    for (std::size_t i = 0; i < count; ++i) {
        char text[9];
        format_cep(static_cast<std::uint32_t>(draw(first_valid_cep, last_valid_cep)), text);
        std::string cep(text, sizeof(text));
        if (draw(0, 1) == 0) {
            cep.erase(5, 1);
        }
        // The items' JSON inside a quoted CSV field: its quotes doubled (RFC 4180 §2 rule 7).
        std::string items = "\"[";
        const auto n = draw(1, 6);
        for (std::uint64_t k = 0; k < n; ++k) {
            items += k == 0 ? "{" : ",{";
            items += "\"\"sku\"\":\"\"SKU-" + std::to_string(draw(1000, 9999)) +
                     "\"\",\"\"quantity\"\":" + std::to_string(draw(1, 4)) +
                     ",\"\"weightGrams\"\":" + std::to_string(draw(50, 3000)) + "}";
        }
        items += "]\"";
        out << cep << ',' << items << '\n';
    }
}

} // namespace hotpath::freight
