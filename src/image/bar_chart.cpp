#include "tessera/image/bar_chart.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/image/quicklook.hpp"

namespace tessera::image {
namespace {

constexpr std::int64_t kPanelHeight = 120;
constexpr std::int64_t kPanelGap = 12;
constexpr Rgba kBar{0x3b, 0x52, 0x8b, 255};  // a viridis blue
constexpr Rgba kGrid{220, 220, 220, 255};

// The values as `columns` bars: each column the mean of its run of values.
std::vector<double> columns_of(const std::vector<double>& values, std::size_t columns) {
  if (values.size() <= columns) return values;
  std::vector<double> out(columns, 0.0);
  for (std::size_t c = 0; c < columns; ++c) {
    const std::size_t begin = c * values.size() / columns, end = (c + 1) * values.size() / columns;
    double sum = 0;
    for (std::size_t i = begin; i < end; ++i) sum += values[i];
    out[c] = end > begin ? sum / static_cast<double>(end - begin) : 0.0;
  }
  return out;
}

}  // namespace

Raster render_bar_panels(const std::string& title, const std::string& x_label, std::span<const BarPanel> panels,
                         std::size_t max_bars) {
  if (panels.empty() || panels.front().values.empty()) throw UsageError("a bar chart needs at least one value");
  const std::size_t n = panels.front().values.size();
  for (const BarPanel& p : panels)
    if (p.values.size() != n) throw UsageError("bar chart panels differ in length");
  const std::size_t columns = std::min(n, std::max<std::size_t>(max_bars, 1));
  const std::int64_t bar_w = std::max<std::int64_t>(1, 600 / static_cast<std::int64_t>(columns));
  const std::int64_t plot_w = bar_w * static_cast<std::int64_t>(columns);

  std::vector<std::vector<double>> bars;
  std::vector<double> tops;
  std::int64_t label_w = text_width("0", kLabelScale);
  for (const BarPanel& p : panels) {
    bars.push_back(columns_of(p.values, columns));
    double top = 0;
    for (const double v : p.values)
      if (std::isfinite(v)) top = std::max(top, v);
    tops.push_back(top);
    label_w = std::max(label_w, text_width(tick_label(top), kLabelScale));
  }
  const std::int64_t line = text_height(kLabelScale) + 6;
  const std::int64_t plot_x = kMargin + label_w + 8;
  const std::int64_t panel_block = line + kPanelHeight + kPanelGap;
  const std::int64_t width = std::max(plot_x + plot_w + kMargin, kMargin + text_width(title, kLabelScale) + kMargin);
  const std::int64_t height =
      kMargin + line + 4 + static_cast<std::int64_t>(panels.size()) * panel_block + 2 * line + kMargin;
  Raster r(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height));
  r.draw_text(kMargin, kMargin, title, kBlack, kLabelScale);

  std::int64_t y = kMargin + line + 4;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    r.draw_text(plot_x, y, panels[k].title, kBlack, kLabelScale);
    const std::int64_t base = y + line + kPanelHeight;  // the panel's zero line
    r.fill_rect(plot_x, base - kPanelHeight, plot_w, 1, kGrid);
    r.fill_rect(plot_x, base - kPanelHeight / 2, plot_w, 1, kGrid);
    for (std::size_t c = 0; c < bars[k].size(); ++c) {
      const double v = bars[k][c];
      if (!(v > 0) || tops[k] <= 0) continue;
      const auto h = std::max<std::int64_t>(1, std::llround(std::min(v / tops[k], 1.0) * kPanelHeight));
      // Wide bars keep a pixel of space between them so neighbours stay apart.
      r.fill_rect(plot_x + static_cast<std::int64_t>(c) * bar_w, base - h, bar_w >= 3 ? bar_w - 1 : bar_w, h, kBar);
    }
    r.fill_rect(plot_x - 1, base - kPanelHeight, 1, kPanelHeight + 1, kBlack);  // y axis
    r.fill_rect(plot_x - 1, base, plot_w + 1, 1, kBlack);                       // x axis
    const std::string top = tick_label(tops[k]);
    r.draw_text(plot_x - 6 - text_width(top, kLabelScale), base - kPanelHeight - text_height(kLabelScale) / 2, top,
                kBlack, kLabelScale);
    r.draw_text(plot_x - 6 - text_width("0", kLabelScale), base - text_height(kLabelScale) / 2, "0", kBlack,
                kLabelScale);
    y += panel_block;
  }
  // The shared x axis: first and last position, and what it counts.
  const std::string last = std::to_string(n - 1);
  r.draw_text(plot_x, y - kPanelGap + 4, "0", kBlack, kLabelScale);
  r.draw_text(plot_x + plot_w - text_width(last, kLabelScale), y - kPanelGap + 4, last, kBlack, kLabelScale);
  r.draw_text(plot_x + (plot_w - text_width(x_label, kLabelScale)) / 2, y - kPanelGap + 4 + line, x_label, kBlack,
              kLabelScale);
  return r;
}

}  // namespace tessera::image
