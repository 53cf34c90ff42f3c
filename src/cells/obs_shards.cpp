// Obs shards: writing (§6.5), opening with P1–P4, chunk checks P5/P6 and verification (§6.10).
#include "tessera/cells/obs_shards.hpp"

#include <algorithm>
#include <limits>

#include "rules.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/io/byte_sink.hpp"

namespace tessera::cells {
namespace {

using columnar::Column;
using columnar::ColumnType;
using detail::fail;

constexpr const char* kSchemaKey = "obs/schema.json";
// The tail of a shard fetched when it is opened remotely: the 8-byte trailer and, in the same
// request, a footer of up to this size (a 100,000-cell shard's is about 7 KiB). A larger footer
// costs one more request.
constexpr std::uint64_t kSpeculativeFooterBytes = std::uint64_t{256} * 1024;

std::uint64_t shard_count(std::uint64_t n_tiles, std::uint64_t per_file) { return (n_tiles + per_file - 1) / per_file; }

// Whether a Parquet column read as `read` may hold the schema's stored type `stored` (§6.3: the
// type itself; unannotated INT32/INT64 for narrower or unsigned types, values range-checked).
bool readable_as(ColumnType read, ColumnType stored) {
  if (read == stored) return true;
  switch (stored) {
    case ColumnType::Int8:
    case ColumnType::Int16:
    case ColumnType::UInt8:
    case ColumnType::UInt16: return read == ColumnType::Int32;
    case ColumnType::UInt32: return read == ColumnType::Int64 || read == ColumnType::Int32;
    case ColumnType::Int32:
    case ColumnType::Int64:
    case ColumnType::UInt64:
    case ColumnType::Float:
    case ColumnType::Double:
    case ColumnType::Bool:
    case ColumnType::String: return false;
  }
  return false;
}

// Narrows an integer column read in a wider physical type to the stored type, checking each value.
Column narrow(const Column& in, ColumnType stored, const std::string& where) {
  Column out(stored);
  out.length = in.length;
  out.validity = in.validity;
  out.data.resize(in.length * columnar::column_type_width(stored));
  columnar::visit_value_type(in.type, [&](auto src_tag) {
    using S = decltype(src_tag);
    columnar::visit_value_type(stored, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      if constexpr (std::is_integral_v<S> && std::is_integral_v<D>) {
        for (std::uint64_t i = 0; i < in.length; ++i) {
          const S v = in.value<S>(i);
          if (in.is_valid(i) && !std::in_range<D>(v))
            fail(where, "",
                 "value " + std::to_string(v) + " at row " + std::to_string(i) + " does not fit " +
                     std::string(columnar::column_type_name(stored)),
                 "P5");
          const D d = static_cast<D>(v);
          std::memcpy(out.data.data() + i * sizeof(D), &d, sizeof(D));
        }
      }
    });
  });
  return out;
}

}  // namespace

ObsWritten write_obs(io::Store& store, const ObsWriteInput& input, std::span<const std::uint64_t> tile_cells) {
  const ObsSchema& schema = input.schema;
  schema.validate();
  if (input.tiles_per_file < 1) throw UsageError("obs tiles per file must be at least 1");
  if (input.columns.size() != schema.columns.size())
    throw UsageError("obs: " + std::to_string(input.columns.size()) + " columns for a schema of " +
                     std::to_string(schema.columns.size()));
  std::uint64_t n_cells = 0;
  for (const auto n : tile_cells) n_cells += n;
  std::vector<columnar::ParquetColumnSpec> specs;
  for (std::size_t i = 0; i < schema.columns.size(); ++i) {
    const auto& c = schema.columns[i];
    const Column& data = input.columns[i];
    data.check_shape();
    if (data.type != c.type)
      throw UsageError("obs column '" + c.name + "' holds " + std::string(columnar::column_type_name(data.type)) +
                       " values for stored type " + std::string(columnar::column_type_name(c.type)));
    if (data.length != n_cells)
      throw UsageError("obs column '" + c.name + "' has " + std::to_string(data.length) + " rows for " +
                       std::to_string(n_cells) + " cells");
    specs.push_back({c.name, c.type, c.kind == ObsKind::Category || c.kind == ObsKind::String});
  }

  ObsWritten written;
  written.schema_text = schema.serialize();
  store.put(kSchemaKey, codec::as_bytes(written.schema_text));
  const std::uint64_t n_tiles = tile_cells.size();
  std::uint64_t first_row = 0;
  for (std::uint64_t s = 0; s < shard_count(n_tiles, input.tiles_per_file); ++s) {
    io::MemorySink sink;
    columnar::ParquetWriterOptions po;
    po.zstd_level = input.zstd_level;
    columnar::ParquetWriter writer(sink, specs, {}, po);
    const std::uint64_t end = std::min(n_tiles, (s + 1) * input.tiles_per_file);
    std::vector<Column> group(specs.size());
    for (std::uint64_t t = s * input.tiles_per_file; t < end; ++t) {
      for (std::size_t c = 0; c < specs.size(); ++c)
        group[c] = columnar::slice_rows(input.columns[c], first_row, tile_cells[t]);
      writer.write_row_group(group);
      first_row += tile_cells[t];
    }
    writer.finish();
    written.shard_bytes.push_back(sink.bytes().size());
    written.shard_sha256.push_back(codec::sha256_hex(sink.bytes()));
    store.put(obs_shard_key(s), sink.bytes());
  }
  written.fingerprint = obs_fingerprint(written.schema_text, written.shard_sha256, tile_cells);
  return written;
}

