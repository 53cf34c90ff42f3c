// Helpers shared by the verify/repair test files: fixture access, verify shortcuts and byte
// patching of sample.tet (tet.md §1.11 gives the offsets used below).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/verify.hpp"

namespace tessera::tet::verify_testing {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;
using testing::run_cli;
using testing::TempDir;

inline fs::path fixture(const std::string& relative) { return testing::tet_fixture(relative); }

inline Bytes fixture_bytes(const std::string& relative) { return testing::read_file_bytes(fixture(relative)); }

inline VerifyReport verify_file(const fs::path& path, bool deep = false) {
  VerifyOptions options;
  options.deep_decode = deep;
  return verify(*io::open_file(path.string()), options);
}

inline VerifyReport verify_bytes(const Bytes& bytes, const std::string& name = "case.tet") {
  return verify(*io::memory_source(bytes, name));
}

inline const Finding* find_check(const VerifyReport& r, const std::string& check) {
  for (const auto& f : r.findings)
    if (f.check == check) return &f;
  return nullptr;
}

inline std::vector<std::string> codes(const VerifyReport& r) {
  std::vector<std::string> out;
  for (const auto& rec : r.recommendations) out.push_back(rec.code);
  return out;
}

template <typename T>
inline void put(Bytes& b, std::size_t offset, T value) {
  store_le<T>(b.data() + offset, value);
}

inline void append_text(Bytes& b, std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  b.insert(b.end(), p, p + text.size());
}

// The 16-byte footer tail: u64 history_json_len, u32 version, "THST".
inline void append_tail(Bytes& b, std::uint64_t json_len, std::uint32_t version = 1) {
  append_le<std::uint64_t>(b, json_len);
  append_le<std::uint32_t>(b, version);
  append_text(b, "THST");
}

inline void append_footer(Bytes& b, std::string_view json) {
  append_text(b, json);
  append_tail(b, json.size());
}

// sample.tet (tet.md §1.11): superblock fields at 4/8/12/16/24, blob length at 32, the record
// at 40 (name 56–66, shape 72/80, chunk_shape 88/96), TIDX at 104, entries at 136 and 240
// (coords +8, payload_offset +72, raw +80, stored +88, codec +96), payloads 344–367.
constexpr std::size_t kFlags = 12, kIndexOffset = 16, kIndexLength = 24, kBlobLen = 32;
constexpr std::size_t kRecord = 40, kShape = 72, kIndex = 104, kEntry0 = 136, kEntry1 = 240;

}  // namespace tessera::tet::verify_testing
