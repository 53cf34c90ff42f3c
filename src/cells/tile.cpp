// Tile parsing: stages 1–3 of the reader validation (spec deltacells.md §3.1, §3.2). Each rule
// is checked in the spec's order and named in its message, so a damaged tile reports the first
// rule it breaks.
#include "tessera/cells/tile.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "rules.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::cells {

using detail::chunk_label;
using detail::fail;

Tile Tile::parse(std::shared_ptr<const io::ByteSource> source, const TileOptions& options, std::string name) {
  Tile t;
  if (name.empty()) t.name_ = source->name();
  else t.name_ = std::move(name);
  t.object_size_ = source->size();
  if (t.object_size_ > 0) {
    t.data_ = source->view(0, t.object_size_);
    if (t.data_ == nullptr) {
      t.owned_.resize(checked_size(t.object_size_, "tile size"));
      source->read_at(0, t.owned_);
      t.data_ = t.owned_.data();
    }
  }
  t.source_ = std::move(source);
  t.parse_stages(options);
  return t;
}

Tile Tile::parse(std::vector<std::byte> bytes, std::string name, const TileOptions& options) {
  Tile t;
  t.name_ = std::move(name);
  t.owned_ = std::move(bytes);
  t.data_ = t.owned_.data();
  t.object_size_ = t.owned_.size();
  t.parse_stages(options);
  return t;
}

