// `tessera ragged tensors STORE FIELD [options]` (spec zagg-ragged.md §8.3): read_tensors with
// every §5.3 option, printed as JSON block summaries (optionally with the tensors), written as
// `.npy` stacks exactly as numpy writes them (`--npy DIR`), or drawn as PNG heatmaps (`--png DIR`).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/image/png.hpp"
#include "tessera/ragged/heatmap.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using codec::json::JsonWriter;
using ragged_cli::word_text;

struct TensorsArgs {
  std::string store, field, field_name;
  std::optional<std::string> shard;
  std::uint32_t n_bins = 128;
  double resolution = 0.5, bottom = 0.05, top = 0.95;
  std::string fit = "raise", dtype = "auto";
  std::optional<int> block_order;
  std::optional<std::string> subtree;
  std::uint64_t max_block_bytes = std::uint64_t{2} << 30;
  bool include_tensors = false, npy_single = false;
  std::optional<std::string> npy_dir, png_dir;
  std::string png_value = "sum", png_scale = "linear", png_origin = "bottom";
  std::uint32_t png_cell_px = 4;
};

DType numpy_dtype(ragged::TensorDType t) {
  switch (t) {
    case ragged::TensorDType::U16: return DType::U16;
    case ragged::TensorDType::U32: return DType::U32;
    case ragged::TensorDType::F32: return DType::F32;
  }
  return DType::U32;
}

void write_file(const fs::path& path, std::span<const std::byte> a, std::span<const std::byte> b = {}) {
  std::vector<std::byte> bytes(a.begin(), a.end());
  bytes.insert(bytes.end(), b.begin(), b.end());
  io::write_file_atomic(path.string(), bytes);
}

// One .npy file: numpy's header for (dtype, shape) followed by the C-order data.
void write_npy(const fs::path& path, DType dtype, const std::vector<std::uint64_t>& shape,
               std::span<const std::byte> data) {
  const std::string header = codec::npy_header(dtype, shape);
  write_file(path, std::as_bytes(std::span(header)), data);
}

void write_npy_outputs(const fs::path& dir, const std::vector<ragged::TensorBlock>& blocks, bool single) {
  if (single && blocks.size() != 1)
    throw UsageError("--npy-single expects exactly one block; read_tensors yielded " + std::to_string(blocks.size()));
  fs::create_directories(dir);
  const std::uint64_t count = blocks.size();
  bool uniform = true;
  for (const auto& b : blocks) uniform = uniform && b.n_bins == blocks.front().n_bins && b.side == blocks.front().side;
  const DType dtype = blocks.empty() ? DType::U32 : numpy_dtype(blocks.front().dtype);
  auto lead = [&](std::vector<std::uint64_t> shape) {
    if (!single) shape.insert(shape.begin(), count);
    return shape;
  };
  const std::uint64_t side = blocks.empty() ? 0 : blocks.front().side;
  if (uniform) {
    std::vector<std::byte> tensors, masks;
    for (const auto& b : blocks) {
      tensors.insert(tensors.end(), b.tensor.begin(), b.tensor.end());
      const auto* m = reinterpret_cast<const std::byte*>(b.mask.data());
      masks.insert(masks.end(), m, m + b.mask.size());
    }
    const std::uint64_t n_bins = blocks.empty() ? 0 : blocks.front().n_bins;
    write_npy(dir / "tensors.npy", dtype, lead({side, side, n_bins}), tensors);
    write_npy(dir / "masks.npy", DType::U8, lead({side, side}), masks);
  } else {
    // Blocks with different bin counts (collapse_bins) cannot stack: one tensor file per block.
    std::vector<std::byte> masks;
    for (std::size_t i = 0; i < blocks.size(); ++i) {
      const auto& b = blocks[i];
      write_npy(dir / ("tensor_" + std::to_string(i) + ".npy"), dtype, {b.side, b.side, b.n_bins}, b.tensor);
      const auto* m = reinterpret_cast<const std::byte*>(b.mask.data());
      masks.insert(masks.end(), m, m + b.mask.size());
    }
    write_npy(dir / "masks.npy", DType::U8, lead({side, side}), masks);
  }
  std::vector<std::byte> windows, mortons;
  for (const auto& b : blocks) {
    append_le<double>(windows, b.offset);
    append_le<double>(windows, b.gain);
    append_le<std::uint64_t>(mortons, b.morton);
  }
  write_npy(dir / "windows.npy", DType::F64, lead({2}), windows);
  write_npy(dir / "morton.npy", DType::U64, single ? std::vector<std::uint64_t>{} : std::vector<std::uint64_t>{count},
            mortons);
}

