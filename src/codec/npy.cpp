// The .npy header: writing it byte for byte as numpy does, and reading it strictly. The header
// is a Python literal, so the reader is a small parser for exactly the subset numpy writes
// (and ast.literal_eval accepts): either quote style, any whitespace between tokens, an optional
// trailing comma, and the Python 2 `L` suffix on extents in version 1.0/2.0 files.
#include "tessera/codec/npy.hpp"

#include <array>
#include <charconv>
#include <cstring>
#include <optional>

#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"

namespace tessera::codec {
namespace {

constexpr std::string_view kStructure = "npy header";
// Spaces numpy reserves after the dict so the first extent can grow in place without moving
// the data: len(str(8 * 2**64 - 1)) minus the digits of that extent (numpy's
// GROWTH_AXIS_MAX_DIGITS).
constexpr std::size_t kGrowthAxisMaxDigits = 21;
// Well-formed headers are a few hundred bytes; this only stops a corrupt length from sizing a
// huge read.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 20;

std::string decimal(std::uint64_t v) {
  char buf[24];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// Python's repr of a tuple of ints.
std::string shape_repr(std::span<const std::uint64_t> shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += decimal(shape[i]);
  }
  if (shape.size() == 1) out += ',';
  out += ')';
  return out;
}

// numpy's _wrap_header: the header length counts the dict, the spaces and the final '\n', and
// is chosen so that prefix + header is a multiple of 64. When it already is, numpy still adds
// a full 64 spaces; we match it.
std::optional<std::string> wrap_header(std::string_view dict, int major) {
  const std::uint64_t length_field = major == 1 ? 2 : 4;
  const std::uint64_t prefix = kNpyMagic.size() + 2 + length_field;
  const std::uint64_t hlen = dict.size() + 1;
  const std::uint64_t padlen = kNpyAlign - (prefix + hlen) % kNpyAlign;
  const std::uint64_t total = hlen + padlen;
  if (major == 1 && total > 0xFFFF) return std::nullopt;
  std::string out(kNpyMagic);
  out += static_cast<char>(major);
  out += '\0';
  if (major == 1) append_le<std::uint16_t>(out, static_cast<std::uint16_t>(total));
  else append_le<std::uint32_t>(out, static_cast<std::uint32_t>(total));
  out += dict;
  out.append(padlen, ' ');
  out += '\n';
  return out;
}

[[noreturn]] void fail(const io::ByteSource& src, const std::string& rule) {
  throw FormatError(rule, src.name(), std::string(kStructure));
}

// Printable form of header text for messages (the header may hold any bytes).
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (const char ch : s.substr(0, 80)) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c < 0x7F) {
      out += ch;
    } else {
      constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xF];
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

// Recursive-descent reader of the header dict.
class DictParser {
 public:
  DictParser(const io::ByteSource& src, std::string_view text, bool allow_long_suffix)
      : src_(src), text_(text), allow_long_suffix_(allow_long_suffix) {}

  struct Result {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::uint64_t> shape;
  };

