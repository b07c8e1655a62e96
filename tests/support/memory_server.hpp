// One server loop driven by its test, its connections on in-memory transports: a real server_connection, routing and
// handlers, with no socket and no thread of its own. Header-only: it reaches into the server's internals
// (server/worker.hpp), as only tests may.
#pragma once

#include "support/memory_transport.hpp"
#include "support/test_server.hpp"
#include <hotpath/server/app.hpp>
#include <hotpath/server/server.hpp>
#include <hotpath/server/worker.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

namespace hotpath::test {

class memory_server {
public:
    explicit memory_server(const app& routes, server_options options = {}) : options_(std::move(options)) {
        workers_.push_back(std::make_unique<worker>(0, routes, options_, open_));
        worker_ = workers_.front().get();
        if (test_io() == io_backend::epoll) {
            worker_->loop.disable_ring(); // HOTPATH_TEST_IO: the loop's own backend, under the memory transports
        }
        bounds_ = metrics::latency_bounds_ns(options_.latency_objectives);
        worker_->route_stats.init(routes.route_keys().size(), bounds_);
        worker_->stall_lengths = std::make_unique<metrics::duration_buckets>(bounds_);
        worker_->all = &workers_;
        worker_->drain_deadline_ns = &drain_deadline_ns_;
        worker_->transports = &transports_;
        worker_->loop.add_tick([this](net::clock::time_point now) { worker_->on_tick(now); });
    }
    ~memory_server() { worker_->close_all(); }
    memory_server(const memory_server&) = delete;
    memory_server& operator=(const memory_server&) = delete;

    // Admits a new connection (call on the loop, from a step); its peer, valid while this server lives. The worker
    // must take it (not draining, under its connection limits): a test that expects a refusal calls accept() itself.
    memory_peer& connect() {
        const std::size_t before = transports_.peers().size();
        if (worker_->accept(-1) == nullptr || transports_.peers().size() != before + 1) {
            throw std::logic_error("memory_server::connect: the worker turned the connection away");
        }
        memory_peer& p = transports_.peers().back();
        p.on_change([this] { check(); });
        return p;
    }

    // Runs `step` on the loop, then the loop until `done()` holds (looked at after the step, after anything a
    // connection does to its peer, and every millisecond), or `limit` passes. True when done() held.
    bool run(const std::function<void()>& step, std::function<bool()> done,
             std::chrono::milliseconds limit = std::chrono::seconds{5}) {
        done_ = std::move(done);
        met_ = false;
        net::timer guard(worker_->loop);
        guard.arm_after(limit, [this] { worker_->loop.stop(); });
        // done() may turn on something no peer sees (a handler starting): looked at every millisecond as well.
        net::timer poll(worker_->loop);
        std::function<void()> look = [this, &poll, &look] {
            check();
            poll.arm_after(std::chrono::milliseconds{1}, look);
        };
        worker_->loop.post([this, &step, &poll, &look] {
            step();
            check();
            poll.arm_after(std::chrono::milliseconds{1}, look);
        });
        worker_->loop.run();
        guard.cancel();
        poll.cancel();
        done_ = nullptr;
        return met_;
    }

    // Drops every peer (and what each received), so that a server kept for many runs (a fuzzer's) holds what one
    // run needs, not all of them: each peer's connection must be gone (closed by the server). Peers returned before
    // are invalid after.
    void forget_peers() {
        if (worker_->connection_count() != 0) {
            throw std::logic_error("memory_server::forget_peers: a connection is still open");
        }
        transports_.peers().clear();
    }

    worker& loop_worker() noexcept { return *worker_; }
    std::deque<memory_peer>& peers() noexcept { return transports_.peers(); }

private:
    void check() {
        if (!met_ && done_ && done_()) {
            met_ = true;
            worker_->loop.stop();
        }
    }

    server_options options_;
    std::atomic<std::size_t> open_{0};
    std::atomic<std::int64_t> drain_deadline_ns_{0};
    std::vector<std::uint64_t> bounds_;
    memory_transports transports_;
    std::vector<std::unique_ptr<worker>> workers_; // one: the loop's (worker::all names them all)
    worker* worker_ = nullptr;                     // workers_'s one
    std::function<bool()> done_;
    bool met_ = false;
};

} // namespace hotpath::test
