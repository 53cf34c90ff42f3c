#include "tessera/image/quicklook.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

#include "tessera/core/error.hpp"

namespace tessera::image {
namespace {

constexpr std::int64_t kBarWidth = 20;
constexpr std::int64_t kGap = 14;
constexpr std::int64_t kTickLength = 4;

bool counts(double v, bool log_scale) { return std::isfinite(v) && (!log_scale || v > 0); }

// The value drawn for display pixel (r, c): the mean of the counted values of its block when the
// array is reduced, NaN when none counts.
struct Grid {
  std::uint64_t rows, cols, shrink;  // display rows/cols and the block side they average
  std::vector<double> values;
};

Grid reduce(std::span<const double> values, std::uint64_t rows, std::uint64_t cols, const QuicklookOptions& o) {
  const std::uint64_t longest = std::max(rows, cols);
  const std::uint64_t shrink = longest > o.max_side ? (longest + o.max_side - 1) / o.max_side : 1;
  Grid g{(rows + shrink - 1) / shrink, (cols + shrink - 1) / shrink, shrink, {}};
  if (shrink == 1) {
    g.values.assign(values.begin(), values.end());
    return g;
  }
  std::vector<double> sum(g.rows * g.cols, 0.0);
  std::vector<std::uint32_t> n(g.rows * g.cols, 0);
  for (std::uint64_t r = 0; r < rows; ++r)
    for (std::uint64_t c = 0; c < cols; ++c) {
      const double v = values[r * cols + c];
      if (!counts(v, o.log_scale)) continue;
      const std::uint64_t i = (r / shrink) * g.cols + c / shrink;
      sum[i] += v;
      ++n[i];
    }
  g.values.resize(sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i)
    g.values[i] = n[i] ? sum[i] / n[i] : std::numeric_limits<double>::quiet_NaN();
  return g;
}

// Where v sits between low and high on the colour bar, in [0, 1].
double position(double v, double low, double high, bool log_scale) {
  if (log_scale) return (std::log10(v) - std::log10(low)) / (std::log10(high) - std::log10(low));
  return (v - low) / (high - low);
}

double value_at(double t, double low, double high, bool log_scale) {
  if (log_scale) return std::pow(10.0, std::log10(low) + t * (std::log10(high) - std::log10(low)));
  return low + t * (high - low);
}

}  // namespace

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", value == 0 ? 0.0 : value);  // no "-0"
  return text;
}

Quicklook render_quicklook(std::span<const double> values, std::uint64_t rows, std::uint64_t cols,
                           const QuicklookOptions& o) {
  if (rows == 0 || cols == 0 || values.size() != rows * cols)
    throw UsageError("a quicklook needs a non-empty 2-D array (got " + std::to_string(rows) + " x " +
                     std::to_string(cols) + ")");
  if (o.max_side == 0 || o.max_side > 8192) throw UsageError("quicklook side limit must be 1..8192");
  Quicklook out{Raster(1, 1), 0, 0, 0};
  // The range: the caller's ends, else the counted values' extremes.
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const double v : values) {
    if (!counts(v, o.log_scale)) {
      ++out.missing;
      continue;
    }
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (out.missing == values.size()) lo = hi = o.log_scale ? 1.0 : 0.0;  // nothing to colour
  lo = o.low.value_or(lo);
  hi = o.high.value_or(hi);
  if (o.low && o.high && !(lo < hi))
    throw UsageError("the colour range needs low < high (got " + tick_label(lo) + ", " + tick_label(hi) + ")");
  if (o.log_scale && lo <= 0)
    throw UsageError("a log colour scale needs a positive low end (got " + tick_label(lo) + ")");
  if (!(lo < hi)) {  // one value everywhere: centre it on the bar
    const double half = lo == 0 ? 0.5 : std::abs(lo) * 0.5;
    lo = o.log_scale ? lo / 2 : lo - half;
    hi = o.log_scale ? hi * 2 : hi + half;
  }
  out.low = lo;
  out.high = hi;

  const Grid g = reduce(values, rows, cols, o);
  const std::uint64_t magnify = std::max<std::uint64_t>(1, o.min_side / std::max(g.rows, g.cols));
  const auto image_w = static_cast<std::int64_t>(g.cols * magnify);
  const auto image_h = static_cast<std::int64_t>(g.rows * magnify);

  // Layout: title, then the image with the colour bar and its labels to the right.
  const int ticks = image_h >= 5 * (text_height(kLabelScale) + 6) ? 5 : 2;
  std::vector<std::string> labels;
  std::int64_t label_w = 0;
  for (int k = 0; k < ticks; ++k) {
    labels.push_back(tick_label(value_at(static_cast<double>(k) / (ticks - 1), lo, hi, o.log_scale)));
    label_w = std::max(label_w, text_width(labels.back(), kLabelScale));
  }
  const std::int64_t image_x = kMargin, image_y = kMargin + (o.title.empty() ? 0 : text_height(kLabelScale) + 8);
  const std::int64_t bar_x = image_x + image_w + kGap;
  const std::int64_t width = std::max(bar_x + kBarWidth + kTickLength + 4 + label_w + kMargin,
                                      kMargin + text_width(o.title, kLabelScale) + kMargin);
  const std::int64_t height = image_y + std::max<std::int64_t>(image_h, 2 * text_height(kLabelScale)) + kMargin;
  Raster picture(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height));
  if (!o.title.empty()) picture.draw_text(kMargin, kMargin, o.title, kBlack, kLabelScale);

  for (std::uint64_t r = 0; r < g.rows; ++r) {
    const std::uint64_t shown_row = o.origin_top ? r : g.rows - 1 - r;
    for (std::uint64_t c = 0; c < g.cols; ++c) {
      const double v = g.values[r * g.cols + c];
      const Rgba color =
          counts(v, o.log_scale) ? colormap_at(o.colormap, position(v, lo, hi, o.log_scale)) : kTransparent;
      picture.fill_rect(image_x + static_cast<std::int64_t>(c * magnify),
                        image_y + static_cast<std::int64_t>(shown_row * magnify), static_cast<std::int64_t>(magnify),
                        static_cast<std::int64_t>(magnify), color);
    }
  }
  picture.outline_rect(image_x - 1, image_y - 1, image_w + 2, image_h + 2, kBlack);

  // The colour bar: high at the top.
  for (std::int64_t y = 0; y < image_h; ++y) {
    const double t = image_h == 1 ? 1.0 : 1.0 - static_cast<double>(y) / static_cast<double>(image_h - 1);
    picture.fill_rect(bar_x, image_y + y, kBarWidth, 1, colormap_at(o.colormap, t));
  }
  picture.outline_rect(bar_x - 1, image_y - 1, kBarWidth + 2, image_h + 2, kBlack);
  for (int k = 0; k < ticks; ++k) {
    const std::int64_t y = image_y + (image_h - 1) - (image_h - 1) * k / (ticks - 1);
    picture.fill_rect(bar_x + kBarWidth, y, kTickLength, 1, kBlack);
    const std::int64_t text_y = std::clamp<std::int64_t>(
        y - text_height(kLabelScale) / 2, image_y - 2,
        image_y + std::max<std::int64_t>(image_h, 2 * text_height(kLabelScale)) - text_height(kLabelScale));
    picture.draw_text(bar_x + kBarWidth + kTickLength + 4, text_y, labels[static_cast<std::size_t>(k)], kBlack,
                      kLabelScale);
  }
  out.picture = std::move(picture);
  return out;
}

}  // namespace tessera::image
