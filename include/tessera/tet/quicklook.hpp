// A picture of a 2-D slice of a `.tet` dataset (`tet cat --png`): the selection's axes of
// length 1 are dropped, the two left become rows and columns, and the values are drawn with
// image::render_quicklook (colour bar, title naming dataset, selection and dtype).
#pragma once

#include <cstdint>
#include <string>

#include "tessera/image/quicklook.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::tet {

// The most values a quicklook reads (8 bytes each as doubles); larger slices need a step.
inline constexpr std::uint64_t kQuicklookMaxValues = std::uint64_t{1} << 26;

// `box` must leave exactly two axes (or one, drawn as a single row) with more than one index.
// Throws UsageError naming the shape otherwise, LimitError above kQuicklookMaxValues. An empty
// options.title is replaced by `<dataset>[<selection>] (<dtype>)`.
image::Quicklook render_quicklook(const TetFile& file, const Dataset& dataset, const Box& box,
                                  image::QuicklookOptions options, const ReadOptions& read = {});

// `name[0, :, 10:20:2]`: how the title shows a box of a dataset.
std::string describe_box(const Dataset& dataset, const Box& box);

}  // namespace tessera::tet