void record_obs(Manifest& manifest, const ObsWritten& written, std::uint64_t tiles_per_file) {
  manifest.has_obs = true;
  manifest.obs_tiles_per_file = tiles_per_file;
  manifest.obs_shard_bytes = written.shard_bytes;
  manifest.obs_shard_sha256 = written.shard_sha256;
  manifest.obs_fingerprint = written.fingerprint;
}

ObsSchemaFile read_obs_schema(const io::Store& store, bool canonical) {
  // Errors name the schema by its place in the store (`<dataset>/obs/schema.json`).
  const std::string object = io::join_key(store.name(), kSchemaKey);
  const auto bytes = store.get(kSchemaKey);
  if (!bytes) fail(object, "", "is missing (the manifest says the dataset has obs)", "S1");
  ObsSchemaFile file;
  file.text.assign(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  file.schema = ObsSchema::parse(file.text, object);
  if (canonical) check_schema_canonical(file.text, object);
  return file;
}

ObsShard open_obs_shard(const io::Store& store, const Manifest& manifest, const ObsSchema& schema,
                        std::uint64_t shard) {
  ObsShard out;
  out.index = shard;
  out.key = obs_shard_key(shard);
  const std::uint64_t per_file = manifest.obs_tiles_per_file;
  if (shard >= manifest.obs_shard_bytes.size())
    throw UsageError("obs shard " + std::to_string(shard) + " outside 0.." +
                     std::to_string(manifest.obs_shard_bytes.size()));
  out.first_tile = shard * per_file;
  std::shared_ptr<const io::ByteSource> object = store.open(out.key);
  if (!object) fail(out.key, "", "is missing", "P1");
  out.source = std::make_unique<io::PrefetchingSource>(std::move(object));
  out.remote = store.remote();
  if (out.source->size() != manifest.obs_shard_bytes[shard])
    fail(out.key, "",
         "has " + std::to_string(out.source->size()) + " bytes, the manifest says " +
             std::to_string(manifest.obs_shard_bytes[shard]),
         "P1");
  if (out.remote) {
    // The leading magic and a tail that normally holds the whole footer, in parallel: one round
    // trip instead of three (tail length, magic, footer).
    const std::uint64_t size = out.source->size();
    const std::uint64_t tail = std::min<std::uint64_t>(size, kSpeculativeFooterBytes);
    const io::ByteRange head_and_tail[] = {{0, 4}, {size - tail, tail}};
    out.source->prefetch(head_and_tail);
  }
  out.file = std::make_unique<columnar::ParquetFile>(columnar::ParquetFile::open(*out.source));
  const auto& cols = out.file->columns();
  if (cols.size() != schema.columns.size())
    fail(out.key, "schema",
         std::to_string(cols.size()) + " columns, obs/schema.json lists " + std::to_string(schema.columns.size()),
         "P3");
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const auto& want = schema.columns[i];
    if (cols[i].name != want.name)
      fail(out.key, "column " + std::to_string(i),
           "is named '" + cols[i].name + "', obs/schema.json says '" + want.name + "'", "P3");
    if (!cols[i].unsupported.empty())
      fail<UnsupportedError>(out.key, "column '" + want.name + "'", cols[i].unsupported, "P3");
    if (!readable_as(cols[i].type, want.type))
      fail(out.key, "column '" + want.name + "'",
           "holds " + std::string(columnar::column_type_name(cols[i].type)) + " values, obs/schema.json says " +
               std::string(columnar::column_type_name(want.type)),
           "P3");
    out.column_of.push_back(i);
  }
  const std::uint64_t end = std::min<std::uint64_t>(manifest.n_tiles(), out.first_tile + per_file);
  const auto& groups = out.file->row_groups();
  if (groups.size() != end - out.first_tile)
    fail(out.key, "row groups",
         std::to_string(groups.size()) + " row groups for tiles " + std::to_string(out.first_tile) + ".." +
             std::to_string(end - 1),
         "P4");
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (groups[g].num_rows != manifest.tile_cells[out.first_tile + g])
      fail(out.key, "row group " + std::to_string(g),
           std::to_string(groups[g].num_rows) + " rows, tile " + std::to_string(out.first_tile + g) + " has " +
               std::to_string(manifest.tile_cells[out.first_tile + g]) + " cells",
           "P4");
  return out;
}

