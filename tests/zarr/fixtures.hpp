// Shared helpers of the zarr tests: where the zagg conformance stores are, every zarr.json and
// array in them, and small conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::zarr::test {

namespace fs = std::filesystem;

// The zagg group of the conformance data (conformance_dir() / "zagg").
fs::path zagg_dir();

// Every zarr.json below the zagg conformance folder, sorted.
std::vector<fs::path> all_metadata_files();

// One array of a fixture store: the store root (the nearest ancestor directory named *.zarr)
// and the array's node path inside it.
struct FixtureArray {
  fs::path root;
  std::string path;
  std::string name() const;  // root relative to zagg_dir() + ":" + path
};
std::vector<FixtureArray> all_fixture_arrays();

// Every object (file) of every fixture store, zarr.json and chunk/shard objects alike.
std::vector<fs::path> all_fixture_objects();

std::span<const std::byte> as_bytes(std::string_view s);
std::string hex(std::span<const std::byte> bytes);
std::vector<std::byte> from_hex(std::string_view hex);

// §7 content hash of one array as the zarr layer exposes it: sha256 of the whole decoded array
// (dense), or of u64le(len) || payload over every element in C order (vlen).
std::string content_hash(const Array& array);

// The decoded dense array as decimal strings (integers) in C order.
std::vector<std::string> decimal_values(const Array& array);

}  // namespace tessera::zarr::test