  Result parse() {
    Result r;
    bool have_descr = false, have_fortran = false, have_shape = false;
    skip_ws();
    expect('{', "the header must be a dict starting with '{'");
    skip_ws();
    while (!at('}')) {
      const std::string key = parse_string("dict key");
      skip_ws();
      expect(':', "expected ':' after dict key " + quoted(key));
      skip_ws();
      if (key == "descr") {
        if (have_descr) fail(src_, "duplicate key 'descr' in header dict");
        if (at('[') || at('(')) fail(src_, "structured descr is not supported (tessera reads plain numeric dtypes)");
        r.descr = parse_string("'descr' value");
        have_descr = true;
      } else if (key == "fortran_order") {
        if (have_fortran) fail(src_, "duplicate key 'fortran_order' in header dict");
        r.fortran_order = parse_bool();
        have_fortran = true;
      } else if (key == "shape") {
        if (have_shape) fail(src_, "duplicate key 'shape' in header dict");
        r.shape = parse_shape();
        have_shape = true;
      } else {
        fail(src_, "unexpected key " + quoted(key) + " in header dict (expected descr, fortran_order, shape)");
      }
      skip_ws();
      if (at(',')) {
        ++pos_;
        skip_ws();
      } else if (!at('}')) {
        fail(src_, "expected ',' or '}' after the value of " + quoted(key));
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != text_.size()) fail(src_, "unexpected text after the header dict: " + quoted(text_.substr(pos_)));
    if (!have_descr) fail(src_, "header dict lacks key 'descr'");
    if (!have_fortran) fail(src_, "header dict lacks key 'fortran_order'");
    if (!have_shape) fail(src_, "header dict lacks key 'shape'");
    return r;
  }

 private:
  bool at(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  void expect(char c, const std::string& rule) {
    if (!at(c)) fail(src_, rule);
    ++pos_;
  }

  void skip_ws() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  // A Python str literal without escapes (no descr or key numpy writes has one).
  std::string parse_string(const char* what) {
    if (!at('\'') && !at('"')) fail(src_, std::string("expected a quoted string for ") + what);
    const char quote = text_[pos_++];
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail(src_, std::string("escape sequences are not supported in ") + what);
      if (text_[pos_] == '\n') break;
      ++pos_;
    }
    if (!at(quote)) fail(src_, std::string("unterminated string in ") + what);
    return std::string(text_.substr(start, pos_++ - start));
  }

  bool identifier_follows() const {
    if (pos_ >= text_.size()) return false;
    const char c = text_[pos_];
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }

  bool parse_bool() {
    for (const auto& [word, v] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        if (!identifier_follows()) return v;
        break;
      }
    }
    fail(src_, "'fortran_order' must be True or False");
  }

  std::uint64_t parse_extent() {
    if (at('-')) fail(src_, "negative extent in 'shape'");
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    const std::string_view digits = text_.substr(start, pos_ - start);
    if (digits.empty()) fail(src_, "'shape' must be a tuple of integers");
    if (digits.size() > 1 && digits[0] == '0') fail(src_, "extent with a leading zero in 'shape'");
    std::uint64_t v = 0;
    const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (res.ec != std::errc{}) fail(src_, "extent " + std::string(digits) + " in 'shape' does not fit in u64");
    if (allow_long_suffix_ && (at('L') || at('l'))) ++pos_;
    if (identifier_follows() || at('.')) fail(src_, "'shape' must be a tuple of integers");
    return v;
  }

