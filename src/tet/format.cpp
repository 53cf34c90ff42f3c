#include "tessera/tet/format.hpp"

#include <cstring>

#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::tet {
namespace {

constexpr std::array<DType, 10> kTagDTypes{DType::F32, DType::F64, DType::I32, DType::I64, DType::U8,
                                           DType::U16, DType::I16, DType::U32, DType::F16, DType::U64};
constexpr char kSuperblockMagic[4] = {'T', 'E', 'T', 'R'};
constexpr char kIndexMagic[4] = {'T', 'I', 'D', 'X'};

}  // namespace

std::optional<DType> dtype_from_tag(std::uint32_t tag) noexcept {
  if (tag < 1 || tag > kTagDTypes.size()) return std::nullopt;
  return kTagDTypes[tag - 1];
}

std::uint32_t tag_from_dtype(DType dtype) {
  for (std::size_t i = 0; i < kTagDTypes.size(); ++i)
    if (kTagDTypes[i] == dtype) return static_cast<std::uint32_t>(i + 1);
  throw UnsupportedError("dtype " + std::string(dtype_info(dtype).name) + " has no .tet element tag");
}

std::string_view tag_name(std::uint32_t tag) noexcept {
  const auto dt = dtype_from_tag(tag);
  return dt ? dtype_info(*dt).name : std::string_view("?");
}

void Superblock::encode_to(std::byte* out) const noexcept {
  std::memcpy(out, kSuperblockMagic, 4);
  store_le<std::uint32_t>(out + 4, layout_version);
  store_le<std::uint32_t>(out + 8, dataset_count);
  store_le<std::uint32_t>(out + 12, flags);
  store_le<std::uint64_t>(out + 16, chunk_index_offset);
  store_le<std::uint64_t>(out + 24, chunk_index_length);
}

Superblock Superblock::decode(std::span<const std::byte> b) {
  if (std::memcmp(b.data(), kSuperblockMagic, 4) != 0) {
    throw FormatError("bad magic: expected TETR, got [" + std::to_string(std::to_integer<int>(b[0])) + ", " +
                          std::to_string(std::to_integer<int>(b[1])) + ", " +
                          std::to_string(std::to_integer<int>(b[2])) + ", " +
                          std::to_string(std::to_integer<int>(b[3])) + "]",
                      {}, "superblock");
  }
  Superblock sb;
  sb.layout_version = load_le<std::uint32_t>(b.data() + 4);
  sb.dataset_count = load_le<std::uint32_t>(b.data() + 8);
  sb.flags = load_le<std::uint32_t>(b.data() + 12);
  sb.chunk_index_offset = load_le<std::uint64_t>(b.data() + 16);
  sb.chunk_index_length = load_le<std::uint64_t>(b.data() + 24);
  return sb;
}

void DatasetRecord::append_to(std::vector<std::byte>& out) const {
  const std::size_t start = out.size();
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(name.size()));
  append_le<std::uint32_t>(out, dtype_tag);
  append_le<std::uint32_t>(out, static_cast<std::uint32_t>(shape.size()));
  append_le<std::uint32_t>(out, 0);  // reserved
  const auto* p = reinterpret_cast<const std::byte*>(name.data());
  out.insert(out.end(), p, p + name.size());
  out.resize(start + align8(16 + name.size()), std::byte{0});  // zero padding to 8 bytes
  for (auto v : shape) append_le<std::uint64_t>(out, v);
  for (auto v : chunk_shape) append_le<std::uint64_t>(out, v);
}

void ChunkIndexHeader::encode_to(std::byte* out) const noexcept {
  std::memcpy(out, kIndexMagic, 4);
  store_le<std::uint32_t>(out + 4, index_version);
  store_le<std::uint64_t>(out + 8, entry_count);
  store_le<std::uint16_t>(out + 16, memory_budget_percent_bps);
  store_le<std::uint16_t>(out + 18, 0);
  store_le<std::uint32_t>(out + 20, memory_budget_bytes);
  store_le<std::uint64_t>(out + 24, 0);
}

ChunkIndexHeader ChunkIndexHeader::decode(std::span<const std::byte> b) {
  if (std::memcmp(b.data(), kIndexMagic, 4) != 0) {
    throw FormatError("bad chunk index magic: expected TIDX, got [" + std::to_string(std::to_integer<int>(b[0])) +
                          ", " + std::to_string(std::to_integer<int>(b[1])) + ", " +
                          std::to_string(std::to_integer<int>(b[2])) + ", " +
                          std::to_string(std::to_integer<int>(b[3])) + "]",
                      {}, "chunk index");
  }
  ChunkIndexHeader h;
  h.index_version = load_le<std::uint32_t>(b.data() + 4);
  h.entry_count = load_le<std::uint64_t>(b.data() + 8);
  h.memory_budget_percent_bps = load_le<std::uint16_t>(b.data() + 16);
  h.memory_budget_bytes = load_le<std::uint32_t>(b.data() + 20);
  return h;
}

void ChunkEntry::encode_to(std::byte* out) const noexcept {
  store_le<std::uint64_t>(out, dataset_id);
  for (std::size_t i = 0; i < kMaxRank; ++i) store_le<std::uint64_t>(out + 8 + 8 * i, chunk_index[i]);
  store_le<std::uint64_t>(out + 72, payload_offset);
  store_le<std::uint64_t>(out + 80, raw_byte_len);
  store_le<std::uint64_t>(out + 88, stored_byte_len);
  store_le<std::uint32_t>(out + 96, codec);
  store_le<std::uint32_t>(out + 100, 0);
}

ChunkEntry ChunkEntry::decode(std::span<const std::byte> b) noexcept {
  ChunkEntry e;
  e.dataset_id = load_le<std::uint64_t>(b.data());
  for (std::size_t i = 0; i < kMaxRank; ++i) e.chunk_index[i] = load_le<std::uint64_t>(b.data() + 8 + 8 * i);
  e.payload_offset = load_le<std::uint64_t>(b.data() + 72);
  e.raw_byte_len = load_le<std::uint64_t>(b.data() + 80);
  e.stored_byte_len = load_le<std::uint64_t>(b.data() + 88);
  e.codec = load_le<std::uint32_t>(b.data() + 96);
  return e;
}

std::string join_coords(std::span<const std::uint64_t> coords, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < coords.size(); ++i) {
    if (i) out += sep;
    out += std::to_string(coords[i]);
  }
  return out;
}

}  // namespace tessera::tet
