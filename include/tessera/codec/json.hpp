// The one place where tessera formats JSON. Formats never write JSON by hand: they stream through
// `JsonWriter` or build a `Json` tree and `dump` it, choosing the layout with `DumpOptions`.
//
// Two number styles exist because two families of outputs are pinned by outside references:
//  - FloatStyle::Tet is the layout of tet.md §5.1 (what serde_json/ryu writes): shortest
//    round-trip digits, `1e16`, `1e-6`, `0.00001`, `21.0`, and NaN/±inf as `null`.
//  - FloatStyle::Python is what Python's `json.dumps` writes (`repr(float)`): `1e+16`, `1e-05`,
//    `21.0`, and `NaN`/`Infinity`/`-Infinity` (Python's default allow_nan=True).
// Both styles share one layout engine: `indent` -1 is compact (no whitespace at all, which is
// also Python's canonical `separators=(",", ":")`), indent N >= 0 is Python's `indent=N`: one
// member or element per line, `"key": value`, empty containers as `[]` and `{}`.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

namespace tessera::codec::json {

// Key order matters in every tessera output, so trees keep insertion order.
using Json = nlohmann::ordered_json;

enum class FloatStyle : std::uint8_t { Tet, Python };

struct DumpOptions {
  int indent = -1;         // -1: compact; N >= 0: pretty with N spaces per level
  bool sort_keys = false;  // sort object members by key (byte order == code point order) when
                           // embedding Json trees; streamed members keep the caller's order
  FloatStyle float_style = FloatStyle::Tet;
  bool ascii_only = false;  // escape every non-ASCII code point (and DEL) as \uXXXX, as Python's
                            // default ensure_ascii=True does
  bool spaced = false;      // with indent -1: Python's default separators `", "` and `": "`

  // tet.md §5.1 compact (`--format json`) and pretty (`full`, `stats`, `--json` reports).
  static constexpr DumpOptions tet_compact() { return {-1, false, FloatStyle::Tet, false}; }
  static constexpr DumpOptions tet_pretty() { return {2, false, FloatStyle::Tet, false}; }
  // json.dumps(obj, indent=2)
  static constexpr DumpOptions python_pretty() { return {2, false, FloatStyle::Python, true}; }
  // json.dumps(obj, sort_keys=True, separators=(",", ":")): the canonical form hashed by formats.
  static constexpr DumpOptions python_canonical() { return {-1, true, FloatStyle::Python, true}; }
  // json.dumps(obj): one line with `", "` and `": "` (the deltacells obs schema).
  static constexpr DumpOptions python_default() { return {-1, false, FloatStyle::Python, true, true}; }
  // json.dumps(obj, sort_keys=True) (the deltacells obs fingerprint payload).
  static constexpr DumpOptions python_sorted() { return {-1, true, FloatStyle::Python, true, true}; }
};

// Streams one JSON value into `out` (appending; the string must outlive the writer). Thread-safety:
// one thread at a time.
//
// Contract: calls must form exactly one well-nested value: inside an object every value is
// preceded by `key`; `end_object`/`end_array` close the innermost open container. A call that
// breaks this throws UsageError and leaves `out` holding a partial document. Strings are UTF-8:
// without `ascii_only` their bytes are copied as they are (only `"`, `\` and control characters
// are escaped); with `ascii_only` invalid UTF-8 throws FormatError since it has no \u form.
class JsonWriter {
 public:
  explicit JsonWriter(std::string& out, const DumpOptions& options = {});

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  // Without these two a string literal would convert to bool (a standard conversion beats the
  // user-defined one to string_view).
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::nullptr_t);
  JsonWriter& value(std::int64_t v);
  JsonWriter& value(std::uint64_t v);
  // Every other integer type, so `value(3)` or `value(std::uint32_t{})` is not ambiguous.
  template <std::integral T>
  requires(!std::same_as<T, bool> && !std::same_as<T, char> && !std::same_as<T, std::int64_t> &&
           !std::same_as<T, std::uint64_t>) JsonWriter& value(T v) {
    if constexpr (std::is_signed_v<T>) return value(static_cast<std::int64_t>(v));
    else return value(static_cast<std::uint64_t>(v));
  }
  // f64 digits in the writer's FloatStyle.
  JsonWriter& value(double v);
  // A float would silently widen to double and print as `0.20000000298023224`; say which you
  // mean with value_f32 or an explicit cast.
  JsonWriter& value(float) = delete;
  // Shortest round-trip f32 digits (`0.2`), laid out by the FloatStyle (Tet: tet.md §5.1 f32
  // thresholds; Python: repr's layout applied to the f32 digits).
  JsonWriter& value_f32(float v);
  // Embeds a tree at the current position, honouring indent, sort_keys and the FloatStyle.
  // Binary and discarded values have no JSON form and throw UsageError.
  JsonWriter& value(const Json& tree);

