// The metadata of the arrays and groups a leaf writer puts on a cells axis (spec §1.8, §2.2,
// §2.4, §2.8, §6.1 step 2): one place that knows zagg's layout of a leaf array (sharded: one
// `sharding_indexed` object spanning the leaf, inner chunks of C cells, `[bytes little, crc32c]`
// index at the end; unsharded: the bare inner chain per chunk), the attribute blocks of payloads
// and their companions, and the DGGS group attributes. The leaf writer and `synth_hive` use it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/codec/json.hpp"
#include "tessera/ragged/geocode.hpp"
#include "tessera/zarr/metadata.hpp"

namespace tessera::ragged::leaf {

// The cells axis of one leaf (or one flat group).
struct CellsAxis {
  std::uint64_t cells = 0;        // shape[0]
  std::uint64_t chunk_cells = 0;  // C, the read chunk
  bool sharded = true;            // one sharding_indexed object spanning the axis
};

// A dense array of the axis: `data_type` ("int32", "uint64", "float32"), fill value JSON (0 or
// "NaN"), inner chain `[bytes little]` (zagg does not compress an aggregated leaf's dense arrays).
zarr::ArrayMeta dense_array(const CellsAxis& axis, std::string_view data_type, const codec::json::Json& fill,
                            codec::json::Json attributes = codec::json::Json::object());
// A zagg-ragged/1 vlen array: inner chain `[vlen-bytes, zstd(3, no checksum)]`, fill "".
zarr::ArrayMeta ragged_array(const CellsAxis& axis, codec::json::Json attributes);

// `{"spec": "zagg-ragged/1", "element": {"dtype": ..., "shape": [-1, *inner]}}`.
codec::json::Json ragged_block(std::string_view dtype, const std::vector<int>& inner_shape);

// The declarations of spec §2.4.
codec::json::Json located_declaration();
codec::json::Json temporal_declaration(std::string_view shape);  // "per-centroid" | "per-cell"
// The composition block of spec §2.7: `{"spec": "zagg-composition/1", "lanes": [...], "of", "threshold"}`.
codec::json::Json composition_declaration(const std::string& of, std::int64_t threshold);
// The lane names of spec §2.7, in lane order.
const std::vector<std::string>& composition_lanes();

// What a payload array declares (spec §6.1 step 2: `ragged`, `weights`, `times`, provenance).
struct PayloadDecl {
  bool flux = false;
  std::optional<codec::json::Json> gain;  // flux only
  std::optional<std::string> locations;   // sibling name when located
  std::optional<std::string> times;       // sibling name when timed
};
codec::json::Json payload_attributes(const PayloadDecl& decl);
// The `_locations` (located = true) or `_times` sibling's attributes.
codec::json::Json companion_attributes(bool located);

// The DGGS convention attributes of the group holding a leaf's arrays (spec §2.8); `latitude`
// nullopt omits `dggs.latitude` (zagg-identical metadata).
codec::json::Json dggs_attributes(int cell_order, std::optional<geo::Latitude> latitude);

}  // namespace tessera::ragged::leaf
