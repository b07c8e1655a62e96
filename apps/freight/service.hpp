// Case 2's freight quote service: POST /freight/quote, in the lean variant (the fix) or the churn one.
#pragma once

#include "apps/freight/index.hpp"
#include <hotpath/server/app.hpp>

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

// Reloads `table` on each SIGHUP, and when its file changes (another inode, size or modification time, looked
// at every 200 ms: `hotpath freight init --force` renames a new file over it), from a thread of its own, until
// destroyed. Construct it before the server so that SIGHUP is blocked in the threads the server starts (they
// inherit the mask) and only this one takes it. Each reload says on standard error what it loaded, or why it
// kept the previous table.
// With take_sighup false it only watches the file, and reload() is called by whoever takes SIGHUP (the server's
// wait_for_stop_signal, through server_options::on_reload, where the same signal also reloads a TLS certificate).
class table_reloader {
public:
    explicit table_reloader(std::shared_ptr<freight::index_holder> table, bool take_sighup = true);
    // Reloads the table now and says so (what SIGHUP does).
    void reload();
    ~table_reloader();
    table_reloader(const table_reloader&) = delete;
    table_reloader& operator=(const table_reloader&) = delete;

private:
    std::shared_ptr<freight::index_holder> table_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

} // namespace hotpath::apps
