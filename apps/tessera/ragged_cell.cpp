// `tessera ragged cell STORE FIELD (INDEX | --morton ID | --chunk ID --row R --col C)
// [--companions]` (spec zagg-ragged.md §8.2): one cell through read_cell, with the number of
// data GETs it took (2 on a sharded leaf, 1 when the inner chunk is absent or unsharded).
#include <charconv>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "commands.hpp"
#include "ragged_common.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/half.hpp"
#include "tessera/ragged/morton.hpp"
#include "tessera/ragged/ragged_field.hpp"
#include "tessera/ragged/toc.hpp"
#include "tessera/zarr/array.hpp"

namespace tessera::cli {
namespace {

using codec::json::JsonWriter;
using ragged_cli::word_text;

struct CellArgs {
  std::string store, field, field_name;
  std::optional<std::string> shard;
  std::optional<std::string> index;  // text, so any u64 (and a negative) is reported as given
  std::optional<std::string> morton, chunk;
  std::optional<std::int64_t> row, col;
  bool companions = false;
};

// One element of a payload row in JSON: float32 as the widened double, words as strings.
void write_element(JsonWriter& w, DType dtype, const std::byte* p, bool words) {
  visit_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    const T v = load_le<T>(p);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      w.value(static_cast<double>(v));
    } else if (dtype == DType::F16) {
      w.value(static_cast<double>(half_to_float(static_cast<std::uint16_t>(v))));
    } else if (dtype == DType::Bool) {
      w.value(v != 0);
    } else if (words) {
      w.value(word_text(static_cast<std::uint64_t>(v)));
    } else {
      w.value(v);
    }
  });
}

// One row (or sub-row) as nested C-order lists over `shape`; a scalar when `shape` is empty.
void write_nested(JsonWriter& w, DType dtype, const std::byte*& p, std::span<const std::uint64_t> shape, bool words) {
  if (shape.empty()) {
    write_element(w, dtype, p, words);
    p += dtype_size(dtype);
    return;
  }
  w.begin_array();
  for (std::uint64_t i = 0; i < shape[0]; ++i) write_nested(w, dtype, p, shape.subspan(1), words);
  w.end_array();
}

// The cell as `rows` rows of the element: a flat list for `[-1]`, nested lists otherwise.
void write_rows(JsonWriter& w, const ragged::RaggedArray& array, const ragged::RaggedCell& cell) {
  const auto& element = array.element();
  const bool words = array.located().has_value() || array.temporal().has_value();
  const std::byte* p = cell.bytes.data();
  w.begin_array();
  for (std::uint64_t r = 0; r < cell.rows; ++r) write_nested(w, element.dtype, p, element.inner_shape, words);
  w.end_array();
}

std::vector<std::uint64_t> words_of(const ragged::RaggedCell& cell) { return cell.values<std::uint64_t>(); }

void write_times(JsonWriter& w, const std::vector<std::uint64_t>& words) {
  w.begin_array();
  for (auto word : words) {
    const auto interval = ragged::toc::decode(word);
    w.begin_object();
    w.key("word").value(word_text(word));
    w.key("kind").value(interval.kind == ragged::toc::Kind::Timestamp ? "timestamp" : "range");
    w.key("start_ns").value(interval.start_ns);
    w.key("end_ns").value(interval.end_ns);
    w.end_object();
  }
  w.end_array();
}

// The global cells-axis index the arguments name.
std::uint64_t cell_of(const CellArgs& a, const ragged::RaggedField& field) {
  if (a.index) {
    const std::string& text = *a.index;
    if (!text.empty() && text[0] == '-') throw UsageError("INDEX must be ≥ 0 (got " + text + ")");
    std::uint64_t cell = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), cell);
    if (ec == std::errc::result_out_of_range)
      throw UsageError(field.payload().path() + ": cell index " + text + " out of range: larger than any u64");
    if (ec != std::errc() || end != text.data() + text.size())
      throw UsageError("INDEX must be a non-negative integer (got '" + text + "')");
    field.payload().check_cell_index(cell);
    return cell;
  }
  if (a.morton) {
    const std::uint64_t word = ragged::morton::parse_decimal(*a.morton);
    const ragged::CellsAxis axis = field.axis();
    if (ragged::morton::order_of(word) != axis.cell_order)
      throw UsageError("--morton " + *a.morton + " is an order-" + std::to_string(ragged::morton::order_of(word)) +
                       " id; the cells axis of " + field.payload().path() + " has order " +
                       std::to_string(axis.cell_order));
    const std::uint64_t nested = ragged::morton::nested(word);
    if (nested < axis.root_start || nested - axis.root_start >= axis.length)
      throw UsageError("--morton " + *a.morton + " lies outside the cells axis of " + field.payload().path());
    return nested - axis.root_start;
  }
  return field.cell_index(ragged::morton::parse_word_or_decimal(*a.chunk), *a.row, *a.col);
}

