// POST /freight/quote, both variants: lean (no allocation per request) and churn (the write-up's starting point).
#include "apps/freight/service.hpp"

#include "apps/freight/cart.hpp"
#include "apps/freight/table.hpp"
#include <hotpath/server/json.hpp>

#include <sqlite3.h>

#include <csignal>
#include <cstdio>
#include <map>
#include <pthread.h>
#include <sys/stat.h>

namespace hotpath::apps {
namespace {

using freight::cart_error;

void quote_lean(const freight::index_holder& table, request& req, response& res) {
    freight::cart cart;
    char detail[128];
    if (const auto e = freight::read_cart(req.body(), cart); e.what != cart_error::field::none) {
        res.problem(http::status::bad_request, freight::describe(e, detail));
        return;
    }
    // Held until the answer is written: a reload meanwhile frees the old table only after this request.
    const auto index = table.current();
    const auto q = index->lookup(cart.cep, cart.total_grams);
    switch (q.result) {
    case freight::quote::outcome::unknown_cep:
        res.problem(http::status::not_found, freight::describe_unknown(cart.cep, detail));
        return;
    case freight::quote::outcome::too_heavy:
        res.problem(http::status::bad_request, freight::describe_too_heavy(cart.cep, cart.total_grams, q, detail));
        return;
    case freight::quote::outcome::found:
        break;
    }
    char body[256];
    res.body(freight::write_quote(cart.cep, cart.total_grams, q, body), "application/json");
}

// ---- The churn variant: THE ANTI-PATTERN, written as such code usually is. Do not copy. ----

// A cart line as a small heap object, as the write-up's classes were.
struct cart_item {
    std::string sku;
    std::int64_t quantity;
    std::int64_t weight_grams;
};
struct price_row {
    std::string uf;
    std::int64_t min_grams;
    std::int64_t max_grams;
    std::int64_t price_cents;
    std::int64_t delivery_days;
};

// One read-only connection per loop thread and file, reopened after a reload (a renamed-over file is another
// file: an open connection would go on reading the old one).
struct churn_connections {
    struct entry {
        sqlite3* db = nullptr;
        std::uint64_t generation = 0;
    };
    std::map<std::string, entry> open;
    ~churn_connections() {
        for (auto& [path, e] : open) {
            sqlite3_close_v2(e.db);
        }
    }
    sqlite3* get(const freight::index_holder& table) {
        auto& e = open[table.db_path()];
        if (e.db == nullptr || e.generation != table.generation()) {
            sqlite3_close_v2(e.db);
            e.db = nullptr;
            e.generation = table.generation();
            freight::count_sqlite_allocations();
            if (sqlite3_open_v2(table.db_path().c_str(), &e.db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) !=
                SQLITE_OK) {
                throw std::runtime_error("cannot open " + table.db_path());
            }
        }
        return e.db;
    }
};

bool is_int_in(const boost::json::value* v, std::int64_t lo, std::int64_t hi) {
    return v != nullptr && v->is_int64() && v->as_int64() >= lo && v->as_int64() <= hi;
}

void quote_churn(const freight::index_holder& table, request& req, response& res) {
    const std::string body(req.body());
    if (body.size() > freight::max_body_bytes) {
        res.problem(http::status::bad_request,
                    "body: larger than " + std::to_string(freight::max_body_bytes) + " bytes");
        return;
    }
    boost::system::error_code ec;
    const boost::json::value doc = boost::json::parse(body, ec); // default storage: the heap
    if (ec) {
        res.problem(http::status::bad_request, "body: not valid JSON");
        return;
    }
    if (!doc.is_object()) {
        res.problem(http::status::bad_request, "body: must be a JSON object");
        return;
    }
    const auto& root = doc.as_object();
    const auto* cep_value = root.if_contains("cep");
    std::uint32_t cep = 0;
    if (cep_value == nullptr || !cep_value->is_string() ||
        !freight::parse_cep(std::string(cep_value->as_string()), cep)) {
        res.problem(http::status::bad_request, "cep: must be a string of 8 digits, as 01310100 or 01310-100");
        return;
    }
    const auto* items_value = root.if_contains("items");
    if (items_value == nullptr || !items_value->is_array() || items_value->as_array().empty() ||
        items_value->as_array().size() > freight::max_items) {
        res.problem(http::status::bad_request,
                    "items: must be an array of 1 to " + std::to_string(freight::max_items) + " items");
        return;
    }
    std::vector<std::shared_ptr<const cart_item>> items;
    for (const auto& v : items_value->as_array()) {
        const std::string where = "items[" + std::to_string(items.size()) + "]";
        if (!v.is_object()) {
            res.problem(http::status::bad_request, where + ": must be an object");
            return;
        }
        const auto& o = v.as_object();
        const auto* sku = o.if_contains("sku");
        if (sku == nullptr || !sku->is_string() || sku->as_string().empty() ||
            sku->as_string().size() > freight::max_sku_bytes) {
            res.problem(http::status::bad_request,
                        where + ".sku: must be a string of 1 to " + std::to_string(freight::max_sku_bytes) + " bytes");
            return;
        }
        const auto* quantity = o.if_contains("quantity");
        if (!is_int_in(quantity, 1, freight::max_quantity)) {
            res.problem(http::status::bad_request,
                        where + ".quantity: must be an integer from 1 to " + std::to_string(freight::max_quantity));
            return;
        }
        const auto* weight = o.if_contains("weightGrams");
        if (!is_int_in(weight, 1, freight::max_item_grams)) {
            res.problem(http::status::bad_request, where + ".weightGrams: must be an integer from 1 to " +
                                                       std::to_string(freight::max_item_grams));
            return;
        }
        items.push_back(std::make_shared<const cart_item>(
            cart_item{std::string(sku->as_string()), quantity->as_int64(), weight->as_int64()}));
    }
    std::uint64_t total_grams = 0;
    for (const auto& item : items) {
        total_grams += static_cast<std::uint64_t>(item->quantity * item->weight_grams);
    }

    thread_local churn_connections connections;
    sqlite3* db = connections.get(table);
    sqlite3_stmt* statement = nullptr;
    const std::string sql = "SELECT uf, min_grams, max_grams, price_cents, delivery_days FROM freight_band "
                            "WHERE cep_start = (SELECT max(cep_start) FROM freight_band WHERE cep_start <= ?1) "
                            "AND cep_end >= ?1 ORDER BY min_grams";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK) {
        throw std::runtime_error(sqlite3_errmsg(db));
    }
    sqlite3_bind_int64(statement, 1, cep);
    std::vector<price_row> rows;
    while (sqlite3_step(statement) == SQLITE_ROW) {
        rows.push_back({reinterpret_cast<const char*>(sqlite3_column_text(statement, 0)),
                        sqlite3_column_int64(statement, 1), sqlite3_column_int64(statement, 2),
                        sqlite3_column_int64(statement, 3), sqlite3_column_int64(statement, 4)});
    }
    sqlite3_finalize(statement);

