// The cold path of result<T>: value() on an error reports it and aborts.
#include <hotpath/core/result.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace hotpath::detail {

void bad_result_access(std::error_code error) noexcept {
    // One write, so the line stays whole if other threads write to stderr too.
    const std::string line = "hotpath: result::value() called on an error: " + error.message() + " (" +
                             error.category().name() + ":" + std::to_string(error.value()) + ")\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::abort();
}

void bad_result_access(const problem& error) noexcept {
    const std::string line = "hotpath: result::value() called on an error: " + error.message + " (" +
                             error.code.category().name() + ":" + std::to_string(error.code.value()) + ")\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::abort();
}

} // namespace hotpath::detail
