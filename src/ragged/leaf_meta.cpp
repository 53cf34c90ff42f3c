// Leaf array and group metadata in zagg's layout (spec §1.8, §2.8, §6.1 step 2).
#include "tessera/ragged/leaf_meta.hpp"

#include "tessera/codec/checksum.hpp"

namespace tessera::ragged::leaf {

using codec::json::Json;

namespace {

Json bytes_codec() { return Json{{"name", "bytes"}, {"configuration", {{"endian", "little"}}}}; }

// The array document in zarr-python's key order; decoded back so the writer holds exactly what a
// reader would (and encode() reproduces the bytes).
zarr::ArrayMeta array_meta(const CellsAxis& axis, std::string_view data_type, const Json& fill, const Json& inner,
                           Json attributes) {
  const std::uint64_t outer = axis.sharded ? axis.cells : axis.chunk_cells;
  Json codecs = inner;
  if (axis.sharded) {
    codecs = Json::array({Json{{"name", "sharding_indexed"},
                               {"configuration",
                                {{"chunk_shape", {axis.chunk_cells}},
                                 {"codecs", inner},
                                 {"index_codecs", Json::array({bytes_codec(), Json{{"name", "crc32c"}}})},
                                 {"index_location", "end"}}}}});
  }
  const Json doc = {{"shape", {axis.cells}},
                    {"data_type", data_type},
                    {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", {outer}}}}}},
                    {"chunk_key_encoding", {{"name", "default"}, {"configuration", {{"separator", "/"}}}}},
                    {"fill_value", fill},
                    {"codecs", codecs},
                    {"attributes", std::move(attributes)},
                    {"dimension_names", {"cells"}},
                    {"zarr_format", 3},
                    {"node_type", "array"},
                    {"storage_transformers", Json::array()}};
  const std::string text = doc.dump();
  return zarr::decode_array(codec::as_bytes(text), "leaf array zarr.json");
}

}  // namespace

zarr::ArrayMeta dense_array(const CellsAxis& axis, std::string_view data_type, const Json& fill, Json attributes) {
  return array_meta(axis, data_type, fill, Json::array({bytes_codec()}), std::move(attributes));
}

zarr::ArrayMeta ragged_array(const CellsAxis& axis, Json attributes) {
  const Json inner = Json::array({Json{{"name", "vlen-bytes"}, {"configuration", Json::object()}},
                                  Json{{"name", "zstd"}, {"configuration", {{"level", 3}, {"checksum", false}}}}});
  return array_meta(axis, "variable_length_bytes", Json(""), inner, std::move(attributes));
}

Json ragged_block(std::string_view dtype, const std::vector<int>& inner_shape) {
  Json shape = Json::array({-1});
  for (const int n : inner_shape) shape.push_back(n);
  return Json{{"spec", "zagg-ragged/1"}, {"element", {{"dtype", dtype}, {"shape", shape}}}};
}

Json located_declaration() {
  return Json{{"spec", "zagg-located/1"}, {"shape", "per-centroid"}, {"grammar", "mortie-morton/1"}};
}

Json temporal_declaration(std::string_view shape) {
  return Json{{"spec", "zagg-toc/1"}, {"shape", shape}, {"grammar", "mortie-toc/1"}};
}

Json payload_attributes(const PayloadDecl& d) {
  Json ragged = ragged_block("float32", {2});
  if (d.locations) ragged["locations"] = *d.locations;
  Json a = Json::object();
  a["ragged"] = std::move(ragged);
  if (d.flux) a["weights"] = "flux";
  if (d.times) a["times"] = *d.times;
  if (d.flux && d.gain) a["gain"] = *d.gain;
  return a;
}

const std::vector<std::string>& composition_lanes() {
  static const std::vector<std::string> lanes = {"land",         "ocean", "sea_ice", "land_ice",
                                                 "inland_water", "low",   "med",     "high"};
  return lanes;
}

Json composition_declaration(const std::string& of, std::int64_t threshold) {
  return Json{{"spec", "zagg-composition/1"}, {"lanes", composition_lanes()}, {"of", of}, {"threshold", threshold}};
}

Json companion_attributes(bool located) {
  Json a = Json::object();
  a["ragged"] = ragged_block("uint64", {});
  if (located) a["located"] = located_declaration();
  else a["temporal"] = temporal_declaration("per-centroid");
  return a;
}

Json dggs_attributes(int cell_order, std::optional<geo::Latitude> latitude) {
  Json dggs = {{"name", "morton"},
               {"refinement_level", cell_order},
               {"spatial_dimension", "cells"},
               {"ellipsoid", {{"name", "WGS84"}, {"semimajor_axis", 6378137.0}, {"inverse_flattening", 298.257223563}}},
               {"compression", "none"},
               {"coordinate", "morton"}};
  if (latitude) dggs["latitude"] = geo::dggs_token(*latitude);
  return Json{
      {"zarr_conventions",
       Json::array(
           {Json{{"schema_url", "https://raw.githubusercontent.com/zarr-conventions/dggs/refs/tags/v1/schema.json"},
                 {"spec_url", "https://github.com/zarr-conventions/dggs/blob/v1/README.md"},
                 {"uuid", "7b255807-140c-42ca-97f6-7a1cfecdbc38"},
                 {"name", "dggs"},
                 {"description", "Discrete Global Grid Systems convention for zarr"}},
            Json{{"schema_url", "https://github.com/espg/mortie/blob/main/docs/specification.md#dggs-attrs"},
                 {"spec_url", "https://github.com/espg/mortie/blob/main/docs/specification.md"},
                 {"uuid", "3e22156d-ea9e-4e01-95fe-e3809a4b41e7"},
                 {"name", "morton-dggs"},
                 {"description", "Packed-u64 morton (HEALPix) DGGS convention"}}})},
      {"dggs", dggs}};
}

}  // namespace tessera::ragged::leaf
