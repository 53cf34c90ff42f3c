// Encoding and decoding one read chunk through its codec chain (spec §1.5): the array→bytes
// codec (`bytes` or `vlen-bytes`) and the bytes→bytes codecs (`zstd`, `crc32c`). Decoding runs
// the list backwards. The chain is the same for both storage geometries: in a shard it encodes
// each inner chunk, otherwise each chunk object.
//
// Decoded sizes are bounded before anything is allocated: a dense chunk decodes to exactly
// prod(chunk_shape) · itemsize bytes (zstd writes straight into the caller's buffer, and any
// other size is a FormatError); a vlen chunk, whose size is not known in advance, is capped at
// `max_bytes` (LimitError beyond).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tessera/zarr/codec_spec.hpp"
#include "tessera/zarr/data_type.hpp"
#include "tessera/zarr/errors.hpp"
#include "tessera/zarr/vlen.hpp"

namespace tessera::zarr {

// Decodes the stored bytes of a dense chunk into `out` (the chunk's elements in C order,
// little-endian, `out.size()` = element count · itemsize). Big-endian `bytes` is swapped; a
// bool byte other than 0 or 1 is a FormatError. Errors name `chunk`.
void decode_dense_chunk(const CodecChain& chain, const DataType& type, std::span<const std::byte> stored,
                        std::span<std::byte> out, std::uint64_t max_bytes, const ChunkRef& chunk);

// Encodes C-order little-endian elements into the stored bytes of one chunk.
std::vector<std::byte> encode_dense_chunk(const CodecChain& chain, const DataType& type,
                                          std::span<const std::byte> elements);

// Decodes the stored bytes of a vlen chunk of `count` elements.
VlenChunk decode_vlen_chunk(const CodecChain& chain, std::span<const std::byte> stored, std::uint64_t count,
                            std::uint64_t max_bytes, const ChunkRef& chunk);
// The same into `out`, reusing its storage (sweeps decode many chunks into a few buffers).
void decode_vlen_chunk_into(const CodecChain& chain, std::span<const std::byte> stored, std::uint64_t count,
                            std::uint64_t max_bytes, const ChunkRef& chunk, VlenChunk& out);

// Frames and encodes one vlen chunk. zstd frames record their content size (one-shot
// compression), as zagg's writer does.
std::vector<std::byte> encode_vlen_chunk(const CodecChain& chain, std::span<const std::span<const std::byte>> elements);

}  // namespace tessera::zarr
