// Fuzz target for the Parquet reader: the input is opened as a whole file (footer, schema, every
// column chunk of every row group decoded) and, independently, decoded as the bytes of one column
// chunk for a column type and codec chosen by its first byte, so page headers, levels, dictionary
// indices and PLAIN values are reached without a valid footer. Limits are small; a clean
// tessera::Error is an accepted outcome.
#include <cstddef>
#include <cstdint>
#include <span>

#include "tessera/columnar/parquet.hpp"
#include "tessera/core/error.hpp"

namespace tessera::fuzzing {

inline columnar::ReadLimits fuzz_limits() {
  columnar::ReadLimits limits;
  limits.max_footer_bytes = 1 << 20;
  limits.max_rows_per_row_group = 1 << 16;
  limits.max_page_bytes = 1 << 20;
  limits.max_string_bytes = 1 << 20;
  return limits;
}

inline void exercise_parquet(std::span<const std::byte> bytes) {
  const auto limits = fuzz_limits();
  try {
    const auto source = io::memory_source(bytes, "fuzz.parquet");
    const auto file = columnar::ParquetFile::open(*source, limits);
    for (std::size_t g = 0; g < file.row_groups().size(); ++g)
      for (std::size_t c = 0; c < file.columns().size(); ++c) {
        try {
          file.read_column(g, c).check_shape();
        } catch (const Error&) {
        }
      }
  } catch (const Error&) {
  }
  if (bytes.size() < 2) return;
  // Byte 0: physical type / annotation and REQUIRED flag; byte 1: codec and row count.
  static constexpr struct {
    int physical;
    columnar::ColumnType type;
  } kColumns[] = {{0, columnar::ColumnType::Bool},   {1, columnar::ColumnType::Int32}, {1, columnar::ColumnType::Int8},
                  {1, columnar::ColumnType::UInt16}, {2, columnar::ColumnType::Int64}, {4, columnar::ColumnType::Float},
                  {5, columnar::ColumnType::Double}, {6, columnar::ColumnType::String}};
  const auto selector = static_cast<unsigned>(bytes[0]);
  const auto codec_rows = static_cast<unsigned>(bytes[1]);
  columnar::ParquetColumn column;
  column.name = "fuzz";
  column.physical_type = kColumns[selector % 8].physical;
  column.type = kColumns[selector % 8].type;
  column.optional = (selector & 0x80) == 0;
  columnar::ColumnChunkInfo info;
  static constexpr int kCodecs[] = {0, 1, 2, 6};
  info.codec = kCodecs[codec_rows % 4];
  const std::uint64_t rows = codec_rows / 4;
  try {
    columnar::decode_column_chunk(bytes.subspan(2), column, info, rows, limits, "fuzz.parquet", "chunk").check_shape();
  } catch (const Error&) {
  }
}

}  // namespace tessera::fuzzing

#ifndef TESSERA_FUZZ_NO_ENTRY_POINT
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tessera::fuzzing::exercise_parquet({reinterpret_cast<const std::byte*>(data), size});
  return 0;
}
#endif
