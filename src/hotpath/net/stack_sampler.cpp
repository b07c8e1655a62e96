// The signal handler that records a loop thread's stack, and the arithmetic that makes its addresses usable.
#include <hotpath/net/stack_sampler.hpp>

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace hotpath::net {

namespace {

thread_local stack_sampler* sampled = nullptr; // the sampler of the thread running the handler

int sample_signal() noexcept {
    return SIGRTMIN + 1;
}

// Where the program was loaded (0 for a program not built position-independent): frames are told as offsets
// from it, which addr2line reads either way.
std::uintptr_t load_base() noexcept {
    static const std::uintptr_t base = [] {
        std::uintptr_t first = 0;
        dl_iterate_phdr(
            [](dl_phdr_info* info, std::size_t, void* out) {
                *static_cast<std::uintptr_t*>(out) = info->dlpi_addr;
                return 1; // the program itself comes first
            },
            &first);
        return first;
    }();
    return base;
}

void install_once() noexcept {
    static std::once_flag once;
    std::call_once(once, [] {
        void* warm[2];
        backtrace(warm, 2); // the first call may load the unwinder: never inside the handler
        load_base();
        struct sigaction action {};
        action.sa_handler = &stack_sampler::on_signal;
        sigemptyset(&action.sa_mask);
        action.sa_flags = SA_RESTART;
        sigaction(sample_signal(), &action, nullptr);
    });
}

} // namespace

void stack_sampler::attach_this_thread() noexcept {
    install_once();
    const std::lock_guard lock(mutex_);
    thread_ = pthread_self();
    attached_ = true;
    sampled = this;
}

void stack_sampler::detach_this_thread() noexcept {
    const std::lock_guard lock(mutex_);
    attached_ = false;
    sampled = nullptr;
}

bool stack_sampler::request() noexcept {
    const std::lock_guard lock(mutex_);
    if (!attached_) {
        return false;
    }
    depth_.store(-1, std::memory_order_relaxed);
    requests_.fetch_add(1, std::memory_order_release);
    return pthread_kill(thread_, sample_signal()) == 0;
}

void stack_sampler::on_signal(int) noexcept {
    if (stack_sampler* s = sampled) {
        if (s->requests_.load(std::memory_order_acquire) == 0) {
            return; // not asked (a stray signal)
        }
        // backtrace() is safe here once warmed up (install_once): it walks the unwind tables, allocating nothing.
        s->depth_.store(backtrace(s->frames_, max_frames), std::memory_order_release);
    }
}

std::string stack_sampler::frames() const {
    const int depth = depth_.load(std::memory_order_acquire);
    std::string text;
    // The first frames are the handler's own and the signal trampoline's: skipped.
    for (int i = 2; i < depth; ++i) {
        char one[96];
        const auto address = reinterpret_cast<std::uintptr_t>(frames_[i]);
        Dl_info info{};
        if (::dladdr(frames_[i], &info) != 0 && info.dli_fname != nullptr &&
            reinterpret_cast<std::uintptr_t>(info.dli_fbase) != load_base()) {
            // In a shared library (the C library's blocking call, say): its name and the offset into it.
            const char* slash = std::strrchr(info.dli_fname, '/');
            std::snprintf(one, sizeof(one), "%s%s+0x%zx", text.empty() ? "" : " ",
                          slash != nullptr ? slash + 1 : info.dli_fname,
                          static_cast<std::size_t>(address - reinterpret_cast<std::uintptr_t>(info.dli_fbase)));
        } else {
            std::snprintf(one, sizeof(one), "%s0x%zx", text.empty() ? "" : " ",
                          static_cast<std::size_t>(address - load_base()));
        }
        text += one;
    }
    return text;
}

std::string stack_sampler::program_path() {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
    return n > 0 ? std::string(path, static_cast<std::size_t>(n)) : std::string("the program");
}

} // namespace hotpath::net
