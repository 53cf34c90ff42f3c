// Built instead of the Parquet reader and writer (parquet_footer, parquet_pages, parquet_writer,
// page_compression and the generated Thrift structs) when TESSERA_WITH_PARQUET is OFF
// (cmake/TesseraFeatures.cmake). Every way into a Parquet file is refused here, so the layers
// above (the cells obs sidecar and var table, Parquet input of ragged build) throw
// FeatureUnavailable without knowing how the build was configured. Arrow IPC (the obs cache's
// file format) needs neither libthrift nor Snappy and stays.
#include "tessera/columnar/parquet.hpp"
#include "tessera/core/feature.hpp"

namespace tessera::columnar {

namespace {

[[noreturn]] void refuse(const std::string& what, const std::string& path = {}) {
  throw FeatureUnavailable(Feature::Parquet, what, path);
}

}  // namespace

ParquetFile ParquetFile::open(const io::ByteSource& source, const ReadLimits&) {
  refuse("reading the Parquet file " + source.name(), source.name());
}

// No ParquetFile exists in this build (open is its only way in); defined for the linker.
Column ParquetFile::read_column(std::size_t, std::size_t) const { refuse("reading a Parquet column"); }

Column decode_column_chunk(std::span<const std::byte>, const ParquetColumn&, const ColumnChunkInfo&, std::uint64_t,
                           const ReadLimits&, const std::string& file, const std::string&) {
  refuse("decoding a Parquet column chunk", file);
}

struct ParquetWriter::State {};

ParquetWriter::ParquetWriter(io::ByteSink&, std::vector<ParquetColumnSpec>, std::vector<KeyValue>,
                             ParquetWriterOptions) {
  refuse("writing a Parquet file");
}
ParquetWriter::~ParquetWriter() = default;
// No ParquetWriter exists in this build (its constructor throws); defined for the linker.
void ParquetWriter::write_row_group(std::span<const Column>) { refuse("writing a Parquet file"); }
void ParquetWriter::finish() { refuse("writing a Parquet file"); }

}  // namespace tessera::columnar
