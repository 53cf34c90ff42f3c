// `info` (spec tet.md §6.2): a filtered view of an opened `.tet` file (catalog, chunk index,
// execution settings, footer history and metadata) and its three renderings: JSON with keys
// sorted at every level, the quiet line, and the sectioned text report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tessera/tet/footer.hpp"
#include "tessera/tet/format.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

// `--dataset SUBSTR` (name) and `--grep SUBSTR` (name, dtype label, dim names, attr keys and
// values, coord axis keys and labels); both ASCII case-insensitive, both must match.
struct InfoFilter {
  std::optional<std::string> dataset;
  std::optional<std::string> grep;

  bool empty() const noexcept { return !dataset && !grep; }
  // `dataset~X grep~Y` with the parts that are set.
  std::string summary() const;
};

// Text sections; `datasets` alone is the default view.
struct InfoSections {
  bool layout = false;
  bool execution = false;
  bool datasets = true;
  bool chunks = false;
  bool history = false;

  // `--all` selects every section; otherwise the given flags, or the default when none is set.
  static InfoSections from_flags(bool all, bool layout, bool execution, bool datasets, bool chunks, bool history);
};

inline constexpr std::size_t kDefaultInfoChunkLimit = 32;

struct InfoTextOptions {
  InfoSections sections;
  std::size_t chunk_limit = kDefaultInfoChunkLimit;  // chunk table rows; 0 = all
  bool verbose_metadata = false;                     // `--metadata`: list coordinate labels
};

// What `info` shows after filtering: the selected datasets renumbered by position, their chunks
// (dataset_id renumbered to match), the whole history and the metadata of the selected datasets.
struct InfoView {
  std::string path;
  std::uint64_t file_len = 0;
  Superblock superblock;
  ChunkIndexHeader index_header;   // file_execution lives in bytes 16–31
  std::size_t total_datasets = 0;  // before filtering (text header line)
  std::size_t total_chunks = 0;
  std::optional<InfoFilter> filter;  // set when a filter part is given
  std::vector<DatasetRecord> datasets;
  std::vector<ChunkEntry> chunks;
  std::vector<HistoryRow> history;
  Metadata metadata;
};

InfoView make_info_view(const TetFile& file, const InfoFilter& filter = {});

// `info --json` (pretty, no trailing newline) and `info -q` (no trailing newline).
std::string render_info_json(const InfoView& view);
std::string render_info_quiet(const InfoView& view);
// The text report; every line ends with '\n'.
std::string render_info_text(const InfoView& view, const InfoTextOptions& options = {});

}  // namespace tessera::tet
