// Assertions shared by the core tests.
// check_tensor: compare a computed tensor with a reference using |a - r| <= atol + rtol*|r|;
// prints the first mismatches and the max difference (the llm.c habit). NaN never passes.
// errorNaming: a Result is an error whose message names the input and contains every word.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace mhascope::testing {

template <class A, class R>
::testing::AssertionResult checkTensor(const std::string& name, const A* got, const R* ref, std::size_t n,
                                       double atol, double rtol) {
  double maxDiff = 0;
  std::size_t bad = 0;
  std::ostringstream first;
  for (std::size_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), r = static_cast<double>(ref[i]);
    bool ok;
    if (std::isinf(r) || std::isinf(g)) {
      ok = g == r;  // -inf in masked scores must match exactly
    } else {
      const double d = std::abs(g - r);
      ok = !std::isnan(g) && !std::isnan(r) && d <= atol + rtol * std::abs(r);
      if (!std::isnan(d)) maxDiff = std::max(maxDiff, d);
    }
    if (!ok) {
      if (bad < 5) first << "\n    [" << i << "] got " << g << " expected " << r;
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << name << ": " << bad << " of " << n << " values differ (max |diff| "
                                       << maxDiff << ", atol " << atol << ", rtol " << rtol << ")" << first.str();
}

template <class T>
::testing::AssertionResult errorNaming(const Result<T>& r, const std::string& what,
                                       std::initializer_list<std::string_view> words) {
  if (r.ok()) return ::testing::AssertionFailure() << "parsed without error; expected one";
  const std::string& msg = r.error().message;
  if (msg.find(what) == std::string::npos)
    return ::testing::AssertionFailure() << "message does not name \"" << what << "\": " << msg;
  for (const std::string_view w : words) {
    if (msg.find(w) == std::string::npos)
      return ::testing::AssertionFailure() << "message lacks \"" << w << "\": " << msg;
  }
  return ::testing::AssertionSuccess() << msg;
}

}  // namespace mhascope::testing
