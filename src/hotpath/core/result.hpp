// result<T, E>: a value or an error, shaped like std::expected, for code that throws nothing. E is a
// std::error_code on hot paths, or a `problem` (the code and one line for a person) where a message travels.
#pragma once

#include <hotpath/core/error.hpp>

#include <string>
#include <system_error>
#include <type_traits>
#include <utility>
#include <variant>

namespace hotpath {

// A failure worth telling a person: its code, to branch on, and one line that names what was wrong and with
// which value ("bad port in the URL: '80a'"). What setup code, the command line and the lab return where a
// hot path returns a bare std::error_code.
struct problem {
    std::error_code code;
    std::string message;

    problem() = default;
    problem(std::error_code c, std::string m) : code(c), message(std::move(m)) {}
    problem(errc c, std::string m) : code(make_error_code(c)), message(std::move(m)) {}
    // The code alone: the message is the code's own.
    problem(std::error_code c) : code(c), message(c.message()) {} // NOLINT(google-explicit-constructor)
};

namespace detail {

// Writes "hotpath: result::value() called on an error: <message> (<category>:<value>)" and a newline to stderr,
// then calls std::abort. Cold and out of line, so that a checked access costs one predictable branch.
[[noreturn, gnu::cold, gnu::noinline]] void bad_result_access(std::error_code error) noexcept;
[[noreturn, gnu::cold, gnu::noinline]] void bad_result_access(const problem& error) noexcept;

} // namespace detail

// Holds either a T or an E. Never throws on construction from an error; with E = std::error_code it is
// constructible from an errc too, so that `return errc::timeout;` works. value(), operator* and operator-> on an
// error are a programming mistake (check has_value() first): they print one line naming the error to stderr and
// abort, on every build type.
template <typename T, typename E = std::error_code>
class [[nodiscard]] result {
public:
    using value_type = T;
    using error_type = E;

    result(T value) noexcept(std::is_nothrow_move_constructible_v<T>)
        : state_(std::in_place_index<0>, std::move(value)) {}
    result(E error) noexcept(std::is_nothrow_move_constructible_v<E>)
        : state_(std::in_place_index<1>, std::move(error)) {}
    // An exact match for an errc argument, so it wins over result(T) for any T an errc converts to.
    result(errc error) noexcept requires std::is_same_v<E, std::error_code>
        : state_(std::in_place_index<1>, make_error_code(error)) {}

    bool has_value() const noexcept { return state_.index() == 0; }
    explicit operator bool() const noexcept { return has_value(); }

    T& value() & noexcept { return *checked(); }
    const T& value() const& noexcept { return *checked(); }
    T&& value() && noexcept { return std::move(*checked()); }
    T& operator*() & noexcept { return *checked(); }
    const T& operator*() const& noexcept { return *checked(); }
    T&& operator*() && noexcept { return std::move(*checked()); }
    T* operator->() noexcept { return checked(); }
    const T* operator->() const noexcept { return checked(); }

    // The error; a default E (a success error_code, an empty problem) when a value is held.
    const E& error() const& noexcept {
        const E* e = std::get_if<1>(&state_);
        return e != nullptr ? *e : none();
    }
    E error() && noexcept {
        E* e = std::get_if<1>(&state_);
        return e != nullptr ? std::move(*e) : E{};
    }

private:
    static const E& none() noexcept {
        static const E empty{};
        return empty;
    }
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

    std::variant<T, E> state_;
};

// result<void, E>: success or an error; constructible from an errc like result<T>.
template <typename E>
class [[nodiscard]] result<void, E> {
public:
    using value_type = void;
    using error_type = E;

    result() noexcept = default;
    // A std::error_code that holds no error (value 0) is success, as it always was; a problem is always a failure.
    result(E error) noexcept(std::is_nothrow_move_constructible_v<E>)
        : error_(std::move(error)), failed_(failure(error_)) {}
    result(errc error) noexcept requires std::is_same_v<E, std::error_code> : error_(make_error_code(error)),
                                                                              failed_(true) {}

    bool has_value() const noexcept { return !failed_; }
    explicit operator bool() const noexcept { return has_value(); }
    const E& error() const& noexcept { return error_; }
    E error() && noexcept { return std::move(error_); }

private:
    static bool failure(const E& e) noexcept {
        if constexpr (std::is_same_v<E, std::error_code>) {
            return static_cast<bool>(e);
        } else {
            return true;
        }
    }

    E error_{};
    bool failed_ = false;
};

} // namespace hotpath
