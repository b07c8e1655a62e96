// The blocking pool: a mutex-guarded FIFO and a few threads that take from it.
#include <hotpath/net/blocking.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace hotpath::net {
namespace {

class pool {
public:
    void submit(std::function<void()> fn) {
        {
            const std::lock_guard lock(mutex_);
            queue_.push_back(std::move(fn));
            if (started_ < blocking_threads && idle_ == 0) {
                ++started_;
                std::thread([this] { serve(); }).detach();
            }
        }
        ready_.notify_one();
    }

private:
    [[noreturn]] void serve() {
        for (;;) {
            std::function<void()> fn;
            {
                std::unique_lock lock(mutex_);
                ++idle_;
                ready_.wait(lock, [this] { return !queue_.empty(); });
                --idle_;
                fn = std::move(queue_.front());
                queue_.pop_front();
            }
            fn();
        }
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<std::function<void()>> queue_;
    std::size_t started_ = 0;
    std::size_t idle_ = 0;
};

} // namespace

void run_blocking(std::function<void()> fn) {
    // Never destroyed: its threads may be blocked in a call when the process exits.
    static pool* const shared = new pool;
    shared->submit(std::move(fn));
}

} // namespace hotpath::net
