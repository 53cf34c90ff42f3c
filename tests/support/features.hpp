// Test cases that need an optional component (docs/install.md, "Minimal builds") skip, naming the
// CMake option, in a build that left it out; the rest of their suite still runs there.
#pragma once

#include <gtest/gtest.h>

#include "tessera/core/feature.hpp"

// In a test body or a fixture's SetUp: TESSERA_REQUIRE_FEATURE(Parquet), with a tessera::Feature member.
#define TESSERA_REQUIRE_FEATURE(member)                                                                      \
  do {                                                                                                       \
    constexpr ::tessera::Feature tessera_feature_ = ::tessera::Feature::member;                              \
    if (!::tessera::feature_enabled(tessera_feature_))                                                       \
      GTEST_SKIP() << "needs " << ::tessera::feature_name(tessera_feature_) << " support, which this build " \
                   << "left out (-D" << ::tessera::feature_option(tessera_feature_) << "=OFF)";              \
  } while (false)