  // True once one complete top-level value has been written.
  bool complete() const noexcept { return done_; }
  const DumpOptions& options() const noexcept { return options_; }

 private:
  struct Frame {
    bool object;
    bool empty;
  };
  void before_value();
  void separate(Frame& frame);
  void after_value();
  void newline_indent();
  void close(bool object);

  std::string& out_;
  DumpOptions options_;
  std::vector<Frame> stack_;
  bool key_pending_ = false;
  bool done_ = false;
};

// The whole tree as one string in the given layout (a JsonWriter underneath).
std::string dump(const Json& tree, const DumpOptions& options = {});

// One number exactly as JsonWriter writes it (Tet: `null` for NaN/±inf; Python: `NaN`,
// `Infinity`, `-Infinity`).
std::string format_f64(double v, FloatStyle style = FloatStyle::Tet);
std::string format_f32(float v, FloatStyle style = FloatStyle::Tet);

// Every JSON document tessera reads nests arrays and objects at most this deep. Real documents
// stay below 10 levels (the deepest conformance zarr.json has 5); the limit exists because a
// tree deeper than a few thousand levels exhausts the stack in code that walks it recursively
// (copies, dumps, conversions to Python objects), so depth is checked on the raw text before
// any tree is built.
inline constexpr std::size_t kMaxNestingDepth = 512;

// The deepest array/object nesting in `text` (a scalar is 0, `[]` is 1, `{"a":[1]}` is 2),
// counted over the bytes outside strings in one pass without building anything. Text that is
// not JSON still gets a number; the parser reports what is wrong with it.
std::size_t nesting_depth(std::string_view text) noexcept;

// Throws LimitError (path = `source`, structure "JSON", message starting with `source`) when
// `text` nests deeper than `max_depth`. Every JSON parse in tessera runs through this first.
void check_nesting(std::string_view text, std::string_view source, std::size_t max_depth = kMaxNestingDepth);

// Reads one JSON text strictly: RFC 8259 syntax (no comments, nothing but whitespace after the
// value), valid UTF-8, and no object with the same key twice. Integers are exact: 0..2^64-1 read
// as unsigned, negatives down to -2^63 as signed (only larger magnitudes become doubles).
// Members keep their order. Throws FormatError (path = `source`, structure "JSON") whose message
// says what is wrong and where (`duplicate key "a"`, `parse error at line 1, column 5: ...`),
// and LimitError (check_nesting) for text nested deeper than kMaxNestingDepth.
Json parse_strict(std::string_view text, std::string_view source = "<json>");

// Empties `tree` (it becomes null), freeing its arrays and objects element by element. nlohmann's
// own destructor first moves every element of an array into a second, freshly allocated vector
// (to avoid recursion): for a query result of a million numbers that is 16 MiB more memory to
// fault in and fill just to free it. Recursion here is bounded by the depth of the tree (trees
// parsed from text are at most kMaxNestingDepth deep).
void release(Json& tree) noexcept;

// Appends `s` as a quoted, escaped JSON string.
void append_quoted(std::string& out, std::string_view s, bool ascii_only = false);

}  // namespace tessera::codec::json
