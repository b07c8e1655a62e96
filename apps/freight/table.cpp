// The freight table in SQLite: schema, generation from a seed, CSV import, reading it back.
#include "apps/freight/table.hpp"

#include <hotpath/core/alloc_count.hpp>

#include "apps/freight/index.hpp"

#include <sqlite3.h>

#include <mutex>

#include <algorithm>
#include <array>
#include <charconv>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace hotpath::freight {

const std::string_view schema_sql = R"(CREATE TABLE freight_band (
    cep_start     INTEGER NOT NULL CHECK (cep_start BETWEEN 0 AND 99999999),
    cep_end       INTEGER NOT NULL CHECK (cep_end BETWEEN cep_start AND 99999999),
    uf            TEXT    NOT NULL CHECK (length(uf) = 2),
    min_grams     INTEGER NOT NULL CHECK (min_grams >= 0),
    max_grams     INTEGER NOT NULL CHECK (max_grams >= min_grams),
    price_cents   INTEGER NOT NULL CHECK (price_cents >= 0),
    delivery_days INTEGER NOT NULL CHECK (delivery_days >= 0),
    PRIMARY KEY (cep_start, min_grams)
) WITHOUT ROWID;
CREATE INDEX freight_band_by_end ON freight_band (cep_end);
)";

const std::string_view csv_header = "cep_start,cep_end,uf,min_grams,max_grams,price_cents,delivery_days";

bool parse_cep(std::string_view text, std::uint32_t& cep) noexcept {
    if (text.size() == 9) {
        if (text[5] != '-') {
            return false;
        }
    } else if (text.size() != 8) {
        return false;
    }
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text.size() == 9 && i == 5) {
            continue;
        }
        const char c = text[i];
        if (c < '0' || c > '9') {
            return false;
        }
        v = v * 10 + static_cast<std::uint32_t>(c - '0');
    }
    cep = v;
    return true;
}

void format_cep(std::uint32_t cep, char (&out)[9]) noexcept {
    for (int i = 8; i >= 0; --i) {
        if (i == 5) {
            out[i] = '-';
            continue;
        }
        out[i] = static_cast<char>('0' + cep % 10);
        cep /= 10;
    }
}