Column check_obs_chunk(Column chunk, const ObsColumnSchema& column, const std::string& where) {
  if (chunk.type != column.type) chunk = narrow(chunk, column.type, where);
  if (column.kind != ObsKind::Category) return chunk;
  if (chunk.null_count() != 0) fail(where, "", "a category column has nulls (missing is code -1)", "P6");
  const auto n = static_cast<std::int64_t>(column.categories.size());
  columnar::visit_value_type(column.type, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      for (std::uint64_t i = 0; i < chunk.length; ++i) {
        const auto code = static_cast<std::int64_t>(chunk.value<T>(i));
        if (code < -1 || code >= n)
          fail(where, "",
               "category code " + std::to_string(code) + " at row " + std::to_string(i) + " is outside -1.." +
                   std::to_string(n - 1),
               "P6");
      }
    }
  });
  return chunk;
}

void verify_obs(const io::Store& store, const Manifest& manifest,
                const std::function<void(std::uint64_t, std::uint64_t)>& on_shard) {
  if (!manifest.has_obs) return;
  const ObsSchemaFile schema = read_obs_schema(store, /*canonical=*/true);
  const std::uint64_t n_shards = manifest.obs_shard_bytes.size();
  for (std::uint64_t s = 0; s < n_shards; ++s) {
    const std::string key = obs_shard_key(s);
    const auto bytes = store.get(key);
    if (!bytes) fail(key, "", "is missing", "P1");
    const std::string sha = codec::sha256_hex(*bytes);
    if (bytes->size() == manifest.obs_shard_bytes[s] && sha != manifest.obs_shard_sha256[s])
      fail(key, "", "SHA-256 " + sha + " differs from the manifest's " + manifest.obs_shard_sha256[s], "P1");
    // open_obs_shard re-checks the size (P1) and P2–P4 on the store's own source.
    const ObsShard shard = open_obs_shard(store, manifest, schema.schema, s);
    for (std::size_t g = 0; g < shard.file->row_groups().size(); ++g)
      for (std::size_t c = 0; c < schema.schema.columns.size(); ++c) {
        const auto& col = schema.schema.columns[c];
        (void)check_obs_chunk(shard.file->read_column(g, shard.column_of[c]), col,
                              key + ": row group " + std::to_string(g) + " column '" + col.name + "'");
      }
    if (on_shard) on_shard(s, n_shards);
  }
  const std::string fp = obs_fingerprint(schema.text, manifest.obs_shard_sha256, manifest.tile_cells);
  if (fp != manifest.obs_fingerprint)
    fail("manifest.json", "obs_fingerprint",
         "is " + manifest.obs_fingerprint + ", recomputed from obs/schema.json, the shard hashes and tile_cells: " + fp,
         "P7");
}

}  // namespace tessera::cells
