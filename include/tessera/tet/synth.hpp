// Seeded synthetic `.tet` files (spec tet.md §6.9), used by the demo, the benchmarks and tests.
//
// Data, in logical (row-major) order per dataset:
//  - float dtypes: a random walk, the cumulative sum of standard-normal steps accumulated in f64
//    and rounded to the dtype (f16 through f32: float_to_half(float(x))). Steps come from
//    std::mt19937_64 seeded with `seed + 0x9E3779B97F4A7C15 × dataset_index` (mod 2^64) and the
//    Marsaglia polar method with a logarithm built from IEEE basic operations only, so the
//    output is the same on every platform and standard library.
//  - integer dtypes: `(logical_index × 2654435761 + seed) mod M` with
//    M = min(dtype max + 1, 1000003), computed exactly (no wrap-around); signed dtypes subtract
//    M / 2 (integer division).
// Files are written one chunk row at a time, so they may be larger than RAM.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/writer.hpp"

namespace tessera::tet {

// Parses `NAME:DTYPE:SHAPE:CHUNKS[:CODEC[:LEVEL]]`, e.g. `temp:f32:512x1024x1024:16x256x256:zstd:3`
// (DTYPE one of the ten .tet types, CODEC `raw` (default) or `zstd`, LEVEL only with zstd), and
// validates the result with validate_dataset_spec. Throws UsageError `invalid dataset spec
// "{spec}": {detail}` (or the validation error).
DatasetSpec parse_synth_spec(std::string_view spec);

// The value generator of one dataset: successive calls continue in logical order.
// Thread-safety: one thread at a time per stream.
class SynthStream {
 public:
  SynthStream(DType dtype, std::uint64_t seed, std::uint32_t dataset_index);
  // Fills `out` (a whole number of elements) with the next elements, little-endian.
  void fill(std::span<std::byte> out);
  // Elements produced so far (the logical index of the next one).
  std::uint64_t position() const noexcept { return next_index_; }

 private:
  double next_normal();
  DType dtype_;
  std::uint64_t seed_;
  std::mt19937_64 engine_;
  double walk_ = 0.0;
  double spare_ = 0.0;
  bool has_spare_ = false;
  std::uint64_t next_index_ = 0;
};

// ln(x) for finite x > 0 from IEEE basic operations only (exactly rounded, hence identical on
// every conforming platform), accurate to a few ulp. Exposed for tests.
double portable_log(double x) noexcept;

struct SynthOptions {
  std::vector<DatasetSpec> datasets;
  std::uint64_t seed = 0;
  std::uint16_t memory_budget_percent_bps = 0;
  std::uint32_t memory_budget_bytes = 0;
  // Footer: the `write` history row's source (normally the output file name) and time (Unix
  // seconds as text; empty = SOURCE_DATE_EPOCH if set, else now: core/civil_date.hpp output_time).
  std::string source;
  std::string at;
  unsigned threads = 0;
};

struct SynthSummary {
  std::uint32_t datasets = 0;
  std::uint64_t chunks = 0;
  std::uint64_t bytes = 0;
};

// Writes the file through `sink` (which must be empty) and commits it.
SynthSummary synth_write(io::ByteSink& sink, const SynthOptions& options);
// Writes `path` atomically; an empty `options.source` becomes the path's file name.
SynthSummary synth_write(const std::string& path, SynthOptions options);

}  // namespace tessera::tet
