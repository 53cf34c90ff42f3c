// The `codecs` list of zarr.json: decode (strict) and encode (zarr-python's layout).
#include "tessera/zarr/codec_spec.hpp"

#include <string>
#include <variant>

#include "tessera/core/overloaded.hpp"
#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {
namespace {

using codec::json::Json;

struct CodecObject {
  std::string name;
  const Json* configuration = nullptr;  // null when absent
};

CodecObject read_codec_object(const Json& value, const std::string& path, std::string_view key) {
  if (!value.is_object()) fail_at<FormatError>(key, path, "a codec must be an object with a \"name\"");
  CodecObject out;
  for (const auto& [member, v] : value.items()) {
    if (member == "name") {
      if (!v.is_string()) fail_at<FormatError>(key, path + ".name", "must be a string");
      out.name = v.get<std::string>();
    } else if (member == "configuration") {
      if (!v.is_object()) fail_at<FormatError>(key, path + ".configuration", "must be an object");
      out.configuration = &v;
    } else {
      fail_at<UnsupportedError>(key, path, "unknown member \"" + member + "\" in a codec object");
    }
  }
  if (out.name.empty()) fail_at<FormatError>(key, path, "a codec must have a non-empty \"name\"");
  return out;
}

// Refuses configuration members other than `allowed`: an unknown member could change what
// the codec does.
void only_members(const CodecObject& c, std::initializer_list<std::string_view> allowed, const std::string& path,
                  std::string_view key) {
  if (!c.configuration) return;
  for (const auto& [member, _] : c.configuration->items()) {
    bool ok = false;
    for (const auto a : allowed) ok = ok || member == a;
    if (!ok)
      fail_at<UnsupportedError>(key, path + ".configuration",
                                "unknown member \"" + member + "\" in the configuration of codec \"" + c.name + "\"");
  }
}

const Json* member(const CodecObject& c, const char* name) {
  if (!c.configuration) return nullptr;
  const auto it = c.configuration->find(name);
  return it == c.configuration->end() ? nullptr : &*it;
}

std::optional<Endian> read_endian(const CodecObject& c, const std::string& path, std::string_view key) {
  only_members(c, {"endian"}, path, key);
  const Json* e = member(c, "endian");
  if (!e) return std::nullopt;
  if (*e == "little") return Endian::Little;
  if (*e == "big") return Endian::Big;
  fail_at<FormatError>(key, path + ".configuration.endian", "must be \"little\" or \"big\", got " + e->dump());
}

std::vector<std::uint64_t> read_shape(const Json* value, const std::string& path, std::string_view key) {
  if (!value || !value->is_array() || value->empty())
    fail_at<FormatError>(key, path, "must be a non-empty array of positive integers");
  std::vector<std::uint64_t> out;
  for (const Json& v : *value) {
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0)
      fail_at<FormatError>(key, path, "must be a non-empty array of positive integers, got " + value->dump());
    out.push_back(v.get<std::uint64_t>());
  }
  return out;
}

IndexCodecs read_index_codecs(const Json* value, const std::string& path, std::string_view key) {
  const auto refuse = [&] {
    fail_at<FormatError>(key, path,
                         "only [bytes] or [bytes, crc32c] are supported as index codecs, got " +
                             (value ? value->dump() : std::string("nothing")));
  };
  if (!value || !value->is_array() || value->empty() || value->size() > 2) refuse();
  IndexCodecs out;
  const CodecObject first = read_codec_object((*value)[0], path + "[0]", key);
  if (first.name != "bytes") refuse();
  const auto endian = read_endian(first, path + "[0]", key);
  if (!endian) fail_at<FormatError>(key, path + "[0]", "the index bytes codec must name its endian");
  out.endian = *endian;
  out.crc32c = value->size() == 2;
  if (out.crc32c) {
    const CodecObject second = read_codec_object((*value)[1], path + "[1]", key);
    if (second.name != "crc32c") refuse();
    only_members(second, {}, path + "[1]", key);
  }
  return out;
}

CodecList read_list(const Json& value, const std::string& path, std::string_view key, bool inner);

ShardingSpec read_sharding(const CodecObject& c, CodecChain& chain, const std::string& path, std::string_view key) {
  only_members(c, {"chunk_shape", "codecs", "index_codecs", "index_location"}, path, key);
  const std::string conf = path + ".configuration";
  ShardingSpec spec;
  spec.chunk_shape = read_shape(member(c, "chunk_shape"), conf + ".chunk_shape", key);
  const Json* codecs = member(c, "codecs");
  if (!codecs) fail_at<FormatError>(key, conf, "sharding_indexed needs \"codecs\"");
  chain = read_list(*codecs, conf + ".codecs", key, /*inner=*/true).chain;
  spec.index_codecs = read_index_codecs(member(c, "index_codecs"), conf + ".index_codecs", key);
  if (const Json* loc = member(c, "index_location")) {
    if (*loc == "end") spec.index_location = IndexLocation::End;
    else if (*loc == "start") spec.index_location = IndexLocation::Start;
    else fail_at<FormatError>(key, conf + ".index_location", "must be \"start\" or \"end\", got " + loc->dump());
  }
  return spec;
}

