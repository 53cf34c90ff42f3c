// Chunk key encodings: names of chunk objects and their parse back to grid coordinates.
#include "tessera/zarr/chunk_key.hpp"

#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {

using codec::json::Json;

ChunkKeyEncoding decode_chunk_key_encoding(const Json& value, std::string_view key) {
  constexpr std::string_view kWhere = "chunk_key_encoding";
  if (!value.is_object()) fail_at<FormatError>(key, kWhere, "must be an object with a \"name\"");
  ChunkKeyEncoding out;
  const Json* configuration = nullptr;
  std::string name;
  for (const auto& [member, v] : value.items()) {
    if (member == "name" && v.is_string()) name = v.get<std::string>();
    else if (member == "configuration" && v.is_object()) configuration = &v;
    else if (member == "name" || member == "configuration")
      fail_at<FormatError>(key, std::string(kWhere) + "." + member, "has the wrong JSON type");
    else fail_at<UnsupportedError>(key, kWhere, "unknown member \"" + member + "\"");
  }
  if (name == "default") out.kind = ChunkKeyEncoding::Kind::Default;
  else if (name == "v2") out.kind = ChunkKeyEncoding::Kind::V2, out.separator = '.';
  else fail_at<UnsupportedError>(key, kWhere, "unsupported chunk key encoding \"" + name + "\"");
  if (configuration) {
    for (const auto& [member, v] : configuration->items()) {
      if (member != "separator")
        fail_at<UnsupportedError>(key, std::string(kWhere) + ".configuration", "unknown member \"" + member + "\"");
      if (v != "/" && v != ".")
        fail_at<FormatError>(key, std::string(kWhere) + ".configuration.separator",
                             "must be \"/\" or \".\", got " + v.dump());
      out.separator = v.get<std::string>()[0];
    }
  }
  return out;
}

Json encode_chunk_key_encoding(const ChunkKeyEncoding& encoding) {
  Json out = Json::object();
  out["name"] = encoding.kind == ChunkKeyEncoding::Kind::Default ? "default" : "v2";
  out["configuration"] = {{"separator", std::string(1, encoding.separator)}};
  return out;
}

std::string chunk_key(const ChunkKeyEncoding& encoding, std::span<const std::uint64_t> coords) {
  std::string out = encoding.kind == ChunkKeyEncoding::Kind::Default ? "c" : "";
  for (std::size_t i = 0; i < coords.size(); ++i) {
    if (i > 0 || encoding.kind == ChunkKeyEncoding::Kind::Default) out += encoding.separator;
    out += std::to_string(coords[i]);
  }
  return out;
}

std::optional<std::vector<std::uint64_t>> parse_chunk_key(const ChunkKeyEncoding& encoding, std::string_view key,
                                                          std::span<const std::uint64_t> grid,
                                                          std::string_view store_key) {
  std::string_view rest = key;
  if (encoding.kind == ChunkKeyEncoding::Kind::Default) {
    if (rest.size() < 2 || rest[0] != 'c' || rest[1] != encoding.separator) return std::nullopt;
    rest.remove_prefix(2);
  } else if (key == "zarr.json") {
    return std::nullopt;
  }
  const auto bad = [&](const std::string& why) {
    fail_at<FormatError>(store_key, "chunk key",
                         "\"" + std::string(key) + "\" is not a chunk key of this array: " + why);
  };
  std::vector<std::uint64_t> coords;
  while (true) {
    const auto sep = rest.find(encoding.separator);
    const std::string_view part = rest.substr(0, sep);
    if (part.empty()) bad("empty index");
    if (part.size() > 1 && part[0] == '0') bad("index with a leading zero");
    std::uint64_t v = 0;
    for (const char ch : part) {
      if (ch < '0' || ch > '9') bad("index \"" + std::string(part) + "\" is not a decimal number");
      if (v > (UINT64_MAX - 9) / 10) bad("index too large");
      v = v * 10 + static_cast<std::uint64_t>(ch - '0');
    }
    coords.push_back(v);
    if (sep == std::string_view::npos) break;
    rest.remove_prefix(sep + 1);
  }
  if (coords.size() != grid.size())
    bad(std::to_string(coords.size()) + " indices for a rank-" + std::to_string(grid.size()) + " array");
  for (std::size_t d = 0; d < grid.size(); ++d)
    if (coords[d] >= grid[d])
      bad("index " + std::to_string(coords[d]) + " on axis " + std::to_string(d) + " is outside the grid of " +
          std::to_string(grid[d]) + " chunks");
  return coords;
}

}  // namespace tessera::zarr
