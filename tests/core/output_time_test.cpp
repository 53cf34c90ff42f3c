// Output timestamps: SOURCE_DATE_EPOCH fixes the time every writer stamps into its output (history
// rows, leaf commit stamps, hive manifests), so the same inputs give the same bytes.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "tessera/core/civil_date.hpp"
#include "tessera/core/error.hpp"

namespace tessera {
namespace {

// Sets SOURCE_DATE_EPOCH (or unsets it) for one test and restores it afterwards.
class EpochScope {
 public:
  explicit EpochScope(const char* value) {
    if (const char* old = std::getenv("SOURCE_DATE_EPOCH")) saved_ = old;
    if (value) setenv("SOURCE_DATE_EPOCH", value, 1);
    else unsetenv("SOURCE_DATE_EPOCH");
  }
  ~EpochScope() {
    if (saved_) setenv("SOURCE_DATE_EPOCH", saved_->c_str(), 1);
    else unsetenv("SOURCE_DATE_EPOCH");
  }
  EpochScope(const EpochScope&) = delete;
  EpochScope& operator=(const EpochScope&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST(OutputTime, SourceDateEpochFixesTheStampedTime) {
  {
    const EpochScope epoch("1700000000");
    EXPECT_EQ(output_time(), 1700000000);
    EXPECT_EQ(utc_text(output_time(), "%Y-%m-%dT%H:%M:%S+00:00"), "2023-11-14T22:13:20+00:00");
  }
  {
    const EpochScope none(nullptr);
    // The system clock, which output_time reads (std::time may read a coarse clock that lags it).
    const auto system_seconds = [] {
      return static_cast<std::int64_t>(
          std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
              .count());
    };
    const std::int64_t before = system_seconds();
    const std::int64_t now = output_time();
    EXPECT_GE(now, before);
    EXPECT_LE(now, system_seconds());
  }
  for (const char* bad : {"soon", "-5", "1.5", "99999999999999999999"}) {
    const EpochScope epoch(bad);
    try {
      (void)output_time();
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "SOURCE_DATE_EPOCH must be Unix seconds, got \"" + std::string(bad) + "\"");
    }
  }
}

TEST(OutputTime, UtcTextFormatsAnyInstant) {
  EXPECT_EQ(utc_text(0, "%Y-%m-%dT%H:%M:%SZ"), "1970-01-01T00:00:00Z");
  EXPECT_EQ(utc_text(951782400, "%Y%m%dT%H%M%SZ"), "20000229T000000Z");  // a leap day
}

}  // namespace
}  // namespace tessera