ZstdCodec read_zstd(const CodecObject& c, const std::string& path, std::string_view key) {
  only_members(c, {"level", "checksum"}, path, key);
  ZstdCodec z;
  if (const Json* level = member(c, "level")) {
    if (!level->is_number_integer() || level->get<std::int64_t>() < -131072 || level->get<std::int64_t>() > 22)
      fail_at<FormatError>(key, path + ".configuration.level", "must be an integer zstd level, got " + level->dump());
    z.level = static_cast<int>(level->get<std::int64_t>());
  }
  if (const Json* checksum = member(c, "checksum")) {
    if (!checksum->is_boolean()) fail_at<FormatError>(key, path + ".configuration.checksum", "must be true or false");
    z.checksum = checksum->get<bool>();
  }
  return z;
}

CodecList read_list(const Json& value, const std::string& path, std::string_view key, bool inner) {
  if (!value.is_array()) fail_at<FormatError>(key, path, "must be an array of codec objects");
  CodecList out;
  bool have_array_to_bytes = false;
  for (std::size_t i = 0; i < value.size(); ++i) {
    const std::string p = path + "[" + std::to_string(i) + "]";
    const CodecObject c = read_codec_object(value[i], p, key);
    const bool array_to_bytes = c.name == "bytes" || c.name == "vlen-bytes" || c.name == "sharding_indexed";
    const bool bytes_to_bytes = c.name == "zstd" || c.name == "crc32c" || c.name == "gzip";
    if (array_to_bytes) {
      if (have_array_to_bytes)
        fail_at<FormatError>(key, p,
                             "a codec list holds exactly one array->bytes codec; \"" + c.name + "\" is a second one");
      have_array_to_bytes = true;
      if (c.name == "bytes") {
        out.chain.array_to_bytes = BytesCodec{read_endian(c, p, key)};
      } else if (c.name == "vlen-bytes") {
        only_members(c, {}, p, key);
        out.chain.array_to_bytes = VlenBytesCodec{};
      } else {
        if (inner) fail_at<UnsupportedError>(key, p, "nested sharding_indexed is not supported");
        out.sharding = read_sharding(c, out.chain, p, key);
      }
    } else if (bytes_to_bytes) {
      if (!have_array_to_bytes)
        fail_at<FormatError>(key, p, "bytes->bytes codec \"" + c.name + "\" comes before the array->bytes codec");
      if (out.sharding)
        fail_at<UnsupportedError>(key, p, "codecs after sharding_indexed are not supported (\"" + c.name + "\")");
      if (c.name == "gzip") fail_at<UnsupportedError>(key, p, "codec \"gzip\" is not supported");
      if (c.name == "zstd") out.chain.bytes_to_bytes.emplace_back(read_zstd(c, p, key));
      else {
        only_members(c, {}, p, key);
        out.chain.bytes_to_bytes.emplace_back(Crc32cCodec{});
      }
    } else if (c.name == "vlen-ndarray") {
      refuse_ragged2(node_path_of(key), key, p);
    } else if (c.name == "transpose") {
      fail_at<UnsupportedError>(key, p, "array->array codec \"transpose\" is not supported");
    } else {
      fail_at<UnsupportedError>(key, p, "unknown codec \"" + c.name + "\"");
    }
  }
  if (!have_array_to_bytes)
    fail_at<FormatError>(key, path,
                         "a codec list needs one array->bytes codec (bytes, vlen-bytes or sharding_indexed)");
  return out;
}

Json endian_json(Endian e) { return e == Endian::Little ? "little" : "big"; }

Json chain_json(const CodecChain& chain, std::size_t item_size) {
  Json list = Json::array();
  list.push_back(
      std::visit(Overloaded{
                     [&](const BytesCodec& bytes) {
                       Json codec = {{"name", "bytes"}};
                       if (item_size != 1)
                         codec["configuration"] = {{"endian", endian_json(bytes.endian.value_or(Endian::Little))}};
                       return codec;
                     },
                     [](const VlenBytesCodec&) {
                       return Json{{"name", "vlen-bytes"}, {"configuration", Json::object()}};
                     },
                 },
                 chain.array_to_bytes));
  for (const auto& step : chain.bytes_to_bytes) {
    list.push_back(std::visit(
        Overloaded{
            [](const ZstdCodec& z) {
              return Json{{"name", "zstd"}, {"configuration", {{"level", z.level}, {"checksum", z.checksum}}}};
            },
            [](const Crc32cCodec&) {
              return Json{{"name", "crc32c"}};
            },
        },
        step));
  }
  return list;
}

}  // namespace

CodecList decode_codecs(const Json& value, std::string_view key) { return read_list(value, "codecs", key, false); }

Json encode_codecs(const CodecList& codecs, std::size_t item_size) {
  if (!codecs.sharding) return chain_json(codecs.chain, item_size);
  const ShardingSpec& s = *codecs.sharding;
  Json index = Json::array();
  index.push_back({{"name", "bytes"}, {"configuration", {{"endian", endian_json(s.index_codecs.endian)}}}});
  if (s.index_codecs.crc32c) index.push_back({{"name", "crc32c"}});
  Json conf = Json::object();
  conf["chunk_shape"] = s.chunk_shape;
  conf["codecs"] = chain_json(codecs.chain, item_size);
  conf["index_codecs"] = std::move(index);
  conf["index_location"] = s.index_location == IndexLocation::End ? "end" : "start";
  Json list = Json::array();
  list.push_back({{"name", "sharding_indexed"}, {"configuration", std::move(conf)}});
  return list;
}

}  // namespace tessera::zarr
