// The history footer (`THST`, spec tet.md §1.8): the 16-byte tail at the end of the file, the
// footer JSON before it (history rows and metadata, or a `metadata_ref` to a spilled metadata
// blob), and the MetadataLimitsV1 rules. This room owns parsing and serialising those bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/tet/footer_extension.hpp"

namespace tessera::tet {

struct HistoryRow {
  std::string op;      // convert | write | transform (others are kept as written)
  std::string source;  // e.g. h5, nc, zarr, or a path
  std::string at;      // Unix seconds as a decimal string
  std::vector<std::string> parents;
  std::map<std::string, std::string> params;  // sorted keys, as serialised
};

struct FileMetadata {
  std::optional<std::string> tool;
  std::optional<std::string> library_version;
  std::optional<std::string> created_at;
  bool empty() const noexcept { return !tool && !library_version && !created_at; }
};

struct DatasetMetadata {
  std::map<std::string, std::string> attrs;
  std::optional<std::vector<std::string>> dim_names;
  std::map<std::string, std::vector<std::string>> coords;  // axis key -> labels
};

struct Metadata {
  std::optional<FileMetadata> file;
  std::map<std::string, DatasetMetadata> datasets;
  // `has_metadata` of verify: a `file` entry or at least one dataset.
  bool has_content() const noexcept { return file.has_value() || !datasets.empty(); }
};

struct MetadataRef {
  std::uint64_t offset = 0;
  std::uint64_t len = 0;
};

struct Footer {
  std::vector<HistoryRow> history;
  Metadata metadata;                        // resolved from the spill when metadata_ref is set
  std::optional<MetadataRef> metadata_ref;  // where the metadata was spilled, if it was
  // The tessera extension (footer_extension.hpp), resolved from its blob when extension_ref is
  // set; nullopt for files without one (every reference-written file).
  std::optional<FooterExtension> extension;
  std::optional<MetadataRef> extension_ref;  // where the extension blob is, if it was spilled
};

// Tail: u64 history_json_len, u32 history_version (1), "THST".
struct FooterTail {
  static constexpr std::size_t kSize = 16;
  std::uint64_t history_json_len = 0;
  std::uint32_t history_version = 1;
  void encode_to(std::byte* out) const noexcept;
};

// MetadataLimitsV1 (§1.8).
struct MetadataLimits {
  static constexpr std::uint64_t kInlineFooterBytes = 65536;
  static constexpr std::uint64_t kSpillBytes = 16777216;
  static constexpr std::size_t kHistoryRows = 4096;
  static constexpr std::size_t kParentsPerRow = 16;
  static constexpr std::size_t kParamsPerRow = 32;
  static constexpr std::size_t kDatasets = 256;
  static constexpr std::size_t kAttrsPerDataset = 64;
  static constexpr std::size_t kStringBytes = 1024;
  static constexpr std::size_t kDimNames = 8;
  static constexpr std::size_t kCoordAxes = 8;
  static constexpr std::size_t kLabelsPerAxis = 64;
};

// The first violated limit as a message (e.g. `history has 5000 events (limit 4096)`), or nullopt.
std::optional<std::string> check_limits(const std::vector<HistoryRow>& history, const Metadata& metadata);

// Parsing. Each throws FormatError with the §1.8 texts ("history footer JSON is invalid: …",
// "history footer metadata spill JSON is invalid: …").
struct FooterJson {
  std::vector<HistoryRow> history;
  std::optional<Metadata> metadata;
  std::optional<MetadataRef> metadata_ref;
  std::optional<FooterExtension> extension;  // the inline `tessera` key
  std::optional<MetadataRef> extension_ref;  // the `tessera_ref` key
};
FooterJson parse_footer_json(std::string_view text);
Metadata parse_spilled_metadata(std::string_view text);
// Lenient probe used to find the payload region end before validation (§1.8 "Payload region
// end"): the metadata_ref length if the JSON parses and carries one, else nullopt.
std::optional<MetadataRef> probe_metadata_ref(std::string_view text) noexcept;
// The same probe for `tessera_ref`: where a spilled extension blob lies, if the footer names one.
std::optional<MetadataRef> probe_extension_ref(std::string_view text) noexcept;

// Serialisation in the writer's key order (compact JSON).
std::string serialize_metadata(const Metadata& metadata);
// Footer JSON with inline metadata, or with `metadata_ref` when `ref` is given.
std::string serialize_footer_json(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                  const std::optional<MetadataRef>& ref);
// ... followed by the extension: inline (`"tessera": {...}`, `extension_json`) or, with
// `extension_ref`, as `"tessera_ref"`.
std::string serialize_footer_json(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                  const std::optional<MetadataRef>& ref, std::string_view extension_json,
                                  const std::optional<MetadataRef>& extension_ref);

// The bytes to append at the payload region end: footer JSON (or spill + footer JSON) and the
// tail. Spills the metadata when the inline footer exceeds 64 KiB. Throws LimitError when a limit
// is broken or even the metadata_ref footer is too large. Returns empty when there is nothing to
// write (no history and no metadata).
std::vector<std::byte> encode_footer(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                     std::uint64_t payload_end);
// With the tessera extension (nothing of it when `extension` is empty). The reference's part is
// decided exactly as above (the metadata spills when `{"history","metadata"}` exceeds 64 KiB);
// the extension then goes inline when the footer stays within 64 KiB, else into a blob at
// `payload_end`, before the metadata spill. Layout: [extension blob][metadata spill][JSON][tail].
std::vector<std::byte> encode_footer(const std::vector<HistoryRow>& history, const Metadata& metadata,
                                     const FooterExtension& extension, std::uint64_t payload_end);

}  // namespace tessera::tet
