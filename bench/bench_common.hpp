// Timing helpers shared by the benchmark programs.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::bench {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The middle element (upper middle for an even count) of the rounds' times.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A benchmark's main(): runs `body`, and turns an exception into `NAME: message` on stderr and
// exit status 1.
template <typename Body>
int guarded_main(const char* name, Body&& body) {
  try {
    return body();
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.describe().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
  }
  return 1;
}

}  // namespace tessera::bench