    char cep_text[9];
    freight::format_cep(cep, cep_text);
    const std::string cep_string(cep_text, sizeof(cep_text));
    if (rows.empty()) {
        res.problem(http::status::not_found, "no freight range covers CEP " + cep_string);
        return;
    }
    const price_row* match = nullptr;
    for (const auto& row : rows) {
        if (static_cast<std::uint64_t>(row.max_grams) >= total_grams) {
            if (static_cast<std::uint64_t>(row.min_grams) <= total_grams) {
                match = &row;
            }
            break;
        }
    }
    if (match == nullptr) {
        res.problem(http::status::bad_request, "items: total weight " + std::to_string(total_grams) +
                                                   " g is over the heaviest bracket for CEP " + cep_string + " (" +
                                                   std::to_string(rows.back().max_grams) + " g)");
        return;
    }
    boost::json::object answer;
    answer["cep"] = cep_string;
    answer["state"] = match->uf;
    answer["totalWeightGrams"] = total_grams;
    boost::json::object bracket;
    bracket["minGrams"] = match->min_grams;
    bracket["maxGrams"] = match->max_grams;
    answer["bracket"] = bracket;
    answer["priceCents"] = match->price_cents;
    answer["deliveryDays"] = match->delivery_days;
    res.body(boost::json::serialize(answer), "application/json");
}

} // namespace

void map_freight(app& routes, std::shared_ptr<freight::index_holder> table, freight_variant variant) {
    if (variant == freight_variant::lean) {
        routes.post("/freight/quote", [table](request& req, response& res) { quote_lean(*table, req, res); });
    } else {
        routes.post("/freight/quote", [table](request& req, response& res) { quote_churn(*table, req, res); });
    }
}

namespace {

// What tells one version of a file from another without reading it.
struct file_version {
    ino_t inode = 0;
    off_t size = -1;
    timespec modified{};
    bool operator==(const file_version& o) const noexcept {
        return inode == o.inode && size == o.size && modified.tv_sec == o.modified.tv_sec &&
               modified.tv_nsec == o.modified.tv_nsec;
    }
};

file_version version_of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        return {};
    }
    return {st.st_ino, st.st_size, st.st_mtim};
}

void reload_and_say(freight::index_holder& table, const char* why) {
    if (const auto failed = table.reload(); failed.empty()) {
        std::fprintf(stderr, "hotpath: reloaded %s (%s): %zu ranges\n", table.db_path().c_str(), why,
                     table.current()->ranges());
    } else {
        std::fprintf(stderr, "hotpath: reload of %s (%s) failed, serving the previous table: %s\n",
                     table.db_path().c_str(), why, failed.c_str());
    }
}

} // namespace

table_reloader::table_reloader(std::shared_ptr<freight::index_holder> table, bool take_sighup)
    : table_(std::move(table)) {
    sigset_t hup;
    sigemptyset(&hup);
    if (take_sighup) {
        sigaddset(&hup, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &hup, nullptr);
    }
    thread_ = std::thread([this, hup] {
        // The file as loaded, or near enough: a change between the load and this reading is seen at the next.
        auto seen = version_of(table_->db_path());
        // Woken every 200 ms to look at the file and at whether it should stop.
        const timespec tick{0, 200'000'000};
        while (!stop_.load(std::memory_order_relaxed)) {
            if (sigtimedwait(&hup, nullptr, &tick) == SIGHUP) {
                seen = version_of(table_->db_path());
                reload_and_say(*table_, "SIGHUP");
                continue;
            }
            // A file gone (being replaced, or removed) keeps the table until one is there again.
            if (const auto now = version_of(table_->db_path()); now.inode != 0 && !(now == seen)) {
                seen = now;
                reload_and_say(*table_, "the file changed");
            }
        }
    });
}

void table_reloader::reload() {
    reload_and_say(*table_, "SIGHUP");
}

table_reloader::~table_reloader() {
    stop_.store(true, std::memory_order_relaxed);
    thread_.join();
}

} // namespace hotpath::apps
