// data_type and fill_value (spec §1.3, §1.4).
#include "tessera/zarr/data_type.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "tessera/core/endian.hpp"
#include "tessera/core/half.hpp"
#include "tessera/zarr/errors.hpp"

namespace tessera::zarr {
namespace {

using codec::json::Json;

constexpr std::string_view kVlenSpellings[] = {"variable_length_bytes", "bytes"};
constexpr std::string_view kRagged2Spellings[] = {"vlen-ndarray", "ndarray"};

bool is_one_of(std::string_view s, std::span<const std::string_view> names) {
  for (const auto n : names)
    if (s == n) return true;
  return false;
}

template <typename T>
std::vector<std::byte> le_bytes(T v) {
  std::vector<std::byte> out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

// The bits of a float fill in its element width.
std::vector<std::byte> float_element(DType t, double v) {
  switch (t) {
    case DType::F16: return le_bytes(float_to_half(static_cast<float>(v)));
    case DType::F32: return le_bytes(static_cast<float>(v));
    case DType::F64: return le_bytes(v);
    case DType::Bool:
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: break;
  }
  throw UsageError(std::string("a float fill value for the non-float type ") + std::string(dtype_info(t).name));
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

FillValue float_fill(const Json& value, DType t, std::size_t size, std::string_view key) {
  if (value.is_number()) return {float_element(t, value.get<double>())};
  if (!value.is_string()) fail_at<FormatError>(key, "fill_value", "a float fill value must be a number or a string");
  const std::string& s = value.get_ref<const std::string&>();
  if (s == "NaN") return {float_element(t, std::numeric_limits<double>::quiet_NaN())};
  if (s == "Infinity") return {float_element(t, std::numeric_limits<double>::infinity())};
  if (s == "-Infinity") return {float_element(t, -std::numeric_limits<double>::infinity())};
  if (s.size() == 2 + 2 * size && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    // Big-endian hex of the bit pattern, as the Zarr v3 spec writes it.
    std::uint64_t bits = 0;
    for (std::size_t i = 2; i < s.size(); ++i) {
      const int d = hex_digit(s[i]);
      if (d < 0) fail_at<FormatError>(key, "fill_value", "\"" + s + "\" is not a hex bit pattern");
      bits = bits << 4 | static_cast<std::uint64_t>(d);
    }
    std::vector<std::byte> out(size);
    std::memcpy(out.data(), &bits, size);  // little-endian host: the low `size` bytes
    return {out};
  }
  fail_at<FormatError>(key, "fill_value",
                       "\"" + s +
                           "\" is not a float fill value (a number, \"NaN\", \"Infinity\", \"-Infinity\" or \"0x\" + " +
                           std::to_string(2 * size) + " hex digits)");
}

template <typename T>
FillValue integer_fill(const Json& value, std::string_view type_name, std::string_view key) {
  const auto out_of_range = [&] {
    fail_at<FormatError>(key, "fill_value", value.dump() + " is not a " + std::string(type_name) + " value");
  };
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    if (v > static_cast<std::uint64_t>(std::numeric_limits<T>::max())) out_of_range();
    return {le_bytes(static_cast<T>(v))};
  }
  if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    if constexpr (std::is_unsigned_v<T>) {
      if (v < 0) out_of_range();
    } else {
      if (v < static_cast<std::int64_t>(std::numeric_limits<T>::min()) ||
          v > static_cast<std::int64_t>(std::numeric_limits<T>::max()))
        out_of_range();
    }
    return {le_bytes(static_cast<T>(v))};
  }
  fail_at<FormatError>(key, "fill_value", "an integer fill value must be a JSON integer, got " + value.dump());
}

template <typename F>
bool is_canonical_nan(F v) {
  if constexpr (std::is_same_v<F, float>) return std::bit_cast<std::uint32_t>(v) == 0x7FC00000u;
  else return std::bit_cast<std::uint64_t>(v) == 0x7FF8000000000000ull;
}

std::string hex_pattern(std::span<const std::byte> element) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "0x";
  for (std::size_t i = element.size(); i-- > 0;) {
    const auto b = std::to_integer<unsigned>(element[i]);
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

Json float_json(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

}  // namespace

std::string_view node_path_of(std::string_view metadata_key) noexcept {
  constexpr std::string_view kName = "zarr.json";
  if (metadata_key == kName) return {};
  if (metadata_key.size() > kName.size() && metadata_key.ends_with(kName) &&
      metadata_key[metadata_key.size() - kName.size() - 1] == '/')
    return metadata_key.substr(0, metadata_key.size() - kName.size() - 1);
  return metadata_key;
}

void refuse_ragged2(std::string_view array_path, std::string_view key, std::string_view structure) {
  const std::string array = array_path.empty() ? std::string("/") : std::string(array_path);
  throw UnsupportedError(
      array +
          ": zagg-ragged/2 array (typed vlen-ndarray data type); tessera reads zagg-ragged/1 only.\n"
          "The chunk bytes of /2 and /1 are identical: rewriting this array's zarr.json in the /1 form\n"
          "(data_type \"variable_length_bytes\", codec \"vlen-bytes\", attributes.ragged = {\"spec\": "
          "\"zagg-ragged/1\",\n"
          "\"element\": {...}}) makes it readable without touching data.",
      std::string(key), std::string(structure));
}

DataType DataType::fixed(DType t) {
  DataType d;
  d.vlen = false;
  d.dtype = t;
  d.name = std::string(dtype_info(t).zarr_name);
  return d;
}

DataType DataType::vlen_bytes(std::string_view spelling) {
  DataType d;
  d.vlen = true;
  d.name = std::string(spelling);
  return d;
}

DataType decode_data_type(const Json& value, std::string_view key) {
  if (value.is_object()) {
    const auto name = value.find("name");
    if (name != value.end() && name->is_string() && is_one_of(name->get_ref<const std::string&>(), kRagged2Spellings))
      refuse_ragged2(node_path_of(key), key, "data_type");
    fail_at<UnsupportedError>(key, "data_type", "data types given as objects are not supported");
  }
  if (!value.is_string()) fail_at<FormatError>(key, "data_type", "must be a string");
  const std::string& name = value.get_ref<const std::string&>();
  if (is_one_of(name, kRagged2Spellings)) refuse_ragged2(node_path_of(key), key, "data_type");
  if (is_one_of(name, kVlenSpellings)) return DataType::vlen_bytes(name);
  if (const auto t = dtype_from_zarr_name(name)) return DataType::fixed(*t);
  fail_at<UnsupportedError>(key, "data_type", "unsupported data type \"" + name + "\"");
}

FillValue decode_fill_value(const Json& value, const DataType& type, std::string_view key) {
  if (type.vlen) {
    // The bytes extension reads a string fill either raw or as base64; only "" means the same
    // (the empty byte string) under both.
    if (value.is_string() && value.get_ref<const std::string&>().empty()) return {};
    fail_at<FormatError>(key, "fill_value",
                         "the fill value of a variable-length bytes array must be \"\", got " + value.dump());
  }
  switch (type.dtype) {
    case DType::Bool:
      if (!value.is_boolean())
        fail_at<FormatError>(key, "fill_value", "a bool fill value must be true or false, got " + value.dump());
      return {le_bytes(static_cast<std::uint8_t>(value.get<bool>() ? 1 : 0))};
    case DType::U8: return integer_fill<std::uint8_t>(value, type.name, key);
    case DType::U16: return integer_fill<std::uint16_t>(value, type.name, key);
    case DType::U32: return integer_fill<std::uint32_t>(value, type.name, key);
    case DType::U64: return integer_fill<std::uint64_t>(value, type.name, key);
    case DType::I8: return integer_fill<std::int8_t>(value, type.name, key);
    case DType::I16: return integer_fill<std::int16_t>(value, type.name, key);
    case DType::I32: return integer_fill<std::int32_t>(value, type.name, key);
    case DType::I64: return integer_fill<std::int64_t>(value, type.name, key);
    case DType::F16:
    case DType::F32:
    case DType::F64: return float_fill(value, type.dtype, type.item_size(), key);
  }
  fail_at<FormatError>(key, "fill_value", "unknown data type");
}

Json encode_fill_value(const FillValue& fill, const DataType& type) {
  if (type.vlen) return "";
  const std::byte* p = fill.element.data();
  switch (type.dtype) {
    case DType::Bool: return load_le<std::uint8_t>(p) != 0;
    case DType::U8: return load_le<std::uint8_t>(p);
    case DType::U16: return load_le<std::uint16_t>(p);
    case DType::U32: return load_le<std::uint32_t>(p);
    case DType::U64: return load_le<std::uint64_t>(p);
    case DType::I8: return load_le<std::int8_t>(p);
    case DType::I16: return load_le<std::int16_t>(p);
    case DType::I32: return load_le<std::int32_t>(p);
    case DType::I64: return load_le<std::int64_t>(p);
    case DType::F16: {
      const auto h = load_le<std::uint16_t>(p);
      const bool nan = (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0;
      if (nan && h != 0x7E00u) return hex_pattern(fill.element);
      return float_json(half_to_double(h));
    }
    case DType::F32: {
      const auto f = load_le<float>(p);
      if (std::isnan(f) && !is_canonical_nan(f)) return hex_pattern(fill.element);
      return float_json(f);
    }
    case DType::F64: {
      const auto d = load_le<double>(p);
      if (std::isnan(d) && !is_canonical_nan(d)) return hex_pattern(fill.element);
      return float_json(d);
    }
  }
  return nullptr;
}

FillValue zero_fill(const DataType& type) {
  if (type.vlen) return {};
  return {std::vector<std::byte>(type.item_size())};
}

bool all_equal_fill(std::span<const std::byte> elements, const DataType& type, const FillValue& fill) {
  const std::size_t size = type.item_size();
  const auto float_compare = [&](auto widen) {
    const double f = widen(fill.element.data());
    for (std::size_t off = 0; off + size <= elements.size(); off += size) {
      const double v = widen(elements.data() + off);
      if (std::isnan(f) ? !std::isnan(v) : v != f) return false;
    }
    return true;
  };
  switch (type.vlen ? DType::U8 : type.dtype) {
    case DType::F16: return float_compare([](const std::byte* p) { return half_to_double(load_le<std::uint16_t>(p)); });
    case DType::F32: return float_compare([](const std::byte* p) { return static_cast<double>(load_le<float>(p)); });
    case DType::F64: return float_compare([](const std::byte* p) { return load_le<double>(p); });
    case DType::Bool:
    case DType::U8:
    case DType::U16:
    case DType::U32:
    case DType::U64:
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: break;  // compared bit for bit below
  }
  if (type.vlen || size == 0) return true;
  for (std::size_t off = 0; off + size <= elements.size(); off += size)
    if (std::memcmp(elements.data() + off, fill.element.data(), size) != 0) return false;
  return true;
}

}  // namespace tessera::zarr