void write_png_outputs(const fs::path& dir, const std::vector<ragged::TensorBlock>& blocks, const TensorsArgs& a) {
  ragged::HeatmapOptions options;
  ragged::parse_heatmap_value(a.png_value, options);
  if (a.png_scale != "linear" && a.png_scale != "log") throw UsageError("--png-scale must be linear or log");
  if (a.png_origin != "bottom" && a.png_origin != "top") throw UsageError("--png-origin must be bottom or top");
  options.scale = a.png_scale == "log" ? ragged::HeatmapOptions::Scale::Log : ragged::HeatmapOptions::Scale::Linear;
  options.origin_top = a.png_origin == "top";
  options.cell_px = a.png_cell_px;
  fs::create_directories(dir);
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto rgba = ragged::render_heatmap(blocks[i], options);
    const auto width = static_cast<std::uint32_t>(blocks[i].side * options.cell_px);
    write_file(dir / ("block_" + std::to_string(i) + "_" + ragged::morton::to_decimal(blocks[i].morton) + ".png"),
               image::encode_png_rgba(width, width, rgba));
  }
}

double tensor_value(const ragged::TensorBlock& b, std::size_t i) {
  switch (b.dtype) {
    case ragged::TensorDType::U16: return load_le<std::uint16_t>(b.tensor.data() + 2 * i);
    case ragged::TensorDType::U32: return load_le<std::uint32_t>(b.tensor.data() + 4 * i);
    case ragged::TensorDType::F32: return load_le<float>(b.tensor.data() + 4 * i);
  }
  return 0;
}

void write_block(JsonWriter& w, std::size_t i, const ragged::TensorBlock& b, bool include_tensors) {
  w.begin_object();
  w.key("index").value(static_cast<std::uint64_t>(i));
  w.key("morton").value(word_text(b.morton));
  w.key("decimal").value(ragged::morton::to_decimal(b.morton));
  w.key("offset").value(b.offset);
  w.key("gain").value(b.gain);
  w.key("n_bins").value(b.n_bins);
  w.key("side").value(b.side);
  w.key("populated").value(b.populated);
  w.key("observed_empty").value(b.observed_empty);
  w.key("weight_in_window").value(b.weight_in_window);
  if (include_tensors) {
    w.key("mask").begin_array();
    for (std::uint32_t r = 0; r < b.side; ++r) {
      w.begin_array();
      for (std::uint32_t c = 0; c < b.side; ++c) w.value(b.mask[r * b.side + c]);
      w.end_array();
    }
    w.end_array();
    w.key("tensor").begin_array();
    for (std::uint32_t r = 0; r < b.side; ++r) {
      w.begin_array();
      for (std::uint32_t c = 0; c < b.side; ++c) {
        w.begin_array();
        const std::size_t base = (std::size_t{r} * b.side + c) * b.n_bins;
        for (std::uint32_t k = 0; k < b.n_bins; ++k) {
          const double v = tensor_value(b, base + k);
          if (b.dtype == ragged::TensorDType::F32) w.value(v);
          else w.value(static_cast<std::uint64_t>(v));
        }
        w.end_array();
      }
      w.end_array();
    }
    w.end_array();
  }
  w.end_object();
}

}  // namespace

