// Random carts for load tests of the freight service: a CSV of CEPs and ready-made item arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>

namespace hotpath::freight {

// Writes `count` rows of "cep,items" (RFC 4180, items quoted): CEPs uniformly drawn among the valid ones
// (01000-000..99999-999, half with the dash), so that about 7.5 % are unknown to a generated table; items a JSON
// array of 1 to 6 objects {"sku","quantity" 1..4,"weightGrams" 50..3000}, always under the heaviest bracket.
// The same seed gives the same file.
void write_carts_csv(std::ostream& out, std::size_t count, std::uint64_t seed);

} // namespace hotpath::freight
