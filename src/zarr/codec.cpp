// The codec chain of one read chunk: bytes / vlen-bytes, zstd, crc32c.
#include "tessera/zarr/codec.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "tessera/codec/checksum.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/kept.hpp"
#include "tessera/core/overloaded.hpp"

namespace tessera::zarr {
namespace {

// Runs the bytes→bytes codecs backwards over `stored`. With `exact_out`, the last step (the
// first codec in list order) writes straight into it and the result must fill it exactly;
// returns true when it did so. Otherwise the decoded bytes are left in `cur` (a view into
// `stored` or into `scratch`).
// The u32le checksum the crc32c codec appends.
constexpr std::size_t kCrcBytes = 4;

// Vlen payloads that may decode past kVlenPeekThreshold have their first kVlenPeekBytes checked
// first (decode_vlen_chunk_into).
constexpr std::uint64_t kVlenPeekThreshold = std::uint64_t{16} << 20;
constexpr std::size_t kVlenPeekBytes = std::size_t{64} << 10;

// `before_last_zstd`, when given, sees the input of the last zstd step before it is decoded.
bool decode_bytes_to_bytes(const CodecChain& chain, std::span<const std::byte> stored, std::span<const std::byte>& cur,
                           std::vector<std::byte>& scratch, std::span<std::byte>* exact_out, std::uint64_t max_bytes,
                           const ChunkRef& chunk,
                           const std::function<void(std::span<const std::byte>)>& before_last_zstd = {}) {
  cur = stored;
  bool in_scratch = false;  // whether `cur` views `scratch` (then a decoder cannot reuse it)
  for (std::size_t i = chain.bytes_to_bytes.size(); i-- > 0;) {
    // Each step either strips a checksum (a view, no copy) or decodes into `scratch`; the first
    // codec of the chain may decode straight into `exact_out`, which ends the chain.
    const bool finished = std::visit(
        Overloaded{
            [&](const Crc32cCodec&) {
              if (cur.size() < kCrcBytes)
                fail_at<FormatError>(chunk.key, chunk.label() + " crc32c",
                                     "is " + std::to_string(cur.size()) + " bytes, shorter than its checksum");
              const auto payload = cur.first(cur.size() - kCrcBytes);
              const std::uint32_t stored_crc = load_le<std::uint32_t>(cur.data() + payload.size());
              const std::uint32_t computed = codec::crc32c(payload);
              if (stored_crc != computed) {
                char text[64];
                std::snprintf(text, sizeof text, "CRC-32C mismatch: stored %08x, computed %08x", stored_crc, computed);
                fail_at<FormatError>(chunk.key, chunk.label() + " crc32c", text);
              }
              cur = payload;
              return false;
            },
            [&](const ZstdCodec&) {
              if (i == 0 && before_last_zstd) before_last_zstd(cur);
              try {
                if (i == 0 && exact_out) {
                  codec::zstd_decompress_into(cur, *exact_out);
                  return true;
                }
                if (in_scratch) {
                  scratch = codec::zstd_decompress_capped(cur, max_bytes);
                  cur = scratch;
                } else {
                  cur = codec::zstd_decompress_capped_prefix(cur, max_bytes, scratch);  // reuses the caller's buffer
                }
                in_scratch = true;
              } catch (const LimitError& e) {
                fail_at<LimitError>(chunk.key, chunk.label() + " zstd", e.what());
              } catch (const FormatError& e) {
                fail_at<FormatError>(chunk.key, chunk.label() + " zstd", e.what());
              }
              return false;
            },
        },
        chain.bytes_to_bytes[i]);
    if (finished) return true;
  }
  return false;
}

std::vector<std::byte> encode_bytes_to_bytes(const CodecChain& chain, std::vector<std::byte> raw) {
  for (const auto& step : chain.bytes_to_bytes) {
    std::visit(Overloaded{
                   [&](const ZstdCodec& z) {
                     raw = codec::zstd_compress(
                         raw, codec::ZstdOptions{.level = z.level, .content_size = true, .checksum = z.checksum});
                   },
                   [&](const Crc32cCodec&) { append_le<std::uint32_t>(raw, codec::crc32c(raw)); },
               },
               step);
  }
  return raw;
}

void swap_elements(std::span<std::byte> bytes, std::size_t size) {
  for (std::size_t off = 0; off + size <= bytes.size(); off += size)
    std::reverse(bytes.begin() + static_cast<std::ptrdiff_t>(off),
                 bytes.begin() + static_cast<std::ptrdiff_t>(off + size));
}

bool big_endian(const CodecChain& chain) {
  const auto* bytes = std::get_if<BytesCodec>(&chain.array_to_bytes);
  return bytes && bytes->endian == Endian::Big;
}

}  // namespace

void decode_dense_chunk(const CodecChain& chain, const DataType& type, std::span<const std::byte> stored,
                        std::span<std::byte> out, std::uint64_t max_bytes, const ChunkRef& chunk) {
  std::span<const std::byte> cur;
  std::vector<std::byte> scratch;
  if (!decode_bytes_to_bytes(chain, stored, cur, scratch, &out, max_bytes, chunk)) {
    if (cur.size() != out.size())
      fail_at<FormatError>(chunk.key, chunk.label() + " bytes",
                           "decodes to " + std::to_string(cur.size()) + " bytes, the chunk needs " +
                               std::to_string(out.size()) + " (chunk shape x itemsize)");
    if (!out.empty()) std::memcpy(out.data(), cur.data(), out.size());
  }
  if (big_endian(chain) && type.item_size() > 1) swap_elements(out, type.item_size());
  if (type.dtype == DType::Bool) {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (std::to_integer<unsigned>(out[i]) > 1)
        fail_at<FormatError>(chunk.key, chunk.label() + " bytes",
                             "bool element " + std::to_string(i) + " is " +
                                 std::to_string(std::to_integer<unsigned>(out[i])) + " (only 0 and 1 are valid)");
  }
}

std::vector<std::byte> encode_dense_chunk(const CodecChain& chain, const DataType& type,
                                          std::span<const std::byte> elements) {
  std::vector<std::byte> raw(elements.begin(), elements.end());
  if (big_endian(chain) && type.item_size() > 1) swap_elements(raw, type.item_size());
  return encode_bytes_to_bytes(chain, std::move(raw));
}

VlenChunk decode_vlen_chunk(const CodecChain& chain, std::span<const std::byte> stored, std::uint64_t count,
                            std::uint64_t max_bytes, const ChunkRef& chunk) {
  VlenChunk out;
  decode_vlen_chunk_into(chain, stored, count, max_bytes, chunk, out);
  return out;
}

void decode_vlen_chunk_into(const CodecChain& chain, std::span<const std::byte> stored, std::uint64_t count,
                            std::uint64_t max_bytes, const ChunkRef& chunk, VlenChunk& out) {
  // The framed bytes are decoded into `out`'s own buffer, and the element table reuses its table.
  VlenChunk::Storage storage = out.release();
  std::vector<std::byte>& framed = storage.bytes;
  std::span<const std::byte> cur;
  // A large zstd payload is checked on its first bytes before it is decoded whole (spec §1.7;
  // docs/reliability.md): a bomb with a wrong count or lengths never gets its gigabyte.
  const auto check_start = [&](std::span<const std::byte> zstd_payload) {
    const auto declared = codec::zstd_declared_total_size(zstd_payload);
    if (declared && *declared <= kVlenPeekThreshold) return;
    thread_local std::vector<std::byte> prefix(kVlenPeekBytes);
    std::size_t n = 0;
    try {
      n = codec::zstd_decompress_prefix(zstd_payload, prefix);
    } catch (const FormatError& e) {
      fail_at<FormatError>(chunk.key, chunk.label() + " zstd", e.what());
    }
    check_vlen_prefix(std::span(prefix).first(n), declared.value_or(kVlenFrameSizeUnknown), count, chunk);
  };
  decode_bytes_to_bytes(chain, stored, cur, framed, nullptr, max_bytes, chunk, check_start);
  if (cur.size() > max_bytes)
    fail_at<LimitError>(
        chunk.key, chunk.label(),
        "decoded size " + std::to_string(cur.size()) + " exceeds the limit of " + std::to_string(max_bytes) + " bytes");
  // Own the framed bytes: they start the buffer when a decoder ran, else they are a view of
  // `stored`. The buffer keeps its size (see grown_prefix); the elements address its first bytes.
  if (cur.empty() || cur.data() != framed.data()) {
    const auto copy = grown_prefix(framed, cur.size());
    std::copy(cur.begin(), cur.end(), copy.begin());
    cur = copy;
  }
  unframe_vlen_into(cur, count, chunk, storage.elements);
  out = VlenChunk(std::move(storage.bytes), std::move(storage.elements));
}

std::vector<std::byte> encode_vlen_chunk(const CodecChain& chain,
                                         std::span<const std::span<const std::byte>> elements) {
  return encode_bytes_to_bytes(chain, frame_vlen(elements));
}

}  // namespace tessera::zarr
