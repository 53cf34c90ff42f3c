// `tessera tet convert` as a library call (spec tet.md §6.6): HDF5, NetCDF or Zarr v3 → one
// `.tet` file (raw by default, or zstd), streamed through TetWriter in bounded units of tiles (read in parallel,
// written while the next unit is read), with the convert history row and the imported metadata in the footer. The
// output is written atomically: on any error nothing appears at the output path.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tessera/interop/detect.hpp"
#include "tessera/interop/source.hpp"
#include "tessera/io/publish.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/format.hpp"

namespace tessera::interop {

struct ConvertProgress {
  std::uint64_t chunks_done = 0;
  std::uint64_t chunks_total = 0;
  std::string dataset;  // the dataset being written
};

struct ConvertOptions {
  // Threads reading, converting and writing tiles: 0 = available parallelism; capped at
  // kMaxConvertJobs.
  unsigned jobs = 0;
  // Called on the calling thread after every unit of tiles is written. (Every member has a default
  // initializer so designated initializers may name any subset.)
  std::function<void(const ConvertProgress&)> progress{};
  // History row time and metadata.file.created_at (Unix seconds as text); empty = SOURCE_DATE_EPOCH
  // if set, else now (core/civil_date.hpp output_time).
  std::string at{};
  // Bound on the output bytes read before they are written (one unit; two are in flight). A tile
  // larger than this — the whole-array tile of an unchunked or CF-packed variable — is streamed in
  // parts; a unit still holds at least one whole source chunk. 0 = the environment variable
  // TESSERA_TET_CONVERT_UNIT_BYTES (a decimal byte count, for tests and benchmarks) when set,
  // else 2 MiB per job, at least 4 MiB and at most 64 MiB. The output bytes do not depend on it.
  std::uint64_t unit_bytes = 0;
  // Keep the stored values of unpacked float arrays that equal their `_FillValue` /
  // `missing_value` (the reference's output) instead of writing NaN (`--keep-fill`).
  bool keep_fill = false;
  // Codec and zstd level of every dataset (`--codec`, `--level`). Raw output is the reference's
  // byte for byte; zstd tiles are compressed on the `jobs` threads while the next ones are read.
  tet::Codec codec = tet::Codec::Raw;
  int level = 3;
  // Chunk shapes (`--chunks`): `chunks` by array name, else `default_chunks` for every array of
  // its rank, else the source's chunking (§6.6). Extents above the array's are capped.
  std::map<std::string, std::vector<std::uint64_t>> chunks{};
  std::vector<std::uint64_t> default_chunks{};
  // The arrays converted, by name: `only` (`--var`; empty = all) minus `exclude` (`--exclude`).
  // A name the input does not have is a UsageError listing the names it has.
  std::vector<std::string> only{}, exclude{};
};

inline constexpr unsigned kMaxConvertJobs = 64;

struct ConvertedDataset {
  std::string name;
  std::vector<std::uint64_t> dims;
};

struct ConvertReport {
  std::string input;
  std::string output;
  std::vector<ConvertedDataset> datasets;
  tet::HistoryRow history;
  double elapsed_secs = 0.0;
  std::optional<io::PublishReport> upload;  // set by the CLI for a bucket output
};

// One dataset as it will be written: the `.tet` element type and chunk shape chosen for a source
// array (§6.6 "Types", "Chunking", "CF packing").
struct ConvertPlan {
  DType dtype = DType::F32;
  std::vector<std::uint64_t> chunk_shape;
};
ConvertPlan plan_dataset(const SourceArray& array);

// Detects the input format and converts. Throws UsageError
// (`no supported numeric datasets found in {path}`), the detection errors, and the readers' errors.
ConvertReport convert_to_tet(const std::string& input, const std::string& output, const ConvertOptions& options = {});
// Converts an already opened source; `format` selects the history row's source.
ConvertReport convert_to_tet(const ArraySource& source, InputFormat format, const std::string& output,
                             const ConvertOptions& options = {});

// The report as the CLI prints it: pretty JSON {input, output, dataset_count, dataset_names,
// datasets: [{name, ndim, dims}], history: [{op, source, at}], elapsed_secs}, and for a bucket
// output `upload: {objects, bytes, seconds}` (the publication, docs/remote.md).
std::string report_json(const ConvertReport& report);

}  // namespace tessera::interop
