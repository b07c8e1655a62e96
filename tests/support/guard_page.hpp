// Test memory that ends at an inaccessible page, so that a parser reading one byte past its input crashes.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace hotpath::test {

// Memory whose last readable and writable byte is followed by a PROT_NONE page: place() copies bytes so that they end
// at that boundary (as h2o/picohttpparser's test.c does). Each place() overwrites what the previous one placed.
class guarded_buffer {
public:
    explicit guarded_buffer(std::size_t capacity) {
        page_ = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
        size_ = (capacity + page_ - 1) / page_ * page_;
        if (size_ == 0) {
            size_ = page_;
        }
        void* p = ::mmap(nullptr, size_ + page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            throw std::runtime_error("mmap failed");
        }
        base_ = static_cast<char*>(p);
        if (::mprotect(base_ + size_, page_, PROT_NONE) != 0) {
            ::munmap(base_, size_ + page_);
            throw std::runtime_error("mprotect failed");
        }
    }
    guarded_buffer(const guarded_buffer&) = delete;
    guarded_buffer& operator=(const guarded_buffer&) = delete;
    ~guarded_buffer() { ::munmap(base_, size_ + page_); }

    // The copy of `bytes`, ending just before the guard page; valid until the next place().
    std::string_view place(std::string_view bytes) { return {place_writable(bytes), bytes.size()}; }

    // place() for code that writes into its input (the chunked decoder decodes in place): the first of the
    // bytes.size() writable bytes copied from `bytes`, ending just before the guard page.
    char* place_writable(std::string_view bytes) {
        if (bytes.size() > size_) {
            throw std::length_error("input larger than the guarded buffer");
        }
        char* at = base_ + size_ - bytes.size();
        if (!bytes.empty()) {
            std::memcpy(at, bytes.data(), bytes.size());
        }
        return at;
    }

private:
    std::size_t page_ = 0;
    std::size_t size_ = 0;
    char* base_ = nullptr;
};

} // namespace hotpath::test
