// Errors are values at the boundary: parsers, loaders and validators return a Result<T>
// that holds either the value or an Error whose message names the problem and the values
// involved, e.g. "d_model (10) must be divisible by heads (4)".
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace mhascope {

struct Error {
  std::string message;
};

// Marker value for a Result that carries no data.
struct Ok {};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}      // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    if (!ok()) throw std::logic_error("Result::value() on error: " + error().message);
    return std::get<0>(v_);
  }
  const T& value() const& {
    if (!ok()) throw std::logic_error("Result::value() on error: " + error().message);
    return std::get<0>(v_);
  }
  T&& value() && {
    if (!ok()) throw std::logic_error("Result::value() on error: " + error().message);
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

using Status = Result<Ok>;

inline Error makeError(std::string message) { return Error{std::move(message)}; }

}  // namespace mhascope
