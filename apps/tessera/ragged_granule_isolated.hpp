// HDF5 granules of `ragged build --config`, read in a child process (ragged_granule_isolated.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isolated.hpp"
#include "tessera/ragged/build.hpp"
#include "tessera/ragged/zagg_config.hpp"

namespace tessera::cli {

// interop::read_granule in reader processes forked before the build allocates and kept for the
// whole build. With several readers, the granules after the one asked for are begun on the idle
// readers, which work ahead while the build consumes this one (each holding at most a bounded
// queue of blocks), so granules are read in parallel and still consumed in input order. Calls
// come one at a time (the build reads its inputs in order); hold it by pointer, as the reader
// processes refer to it.
class GranuleReader {
 public:
  // `inputs`: the build's inputs, in order (those after the one asked for are read ahead).
  GranuleReader(ragged::zagg::GranulePlan plan, std::vector<std::string> inputs, unsigned readers);
  GranuleReader(const GranuleReader&) = delete;
  GranuleReader& operator=(const GranuleReader&) = delete;

  // False, before anything is read, when `path` is not HDF5; FormatError naming the granule when
  // libhdf5 crashes on it or its reader stops sending rows.
  bool read(const std::string& path, std::size_t file, std::size_t block_rows, const ragged::build::PointSink& sink);

 private:
  void begin(std::size_t file, const std::string& path, std::size_t block_rows);

  ragged::zagg::GranulePlan plan_;
  std::vector<std::string> inputs_;
  std::vector<std::unique_ptr<IsolatedWorker>> workers_;
  std::vector<std::optional<std::size_t>> working_on_;  // per worker: the file it was asked for
};

}  // namespace tessera::cli
