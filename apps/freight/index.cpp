// The in-memory freight index: checked on build, searched by binary search, swapped whole on reload.
#include "apps/freight/index.hpp"

#include <algorithm>
#include <stdexcept>

namespace hotpath::freight {

namespace {
[[noreturn]] void refuse(std::size_t row, const std::string& why) {
    throw std::runtime_error("freight table row " + std::to_string(row + 1) + ": " + why);
}
} // namespace

freight_index freight_index::build(const std::vector<band>& rows) {
    freight_index index;
    index.ranges_.reserve(rows.size() / 4 + 1);
    index.brackets_.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const band& b = rows[i];
        if (b.cep_start > b.cep_end || b.cep_end > 99'999'999) {
            refuse(i, "cep_start must not exceed cep_end, nor cep_end 99999999");
        }
        if (b.uf.size() != 2 || b.uf[0] < 'A' || b.uf[0] > 'Z' || b.uf[1] < 'A' || b.uf[1] > 'Z') {
            refuse(i, "uf must be two capital letters");
        }
        if (b.min_grams > b.max_grams) {
            refuse(i, "min_grams must not exceed max_grams");
        }
        if (index.ranges_.empty() || index.ranges_.back().first_cep != b.cep_start) {
            if (!index.ranges_.empty() && index.ranges_.back().last_cep >= b.cep_start) {
                refuse(i, "its CEP range overlaps the previous range, or the rows are not sorted by cep_start");
            }
            index.ranges_.push_back(
                {b.cep_start, b.cep_end, static_cast<std::uint32_t>(index.brackets_.size()), 0, {b.uf[0], b.uf[1]}});
        } else {
            const range& r = index.ranges_.back();
            if (r.last_cep != b.cep_end || r.uf[0] != b.uf[0] || r.uf[1] != b.uf[1]) {
                refuse(i, "the rows of one range must share cep_end and uf");
            }
            if (index.brackets_.back().max_grams >= b.min_grams) {
                refuse(i, "its weight bracket overlaps the previous one, or the rows are not sorted by min_grams");
            }
        }
        index.brackets_.push_back({b.min_grams, b.max_grams, b.price_cents, b.delivery_days});
        ++index.ranges_.back().bracket_count;
    }
    return index;
}

quote freight_index::lookup(std::uint32_t cep, std::uint64_t grams) const noexcept {
    quote q;
    // The last range starting at or before `cep`: ranges do not overlap, so it is the only candidate.
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cep,
                               [](std::uint32_t c, const range& r) { return c < r.first_cep; });
    if (it == ranges_.begin() || (--it)->last_cep < cep) {
        return q;
    }
    q.uf[0] = it->uf[0];
    q.uf[1] = it->uf[1];
    const bracket* first = brackets_.data() + it->first_bracket;
    const bracket* last = first + it->bracket_count;
    // The first bracket whose bound holds the weight; a weight between two brackets (a gap in the table's
    // weights) or over the heaviest is too heavy for this range.
    const bracket* b =
        std::lower_bound(first, last, grams, [](const bracket& x, std::uint64_t g) { return x.max_grams < g; });
    if (b == last || b->min_grams > grams) {
        q.result = quote::outcome::too_heavy;
        q.max_grams = (last - 1)->max_grams;
        return q;
    }
    q.result = quote::outcome::found;
    q.min_grams = b->min_grams;
    q.max_grams = b->max_grams;
    q.price_cents = b->price_cents;
    q.delivery_days = b->delivery_days;
    return q;
}

std::uint64_t freight_index::covered(std::uint32_t first, std::uint32_t last) const noexcept {
    std::uint64_t n = 0;
    for (const auto& r : ranges_) {
        const auto lo = std::max(first, r.first_cep);
        const auto hi = std::min(last, r.last_cep);
        if (lo <= hi) {
            n += hi - lo + 1;
        }
    }
    return n;
}

index_holder::index_holder(std::string db_path) : db_path_(std::move(db_path)) {
    if (auto why = reload(); !why.empty()) {
        throw std::runtime_error(why);
    }
}

std::string index_holder::reload() {
    try {
        auto fresh = std::make_shared<const freight_index>(freight_index::build(read_db(db_path_)));
        // Requests that already took the old table keep it alive through their own shared_ptr; the last of them
        // frees it (or this function, below, when none holds it).
        {
            std::lock_guard lock(mutex_);
            current_.swap(fresh);
        }
        generation_.fetch_add(1, std::memory_order_relaxed);
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

} // namespace hotpath::freight
