// The pieces of the Parquet API (columnar/parquet.hpp) that need neither libthrift nor Snappy: the
// names of Parquet's codes and the accessors of an opened file. Compiled in every build, so a
// build without Parquet support (TESSERA_WITH_PARQUET=OFF, parquet_unavailable.cpp) keeps them.
#include <string>

#include "tessera/columnar/parquet.hpp"

namespace tessera::columnar {

std::string compression_name(int codec) {
  static const char* const kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? kNames[codec] : "#" + std::to_string(codec);
}

std::string encoding_name(int encoding) {
  static const char* const kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return encoding >= 0 && encoding < 10 ? kNames[encoding] : "#" + std::to_string(encoding);
}

std::optional<std::string> ParquetFile::metadata(const std::string& key) const {
  for (const auto& [k, v] : key_value_metadata_)
    if (k == key) return v.value_or("");
  return std::nullopt;
}

std::optional<std::size_t> ParquetFile::find_column(const std::string& name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].name == name) return i;
  return std::nullopt;
}

}  // namespace tessera::columnar