namespace {

// The states' CEP spans (Correios), and how far each is from São Paulo in price tiers (0 nearest).
struct state_span {
    std::uint32_t first;
    std::uint32_t last;
    const char* uf;
    std::uint32_t tier;
};
constexpr std::array<state_span, 32> states{{
    {1'000'000, 19'999'999, "SP", 0},  {20'000'000, 28'999'999, "RJ", 1},
    {29'000'000, 29'999'999, "ES", 1}, {30'000'000, 39'999'999, "MG", 1},
    {40'000'000, 48'999'999, "BA", 2}, {49'000'000, 49'999'999, "SE", 3},
    {50'000'000, 56'999'999, "PE", 3}, {57'000'000, 57'999'999, "AL", 3},
    {58'000'000, 58'999'999, "PB", 3}, {59'000'000, 59'999'999, "RN", 3},
    {60'000'000, 63'999'999, "CE", 3}, {64'000'000, 64'999'999, "PI", 3},
    {65'000'000, 65'999'999, "MA", 3}, {66'000'000, 68'899'999, "PA", 4},
    {68'900'000, 68'999'999, "AP", 4}, {69'000'000, 69'299'999, "AM", 4},
    {69'300'000, 69'399'999, "RR", 4}, {69'400'000, 69'899'999, "AM", 4},
    {69'900'000, 69'999'999, "AC", 4}, {70'000'000, 72'799'999, "DF", 2},
    {72'800'000, 72'999'999, "GO", 2}, {73'000'000, 73'699'999, "DF", 2},
    {73'700'000, 76'799'999, "GO", 2}, {76'800'000, 76'999'999, "RO", 4},
    {77'000'000, 77'999'999, "TO", 3}, {78'000'000, 78'899'999, "MT", 2},
    {78'900'000, 78'999'999, "RO", 4}, {79'000'000, 79'999'999, "MS", 2},
    {80'000'000, 87'999'999, "PR", 1}, {88'000'000, 89'999'999, "SC", 1},
    {90'000'000, 99'999'999, "RS", 2}, {0, 0, nullptr, 0},
}};

// The weight brackets' upper bounds in grams, and their base prices in cents at tier 0.
constexpr std::array<std::uint32_t, 9> bracket_max{300, 1'000, 2'000, 5'000, 10'000, 20'000, 30'000, 50'000, 100'000};
constexpr std::array<std::uint32_t, 9> bracket_base{1'290, 1'590, 1'990, 2'790, 3'990, 6'490, 8'990, 13'990, 24'990};

// Uniform in [lo, hi] from the generator's raw output, so that the table does not depend on the standard
// library's distributions (they differ between implementations).
std::uint32_t draw(std::mt19937_64& rng, std::uint32_t lo, std::uint32_t hi) {
    return lo + static_cast<std::uint32_t>(rng() % (std::uint64_t{hi} - lo + 1));
}

void add_range(std::vector<band>& rows, std::mt19937_64& rng, const state_span& s, std::uint32_t start,
               std::uint32_t end) {
    const std::uint32_t percent = draw(rng, 90, 115); // this range's price against its tier's
    const std::uint32_t days = 1 + s.tier * 2 + draw(rng, 0, 2);
    std::uint32_t min_grams = 0;
    for (std::size_t b = 0; b < bracket_max.size(); ++b) {
        const std::uint32_t tier_price = bracket_base[b] * (100 + 35 * s.tier) / 100;
        rows.push_back({start, end, s.uf, min_grams, bracket_max[b], tier_price * percent / 100,
                        days + static_cast<std::uint32_t>(b / 4)});
        min_grams = bracket_max[b] + 1;
    }
}

} // namespace

std::vector<band> generate(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<band> rows;
    rows.reserve(40'000);
    // A gap follows a quarter of the ranges, of up to 19 460 CEPs: 0.25 × 9 730 / (30 000 + 0.25 × 9 730) ≈
    // 7.5 % of the CEPs, as the write-up's 7.53 % of unknown CEPs.
    for (const auto& s : states) {
        if (s.uf == nullptr) {
            break;
        }
        std::uint32_t at = s.first;
        while (at <= s.last) {
            const std::uint32_t end = std::min(s.last, at + draw(rng, 10'000, 50'000) - 1);
            add_range(rows, rng, s, at, end);
            if (end == s.last) {
                break;
            }
            at = end + 1;
            if (draw(rng, 0, 3) == 0) {
                at = std::min(s.last, at + draw(rng, 0, 19'460));
                if (at == s.last) {
                    break;
                }
            }
        }
    }
    return rows;
}

namespace {

[[noreturn]] void fail_line(const std::string& path, std::size_t line, std::string_view why) {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + std::string(why));
}

bool parse_u32(std::string_view text, std::uint32_t& out) {
    const auto* end = text.data() + text.size();
    const auto [p, ec] = std::from_chars(text.data(), end, out);
    return ec == std::errc{} && p == end && !text.empty();
}

} // namespace

std::vector<band> read_csv(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        throw std::runtime_error("cannot open " + path);
    }
    std::vector<band> rows;
    std::string line;
    std::size_t n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        if (n == 1) {
            if (line != csv_header) {
                fail_line(path, n, "the header must be " + std::string(csv_header));
            }
            continue;
        }
        if (line.empty()) {
            continue;
        }
        std::array<std::string_view, 7> cols;
        std::size_t count = 0;
        std::string_view rest = line;
        while (count < cols.size()) {
            const auto comma = rest.find(',');
            cols[count++] = rest.substr(0, comma);
            if (comma == std::string_view::npos) {
                rest = {};
                break;
            }
            rest.remove_prefix(comma + 1);
        }
        if (count != cols.size() || !rest.empty()) {
            fail_line(path, n, "expected 7 columns");
        }
        std::uint32_t cep_start = 0;
        std::uint32_t cep_end = 0;
        if (!parse_cep(cols[0], cep_start) || !parse_cep(cols[1], cep_end)) {
            fail_line(path, n, "a CEP must be 8 digits, or 5-3 with a dash");
        }
        if (cols[2].size() != 2) {
            fail_line(path, n, "uf must be two letters");
        }
        std::array<std::uint32_t, 4> numbers{};
        for (std::size_t i = 0; i < numbers.size(); ++i) {
            if (!parse_u32(cols[3 + i], numbers[i])) {
                fail_line(path, n, "grams, price_cents and delivery_days must be non-negative integers");
            }
        }
        rows.push_back({cep_start, cep_end, std::string(cols[2]), numbers[0], numbers[1], numbers[2], numbers[3]});
    }
    if (n == 0) {
        throw std::runtime_error(path + ": empty (the header must be " + std::string(csv_header) + ")");
    }
    std::sort(rows.begin(), rows.end(), [](const band& a, const band& b) {
        return a.cep_start != b.cep_start ? a.cep_start < b.cep_start : a.min_grams < b.min_grams;
    });
    return rows;
}

namespace {

struct db_closer {
    void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct statement_finalizer {
    void operator()(sqlite3_stmt* s) const noexcept { sqlite3_finalize(s); }
};
using db_ptr = std::unique_ptr<sqlite3, db_closer>;
using statement_ptr = std::unique_ptr<sqlite3_stmt, statement_finalizer>;

[[noreturn]] void fail_db(sqlite3* db, const std::string& what) {
    throw std::runtime_error(what + ": " + (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

db_ptr open_db(const std::string& path, int flags) {
    count_sqlite_allocations();
    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
    db_ptr db(raw);
    if (rc != SQLITE_OK) {
        fail_db(raw, "cannot open " + path);
    }
    return db;
}

void exec(sqlite3* db, const char* sql) {
    if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
        fail_db(db, sql);
    }
}

} // namespace

void write_db(const std::string& db_path, const std::vector<band>& rows, bool replace) {
    // Checked first: a table the service would refuse is not written.
    (void)freight_index::build(rows);
    struct stat st {};
    if (::stat(db_path.c_str(), &st) == 0) {
        if (!replace) {
            throw std::runtime_error(db_path + " exists (--force replaces it)");
        }
    }
    // Written beside the target and renamed over it: a running service reloading meanwhile reads the old file
    // or the new one, never half of one.
    const std::string tmp = db_path + ".tmp";
    ::unlink(tmp.c_str());
    {
        auto db = open_db(tmp, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
        exec(db.get(), "PRAGMA journal_mode = OFF");
        exec(db.get(), "BEGIN");
        exec(db.get(), std::string(schema_sql).c_str());
        sqlite3_stmt* raw = nullptr;
        if (sqlite3_prepare_v2(db.get(), "INSERT INTO freight_band VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &raw, nullptr) !=
            SQLITE_OK) {
            fail_db(db.get(), "prepare insert");
        }
        statement_ptr insert(raw);
        for (const auto& b : rows) {
            sqlite3_bind_int64(insert.get(), 1, b.cep_start);
            sqlite3_bind_int64(insert.get(), 2, b.cep_end);
            sqlite3_bind_text(insert.get(), 3, b.uf.data(), static_cast<int>(b.uf.size()), SQLITE_STATIC);
            sqlite3_bind_int64(insert.get(), 4, b.min_grams);
            sqlite3_bind_int64(insert.get(), 5, b.max_grams);
            sqlite3_bind_int64(insert.get(), 6, b.price_cents);
            sqlite3_bind_int64(insert.get(), 7, b.delivery_days);
            if (sqlite3_step(insert.get()) != SQLITE_DONE) {
                fail_db(db.get(), "insert");
            }
            sqlite3_reset(insert.get());
        }
        exec(db.get(), "COMMIT");
    }
    if (::rename(tmp.c_str(), db_path.c_str()) != 0) {
        throw std::runtime_error("cannot rename " + tmp + " to " + db_path);
    }
}

std::vector<band> read_db(const std::string& db_path) {
    auto db = open_db(db_path, SQLITE_OPEN_READONLY);
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db.get(),
                           "SELECT cep_start, cep_end, uf, min_grams, max_grams, price_cents, delivery_days "
                           "FROM freight_band ORDER BY cep_start, min_grams",
                           -1, &raw, nullptr) != SQLITE_OK) {
        fail_db(db.get(), "read " + db_path);
    }
    statement_ptr select(raw);
    std::vector<band> rows;
    int rc = 0;
    while ((rc = sqlite3_step(select.get())) == SQLITE_ROW) {
        const auto u32 = [&](int col) { return static_cast<std::uint32_t>(sqlite3_column_int64(select.get(), col)); };
        const auto* uf = reinterpret_cast<const char*>(sqlite3_column_text(select.get(), 2));
        rows.push_back({u32(0), u32(1), uf != nullptr ? uf : "", u32(3), u32(4), u32(5), u32(6)});
    }
    if (rc != SQLITE_DONE) {
        fail_db(db.get(), "read " + db_path);
    }
    return rows;
}

namespace {

sqlite3_mem_methods sqlite_default_memory{};

void* counted_malloc(int bytes) {
    alloc::record(static_cast<std::size_t>(bytes));
    return sqlite_default_memory.xMalloc(bytes);
}
void counted_free(void* p) {
    sqlite_default_memory.xFree(p);
}
void* counted_realloc(void* p, int bytes) {
    alloc::record(static_cast<std::size_t>(bytes)); // as a growing buffer's new allocation would be
    return sqlite_default_memory.xRealloc(p, bytes);
}
int counted_size(void* p) {
    return sqlite_default_memory.xSize(p);
}
int counted_roundup(int bytes) {
    return sqlite_default_memory.xRoundup(bytes);
}
int counted_init(void* data) {
    return sqlite_default_memory.xInit(data);
}
void counted_shutdown(void* data) {
    sqlite_default_memory.xShutdown(data);
}

} // namespace

void count_sqlite_allocations() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!alloc::counting() || sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sqlite_default_memory) != SQLITE_OK) {
            return;
        }
        static sqlite3_mem_methods counted{&counted_malloc,  &counted_free, &counted_realloc,  &counted_size,
                                           &counted_roundup, &counted_init, &counted_shutdown, nullptr};
        counted.pAppData = sqlite_default_memory.pAppData;
        sqlite3_config(SQLITE_CONFIG_MALLOC, &counted); // SQLITE_MISUSE once SQLite is in use: left as it is
    });
}

} // namespace hotpath::freight