void Tile::parse_stages(const TileOptions& options) {
  const std::string& obj = name_;
  // ---- Stage 1: header -------------------------------------------------------------------
  if (object_size_ < TileHeader::kSize)
    fail(obj, "header", "object is " + std::to_string(object_size_) + " bytes, shorter than the 64-byte header", "T1");
  header_ = TileHeader::decode({data_, TileHeader::kSize});
  const TileHeader& h = header_;
  if (!h.magic_ok) fail(obj, "header", "magic is not DELTACEL", "T2");
  if (!is_known_version(h.version))
    fail(obj, "header", "unsupported version " + std::to_string(h.version) + " (expected 1 or 2)", "T3");
  if (h.flags != 0) fail(obj, "header", "flags is " + std::to_string(h.flags) + ", must be 0", "T4");
  if (h.reserved != 0) fail(obj, "header", "reserved is " + std::to_string(h.reserved) + ", must be 0", "T5");
  if (h.total_size != object_size_)
    fail(obj, "header",
         "total_size " + std::to_string(h.total_size) + " != object size " + std::to_string(object_size_), "T6");
  if (h.n_genes < 1 || h.n_genes > max_genes(h.version))
    fail(obj, "header",
         "n_genes " + std::to_string(h.n_genes) + " outside 1.." + std::to_string(max_genes(h.version)) +
             " for version " + std::to_string(h.version),
         "T7");
  const std::uint64_t entry_size = ChunkEntry::size_for(h.version);
  // n_chunks is a u32, so 64 + 96 * n_chunks cannot overflow 64 bits.
  const std::uint64_t table_end = TileHeader::kSize + entry_size * h.n_chunks;
  if (table_end > h.total_size)
    fail(obj, "chunk table",
         "ends at " + std::to_string(table_end) + ", past total_size " + std::to_string(h.total_size), "T8");
  if (h.indptr_off % 8 != 0)
    fail(obj, "header", "indptr_off " + std::to_string(h.indptr_off) + " is not a multiple of 8", "T9");
  if (h.indptr_off < table_end)
    fail(obj, "header",
         "indptr_off " + std::to_string(h.indptr_off) + " is before the end of the chunk table " +
             std::to_string(table_end),
         "T9");
  const auto indptr_len = mul_u64(8, add_u64(h.n_cells, 1).value_or(0));
  const auto indptr_end = h.n_cells == UINT64_MAX || !indptr_len ? std::nullopt : add_u64(h.indptr_off, *indptr_len);
  if (!indptr_end || *indptr_end > h.total_size)
    fail(obj, "indptr",
         "indptr of " + std::to_string(h.n_cells) + " cells does not fit in total_size " + std::to_string(h.total_size),
         "T9");

  // ---- Stage 1: chunk table --------------------------------------------------------------
  chunks_.reserve(h.n_chunks);
  std::uint64_t cell = 0, nnz = 0;
  struct Span {
    std::uint64_t off, len;
    std::uint32_t chunk;
    const char* frame;
  };
  std::vector<Span> frames;
  frames.reserve(std::size_t{h.n_chunks} * 2);
  for (std::uint32_t k = 0; k < h.n_chunks; ++k) {
    const ChunkEntry e = ChunkEntry::decode({data_ + TileHeader::kSize + entry_size * k, entry_size}, h.version);
    const std::string where = chunk_label(k);
    if (e.cell_lo != cell || e.nnz_lo != nnz)
      fail(obj, where,
           "starts at cell " + std::to_string(e.cell_lo) + ", nonzero " + std::to_string(e.nnz_lo) +
               "; the previous chunk ended at cell " + std::to_string(cell) + ", nonzero " + std::to_string(nnz),
           "T10");
    if (e.cell_hi <= e.cell_lo)
      fail(obj, where, "cell_hi " + std::to_string(e.cell_hi) + " is not above cell_lo " + std::to_string(e.cell_lo),
           "T10");
    if (e.nnz_hi < e.nnz_lo)
      fail(obj, where, "nnz_hi " + std::to_string(e.nnz_hi) + " is below nnz_lo " + std::to_string(e.nnz_lo), "T10");
    if (h.version == kVersion2 && e.nnz_hi - e.nnz_lo >= (std::uint64_t{1} << 32))
      fail(obj, where, "holds " + std::to_string(e.nnz_hi - e.nnz_lo) + " nonzeros, at least 2^32", "T12");
    const auto check_frame = [&](const FrameRef& f, const char* frame, bool required) {
      if (f.len == 0) {
        if (required) fail(obj, where, std::string(frame) + " frame has length 0", "T13");
        return;
      }
      if (f.off % 8 != 0 || f.off < *indptr_end || f.off > h.total_size || f.len > h.total_size - f.off)
        fail(obj, where,
             std::string(frame) + " frame [" + std::to_string(f.off) + ", +" + std::to_string(f.len) +
                 ") is misaligned or outside the frame area [" + std::to_string(*indptr_end) + ", " +
                 std::to_string(h.total_size) + ")",
             "T13");
      frames.push_back({f.off, f.len, k, frame});
    };
    check_frame(e.gaps, "gaps", true);
    check_frame(e.vals, "vals", true);
    check_frame(e.vexc, "vexc", false);
    check_frame(e.gexc, "gexc", false);
    cell = e.cell_hi;
    nnz = e.nnz_hi;
    max_chunk_nnz_ = std::max(max_chunk_nnz_, e.nnz_hi - e.nnz_lo);
    chunks_.push_back(e);
  }
  if (h.n_chunks == 0) {
    if (h.n_cells != 0 || h.nnz != 0)
      fail(obj, "chunk table",
           "has no chunks but the tile has " + std::to_string(h.n_cells) + " cells and " + std::to_string(h.nnz) +
               " nonzeros",
           "T11");
  } else if (cell != h.n_cells || nnz != h.nnz) {
    fail(obj, "chunk table",
         "last chunk ends at cell " + std::to_string(cell) + ", nonzero " + std::to_string(nnz) + "; the tile has " +
             std::to_string(h.n_cells) + " cells and " + std::to_string(h.nnz) + " nonzeros",
         "T11");
  }
  std::sort(frames.begin(), frames.end(), [](const Span& a, const Span& b) { return a.off < b.off; });
  for (std::size_t i = 1; i < frames.size(); ++i) {
    if (frames[i].off < frames[i - 1].off + frames[i - 1].len)
      fail(obj, chunk_label(frames[i].chunk),
           std::string(frames[i].frame) + " frame overlaps the " + frames[i - 1].frame + " frame of chunk " +
               std::to_string(frames[i - 1].chunk),
           "T14");
  }

  // ---- Stage 2: CRC ----------------------------------------------------------------------
  if (options.verify_crc) {
    const std::uint32_t crc =
        codec::crc32({data_ + TileHeader::kSize, static_cast<std::size_t>(h.total_size - TileHeader::kSize)});
    if (crc != h.crc32) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "CRC-32 0x%08x != header crc32 0x%08x", crc, h.crc32);
      fail(obj, "header", buf, "T15");
    }
  }

  // ---- Stage 3: indptr -------------------------------------------------------------------
  indptr_.resize(checked_size(h.n_cells + 1, "indptr"));
  const std::byte* ip = data_ + h.indptr_off;
  for (std::uint64_t r = 0; r <= h.n_cells; ++r) indptr_[r] = load_le<std::int64_t>(ip + 8 * r);
  if (indptr_[0] != 0) fail(obj, "indptr", "indptr[0] is " + std::to_string(indptr_[0]) + ", must be 0", "T16");
  for (std::uint64_t r = 0; r < h.n_cells; ++r) {
    if (indptr_[r + 1] < indptr_[r])
      fail(obj, "indptr",
           "decreases at cell " + std::to_string(r) + " (" + std::to_string(indptr_[r]) + " then " +
               std::to_string(indptr_[r + 1]) + ")",
           "T16");
  }
  if (static_cast<std::uint64_t>(indptr_[h.n_cells]) != h.nnz)
    fail(obj, "indptr",
         "indptr[n_cells] is " + std::to_string(indptr_[h.n_cells]) + ", header nnz is " + std::to_string(h.nnz),
         "T16");
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    const ChunkEntry& e = chunks_[k];
    if (static_cast<std::uint64_t>(indptr_[e.cell_lo]) != e.nnz_lo ||
        static_cast<std::uint64_t>(indptr_[e.cell_hi]) != e.nnz_hi)
      fail(obj, chunk_label(k),
           "nnz_lo/nnz_hi " + std::to_string(e.nnz_lo) + "/" + std::to_string(e.nnz_hi) + " != indptr " +
               std::to_string(indptr_[e.cell_lo]) + "/" + std::to_string(indptr_[e.cell_hi]),
           "T17");
  }
  for (std::uint64_t r = 0; r < h.n_cells; ++r) {
    if (static_cast<std::uint64_t>(indptr_[r + 1] - indptr_[r]) > h.n_genes)
      fail(obj, "indptr",
           "cell " + std::to_string(r) + " has " + std::to_string(indptr_[r + 1] - indptr_[r]) +
               " nonzeros, more than n_genes " + std::to_string(h.n_genes),
           "T18");
  }
}

}  // namespace tessera::cells
