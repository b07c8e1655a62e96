// The access log: one line per request, written off the loops. Each loop puts a fixed-size record into its own
// bounded ring (no lock, no allocation, no formatting); one writer thread drains the rings, formats the lines and
// writes them. A writer that falls behind makes the loops drop lines, counted, never wait.
#pragma once

#include <hotpath/core/counter.hpp>
#include <hotpath/core/result.hpp>
#include <hotpath/server/metrics.hpp>
#include <hotpath/server/server.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace hotpath {

class app;

// What a loop knows of one answered request. Trivially copyable, written in place in the ring.
struct access_record {
    static constexpr std::size_t max_target_bytes = 480; // longer targets are cut and marked with "..."
    static constexpr std::size_t max_method_bytes = 16;

    std::int64_t unix_ns = 0; // when the response was made (system clock)
    std::uint32_t route = 0;  // index in the route table (label_of)
    std::uint16_t status = 0;
    std::uint8_t version_major = 1;
    std::uint8_t version_minor = 1;
    std::uint8_t peer_family = 0; // AF_INET, AF_INET6, or 0 when unknown
    std::uint8_t peer_address[16] = {};
    std::uint32_t calls = 0; // downstream calls
    std::uint64_t response_bytes = 0;
    request_time_parts parts;
    std::uint8_t method_length = 0;
    bool target_cut = false;
    std::uint16_t target_length = 0;
    char method[max_method_bytes] = {};
    char target[max_target_bytes] = {};
};

// A single-producer (its loop), single-consumer (the writer) ring of records.
class access_ring {
public:
    explicit access_ring(std::size_t capacity); // rounded up to a power of two
    access_ring(const access_ring&) = delete;
    access_ring& operator=(const access_ring&) = delete;

    // A free slot to fill and commit(), or null when the ring is full (the line is dropped and counted).
    access_record* reserve() noexcept;
    void commit() noexcept;
    // The writer: calls `take(record)` for each committed record, oldest first, then frees their slots.
    template <typename F>
    std::size_t drain(F&& take) {
        std::uint64_t tail = tail_.load(std::memory_order_relaxed);
        const std::uint64_t head = head_.load(std::memory_order_acquire);
        const std::size_t n = head - tail;
        for (; tail != head; ++tail) {
            take(slots_[tail & mask_]);
        }
        tail_.store(tail, std::memory_order_release);
        return n;
    }
    std::uint64_t dropped() const noexcept { return dropped_.get(); }

private:
    std::unique_ptr<access_record[]> slots_;
    std::size_t mask_;
    alignas(64) std::atomic<std::uint64_t> head_{0}; // written by the loop
    alignas(64) std::atomic<std::uint64_t> tail_{0}; // written by the writer
    counter dropped_;                                // by the loop
};

class access_log {
public:
    // Opens `path` for appending ("-": standard output) and starts the writer. Errors: the open's errno.
    static result<std::unique_ptr<access_log>> open(const std::string& path, log_line_format format, const app& routes,
                                                    std::size_t loops, std::size_t records_per_loop);
    ~access_log(); // stops the writer after a last drain, then closes the file
    access_log(const access_log&) = delete;
    access_log& operator=(const access_log&) = delete;

    access_ring& ring(std::size_t loop) noexcept { return *rings_[loop]; }
    // Lines written, and lines the loops dropped because their ring was full; any thread.
    std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept;
    // Drains and writes what the rings hold now, on the calling thread's terms (the loops have stopped).
    void flush();

    // One record as its line, newline included (for tests and the writer).
    static void format_line(std::string& out, const access_record& r, log_line_format format, const app& routes);

private:
    access_log(int fd, bool owns_fd, log_line_format format, const app& routes, std::size_t loops,
               std::size_t records_per_loop);
    void run();
    std::size_t write_pending(std::string& buffer);

    int fd_;
    bool owns_fd_;
    log_line_format format_;
    const app& routes_;
    std::vector<std::unique_ptr<access_ring>> rings_;
    std::atomic<std::uint64_t> written_{0};
    std::mutex write_mutex_; // the writer thread and flush() take turns at the rings' consumer side
    // Under write_mutex_: a batch's lines as formatted, ring after ring, and their order in time.
    struct line {
        std::int64_t unix_ns;
        std::size_t begin;
        std::size_t end;
    };
    std::string staging_;
    std::vector<line> order_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::thread writer_;
};

} // namespace hotpath
