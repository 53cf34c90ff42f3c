// Shared helpers of the ragged tests: the zagg conformance folders, fixture leaves as stores,
// expected-value files, and word/float conversions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"

namespace tessera::ragged::test {

namespace fs = std::filesystem;

// The zagg group of the conformance data (conformance_dir() / "zagg").
fs::path zagg_dir();
// The leaf directory of a spec fixture (`minimal`, `flux`, ...).
fs::path fixture_leaf(const std::string& fixture);
// The strata leaf of moczarr.
fs::path strata_leaf();
// `tests/data/spec/{fixture}.expected.json` (or the strata expected file for "strata").
codec::json::Json expected(const std::string& fixture);
codec::json::Json read_json(const fs::path& path);

// The names of the leaf fixtures with digests (every one but raster_toc and pyramid).
std::vector<std::string> digest_fixtures();

std::uint64_t word_of(const codec::json::Json& decimal_string);
// A JSON number parsed as double and rounded to float32 (the expected files' float convention).
float f32_of(const codec::json::Json& number);

// Copies a directory tree into a MemoryStore (keys relative to `root`).
void load_tree(const fs::path& root, io::MemoryStore& store);

}  // namespace tessera::ragged::test
