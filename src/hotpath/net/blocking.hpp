// Work that blocks (a name resolution; later, users' blocking calls) runs on a few threads of its own, never on
// an event loop's; results go back to a loop through its mailbox (loop.hpp).
#pragma once

#include <cstddef>
#include <functional>

namespace hotpath::net {

// Queues `fn` to run on one of the process's blocking threads (started on first use, `blocking_threads` of them,
// alive until the process ends). Never blocks the caller; FIFO; `fn` must not throw. Safe from any thread.
void run_blocking(std::function<void()> fn);

inline constexpr std::size_t blocking_threads = 4;

} // namespace hotpath::net
