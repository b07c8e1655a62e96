// The freight table in memory: immutable sorted CEP ranges and their brackets, and the holder that swaps
// a freshly loaded table in while requests go on reading the one they started with.
#pragma once

#include "apps/freight/table.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hotpath::freight {

// What a lookup found: a price, no range for the CEP (404), or a weight over the range's heaviest bracket.
struct quote {
    enum class outcome : std::uint8_t { found, unknown_cep, too_heavy };
    outcome result = outcome::unknown_cep;
    char uf[2] = {};
    std::uint32_t min_grams = 0;
    std::uint32_t max_grams = 0; // too_heavy: the heaviest bracket's bound
    std::uint32_t price_cents = 0;
    std::uint32_t delivery_days = 0;
};

// Built once, then only read (from any thread, without locks): ranges sorted by their first CEP, each with its
// brackets sorted by weight. A lookup is a binary search over the ranges and one over the range's brackets;
// it allocates nothing.
class freight_index {
public:
    // Checks and indexes `rows` (sorted by CEP then weight, as read_db and read_csv give them): the ranges must
    // not overlap, the rows of one range must share its end and state, and its brackets must not overlap.
    // Throws std::runtime_error naming the first bad row.
    static freight_index build(const std::vector<band>& rows);

    quote lookup(std::uint32_t cep, std::uint64_t grams) const noexcept;
    std::size_t ranges() const noexcept { return ranges_.size(); }
    std::size_t brackets() const noexcept { return brackets_.size(); }
    // How many CEPs of [first, last] some range covers.
    std::uint64_t covered(std::uint32_t first, std::uint32_t last) const noexcept;

private:
    struct range {
        std::uint32_t first_cep;
        std::uint32_t last_cep;
        std::uint32_t first_bracket; // into brackets_
        std::uint32_t bracket_count;
        char uf[2];
    };
    struct bracket {
        std::uint32_t min_grams;
        std::uint32_t max_grams;
        std::uint32_t price_cents;
        std::uint32_t delivery_days;
    };
    std::vector<range> ranges_;
    std::vector<bracket> brackets_;
};

// The table a service answers from, replaced whole by reload(): a request takes current() once and keeps that
// table alive for as long as it holds the pointer, so a reload never shows it half of one or frees it early.
// current() copies the shared_ptr under a mutex held for that copy alone (a reference count increment, no
// allocation, no waiting on a reload: the new table is built before the lock is taken). Not
// std::atomic<std::shared_ptr>: libstdc++ 12's implementation swaps the pointer in a way ThreadSanitizer reports
// as a race.
class index_holder {
public:
    // Loads `db_path` (throws std::runtime_error as read_db and freight_index::build do).
    explicit index_holder(std::string db_path);

    std::shared_ptr<const freight_index> current() const noexcept {
        std::lock_guard lock(mutex_);
        return current_;
    }
    const std::string& db_path() const noexcept { return db_path_; }
    // Reads the file again and swaps the new table in; on failure keeps the old one and returns why ("" when
    // it swapped). Safe beside any number of current() calls; reloads are serialised by the caller.
    std::string reload();
    // How many tables were swapped in, the first one included.
    std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_relaxed); }

private:
    std::string db_path_;
    mutable std::mutex mutex_;
    std::shared_ptr<const freight_index> current_; // guarded by mutex_
    std::atomic<std::uint64_t> generation_{0};
};

} // namespace hotpath::freight
