#include "tessera/cells/summary_chart.hpp"

#include <vector>

#include "tessera/image/bar_chart.hpp"

namespace tessera::cells {

image::Raster render_summary_chart(const Manifest& m, const std::string& name) {
  std::vector<image::BarPanel> panels(3);
  panels[0].title = "cells per tile";
  panels[1].title = "nonzeros per cell";
  panels[2].title = "stored bytes per nonzero";
  for (std::size_t t = 0; t < m.n_tiles(); ++t) {
    const double cells = static_cast<double>(m.tile_cells[t]);
    const double nnz = t < m.tile_nnz.size() ? static_cast<double>(m.tile_nnz[t]) : 0.0;
    const double bytes = t < m.tile_bytes.size() ? static_cast<double>(m.tile_bytes[t]) : 0.0;
    panels[0].values.push_back(cells);
    panels[1].values.push_back(cells > 0 ? nnz / cells : 0.0);
    panels[2].values.push_back(nnz > 0 ? bytes / nnz : 0.0);
  }
  const std::string title = name + ": " + std::to_string(m.n_cells) + " cells x " + std::to_string(m.n_genes) +
                            " genes in " + std::to_string(m.n_tiles()) + " tiles";
  return image::render_bar_panels(title, "tile", panels);
}

}  // namespace tessera::cells
