// result<T>: a value or an error code, shaped like std::expected, for hot paths that throw nothing.
#pragma once

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace hotpath {

// Holds either a T or a std::error_code. Never throws on construction from either; value() on an
// error is a programming mistake and terminates (hot paths check has_value() first).
template <typename T>
class [[nodiscard]] result {
public:
    result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) : state_(std::move(value)) {}
    result(std::error_code error) noexcept : state_(error) {}

    bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & noexcept { return *std::get_if<0>(&state_); }
    const T& value() const& noexcept { return *std::get_if<0>(&state_); }
    T&& value() && noexcept { return std::move(*std::get_if<0>(&state_)); }
    T& operator*() & noexcept { return value(); }
    const T& operator*() const& noexcept { return value(); }
    T* operator->() noexcept { return &value(); }
    const T* operator->() const noexcept { return &value(); }

    // The error; a default (success) error_code when a value is held.
    std::error_code error() const noexcept {
        const auto* e = std::get_if<1>(&state_);
        return e != nullptr ? *e : std::error_code{};
    }

private:
    std::variant<T, std::error_code> state_;
};

// result<void>: success or an error code.
template <>
class [[nodiscard]] result<void> {
public:
    result() noexcept = default;
    result(std::error_code error) noexcept : error_(error) {}

    bool has_value() const noexcept { return !error_; }
    explicit operator bool() const noexcept { return has_value(); }
    std::error_code error() const noexcept { return error_; }

private:
    std::error_code error_;
};

} // namespace hotpath
