// `hotpath freight init --db FILE [--seed N | --from-csv FILE]`: writes the freight price table (case 2);
// `hotpath freight carts`: random carts for load scenarios.
#include "command.hpp"

#include "apps/freight/carts.hpp"
#include "apps/freight/index.hpp"
#include "apps/freight/table.hpp"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace hotpath::cli {
namespace {

struct freight_flags {
    std::string db = "freight.sqlite";
    std::string csv;
    std::uint64_t seed = 1;
    bool force = false;
    std::size_t carts = 1000;
    std::string out;
};

runner define_freight(CLI::App& cmd) {
    cmd.require_subcommand(1);
    auto flags = std::make_shared<freight_flags>();
    auto* init = cmd.add_subcommand("init", "Create the SQLite price table: generated from a seed, or from a CSV file");
    init->add_option("--db", flags->db, "SQLite file to create")->capture_default_str();
    init->add_option("--seed", flags->seed, "Seed of the generated table (the same seed, the same table)")
        ->capture_default_str();
    init->add_option("--from-csv", flags->csv,
                     "Import this CSV file instead (header: cep_start,cep_end,uf,min_grams,max_grams,price_cents,"
                     "delivery_days)");
    init->add_flag("--force", flags->force, "Replace the file if it exists");
    auto* carts = cmd.add_subcommand("carts", "Write random carts as CSV (cep,items) for hotpath load scenarios");
    carts->add_option("--count", flags->carts, "Rows")->capture_default_str()->check(CLI::Range(1, 10'000'000));
    carts->add_option("--seed", flags->seed, "Seed (the same seed, the same file)")->capture_default_str();
    carts->add_option("--out,-o", flags->out, "File to write; standard output without it");
    return [flags, carts]() -> int {
        if (carts->parsed()) {
            if (flags->out.empty()) {
                freight::write_carts_csv(std::cout, flags->carts, flags->seed);
                return 0;
            }
            std::ofstream file(flags->out);
            freight::write_carts_csv(file, flags->carts, flags->seed);
            file.close();
            if (!file) {
                fmt::print(stderr, "hotpath: cannot write {}\n", flags->out);
                return 1;
            }
            return 0;
        }
        try {
            const auto rows = flags->csv.empty() ? freight::generate(flags->seed) : freight::read_csv(flags->csv);
            freight::write_db(flags->db, rows, flags->force);
            const auto index = freight::freight_index::build(rows);
            const auto valid = std::uint64_t{freight::last_valid_cep} - freight::first_valid_cep + 1;
            const auto covered = index.covered(freight::first_valid_cep, freight::last_valid_cep);
            fmt::print("hotpath: wrote {}: {} CEP ranges, {} price rows; {:.2f} % of valid CEPs (01000-000..99999-999) "
                       "are in no range\n",
                       flags->db, index.ranges(), rows.size(),
                       100.0 * static_cast<double>(valid - covered) / static_cast<double>(valid));
            return 0;
        } catch (const std::exception& e) {
            fmt::print(stderr, "hotpath: {}\n", e.what());
            return 1;
        }
    };
}

const registration freight_registration{{"freight", "The freight quote service's price table (case 2)", define_freight,
                                         "0 done, 1 failed (the table could not be made or read), 2 bad usage"}};

} // namespace
} // namespace hotpath::cli
