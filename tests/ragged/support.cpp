#include "support.hpp"

#include <charconv>
#include <stdexcept>

#include "support/testing.hpp"

namespace tessera::ragged::test {

fs::path zagg_dir() { return tessera::testing::conformance_dir() / "zagg"; }

fs::path fixture_leaf(const std::string& fixture) {
  return zagg_dir() / "tests/data/spec" / fixture / "1/1/2/1/3/11213.zarr";
}

fs::path strata_leaf() { return zagg_dir() / "moczarr/tests/data/strata_hive/4/3/3/1/4/43314.zarr"; }

codec::json::Json read_json(const fs::path& path) {
  return codec::json::parse_strict(tessera::testing::read_file_text(path), path.string());
}

codec::json::Json expected(const std::string& fixture) {
  if (fixture == "strata") return read_json(zagg_dir() / "moczarr/tests/data/strata_hive.expected.json");
  return read_json(zagg_dir() / "tests/data/spec" / (fixture + ".expected.json"));
}

std::vector<std::string> digest_fixtures() { return {"minimal", "kitchen_sink", "flux", "column", "temporal"}; }

std::uint64_t word_of(const codec::json::Json& v) {
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  const std::string s = v.get<std::string>();
  std::uint64_t w = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), w);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) throw std::runtime_error("not a decimal word: " + s);
  return w;
}

float f32_of(const codec::json::Json& v) { return static_cast<float>(v.get<double>()); }

void load_tree(const fs::path& root, io::MemoryStore& store) {
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    store.put(fs::relative(entry.path(), root).generic_string(), tessera::testing::read_file_bytes(entry.path()));
  }
}

}  // namespace tessera::ragged::test
