#include "tessera/tet/layout.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/text.hpp"
#include "tessera/tet/chunk_codec.hpp"

namespace tessera::tet {
namespace {

// Adds the file path to structural errors thrown by the format rooms.
[[noreturn]] void fail(const io::ByteSource& src, const std::string& structure, const std::string& text) {
  throw FormatError(text, src.name(), structure);
}

std::string catalog_too_short(std::uint64_t need, std::uint64_t got) {
  return "file too short for catalog: need " + std::to_string(need) + " bytes, got " + std::to_string(got);
}

std::vector<DatasetRecord> parse_directory(const io::ByteSource& src, std::uint32_t count, std::uint64_t blob_len) {
  const std::vector<std::byte> blob = src.read_vector(40, blob_len);
  const std::uint64_t blob_end = 40 + blob_len;
  std::vector<DatasetRecord> records;
  records.reserve(std::min<std::uint64_t>(count, blob_len / 32 + 1));
  std::uint64_t cur = 0;  // offset inside the blob
  auto need = [&](std::uint64_t n) {
    const auto end = add_u64(cur, n);
    if (!end || *end > blob_len)
      fail(src, "dataset directory", catalog_too_short(end ? 40 + *end : UINT64_MAX, blob_end));
  };
  for (std::uint32_t i = 0; i < count; ++i) {
    need(16);
    const std::uint32_t name_len = load_le<std::uint32_t>(blob.data() + cur);
    DatasetRecord rec;
    rec.dtype_tag = load_le<std::uint32_t>(blob.data() + cur + 4);
    const std::uint32_t ndim = load_le<std::uint32_t>(blob.data() + cur + 8);
    const std::uint64_t record_start = cur;
    cur += 16;
    need(name_len);
    rec.name.assign(reinterpret_cast<const char*>(blob.data() + cur), name_len);
    cur += name_len;
    const std::uint64_t padded = align8(16 + std::uint64_t{name_len});
    need(padded - (cur - record_start));
    cur = record_start + padded;
    if (ndim < 1 || ndim > kMaxRank)
      fail(src, "dataset directory", "ndim " + std::to_string(ndim) + " out of range (max 8)");
    need(16 * std::uint64_t{ndim});
    rec.shape.resize(ndim);
    rec.chunk_shape.resize(ndim);
    for (std::uint32_t d = 0; d < ndim; ++d)
      rec.shape[d] = load_le<std::uint64_t>(blob.data() + cur + std::size_t{8} * d);
    cur += std::size_t{8} * ndim;
    for (std::uint32_t d = 0; d < ndim; ++d)
      rec.chunk_shape[d] = load_le<std::uint64_t>(blob.data() + cur + std::size_t{8} * d);
    cur += std::size_t{8} * ndim;
    if (!is_valid_utf8(rec.name)) fail(src, "dataset directory", "invalid UTF-8 in dataset name");
    records.push_back(std::move(rec));
  }
  if (cur != blob_len)
    fail(src, "dataset directory",
         "dataset blob length mismatch: declared " + std::to_string(blob_len) + ", parsed " + std::to_string(cur));
  return records;
}

struct TailInfo {
  std::uint64_t json_len = 0;
  std::uint64_t json_start = 0;
};

// §1.8 rules 1–3.
TailInfo read_tail(const io::ByteSource& src) {
  const std::uint64_t len = src.size();
  std::byte tail[FooterTail::kSize];
  if (len < FooterTail::kSize) fail(src, "history footer", "superblock history flag set but footer missing");
  src.read_at(len - FooterTail::kSize, tail);
  if (std::memcmp(tail + 12, "THST", 4) != 0)
    fail(src, "history footer", "superblock history flag set but footer missing");
  const std::uint32_t version = load_le<std::uint32_t>(tail + 8);
  if (version != 1) fail(src, "history footer", "unsupported history footer version " + std::to_string(version));
  const std::uint64_t json_len = load_le<std::uint64_t>(tail);
  const auto total = add_u64(json_len, FooterTail::kSize);
  if (!total || *total > len) fail(src, "history footer", "history footer out of bounds");
  return {json_len, len - *total};
}

std::string read_footer_text(const io::ByteSource& src, const TailInfo& tail) {
  std::string text(checked_size(tail.json_len, "footer length"), '\0');
  src.read_at(tail.json_start, std::as_writable_bytes(std::span(text)));
  return text;
}

// Payloads end before the spill (if the footer names one) and the footer JSON. A spill longer
// than everything before the footer cannot fit; S14 reports it, so clamp to 0 here.
// A tessera extension blob sits right before the spill; payloads end before it too (the
// reference, which does not know it, sees it as unused bytes after the payloads).
std::uint64_t payload_end_before(const TailInfo& tail, const std::string& footer_text) {
  std::uint64_t spill_len = 0;
  if (auto ref = probe_metadata_ref(footer_text)) spill_len = ref->len;
  const std::uint64_t end = tail.json_start >= spill_len ? tail.json_start - spill_len : 0;
  if (auto ext = probe_extension_ref(footer_text); ext && ext->offset <= end && end - ext->offset == ext->len)
    return ext->offset;
  return end;
}

// The spilled extension: it must be the bytes right after the payloads (payload_end_before
// put the payload end at its offset when it is).
std::optional<FooterExtension> read_extension_blob(const io::ByteSource& src, const MetadataRef& ref,
                                                   std::uint64_t payload_end) {
  if (ref.offset != payload_end)
    fail(src, "history footer", "history footer tessera_ref does not lie between the payloads and the metadata spill");
  if (ref.len > FooterExtensionLimits::kBlobBytes)
    fail(src, "history footer",
         "history footer tessera extension of " + std::to_string(ref.len) + " bytes exceeds its limit of 268435456");
  std::string blob(checked_size(ref.len), '\0');
  src.read_at(ref.offset, std::as_writable_bytes(std::span(blob)));
  try {
    return parse_footer_extension(blob);
  } catch (const FormatError& e) {
    fail(src, "history footer", e.what());
  }
}

}  // namespace

std::optional<std::uint64_t> payload_end_from_tail(const io::ByteSource& src) {
  try {
    const TailInfo tail = read_tail(src);
    return payload_end_before(tail, read_footer_text(src, tail));
  } catch (const FormatError&) {
    return std::nullopt;
  }
}

Layout parse_layout(const io::ByteSource& src, bool read_footer) {
  Layout L;
  L.file_len = src.size();
  const std::uint64_t len = L.file_len;
  // S1
  if (len < Superblock::kSize)
    fail(src, "superblock", "file too short for superblock: need 32 bytes, got " + std::to_string(len));
  std::byte sb_bytes[Superblock::kSize];
  src.read_at(0, sb_bytes);
  // S2
  try {
    L.superblock = Superblock::decode(sb_bytes);
  } catch (const FormatError& e) {
    fail(src, "superblock", e.what());
  }
  const Superblock& sb = L.superblock;
  // S3
  if (sb.layout_version != kLayoutVersion)
    fail(src, "superblock",
         "unsupported layout_version: " + std::to_string(sb.layout_version) + " (only 1 is supported)");
  // S4
  const auto index_end = add_u64(sb.chunk_index_offset, sb.chunk_index_length);
  if (!index_end || *index_end > len)
    fail(src, "superblock",
         "chunk index region is out of bounds for file length " + std::to_string(len) + ": offset " +
             std::to_string(sb.chunk_index_offset) + ", length " + std::to_string(sb.chunk_index_length));

  if (sb.dataset_count > 0) {
    // S6
    if (len < 40)
      fail(src, "dataset directory",
           "dataset_count is " + std::to_string(sb.dataset_count) + " but dataset directory is missing (file length " +
               std::to_string(len) + ")");
    std::byte blob_len_bytes[8];
    src.read_at(32, blob_len_bytes);
    L.dataset_blob_len = load_le<std::uint64_t>(blob_len_bytes);
    // S7
    const auto blob_end = add_u64(40, L.dataset_blob_len);
    if (!blob_end || *blob_end > len)
      fail(src, "dataset directory", catalog_too_short(blob_end ? *blob_end : UINT64_MAX, len));
    // S8, S9
    L.datasets = parse_directory(src, sb.dataset_count, L.dataset_blob_len);
    // S10
    const std::uint64_t expected_offset = align8(*blob_end);
    if (sb.chunk_index_offset != expected_offset)
      fail(src, "chunk index",
           "chunk index offset mismatch: superblock says " + std::to_string(sb.chunk_index_offset) + ", expected " +
               std::to_string(expected_offset));
    // S11
    if (sb.chunk_index_length < ChunkIndexHeader::kSize)
      fail(src, "chunk index", catalog_too_short(sb.chunk_index_offset + ChunkIndexHeader::kSize, *index_end));
    std::byte header_bytes[ChunkIndexHeader::kSize];
    src.read_at(sb.chunk_index_offset, header_bytes);
    try {
      L.index_header = ChunkIndexHeader::decode(header_bytes);
    } catch (const FormatError& e) {
      fail(src, "chunk index", e.what());
    }
    if (L.index_header.index_version != 1)
      fail(src, "chunk index", "unsupported chunk index version: " + std::to_string(L.index_header.index_version));
    const auto entries_len = mul_u64(L.index_header.entry_count, ChunkEntry::kSize);
    const auto region_len = entries_len ? add_u64(*entries_len, ChunkIndexHeader::kSize) : std::nullopt;
    if (!region_len || *region_len != sb.chunk_index_length)
      fail(src, "chunk index",
           "chunk index entry count " + std::to_string(L.index_header.entry_count) + " does not fit in region length " +
               std::to_string(sb.chunk_index_length));
  }

  // S12: locate the footer to find the payload region end.
  const bool with_footer = read_footer && sb.has_footer();
  std::string footer_text;
  L.payload_end = len;
  if (with_footer) {
    const TailInfo tail = read_tail(src);
    L.footer_json_len = tail.json_len;
    footer_text = read_footer_text(src, tail);
    L.payload_end = payload_end_before(tail, footer_text);
  }

  // S13: entries.
  if (sb.dataset_count > 0) {
    const std::uint64_t count = L.index_header.entry_count;
    const std::vector<std::byte> raw =
        src.read_vector(sb.chunk_index_offset + ChunkIndexHeader::kSize, count * ChunkEntry::kSize);
    L.entries.reserve(checked_size(count));
    for (std::uint64_t i = 0; i < count; ++i) {
      ChunkEntry e = ChunkEntry::decode(std::span(raw).subspan(i * ChunkEntry::kSize, ChunkEntry::kSize));
      if (!codec_of_tag(e.codec))
        fail(src, "chunk index",
             "unsupported codec " + std::to_string(e.codec) + " (supported: " + codec_tags_text() + ")");
      if (e.codec == static_cast<std::uint32_t>(Codec::Raw) && e.raw_byte_len != e.stored_byte_len)
        fail(src, "chunk index",
             "raw/stored length mismatch for codec=0: raw=" + std::to_string(e.raw_byte_len) +
                 ", stored=" + std::to_string(e.stored_byte_len));
      const auto end = add_u64(e.payload_offset, e.stored_byte_len);
      if (!end || *end > L.payload_end)
        fail(src, "chunk index",
             "chunk payload [" + std::to_string(e.payload_offset) + ", " +
                 (end ? std::to_string(*end) : std::string("overflow")) + ") out of bounds for file length " +
                 std::to_string(L.payload_end));
      L.entries.push_back(e);
    }
  }

  // S14: footer JSON and spill.
  if (with_footer) {
    FooterJson fj;
    try {
      fj = parse_footer_json(footer_text);
    } catch (const FormatError& e) {
      fail(src, "history footer", e.what());
    }
    Footer footer;
    footer.history = std::move(fj.history);
    if (fj.metadata_ref) {
      const MetadataRef ref = *fj.metadata_ref;
      const auto end = add_u64(ref.offset, ref.len);
      if (!end || *end > len) fail(src, "history footer", "history footer metadata_ref out of bounds");
      if (ref.len > MetadataLimits::kSpillBytes)
        fail(src, "history footer",
             "history footer metadata exceeds limits: spill of " + std::to_string(ref.len) + " bytes (limit 16777216)");
      std::string spill(checked_size(ref.len), '\0');
      src.read_at(ref.offset, std::as_writable_bytes(std::span(spill)));
      try {
        footer.metadata = parse_spilled_metadata(spill);
      } catch (const FormatError& e) {
        fail(src, "history footer", e.what());
      }
      if (auto broken = check_limits(footer.history, footer.metadata))
        fail(src, "history footer", "history footer metadata exceeds limits: " + *broken);
      footer.metadata_ref = ref;
    } else if (fj.metadata) {
      footer.metadata = std::move(*fj.metadata);
    }
    footer.extension = std::move(fj.extension);
    if (fj.extension_ref) footer.extension = read_extension_blob(src, *fj.extension_ref, L.payload_end);
    footer.extension_ref = fj.extension_ref;
    L.footer = std::move(footer);
  }
  return L;
}

std::uint64_t payload_end_from_index(const Layout& partial) {
  std::uint64_t end = partial.superblock.chunk_index_offset + partial.superblock.chunk_index_length;
  for (const auto& e : partial.entries) end = std::max(end, e.payload_offset + e.stored_byte_len);
  return end;
}

}  // namespace tessera::tet
