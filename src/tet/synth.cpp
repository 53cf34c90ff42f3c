// Synthetic data (§6.9): the dataset spec parser, the per-dataset value stream and the streaming
// file writer. Determinism matters more than speed here: the same arguments must give the same
// bytes everywhere, which is why the normal deviates avoid std::normal_distribution (its
// algorithm is implementation-defined) and std::log (libm results may differ in the last ulp).
#include "tessera/tet/synth.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "tessera/core/civil_date.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/tet/chunk_codec.hpp"
#include "tessera/version.hpp"

namespace tessera::tet {
namespace {

constexpr std::uint64_t kIntMultiplier = 2654435761u;
constexpr std::uint64_t kIntModulusCap = 1000003;
constexpr std::uint64_t kDatasetSeedStride = 0x9E3779B97F4A7C15u;  // 2^64 / golden ratio

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t at = s.find(sep, start);
    parts.push_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return parts;
    start = at + 1;
  }
}

template <typename T>
bool parse_integer(std::string_view text, T& out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && end == text.data() + text.size();
}

// M of the integer formula: min(dtype max + 1, 1000003).
std::uint64_t int_modulus(DType dtype) {
  switch (dtype) {
    case DType::U8: return 256;
    case DType::U16: return 65536;
    case DType::I16: return 32768;
    case DType::I32:
    case DType::U32:
    case DType::I64:
    case DType::U64: return kIntModulusCap;  // all exceed the cap
    case DType::Bool:
    case DType::I8:
    case DType::F16:
    case DType::F32:
    case DType::F64: break;
  }
  throw UsageError(std::string("no integer synth formula for ") + std::string(dtype_info(dtype).name));
}

}  // namespace

DatasetSpec parse_synth_spec(std::string_view text) {
  auto fail = [&](const std::string& detail) -> UsageError {
    return UsageError("invalid dataset spec \"" + std::string(text) + "\": " + detail);
  };
  const auto parts = split(text, ':');
  if (parts.size() < 4 || parts.size() > 6) throw fail("expected NAME:DTYPE:SHAPE:CHUNKS[:CODEC[:LEVEL]]");
  DatasetSpec spec;
  spec.name = std::string(parts[0]);
  if (spec.name.empty()) throw fail("empty name");
  const auto dtype = dtype_from_name(parts[1]);
  bool tagged = false;
  if (dtype) {
    try {
      (void)tag_from_dtype(*dtype);
      tagged = true;
    } catch (const UnsupportedError&) {
    }
  }
  if (!tagged)
    throw fail("unknown dtype `" + std::string(parts[1]) + "` (one of f32 f64 i32 i64 u8 u16 i16 u32 f16 u64)");
  spec.dtype = *dtype;
  auto dims = [&](std::string_view field, const char* what) {
    std::vector<std::uint64_t> out;
    for (std::string_view item : split(field, 'x')) {
      std::uint64_t v = 0;
      if (!parse_integer(item, v) || v == 0)
        throw fail(std::string(what) + " `" + std::string(field) + "` must be positive integers joined by `x`");
      out.push_back(v);
    }
    return out;
  };
  spec.shape = dims(parts[2], "SHAPE");
  spec.chunk_shape = dims(parts[3], "CHUNKS");
  if (spec.shape.size() != spec.chunk_shape.size())
    throw fail("SHAPE has " + std::to_string(spec.shape.size()) + " axes but CHUNKS has " +
               std::to_string(spec.chunk_shape.size()));
  if (parts.size() >= 5) {
    const auto codec = codec_named(parts[4]);
    if (!codec) throw fail("unknown codec `" + std::string(parts[4]) + "` (raw or zstd)");
    spec.codec = *codec;
  }
  if (parts.size() == 6) {
    if (spec.codec != Codec::Zstd) throw fail("LEVEL applies to the zstd codec only");
    if (!parse_integer(parts[5], spec.zstd_level))
      throw fail("LEVEL `" + std::string(parts[5]) + "` is not an integer");
  }
  validate_dataset_spec(spec);
  return spec;
}

double portable_log(double x) noexcept {
  // x = m·2^e exactly, then m is moved into [√½, √2) so that z = (m−1)/(m+1) is small.
  int e = 0;
  double m = std::frexp(x, &e);
  if (m < 0.70710678118654752440) {
    m *= 2.0;
    --e;
  }
  const double z = (m - 1.0) / (m + 1.0);  // m − 1 is exact (Sterbenz); |z| < 0.1716
  const double z2 = z * z;
  // ln m = 2·atanh z = 2z + 2z·z²·(1/3 + z²/5 + z⁴/7 + …); with z² < 0.0295 the terms up to
  // z²⁴/25 leave < 1e-21. Keeping 2z apart from the tail limits the rounding error to ~1 ulp.
  double tail = 1.0 / 25;
  for (int k = 23; k >= 3; k -= 2) tail = tail * z2 + 1.0 / k;
  const double sum = 2.0 * z + 2.0 * z * z2 * tail;
  // e·ln 2 split into a high part exact in double for |e| < 2^11 and a low correction (fdlibm).
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  return (e * kLn2Lo + sum) + e * kLn2Hi;
}

