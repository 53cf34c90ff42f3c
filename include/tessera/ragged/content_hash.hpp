// Content hashes of zagg stores (spec §7): one sha256 per array over its decoded content, and a
// combined hash over the sorted per-array digests; verification against a recorded set.
//
//   fixed-width array: sha256 of the whole decoded array, C-order little-endian, fill for absent
//   vlen array:        sha256 over every cell (C order) of u64le(len) || payload
//   combined:          sha256 of "\n".join(sorted(hex digests))
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/io/store.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::ragged {

// sha256 hex of one array's decoded content. Reads each stored object once.
std::string hash_array(const zarr::Array& array);

struct ContentHashes {
  std::map<std::string, std::string> arrays;  // path relative to the root → hex digest
  std::string combined;
};

// The combined hash of per-array digests (names excluded).
std::string combined_hash(const std::map<std::string, std::string>& arrays);

// Every array below `root` ("" = the store root), found by walking `zarr.json` nodes: an array
// counts when every ancestor up to the root is a group. Non-zarr objects are skipped.
ContentHashes hash_tree(const io::Store& store, std::string_view root = "");

// `content_hashes` as JSON: {"arrays": {...key-sorted...}, "combined": "..."}.
codec::json::Json to_json(const ContentHashes& hashes);
// Reads a recorded set: a stats record or `*.expected.json` (carrying `content_hashes`), or the
// `content_hashes` value itself, nested ({"arrays": {...}, "combined"}) or flat ({key: hash, …,
// "combined": hash}). nullopt when the document records none.
std::optional<ContentHashes> parse_content_hashes(const codec::json::Json& document);

struct HashVerification {
  enum class Outcome : std::uint8_t { Ok, Mismatch, Extra, Missing, Unrecorded };
  Outcome outcome = Outcome::Unrecorded;  // the first that applies: mismatch, missing, extra, ok
  std::vector<std::string> mismatch;      // recorded and present, digests differ
  std::vector<std::string> extra;         // present, not recorded
  std::vector<std::string> missing;       // recorded, not present
};
std::string_view name_of(HashVerification::Outcome outcome) noexcept;

// Compares computed hashes with a recorded set (nullopt → Unrecorded). `combined` alone never
// decides the outcome.
HashVerification verify_hashes(const ContentHashes& actual, const std::optional<ContentHashes>& recorded);

}  // namespace tessera::ragged
