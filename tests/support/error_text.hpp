// The message of an expected error, for tests that compare a message whole.
#pragma once

#include <string>
#include <utility>

#include "tessera/core/error.hpp"

namespace tessera::testing {

// The what() of the E that `fn` throws, or "(no error)" when it returns; another exception type
// propagates and fails the test.
template <typename E = Error, typename F>
std::string what_of(F&& fn) {
  try {
    std::forward<F>(fn)();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace tessera::testing
