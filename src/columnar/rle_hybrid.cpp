// The RLE / bit-packed hybrid codec of Parquet levels and dictionary indices.
#include "rle_hybrid.hpp"

#include <bit>

#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"

namespace tessera::columnar::detail {
namespace {

void append_varint(std::vector<std::byte>& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<std::byte>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<std::byte>(v));
}

}  // namespace

unsigned bit_width_for(std::uint64_t max_value) noexcept {
  return max_value == 0 ? 1u : static_cast<unsigned>(std::bit_width(max_value));
}

void decode_rle_hybrid(std::span<const std::byte> bytes, unsigned bit_width, std::size_t count,
                       std::vector<std::uint32_t>& out, const std::string& file, const std::string& where) {
  const auto fail = [&](const std::string& rule) { throw FormatError(rule, file, where); };
  if (bit_width > 32) fail("RLE/bit-packed bit width " + std::to_string(bit_width) + " exceeds 32");
  out.resize(count);
  std::size_t pos = 0, n = 0;
  const std::size_t value_bytes = (bit_width + 7) / 8;
  const std::uint64_t mask = bit_width == 32 ? 0xFFFFFFFFull : ((std::uint64_t{1} << bit_width) - 1);
  while (n < count) {
    std::uint64_t header = 0;
    for (unsigned shift = 0;; shift += 7) {
      if (pos >= bytes.size())
        fail("RLE/bit-packed data ends after " + std::to_string(n) + " of " + std::to_string(count) + " values");
      if (shift > 35) fail("RLE/bit-packed run header is longer than 5 bytes");
      const auto b = static_cast<std::uint8_t>(bytes[pos++]);
      header |= std::uint64_t{b & 0x7Fu} << shift;
      if ((b & 0x80) == 0) break;
    }
    if (header & 1) {
      const std::uint64_t groups = header >> 1;
      const std::uint64_t group_bytes = checked_mul(groups, bit_width, "bit-packed run size");
      if (group_bytes > bytes.size() - pos) {
        // A last run may be truncated to the bytes its values need.
        const std::uint64_t needed_bits = checked_mul(count - n, bit_width, "bit-packed run size");
        if ((needed_bits + 7) / 8 > bytes.size() - pos)
          fail("bit-packed run of " + std::to_string(groups) + " groups extends past the end of the data");
      }
      const std::uint64_t values = std::min<std::uint64_t>(checked_mul(groups, 8), count - n);
      const std::byte* base = bytes.data() + pos;
      for (std::uint64_t i = 0; i < values; ++i) {
        const std::uint64_t bit = i * bit_width;
        std::uint64_t word = 0;
        const std::size_t first = bit / 8;
        const std::size_t take = std::min<std::size_t>(8, bytes.size() - pos - first);
        for (std::size_t k = 0; k < take; ++k)
          word |= std::uint64_t{static_cast<std::uint8_t>(base[first + k])} << (8 * k);
        out[n++] = static_cast<std::uint32_t>((word >> (bit % 8)) & mask);
      }
      pos += static_cast<std::size_t>(std::min<std::uint64_t>(group_bytes, bytes.size() - pos));
    } else {
      const std::uint64_t run = header >> 1;
      if (value_bytes > bytes.size() - pos) fail("RLE run value extends past the end of the data");
      std::uint32_t v = 0;
      for (std::size_t k = 0; k < value_bytes; ++k)
        v |= std::uint32_t{static_cast<std::uint8_t>(bytes[pos + k])} << (8 * k);
      pos += value_bytes;
      if (v > mask)
        fail("RLE run value " + std::to_string(v) + " does not fit in " + std::to_string(bit_width) + " bits");
      const std::uint64_t values = std::min<std::uint64_t>(run, count - n);
      for (std::uint64_t i = 0; i < values; ++i) out[n++] = v;
    }
  }
}

void encode_rle_hybrid(std::span<const std::uint32_t> values, unsigned bit_width, std::vector<std::byte>& out) {
  const std::size_t n = values.size();
  const auto run_at = [&](std::size_t i) {
    std::size_t j = i + 1;
    while (j < n && values[j] == values[i]) ++j;
    return j - i;
  };
  const std::size_t value_bytes = (bit_width + 7) / 8;
  std::size_t i = 0;
  while (i < n) {
    const std::size_t run = run_at(i);
    if (run >= 8) {
      append_varint(out, std::uint64_t{run} << 1);
      for (std::size_t k = 0; k < value_bytes; ++k) out.push_back(static_cast<std::byte>(values[i] >> (8 * k)));
      i += run;
      continue;
    }
    // Bit-packed groups of 8 until a run of 8 equal values starts at a group boundary.
    const std::size_t start = i;
    std::size_t groups = 0;
    do {
      ++groups;
      i += 8;
    } while (i < n && run_at(i) < 8);
    append_varint(out, (std::uint64_t{groups} << 1) | 1);
    const std::size_t first = out.size();
    out.resize(first + groups * bit_width, std::byte{0});
    for (std::size_t k = 0; start + k < std::min(i, n); ++k) {
      const std::uint64_t v = values[start + k];
      const std::uint64_t bit = k * bit_width;
      for (unsigned b = 0; b < bit_width; ++b)
        if ((v >> b) & 1) {
          const std::uint64_t at = bit + b;
          out[first + at / 8] |= static_cast<std::byte>(1u << (at % 8));
        }
    }
  }
}

}  // namespace tessera::columnar::detail
