#include "tessera/tet/quicklook.hpp"

#include <cstring>
#include <type_traits>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"

namespace tessera::tet {
namespace {

std::string axis_text(const AxisRange& r, std::uint64_t extent) {
  if (r.count() == 1) return std::to_string(r.start);
  if (r.start == 0 && r.stop >= extent && r.step == 1) return ":";
  std::string text = (r.start ? std::to_string(r.start) : "") + ":" + (r.stop < extent ? std::to_string(r.stop) : "");
  if (r.step != 1) text += ":" + std::to_string(r.step);
  return text;
}

// The dataset's raw bytes (little-endian, as read_box returns them) as doubles.
std::vector<double> to_doubles(DType dtype, const std::vector<std::byte>& raw, std::uint64_t count) {
  std::vector<double> out(count);
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    for (std::uint64_t i = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, std::uint16_t>) {
        out[i] = dtype == DType::F16 ? half_to_double(v) : static_cast<double>(v);
      } else {
        out[i] = static_cast<double>(v);
      }
    }
  });
  return out;
}

}  // namespace

std::string describe_box(const Dataset& dataset, const Box& box) {
  std::string text = dataset.name + "[";
  for (std::size_t axis = 0; axis < box.size(); ++axis)
    text += (axis ? ", " : "") + axis_text(box[axis], dataset.shape[axis]);
  return text + "]";
}

image::Quicklook render_quicklook(const TetFile& file, const Dataset& dataset, const Box& box,
                                  image::QuicklookOptions options, const ReadOptions& read) {
  std::vector<std::uint64_t> kept;  // extents of the axes with more than one index
  std::uint64_t count = 1;
  for (const AxisRange& r : box) {
    count *= r.count();
    if (r.count() > 1) kept.push_back(r.count());
  }
  if (count == 0) throw UsageError("the selection of " + describe_box(dataset, box) + " is empty");
  if (kept.size() > 2)
    throw UsageError("a PNG shows two axes, and " + describe_box(dataset, box) + " keeps " +
                     std::to_string(kept.size()) + "; select one index on the others, e.g. {\"start\":0,\"stop\":1}");
  if (count > kQuicklookMaxValues)
    throw LimitError("a PNG of " + describe_box(dataset, box) + " would read " + std::to_string(count) +
                     " values, more than 2^26; add a step to the selection");
  const std::uint64_t rows = kept.size() == 2 ? kept[0] : 1;
  const std::uint64_t cols = kept.empty() ? 1 : kept.back();
  std::vector<std::byte> raw(count * dataset.element_size());
  file.read_box(dataset, box, raw, read);
  if (options.title.empty())
    options.title = describe_box(dataset, box) + " (" + std::string(dtype_info(dataset.dtype).name) + ")";
  const std::vector<double> values = to_doubles(dataset.dtype, raw, count);
  return image::render_quicklook(values, rows, cols, options);
}

}  // namespace tessera::tet
