// Case 2's freight quote service: POST /freight/quote, in the lean variant (the fix) or the churn one.
#pragma once

#include "apps/freight/index.hpp"
#include "server/app.hpp"

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace hotpath::apps {

enum class freight_variant {
    lean,  // the fix: the cart read in place, the in-memory index, the answer written into a stack buffer
    churn, // THE ANTI-PATTERN, kept to be measured: a DOM, strings and shared objects per item, a statement
           // prepared and a query run per request, the answer built as a DOM and serialised to a new string
};

// Maps POST /freight/quote onto `routes`, answering from `table` (kept alive by the routes). The churn variant
// queries table->db_path() itself, reopening its per-thread connection after each reload.
void map_freight(app& routes, std::shared_ptr<freight::index_holder> table, freight_variant variant);

// Reloads `table` on each SIGHUP, from a thread of its own, until destroyed. Construct it before the server so
// that SIGHUP is blocked in the threads the server starts (they inherit the mask) and only this one takes it.
class reload_on_sighup {
public:
    explicit reload_on_sighup(std::shared_ptr<freight::index_holder> table);
    ~reload_on_sighup();
    reload_on_sighup(const reload_on_sighup&) = delete;
    reload_on_sighup& operator=(const reload_on_sighup&) = delete;

private:
    std::shared_ptr<freight::index_holder> table_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace hotpath::apps