SynthStream::SynthStream(DType dtype, std::uint64_t seed, std::uint32_t dataset_index)
    : dtype_(dtype), seed_(seed), engine_(seed + kDatasetSeedStride * dataset_index) {}

// Marsaglia's polar method: uniform (u, v) in the unit disc give two independent standard normal
// deviates u·f and v·f with f = sqrt(−2 ln s / s), s = u² + v².
double SynthStream::next_normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  auto uniform = [&] { return 2.0 * (static_cast<double>(engine_() >> 11) * 0x1.0p-53) - 1.0; };  // [-1, 1)
  double u, v, s;
  do {
    u = uniform();
    v = uniform();
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * portable_log(s) / s);
  spare_ = v * f;
  has_spare_ = true;
  return u * f;
}

void SynthStream::fill(std::span<std::byte> out) {
  const std::size_t es = dtype_size(dtype_);
  const std::size_t n = out.size() / es;
  std::byte* p = out.data();
  if (is_float(dtype_)) {
    for (std::size_t i = 0; i < n; ++i, p += es) {
      walk_ += next_normal();
      switch (dtype_) {
        case DType::F64: store_le<double>(p, walk_); break;
        case DType::F32: store_le<float>(p, static_cast<float>(walk_)); break;
        case DType::F16: store_le<std::uint16_t>(p, float_to_half(static_cast<float>(walk_))); break;
        case DType::Bool:
        case DType::U8:
        case DType::U16:
        case DType::U32:
        case DType::U64:
        case DType::I8:
        case DType::I16:
        case DType::I32:
        case DType::I64: break;  // not float: the branch below
      }
    }
  } else {
    // Exact (logical_index × 2654435761 + seed) mod M, reduced term by term so nothing wraps.
    const std::uint64_t m = int_modulus(dtype_);
    const std::uint64_t mult = kIntMultiplier % m;
    const std::uint64_t offset = seed_ % m;
    const bool is_signed = dtype_info(dtype_).kind == DTypeKind::Signed;
    const std::int64_t shift = is_signed ? static_cast<std::int64_t>(m / 2) : 0;
    visit_dtype(dtype_, [&](auto zero) {
      using T = decltype(zero);
      for (std::size_t i = 0; i < n; ++i, p += es) {
        const std::uint64_t r = ((next_index_ + i) % m * mult + offset) % m;
        store_le<T>(p, static_cast<T>(static_cast<std::int64_t>(r) - shift));
      }
    });
  }
  next_index_ += n;
}

SynthSummary synth_write(io::ByteSink& sink, const SynthOptions& options) {
  WriterOptions w;
  w.memory_budget_percent_bps = options.memory_budget_percent_bps;
  w.memory_budget_bytes = options.memory_budget_bytes;
  w.threads = options.threads;
  HistoryRow row;
  row.op = "write";
  row.source = options.source.empty() ? std::string("synth") : options.source;
  row.at = options.at.empty() ? std::to_string(output_time()) : options.at;
  w.history.push_back(std::move(row));
  FileMetadata file;
  file.tool = "tessera tet synth";
  file.library_version = kVersion;
  w.metadata.file = std::move(file);

  TetWriter writer(sink, std::move(w));
  for (const DatasetSpec& spec : options.datasets) writer.add_dataset(spec);
  std::vector<std::byte> slab;
  for (std::uint32_t id = 0; id < writer.dataset_count(); ++id) {
    SynthStream stream(options.datasets[id].dtype, options.seed, id);
    for (std::uint64_t r = 0; r < writer.chunk_rows(id); ++r) {
      slab.resize(checked_size(writer.chunk_row_bytes(id, r), "chunk row"));
      stream.fill(slab);
      writer.write_chunk_row(id, r, slab);
    }
  }
  writer.commit();
  return {writer.dataset_count(), writer.chunk_count(), writer.file_size()};
}

SynthSummary synth_write(const std::string& path, SynthOptions options) {
  if (options.source.empty()) options.source = std::filesystem::path(path).filename().string();
  io::AtomicFileSink sink(path);
  return synth_write(sink, options);
}

}  // namespace tessera::tet
