// The tessera extension of the `.tet` history footer: what the reference's footer cannot hold,
// under a top-level key the reference ignores (tet.md §1.8, "unknown top-level keys ignored").
//
//  - typed attributes: every attribute of the source with its type (numbers stay numbers, arrays
//    stay arrays), for each dataset and for the file (global attributes);
//  - the CF encoding a convert applied: the source element type and which of `_FillValue`,
//    `missing_value`, `scale_factor`, `add_offset` the stored values already carry, so a reader can
//    give the stored values back (xarray's mask_and_scale=False) or decode what was left undecoded;
//  - per-chunk CRC-32C of the stored payload bytes, in chunk index order.
//
// In the footer JSON it is `"tessera": {...}` after the reference's keys, or, when that would make
// the footer longer than 64 KiB, `"tessera_ref": {"offset", "len"}` naming a blob written between
// the last payload and the metadata spill (or the footer JSON). The reference's own keys are
// written exactly as without the extension. Layout and rules: docs/tet-footer-extension.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::tet {

// One attribute value as the source stored it. `type` is "str" or a numpy dtype name ("bool",
// "int8" … "uint64", "float32", "float64"); the values sit in the vector of their kind. `scalar`
// says a single value was stored as a scalar (NetCDF one-element attributes, HDF5 scalar
// dataspaces), not as a one-element array.
struct AttributeValue {
  std::string type = "str";
  bool scalar = true;
  std::vector<std::string> text;               // type "str"
  std::vector<std::int64_t> signed_values;     // bool and signed integers
  std::vector<std::uint64_t> unsigned_values;  // unsigned integers
  std::vector<double> real_values;             // float32 (exact) and float64

  static AttributeValue string(std::string s);
  static AttributeValue real(std::string type, std::vector<double> values, bool scalar = true);
  static AttributeValue signed_integer(std::string type, std::vector<std::int64_t> values, bool scalar = true);
  static AttributeValue unsigned_integer(std::string type, std::vector<std::uint64_t> values, bool scalar = true);
  std::size_t size() const noexcept;
  // The values as doubles (empty for strings): what CF decoding compares and multiplies with.
  std::vector<double> numbers() const;
  bool operator==(const AttributeValue&) const = default;
};

// Attributes in the source's order.
using TypedAttributes = std::vector<std::pair<std::string, AttributeValue>>;

// The CF attributes whose effect a convert may already have applied to the stored values.
inline constexpr std::string_view kCfEncodingAttributes[] = {"_FillValue", "missing_value", "scale_factor",
                                                             "add_offset"};

struct DatasetExtension {
  TypedAttributes attrs;     // every attribute of the source variable, typed
  std::string source_dtype;  // the source's element type (numpy name), empty when unknown
  // Names from kCfEncodingAttributes whose effect the stored values carry (fill values made NaN,
  // packing decoded); the others in `attrs` still describe the stored values as they are.
  std::vector<std::string> applied;
  bool operator==(const DatasetExtension&) const = default;
};

struct FooterExtension {
  TypedAttributes attrs;                             // global (file) attributes
  std::map<std::string, DatasetExtension> datasets;  // by dataset name
  // CRC-32C of each chunk's stored bytes, one per chunk index entry in index order; empty when
  // the writer did not record them.
  std::vector<std::uint32_t> chunk_crc32c;
  bool empty() const noexcept { return attrs.empty() && datasets.empty() && chunk_crc32c.empty(); }
  bool operator==(const FooterExtension&) const = default;
};

// The extension's own limits (the reference never reads it; these keep a hostile file bounded).
struct FooterExtensionLimits {
  static constexpr std::uint64_t kBlobBytes = 256ull << 20;  // serialised extension
  static constexpr std::size_t kAttrs = 4096;                // per dataset and global
  static constexpr std::size_t kValuesPerAttr = 1u << 20;
};

// Compact JSON of the extension object (the value of the `"tessera"` key).
std::string serialize_footer_extension(const FooterExtension& extension);

// Parses the value of the `"tessera"` key (or a spilled blob). An extension of another version
// is nullopt (a newer writer's; the file reads as one without it). Throws FormatError
// "history footer tessera extension is invalid: {detail}" for a malformed one.
std::optional<FooterExtension> parse_footer_extension(std::string_view json_text);

}  // namespace tessera::tet
