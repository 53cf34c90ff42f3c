// HDF5 granules of `ragged build --config`, read in a child process (ragged_granule_isolated.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "isolated.hpp"
#include "tessera/ragged/build.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::cli {

// interop::read_granule in a reader process forked at the first granule and kept for the next
// ones. Calls come one at a time (the build reads its inputs in order); hold it by pointer, as
// the reader process refers to it.
class GranuleReader {
 public:
  explicit GranuleReader(ragged::zagg::GranulePlan plan);
  GranuleReader(const GranuleReader&) = delete;
  GranuleReader& operator=(const GranuleReader&) = delete;

  // False, before anything is read, when `path` is not HDF5; FormatError naming the granule when
  // libhdf5 crashes on it or the reader stops sending rows.
  bool read(const std::string& path, std::size_t file, std::size_t block_rows, const ragged::build::PointSink& sink);

 private:
  ragged::zagg::GranulePlan plan_;
  IsolatedWorker worker_;
};

}  // namespace tessera::cli
