// result<T>: a value or an error code, shaped like std::expected, for hot paths that throw nothing.
#pragma once

#include "core/error.hpp"

#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace hotpath {

namespace detail {

// Writes "hotpath: result::value() called on an error: <message> (<category>:<value>)" and a newline to stderr,
// then calls std::abort. Cold and out of line, so that a checked access costs one predictable branch.
[[noreturn, gnu::cold, gnu::noinline]] void bad_result_access(std::error_code error) noexcept;

} // namespace detail

// Holds either a T or a std::error_code. Never throws on construction from either; constructible from an errc
// too, so that `return errc::timeout;` works in a function returning result<T>. value(), operator* and
// operator-> on an error are a programming mistake (hot paths check has_value() first): they print one line
// naming the error to stderr and abort, on every build type.
template <typename T>
class [[nodiscard]] result {
public:
    result(T value) noexcept(std::is_nothrow_move_constructible_v<T>) : state_(std::move(value)) {}
    result(std::error_code error) noexcept : state_(error) {}
    // An exact match for an errc argument, so it wins over result(T) for any T an errc converts to.
    result(errc error) noexcept : state_(make_error_code(error)) {}

    bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & noexcept { return *checked(); }
    const T& value() const& noexcept { return *checked(); }
    T&& value() && noexcept { return std::move(*checked()); }
    T& operator*() & noexcept { return *checked(); }
    const T& operator*() const& noexcept { return *checked(); }
    T* operator->() noexcept { return checked(); }
    const T* operator->() const noexcept { return checked(); }

    // The error; a default (success) error_code when a value is held.
    std::error_code error() const noexcept {
        const auto* e = std::get_if<1>(&state_);
        return e != nullptr ? *e : std::error_code{};
    }

private:
    T* checked() noexcept {
        T* v = std::get_if<0>(&state_);
        if (v == nullptr) [[unlikely]] {
            detail::bad_result_access(error());
        }
        return v;
    }
    const T* checked() const noexcept {
        const T* v = std::get_if<0>(&state_);
        if (v == nullptr) [[unlikely]] {
            detail::bad_result_access(error());
        }
        return v;
    }

    std::variant<T, std::error_code> state_;
};

// result<void>: success or an error code; constructible from an errc like result<T>.
template <>
class [[nodiscard]] result<void> {
public:
    result() noexcept = default;
    result(std::error_code error) noexcept : error_(error) {}
    result(errc error) noexcept : error_(make_error_code(error)) {}

    bool has_value() const noexcept { return !error_; }
    explicit operator bool() const noexcept { return has_value(); }
    std::error_code error() const noexcept { return error_; }

private:
    std::error_code error_;
};

} // namespace hotpath
