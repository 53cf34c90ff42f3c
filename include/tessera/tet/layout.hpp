// The structural pass over a `.tet` file (spec tet.md §1.9 A, rules S1–S14, in order and with
// the reference's texts): superblock, dataset directory, chunk index, payload spans and footer.
// It decodes every structure and checks every offset and length, but not the semantic rules
// (dtype tags, grids, tile sizes) that reader.cpp applies afterwards — `verify` needs the two
// apart so it can report the semantic rules under their own check names.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "tessera/io/byte_source.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::tet {

struct Layout {
  std::uint64_t file_len = 0;
  Superblock superblock;
  std::uint64_t dataset_blob_len = 0;   // 0 when dataset_count == 0
  std::vector<DatasetRecord> datasets;  // catalog order; dataset_id = position
  ChunkIndexHeader index_header;        // {0,0} budget fields for an empty file
  std::vector<ChunkEntry> entries;      // index order
  std::uint64_t payload_end = 0;        // payload region end (§1.8)
  std::optional<Footer> footer;         // present iff flag bit 0 is set
  std::uint64_t footer_json_len = 0;    // history_json_len when a footer is present
};

// Runs S1–S14. Throws FormatError whose what() is exactly the spec's text and whose path() is
// `source.name()`.
// With `read_footer` false the footer flag is treated as clear (payload end = file length, no
// footer read); repair uses this to reach the index of a file whose footer is unreadable.
Layout parse_layout(const io::ByteSource& source, bool read_footer = true);

// The payload region end implied by a usable footer tail (§1.8 rules 1–3 pass; the spill length
// counts when the footer JSON parses and has metadata_ref), or nullopt when the tail is unusable.
std::optional<std::uint64_t> payload_end_from_tail(const io::ByteSource& source);

// The payload region end derived for repair when the footer tail is missing or unusable:
// the largest payload span end, or the index end when there are no entries (§2.4).
std::uint64_t payload_end_from_index(const Layout& partial);

}  // namespace tessera::tet