// The cell's own `morton` word (0 when its chunk was never written).
std::uint64_t morton_word(const io::Store& store, const ragged::RaggedField& field, std::uint64_t cell) {
  if (!field.has_morton()) return 0;
  const auto morton = zarr::Array::open(store, field.group().empty() ? "morton" : field.group() + "/morton");
  const auto bytes = morton.read_box({{cell, cell + 1}});
  return load_le<std::uint64_t>(bytes.data());
}

}  // namespace

void register_ragged_cell(CLI::App& ragged, int& rc) {
  auto a = std::make_shared<CellArgs>();
  CLI::App* cmd = ragged.add_subcommand("cell", "Decode one cell through read_cell (2 ranged reads on a sharded leaf)");
  ragged_cli::add_store_arguments(*cmd, a->store, a->shard);
  ragged_cli::add_field_arguments(*cmd, a->field, a->field_name);
  CLI::Option* index = cmd->add_option("INDEX", a->index, "global cells-axis index");
  CLI::Option* morton = cmd->add_option("--morton", a->morton, "cell-order decimal id of the cell");
  CLI::Option* chunk = cmd->add_option("--chunk", a->chunk, "read-chunk id (decimal id or 0x word)");
  CLI::Option* row = cmd->add_option("--row", a->row, "chunk-local row");
  CLI::Option* col = cmd->add_option("--col", a->col, "chunk-local column");
  cmd->add_flag("--companions", a->companions, "also decode the bound locations and times companions");
  chunk->needs(row, col);
  row->needs(chunk);
  col->needs(chunk);
  morton->excludes(index, chunk);
  index->excludes(chunk);

  cmd->callback([a, &rc, index, morton, chunk] {
    // With --field, a lone positional after STORE is the INDEX.
    if (!a->field_name.empty() && !a->field.empty() && index->count() == 0) {
      if (a->field.empty() || a->field.find_first_not_of("0123456789") != std::string::npos)
        throw CLI::ValidationError("INDEX",
                                   "with --field, the argument after STORE is the cell INDEX (got '" + a->field + "')");
      a->index = a->field;
      a->field.clear();
    }
    if (!a->index && morton->count() == 0 && chunk->count() == 0)
      throw CLI::ValidationError("cell", "give INDEX, --morton ID, or --chunk ID --row R --col C");
    ragged_cli::Target target = ragged_cli::open_leaf(a->store, a->shard);
    io::CountingStore counting(*target.store);
    const auto field = ragged::RaggedField::open(counting, ragged_cli::resolve_field(target, a->field, a->field_name));
    const std::uint64_t cell = cell_of(*a, field);

    const std::uint64_t before = counting.gets();
    const ragged::RaggedCell payload = field.read_cell(static_cast<std::int64_t>(cell));
    const std::uint64_t reads = counting.gets() - before;

    const std::uint64_t word = morton_word(*target.store, field, cell);
    ragged_cli::print_json([&](JsonWriter& w) {
      w.begin_object();
      w.key("field").value(field.payload().path());
      w.key("index").value(cell);
      if (word != 0) {
        w.key("morton").value(word_text(word));
        w.key("decimal").value(ragged::morton::to_decimal(word));
      } else {
        w.key("morton").value(nullptr);
        w.key("decimal").value(nullptr);
      }
      w.key("rows");
      write_rows(w, field.payload(), payload);
      if (a->companions && field.locations()) {
        w.key("locations").begin_array();
        for (auto v : words_of(field.locations()->read_cell(static_cast<std::int64_t>(cell)))) w.value(word_text(v));
        w.end_array();
      }
      if (a->companions && field.times()) {
        w.key("times");
        write_times(w, words_of(field.times()->read_cell(static_cast<std::int64_t>(cell))));
      }
      w.key("reads").value(reads);
      w.end_object();
    });
    rc = 0;
  });
}

}  // namespace tessera::cli
