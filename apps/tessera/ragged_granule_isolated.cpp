// `ragged build` reads its HDF5 granules in a child process (isolated.hpp): libhdf5 reads the
// granule's structure and any chunk tessera does not decode itself, and a damaged granule can
// make it crash or loop. The child runs interop::read_granule and sends each block of rows back
// as it is read: a small header (counts, the names of the extra columns, the dropped-row counts)
// and then the columns' raw values, written from and read into the blocks' own vectors, so a
// row costs two kernel copies and no serialization. A crash names the granule; a child that
// sends nothing for kGranuleSilence is stopped.
#include <algorithm>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "isolated.hpp"
#include "ragged_granule_isolated.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/detect.hpp"
#include "tessera/interop/granule.hpp"

namespace tessera::cli {
namespace {

// Long enough for a granule whose every row is filtered out (nothing is sent until its end).
constexpr auto kGranuleSilence = std::chrono::seconds(600);

template <typename T>
std::span<const std::byte> bytes_of(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

// The columns of a block in wire order: lat, lon, value, weight, sigma, time, then the extras.
template <typename Block, typename Visit>
void for_each_column(Block& b, const std::vector<std::string>& extra, Visit&& visit) {
  visit(b.lat);
  visit(b.lon);
  visit(b.value);
  visit(b.weight);
  visit(b.sigma);
  visit(b.time);
  for (const std::string& name : extra) visit(b.extra[name]);
}

void send_block(ChildChannel& channel, ragged::build::PointBlock& block) {
  Wire header;
  header.put(block.file);
  header.put(block.first_row);
  std::vector<std::string> extra;
  for (const auto& [name, values] : block.extra) extra.push_back(name);
  header.put(extra);
  std::vector<std::string> reasons;
  for (const auto& [reason, rows] : block.dropped) reasons.push_back(reason);
  header.put(reasons);
  for (const auto& [reason, rows] : block.dropped) header.put(rows);
  for_each_column(block, extra, [&](const auto& column) { header.put(static_cast<std::uint64_t>(column.size())); });
  const std::uint64_t header_size = header.bytes().size();
  std::vector<std::span<const std::byte>> parts = {std::as_bytes(std::span(&header_size, 1)),
                                                   std::as_bytes(std::span(header.bytes()))};
  for_each_column(block, extra, [&](const auto& column) { parts.push_back(bytes_of(column)); });
  channel.send(parts);
}

void receive_block(ParentChannel& channel, ragged::build::PointBlock& block) {
  std::uint64_t header_size = 0;
  channel.read(std::as_writable_bytes(std::span(&header_size, 1)));
  if (header_size > channel.left()) throw Error("granule reader: block header truncated");
  std::string header_bytes(static_cast<std::size_t>(header_size), '\0');
  channel.read(std::as_writable_bytes(std::span(header_bytes)));
  Unwire header(header_bytes);
  block.clear();
  block.file = static_cast<std::size_t>(header.u64());
  block.first_row = header.u64();
  const std::vector<std::string> extra = header.strings();
  const std::vector<std::string> reasons = header.strings();
  for (const std::string& reason : reasons) block.dropped[reason] = header.u64();
  for_each_column(block, extra, [&](auto& column) {
    const std::uint64_t n = header.u64();
    if (n > channel.left() / sizeof(column[0])) throw Error("granule reader: block truncated");
    column.resize(static_cast<std::size_t>(n));
    channel.read(std::as_writable_bytes(std::span(column)));
  });
}

}  // namespace

GranuleReader::GranuleReader(ragged::zagg::GranulePlan plan, std::vector<std::string> inputs, unsigned readers)
    : plan_(std::move(plan)), inputs_(std::move(inputs)) {
  const auto serve = [this](std::string_view request, ChildChannel& channel) {
    Unwire r(request);
    const std::string granule = r.str();
    const auto file = static_cast<std::size_t>(r.u64());
    const auto rows = static_cast<std::size_t>(r.u64());
    (void)interop::read_granule(granule, plan_, file, rows,
                                [&](ragged::build::PointBlock& b) { send_block(channel, b); });
  };
  for (unsigned i = 0; i < std::max(1u, readers); ++i) {
    workers_.push_back(
        std::make_unique<IsolatedWorker>(serve, IsolationLimits{kGranuleSilence, "reading the granule"}));
    workers_.back()->start();  // now, before the build has allocated anything the two would share
  }
  working_on_.resize(workers_.size());
}

void GranuleReader::begin(std::size_t file, const std::string& path, std::size_t block_rows) {
  const auto idle = std::find(working_on_.begin(), working_on_.end(), std::nullopt);
  const auto w = static_cast<std::size_t>(idle - working_on_.begin());
  Wire request;
  request.put(path);
  request.put(static_cast<std::uint64_t>(file));
  request.put(static_cast<std::uint64_t>(block_rows));
  workers_[w]->begin(path, request.bytes());
  working_on_[w] = file;
}

bool GranuleReader::read(const std::string& path, std::size_t file, std::size_t block_rows,
                         const ragged::build::PointSink& sink) {
  auto has = [&](std::size_t f) { return std::find(working_on_.begin(), working_on_.end(), f) != working_on_.end(); };
  if (!has(file)) {
    if (!interop::is_hdf5_file(path)) return false;
    begin(file, path, block_rows);
  }
  // The next granules on the idle readers.
  for (std::size_t next = file + 1;
       next < inputs_.size() && std::find(working_on_.begin(), working_on_.end(), std::nullopt) != working_on_.end();
       ++next)
    if (!has(next) && interop::is_hdf5_file(inputs_[next])) begin(next, inputs_[next], block_rows);
  const auto w =
      static_cast<std::size_t>(std::find(working_on_.begin(), working_on_.end(), file) - working_on_.begin());
  ragged::build::PointBlock block;
  working_on_[w].reset();  // whatever happens below, this reader is done with the request
  workers_[w]->finish(path, [&](ParentChannel& channel) {
    receive_block(channel, block);
    sink(block);
  });
  return true;
}

}  // namespace tessera::cli
