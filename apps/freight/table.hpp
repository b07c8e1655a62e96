// The freight price table in SQLite: its schema, a generated realistic table, CSV import, and rows read back.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hotpath::freight {

// One row of the table `freight_band`: the price of sending a total weight in [min_grams, max_grams] to a CEP
// in [cep_start, cep_end] (CEPs as 8-digit numbers, 01310-100 → 1310100). The rows of one CEP range share its
// bounds and state; their weight brackets do not overlap.
struct band {
    std::uint32_t cep_start = 0;
    std::uint32_t cep_end = 0;
    std::string uf; // the state's two letters, "SP"
    std::uint32_t min_grams = 0;
    std::uint32_t max_grams = 0;
    std::uint32_t price_cents = 0;
    std::uint32_t delivery_days = 0;
};

// The SQL that creates the table (documented in README.md, "Freight quotes").
extern const std::string_view schema_sql;
// The CSV file's header line, the columns in the same order (CEPs as 8 digits or 5-3 with a dash).
extern const std::string_view csv_header;

// CEP text → number: exactly 8 digits, or 5 digits, '-', 3 digits. False for anything else.
bool parse_cep(std::string_view text, std::uint32_t& cep) noexcept;
// 1310100 → "01310-100" into `out` (9 bytes).
void format_cep(std::uint32_t cep, char (&out)[9]) noexcept;

// Valid CEPs in Brazil start at 01000-000; a uniformly drawn valid CEP is in [first_valid_cep, last_valid_cep].
constexpr std::uint32_t first_valid_cep = 1'000'000;
constexpr std::uint32_t last_valid_cep = 99'999'999;

// A table laid out like the states' CEP ranges: each state's span cut into ranges of 10 000 to 50 000 CEPs,
// some followed by a gap (no delivery there), so that about 7.5 % of the valid CEPs fall outside every range;
// nine weight brackets per range up to 100 kg, priced by the state's distance from São Paulo. The same seed
// gives the same rows. Sorted by CEP, then weight.
std::vector<band> generate(std::uint64_t seed);

// Reads a CSV file (csv_header, then one band per line). Throws std::runtime_error naming the line on a bad one.
std::vector<band> read_csv(const std::string& path);

// Creates `db_path` (which must not exist unless `replace`) with the schema and `rows`, in one transaction,
// after checking them (index.hpp's rules). Throws std::runtime_error saying what failed.
void write_db(const std::string& db_path, const std::vector<band>& rows, bool replace);

// Every row of `db_path`, sorted by CEP then weight. Throws std::runtime_error when it cannot be read.
std::vector<band> read_db(const std::string& db_path);

// With the allocation counter linked in: routes SQLite's allocations (sqlite3_malloc, sqlite3_realloc) through
// alloc::record, so churn's queries count what SQLite allocates too. Must run before SQLite's first use in the
// process (every opening of a database here calls it first); a no-op after that and without the counter.
void count_sqlite_allocations() noexcept;

} // namespace hotpath::freight