void register_ragged_tensors(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<TensorsArgs>();
  CLI::App* cmd = ragged.add_subcommand("tensors", "Per-block (side, side, n_bins) histograms of a digest field");
  ragged_cli::add_store_arguments(*cmd, a->store, a->shard);
  ragged_cli::add_field_arguments(*cmd, a->field, a->field_name);
  cmd->add_option("--n-bins", a->n_bins, "bins per cell (default 128)");
  cmd->add_option("--resolution", a->resolution, "bin width (default 0.5)");
  cmd->add_option("--bottom", a->bottom, "lower quantile of the z-window (default 0.05)");
  cmd->add_option("--top", a->top, "upper quantile of the z-window (default 0.95)");
  cmd->add_option("--fit", a->fit, "raise | degrade_resolution | collapse_bins (default raise)");
  cmd->add_option("--dtype", a->dtype, "auto | uint16 | uint32 | float32 (auto: float32 for flux fields, else uint32)");
  cmd->add_option("--block-order", a->block_order, "one block per cell of this order (default: one per read chunk)");
  cmd->add_option("--subtree", a->subtree, "restrict to a subtree: decimal id, or word:N / 0x…");
  cmd->add_option("--max-block-bytes", a->max_block_bytes, "refuse blocks larger than this (default 2 GiB)");
  cmd->add_flag("--include-tensors", a->include_tensors, "add mask and tensor arrays to the JSON");
  cmd->add_option("--npy", a->npy_dir, "write tensors.npy, masks.npy, windows.npy, morton.npy into DIR");
  cmd->add_flag("--npy-single", a->npy_single, "with --npy: drop the leading block axis (one block expected)");
  cmd->add_option("--png", a->png_dir, "write one heatmap PNG per block into DIR");
  cmd->add_option("--png-value", a->png_value, "sum | max | bin:K (default sum)");
  cmd->add_option("--png-scale", a->png_scale, "linear | log (default linear)");
  cmd->add_option("--png-cell-px", a->png_cell_px, "pixels per cell side (default 4)");
  cmd->add_option("--png-origin", a->png_origin, "bottom (north-west edge up, default) | top");

  cmd->callback([a, &rc] {
    const ragged_cli::Target target = ragged_cli::open_leaf(a->store, a->shard);
    const auto field =
        ragged::RaggedField::open(*target.store, ragged_cli::resolve_field(target, a->field, a->field_name));
    ragged::TensorOptions options;
    options.n_bins = a->n_bins;
    options.resolution = a->resolution;
    options.bottom = a->bottom;
    options.top = a->top;
    options.fit = ragged::parse_fit_policy(a->fit);
    options.dtype = a->dtype == "auto" ? (field.payload().weights() == ragged::Weights::Flux ? ragged::TensorDType::F32
                                                                                             : ragged::TensorDType::U32)
                                       : ragged::parse_tensor_dtype(a->dtype);
    options.block_order = a->block_order;
    if (a->subtree) options.subtree = ragged::morton::parse_word_or_decimal(*a->subtree);
    options.max_block_bytes = a->max_block_bytes;
    options.warn = [](const ragged::Warning& warning) {
      write_stream(stderr, "warning: " + warning.code + ": " + warning.message + "\n");
    };
    const std::vector<ragged::TensorBlock> blocks = field.read_tensors(options);
    if (a->npy_dir) write_npy_outputs(*a->npy_dir, blocks, a->npy_single);
    if (a->png_dir) write_png_outputs(*a->png_dir, blocks, *a);

    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      w.key("field").value(field.payload().path());
      w.key("params").begin_object();
      w.key("n_bins").value(options.n_bins);
      w.key("resolution").value(options.resolution);
      w.key("bottom").value(options.bottom);
      w.key("top").value(options.top);
      w.key("fit").value(ragged::name_of(options.fit));
      w.key("dtype").value(ragged::name_of(options.dtype));
      w.key("block_order");
      options.block_order ? w.value(*options.block_order) : w.value(nullptr);
      w.key("subtree");
      options.subtree ? w.value(ragged::morton::to_decimal(*options.subtree)) : w.value(nullptr);
      w.key("max_block_bytes").value(options.max_block_bytes);
      w.end_object();
      w.key("has_exact_occupancy").value(ragged::has_exact_occupancy(*target.store));
      w.key("blocks").begin_array();
      for (std::size_t i = 0; i < blocks.size(); ++i) write_block(w, i, blocks[i], a->include_tensors);
      w.end_array();
      w.end_object();
    });
    rc = 0;
  });
}

}  // namespace tessera::cli
