#include "tessera/interop/granule.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/interop/detect.hpp"
#include "tessera/interop/hdf5_file.hpp"
#include "tessera/ragged/toc.hpp"

namespace tessera::interop {
namespace {

using ragged::zagg::RowFilter;

std::string substitute(const std::string& path, const std::string& group) {
  std::string out = path;
  for (std::size_t at = out.find("{group}"); at != std::string::npos; at = out.find("{group}", at + group.size()))
    out.replace(at, 7, group);
  return out;
}

bool passes(RowFilter::Op op, double v, double target) {
  switch (op) {
    case RowFilter::Op::Eq: return v == target;
    case RowFilter::Op::Ne: return v != target;
    case RowFilter::Op::Lt: return v < target;
    case RowFilter::Op::Le: return v <= target;
    case RowFilter::Op::Gt: return v > target;
    case RowFilter::Op::Ge: return v >= target;
  }
  return false;
}

// One 1-D dataset of a beam (or one column of a 2-D one), read in slabs as double.
class Column {
 public:
  Column(const Hdf5File& file, const std::string& path, std::optional<std::uint64_t> column)
      : path_(path), dataset_(file.dataset(path)), column_(column), fill_(file.number_attribute(path, "_FillValue")) {
    const auto& shape = dataset_.shape();
    const std::size_t rank = column ? 2 : 1;
    if (shape.size() != rank)
      throw FormatError(file.path() + ": dataset \"" + path + "\" has " + std::to_string(shape.size()) +
                            " dimensions; the config reads it as " + (column ? "a 2-D dataset's column" : "1-D"),
                        file.path(), path);
    if (column && *column >= shape[1])
      throw FormatError(file.path() + ": dataset \"" + path + "\" has " + std::to_string(shape[1]) +
                            " columns; the config reads column " + std::to_string(*column),
                        file.path(), path);
    if (dataset_.element() != Hdf5Element::Integer && dataset_.element() != Hdf5Element::Float)
      throw FormatError(file.path() + ": dataset \"" + path + "\" holds " + dataset_.type_name() + ", not numbers",
                        file.path(), path);
  }
  std::uint64_t rows() const { return dataset_.shape()[0]; }
  const std::string& path() const { return path_; }
  const std::optional<double>& fill() const { return fill_; }
  void read(std::uint64_t first, std::size_t n, std::vector<double>& out) const {
    out.resize(n);
    if (column_) {
      const std::uint64_t origin[2] = {first, *column_}, extent[2] = {n, 1};
      dataset_.read(origin, extent, std::span<double>(out));
    } else {
      const std::uint64_t origin[1] = {first}, extent[1] = {n};
      dataset_.read(origin, extent, std::span<double>(out));
    }
  }

