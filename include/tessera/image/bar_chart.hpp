// Summary charts: one or more panels of bars over a shared x axis (e.g. per-tile statistics of a
// deltacells dataset, `cells info --png`), drawn on an image::Raster in the built-in font.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tessera/image/raster.hpp"

namespace tessera::image {

struct BarPanel {
  std::string title;           // drawn above the panel, e.g. "cells per tile"
  std::vector<double> values;  // one bar per x position; every panel has as many
};

// Bars are at least one pixel wide; with more values than `max_bars` columns, each column shows
// the mean of its run of values. The y axis of each panel runs from 0 to its largest value.
// UsageError when there are no panels, no values, or the panels differ in length.
Raster render_bar_panels(const std::string& title, const std::string& x_label, std::span<const BarPanel> panels,
                         std::size_t max_bars = 1200);

}  // namespace tessera::image
