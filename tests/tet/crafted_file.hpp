// Hand-built `.tet` files for tests of what a reader does with fields that lie: one u8 dataset
// whose index entries claim any raw_byte_len over any zstd payload.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tessera::tet::crafted {

// One u8 dataset `x` of `shape`/`chunk` (rank 1) with one zstd entry per raw length, each
// carrying `payload` as its stored bytes. Only the structure is valid: whether the payload decodes
// to the claimed length is the reader's to find out.
std::vector<std::byte> u8_file(std::uint64_t shape, std::uint64_t chunk, const std::vector<std::uint64_t>& raw_lens,
                               std::span<const std::byte> payload);

}  // namespace tessera::tet::crafted