 private:
  std::string path_;
  Hdf5Dataset dataset_;
  std::optional<std::uint64_t> column_;
  std::optional<double> fill_;
};

constexpr const char* kGpsEpoch = "ancillary_data/atlas_sdp_gps_epoch";

// The toc word of a GPS time in seconds (0, refused as bad_time, outside the toc range or NaN).
std::uint64_t toc_of(double gps_seconds) {
  const double ns = std::round(gps_seconds * 1e9);
  if (!(std::abs(ns) < 9.2e18)) return 0;
  try {
    return ragged::toc::encode_timestamp(ragged::toc::from_gps_ns(static_cast<std::int64_t>(ns)));
  } catch (const Error&) {
    return 0;
  }
}

}  // namespace

bool read_granule(const std::string& path, const ragged::zagg::GranulePlan& plan, std::size_t file,
                  std::size_t block_rows, const ragged::build::PointSink& sink) {
  if (!is_hdf5_file(path)) return false;
  const Hdf5File h5(path);
  ragged::build::PointBlock block;
  block.file = file;
  block.first_row = 1;
  std::uint64_t row = 0;
  const auto flush = [&] {
    if (block.size() == 0 && block.dropped.empty()) return;
    sink(block);
    block.clear();
    block.first_row = row + 1;
  };
  std::vector<double> lat, lon, value, sigma, seconds;
  // GPS seconds of the times' epoch: the granule's own (ICESat-2's atlas_sdp_gps_epoch) when it
  // has one, else the config's.
  double epoch = plan.time_epoch_gps_seconds;
  if (plan.time && h5.kind(kGpsEpoch) == Hdf5Kind::Dataset) {
    const Hdf5Dataset d = h5.dataset(kGpsEpoch);
    if (d.shape().size() > 1 || (d.shape().size() == 1 && d.shape()[0] != 1))
      throw FormatError(path + ": \"" + std::string(kGpsEpoch) + "\" must hold one value", path, kGpsEpoch);
    const std::uint64_t origin[1] = {0}, extent[1] = {1};
    double value_read = 0;
    d.read(std::span(origin, d.shape().size()), std::span(extent, d.shape().size()), std::span(&value_read, 1));
    epoch = value_read;
  }
  std::vector<std::vector<double>> filter_values(plan.filters.size()), extra_values(plan.columns.size());
  std::vector<std::vector<double>*> extra_out(plan.columns.size());
  for (const std::string& group : plan.groups) {
    const std::string lat_path = substitute(plan.latitude, group);
    if (h5.kind(lat_path) == Hdf5Kind::Missing) continue;  // this beam is not in the granule
    const Column lat_col(h5, lat_path, std::nullopt), lon_col(h5, substitute(plan.longitude, group), std::nullopt);
    const Column value_col(h5, substitute(plan.value, group), std::nullopt);
    std::optional<Column> sigma_col, time_col;
    if (plan.sigma) sigma_col.emplace(h5, substitute(*plan.sigma, group), std::nullopt);
    if (plan.time) time_col.emplace(h5, substitute(*plan.time, group), std::nullopt);
    std::vector<Column> filter_cols, extra_cols;
    for (const RowFilter& f : plan.filters) filter_cols.emplace_back(h5, substitute(f.dataset, group), f.column);
    for (const auto& c : plan.columns) extra_cols.emplace_back(h5, substitute(c.dataset, group), c.column);
    const std::uint64_t rows = lat_col.rows();
    std::vector<const Column*> all = {&lon_col, &value_col};
    if (sigma_col) all.push_back(&*sigma_col);
    if (time_col) all.push_back(&*time_col);
    for (const Column& c : filter_cols) all.push_back(&c);
    for (const Column& c : extra_cols) all.push_back(&c);
    for (const Column* c : all)
      if (c->rows() != rows)
        throw FormatError(path + ": \"" + c->path() + "\" has " + std::to_string(c->rows()) + " rows, \"" + lat_path +
                              "\" " + std::to_string(rows),
                          path, c->path());
    for (std::uint64_t first = 0; first < rows; first += block_rows) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(block_rows, rows - first));
      lat_col.read(first, n, lat);
      lon_col.read(first, n, lon);
      value_col.read(first, n, value);
      if (sigma_col) sigma_col->read(first, n, sigma);
      if (time_col) time_col->read(first, n, seconds);
      for (std::size_t f = 0; f < filter_cols.size(); ++f) filter_cols[f].read(first, n, filter_values[f]);
      for (std::size_t e = 0; e < extra_cols.size(); ++e) {
        extra_cols[e].read(first, n, extra_values[e]);
        extra_out[e] = &block.extra[plan.columns[e].name];  // afresh: a flushed block's columns were moved out
      }
      for (std::size_t i = 0; i < n; ++i) {
        ++row;
        bool kept = true;
        for (std::size_t f = 0; f < plan.filters.size() && kept; ++f)
          if (!passes(plan.filters[f].op, filter_values[f][i], plan.filters[f].value)) {
            ++block.dropped[plan.filters[f].key.ends_with("quality_filter") ? "quality_filter" : "filtered"];
            kept = false;
          }
        if (!kept) continue;
        if ((value_col.fill() && value[i] == *value_col.fill()) ||
            (sigma_col && sigma_col->fill() && sigma[i] == *sigma_col->fill())) {
          ++block.dropped["fill_value"];
          continue;
        }
        block.lat.push_back(lat[i]);
        block.lon.push_back(lon[i]);
        block.value.push_back(value[i]);
        if (sigma_col) block.sigma.push_back(sigma[i]);
        if (time_col) block.time.push_back(toc_of(epoch + seconds[i]));
        for (std::size_t e = 0; e < extra_cols.size(); ++e) extra_out[e]->push_back(extra_values[e][i]);
      }
      if (block.size() >= block_rows) flush();
    }
  }
  flush();
  return true;
}

}  // namespace tessera::interop
