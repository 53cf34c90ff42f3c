#include "tessera/image/bar_chart.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/error.hpp"
#include "tessera/image/quicklook.hpp"

namespace tessera::image {
namespace {

constexpr int kTextScale = 2;
constexpr std::int64_t kPad = 10;
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
  std::int64_t label_w = text_width("0", kTextScale);
  for (const BarPanel& p : panels) {
    bars.push_back(columns_of(p.values, columns));
    double top = 0;
    for (const double v : p.values)
      if (std::isfinite(v)) top = std::max(top, v);
    tops.push_back(top);
    label_w = std::max(label_w, text_width(tick_label(top), kTextScale));
  }
  const std::int64_t line = text_height(kTextScale) + 6;
  const std::int64_t plot_x = kPad + label_w + 8;
  const std::int64_t panel_block = line + kPanelHeight + kPanelGap;
  const std::int64_t width = std::max(plot_x + plot_w + kPad, kPad + text_width(title, kTextScale) + kPad);
  const std::int64_t height = kPad + line + 4 + static_cast<std::int64_t>(panels.size()) * panel_block + 2 * line + kPad;
  Raster r(static_cast<std::uint32_t>(width), static_cast<std::uint32_t>(height));
  r.draw_text(kPad, kPad, title, kBlack, kTextScale);

  std::int64_t y = kPad + line + 4;
  for (std::size_t k = 0; k < panels.size(); ++k) {
    r.draw_text(plot_x, y, panels[k].title, kBlack, kTextScale);
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
    r.draw_text(plot_x - 6 - text_width(top, kTextScale), base - kPanelHeight - text_height(kTextScale) / 2, top, kBlack, kTextScale);
    r.draw_text(plot_x - 6 - text_width("0", kTextScale), base - text_height(kTextScale) / 2, "0", kBlack, kTextScale);
    y += panel_block;
  }
  // The shared x axis: first and last position, and what it counts.
  const std::string last = std::to_string(n - 1);
  r.draw_text(plot_x, y - kPanelGap + 4, "0", kBlack, kTextScale);
  r.draw_text(plot_x + plot_w - text_width(last, kTextScale), y - kPanelGap + 4, last, kBlack, kTextScale);
  r.draw_text(plot_x + (plot_w - text_width(x_label, kTextScale)) / 2, y - kPanelGap + 4 + line, x_label, kBlack, kTextScale);
  return r;
}

}  // namespace tessera::image