  // `()`, `(n,)`, `(n, m)` or `(n, m,)`; a one-element tuple needs its comma, as in Python.
  std::vector<std::uint64_t> parse_shape() {
    expect('(', "'shape' must be a tuple");
    std::vector<std::uint64_t> shape;
    bool trailing_comma = false;
    skip_ws();
    while (!at(')')) {
      if (pos_ >= text_.size()) fail(src_, "unterminated 'shape' tuple");
      shape.push_back(parse_extent());
      skip_ws();
      trailing_comma = false;
      if (at(',')) {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (pos_ >= text_.size()) {
        fail(src_, "unterminated 'shape' tuple");
      } else if (!at(')')) {
        fail(src_, "expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    if (shape.size() == 1 && !trailing_comma) fail(src_, "'shape' (n) is not a tuple; a 1-d shape is written (n,)");
    return shape;
  }

  const io::ByteSource& src_;
  std::string_view text_;
  bool allow_long_suffix_;
  std::size_t pos_ = 0;
};

// numpy descr -> DType: '<' (or '=', native on the little-endian hosts tessera runs on) for
// multi-byte types; any byte-order mark, including none-applies '|', for single bytes.
DType descr_dtype(const io::ByteSource& src, const std::string& descr) {
  if (descr.size() >= 2) {
    const char order = descr[0];
    const std::string rest = descr.substr(1);
    if (auto t = dtype_from_numpy_descr("|" + rest); t && dtype_size(*t) == 1) {
      if (order == '|' || order == '<' || order == '>' || order == '=') return *t;
    }
    if (auto t = dtype_from_numpy_descr("<" + rest); t && dtype_size(*t) > 1) {
      if (order == '<' || order == '=') return *t;
      if (order == '>') fail(src, "big-endian descr " + quoted(descr) + " is not supported");
    }
  }
  fail(src,
       "unsupported descr " + quoted(descr) + " (expected one of |b1 |u1 |i1 <u2 <u4 <u8 <i2 <i4 <i8 <f2 <f4 <f8)");
}

}  // namespace

std::string npy_header(DType dtype, std::span<const std::uint64_t> shape) {
  // numpy writes the keys sorted and each as "'key': repr(value), ".
  std::string dict = "{'descr': '";
  dict += dtype_info(dtype).numpy_descr;
  dict += "', 'fortran_order': False, 'shape': ";
  dict += shape_repr(shape);
  dict += ", }";
  if (!shape.empty()) {
    const std::size_t digits = decimal(shape[0]).size();
    dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  if (auto v1 = wrap_header(dict, 1)) return *std::move(v1);
  return *wrap_header(dict, 2);
}

NpyHeader parse_npy_header(const io::ByteSource& src) {
  const std::uint64_t size = src.size();

  // Fixed prefix: magic (6), major, minor, then the header length.
  std::array<std::byte, 12> prefix{};
  const std::uint64_t have = std::min<std::uint64_t>(size, prefix.size());
  src.read_at(0, std::span<std::byte>(prefix.data(), static_cast<std::size_t>(have)));
  const std::size_t magic_have = static_cast<std::size_t>(std::min<std::uint64_t>(have, kNpyMagic.size()));
  if (std::memcmp(prefix.data(), kNpyMagic.data(), magic_have) != 0) fail(src, "bad magic (expected \\x93NUMPY)");
  if (size < 8) fail(src, "file of " + std::to_string(size) + " bytes is too short for the npy magic and version");
  const auto major = static_cast<unsigned>(prefix[6]);
  const auto minor = static_cast<unsigned>(prefix[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail(src, "unsupported npy version " + std::to_string(major) + "." + std::to_string(minor) +
                  " (expected 1.0, 2.0 or 3.0)");
  const std::uint64_t length_field = major == 1 ? 2 : 4;
  const std::uint64_t header_start = 8 + length_field;
  if (size < header_start) fail(src, "file ends inside the header length field");
  // Length of the dict text including its padding and final '\n'.
  const std::uint64_t header_len =
      major == 1 ? load_le<std::uint16_t>(prefix.data() + 8) : load_le<std::uint32_t>(prefix.data() + 8);
  const std::uint64_t data_offset = header_start + header_len;  // cannot overflow: both are small
  if (data_offset > size)
    fail(src, "header length " + std::to_string(header_len) + " runs past the end of the file (" +
                  std::to_string(size) + " bytes)");
  if (header_len > kMaxHeaderBytes)
    throw LimitError("header length " + std::to_string(header_len) + " exceeds the 1 MiB limit", src.name(),
                     std::string(kStructure));

  const std::vector<std::byte> raw = src.read_vector(header_start, header_len);
  const std::string_view text(reinterpret_cast<const char*>(raw.data()), raw.size());
  // Version 3.0 only changes the header encoding to UTF-8; every valid token is ASCII.
  DictParser::Result dict = DictParser(src, text, major <= 2).parse();

  NpyHeader h;
  h.dtype = descr_dtype(src, dict.descr);
  h.shape = std::move(dict.shape);
  h.fortran_order = dict.fortran_order;
  h.data_offset = data_offset;

  // Like numpy, the extents other than zero must multiply (with the itemsize) to a size that
  // fits, even when a zero extent makes the array empty.
  std::uint64_t nonzero_bytes = dtype_size(h.dtype);
  bool empty = false;
  for (const std::uint64_t extent : h.shape) {
    if (extent == 0) {
      empty = true;
      continue;
    }
    const auto next = mul_u64(nonzero_bytes, extent);
    if (!next) fail(src, "data size of 'shape' " + shape_repr(h.shape) + " overflows u64");
    nonzero_bytes = *next;
  }
  h.data_bytes = empty ? 0 : nonzero_bytes;
  const std::uint64_t actual = size - data_offset;
  if (actual != h.data_bytes)
    fail(src,
         "data length " + std::to_string(actual) + " != product(shape) x itemsize = " + std::to_string(h.data_bytes));
  return h;
}

}  // namespace tessera::codec
