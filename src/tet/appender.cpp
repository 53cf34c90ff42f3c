// TetAppender: rewrites an existing file through a TetWriter that first carries the file's own
// datasets over (payload bytes copied verbatim, offsets shifted), then takes new datasets,
// history rows and metadata. The rewrite goes through an io::AtomicFileSink on the same path, so
// the original stays intact until the final rename.
#include "tessera/tet/writer.hpp"

namespace tessera::tet {

struct TetAppender::State {
  TetFile file;
  TetWriter writer;
  State(TetFile opened, const std::string& path, WriterOptions options)
      : file(std::move(opened)), writer(path, std::move(options)) {}
};

TetAppender::TetAppender(const std::string& path, AppendOptions options) {
  TetFile file = TetFile::open(path);
  const ChunkIndexHeader& index = file.layout().index_header;
  WriterOptions w;
  w.memory_budget_percent_bps = options.memory_budget_percent_bps.value_or(index.memory_budget_percent_bps);
  w.memory_budget_bytes = options.memory_budget_bytes.value_or(index.memory_budget_bytes);
  w.threads = options.threads;
  // A rewrite keeps the file's kind: checksums are recorded when the file already records them,
  // so appending to a reference-written file adds no footer extension to it.
  const auto& footer = file.layout().footer;
  w.chunk_checksums = footer && footer->extension && !footer->extension->chunk_crc32c.empty();
  // The footer is handed over after construction: the file's own metadata is checked against
  // the limits at commit, once the caller has had the chance to fix it.
  state_ = std::make_unique<State>(std::move(file), path, std::move(w));
  if (const auto& footer = state_->file.layout().footer) {
    state_->writer.history() = footer->history;
    state_->writer.metadata() = footer->metadata;
    if (footer->extension) {
      state_->writer.extension() = *footer->extension;
      state_->writer.extension().chunk_crc32c.clear();  // the writer records them afresh
    }
  }
  state_->writer.carry_over(state_->file);
}

TetAppender::~TetAppender() = default;

const TetFile& TetAppender::original() const noexcept { return state_->file; }

std::uint32_t TetAppender::add_dataset(const DatasetSpec& spec) { return state_->writer.add_dataset(spec); }

void TetAppender::write_dataset(std::uint32_t id, std::span<const std::byte> logical_row_major) {
  state_->writer.write_dataset(id, logical_row_major);
}

void TetAppender::write_chunk_row(std::uint32_t id, std::uint64_t row, std::span<const std::byte> slab) {
  state_->writer.write_chunk_row(id, row, slab);
}

void TetAppender::append_history(HistoryRow row) { state_->writer.history().push_back(std::move(row)); }

void TetAppender::set_metadata(Metadata metadata) { state_->writer.metadata() = std::move(metadata); }

void TetAppender::merge_metadata(const Metadata& update) {
  Metadata& md = state_->writer.metadata();
  if (update.file) {
    FileMetadata& file = md.file ? *md.file : md.file.emplace();
    if (update.file->tool) file.tool = update.file->tool;
    if (update.file->library_version) file.library_version = update.file->library_version;
    if (update.file->created_at) file.created_at = update.file->created_at;
  }
  for (const auto& [name, dm] : update.datasets) {
    DatasetMetadata& target = md.datasets[name];
    for (const auto& [key, value] : dm.attrs) target.attrs.insert_or_assign(key, value);
    if (dm.dim_names) target.dim_names = dm.dim_names;
    for (const auto& [axis, labels] : dm.coords) target.coords.insert_or_assign(axis, labels);
  }
}

const std::vector<HistoryRow>& TetAppender::history() const { return state_->writer.history(); }
const Metadata& TetAppender::metadata() const { return state_->writer.metadata(); }

void TetAppender::commit() { state_->writer.commit(); }

std::uint64_t TetAppender::file_size() const { return state_->writer.file_size(); }

}  // namespace tessera::tet
