// gene_order.npy and var_names.txt (spec deltacells.md §5).
#include "tessera/cells/gene_files.hpp"

#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "rules.hpp"
#include "tessera/codec/npy.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/text.hpp"

namespace tessera::cells {
namespace {

using detail::fail;

// Index of the first line boundary of Python's str.splitlines in `s` (UTF-8), or npos.
std::size_t find_python_line_break(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '\n' || c == '\r' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e) return i;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) return i;  // U+0085
    if (c == 0xe2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xa8 || static_cast<unsigned char>(s[i + 2]) == 0xa9))
      return i;  // U+2028, U+2029
  }
  return std::string_view::npos;
}

bool is_permutation(std::span<const std::int64_t> values, std::uint64_t n, std::uint64_t* bad_index) {
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (std::size_t i = 0; i < values.size(); ++i) {
    const std::int64_t v = values[i];
    if (v < 0 || static_cast<std::uint64_t>(v) >= n || seen[static_cast<std::size_t>(v)]) {
      *bad_index = i;
      return false;
    }
    seen[static_cast<std::size_t>(v)] = true;
  }
  return true;
}

}  // namespace

std::vector<std::byte> encode_gene_order(std::span<const std::int32_t> order) {
  std::uint64_t bad = 0;
  const std::vector<std::int64_t> wide(order.begin(), order.end());
  if (!is_permutation(wide, order.size(), &bad))
    throw UsageError("gene order is not a permutation of 0.." + std::to_string(order.size()) + " - 1 (entry " +
                     std::to_string(bad) + ")");
  const std::uint64_t shape[1] = {order.size()};
  const std::string header = codec::npy_header(DType::I32, shape);
  std::vector<std::byte> out(header.size() + 4 * order.size());
  std::memcpy(out.data(), header.data(), header.size());
  for (std::size_t i = 0; i < order.size(); ++i) store_le<std::int32_t>(out.data() + header.size() + 4 * i, order[i]);
  return out;
}

std::vector<std::int32_t> decode_gene_order(const io::ByteSource& src, std::uint64_t n_genes, std::string_view object) {
  codec::NpyHeader h;
  try {
    h = codec::parse_npy_header(src);
  } catch (const FormatError& e) {
    fail(object, "npy header", e.what(), "N1");
  } catch (const LimitError& e) {
    fail(object, "npy header", e.what(), "N1");
  }
  if (h.dtype != DType::I32 && h.dtype != DType::I64) fail(object, "npy header", "dtype must be <i4 or <i8", "N1");
  if (h.shape.size() != 1 || h.shape[0] != n_genes)
    fail(object, "npy header", "shape must be (" + std::to_string(n_genes) + ",)", "N1");
  const std::size_t item = dtype_size(h.dtype);
  const auto raw = src.read_vector(h.data_offset, h.data_bytes);
  std::vector<std::int64_t> values(static_cast<std::size_t>(n_genes));
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = item == 4 ? load_le<std::int32_t>(raw.data() + 4 * i) : load_le<std::int64_t>(raw.data() + 8 * i);
  std::uint64_t bad = 0;
  if (!is_permutation(values, n_genes, &bad))
    fail(object, "values",
         "entry " + std::to_string(bad) + " (" + std::to_string(values[bad]) + ") breaks the permutation of 0.." +
             std::to_string(n_genes - 1),
         "N2");
  return {values.begin(), values.end()};
}

std::string encode_var_names(std::span<const std::string> names) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (!is_valid_utf8(name)) throw UsageError("var name " + std::to_string(i) + " is not valid UTF-8");
    if (find_python_line_break(name) != std::string_view::npos)
      throw UsageError("var name " + std::to_string(i) +
                       " contains a line boundary (\\n, \\r, \\x0b, \\x0c, \\x1c-\\x1e, \\x85, U+2028 or U+2029); "
                       "var_names.txt stores one name per line");
    out += name;
    out += '\n';
  }
  return out;
}

std::vector<std::string> decode_var_names(std::string_view text, std::uint64_t n_genes, std::string_view object) {
  if (!is_valid_utf8(text)) fail(object, "text", "not valid UTF-8", "N4");
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) {
      names.emplace_back(text.substr(start));
      break;
    }
    names.emplace_back(text.substr(start, nl - start));
    start = nl + 1;
    if (names.size() > n_genes) break;
  }
  if (names.size() != n_genes)
    fail(object, "lines",
         (names.size() > n_genes ? "more than " : "") + std::to_string(names.size()) +
             " names, expected n_genes = " + std::to_string(n_genes),
         "N5");
  return names;
}

bool splitlines_differs(std::string_view text) {
  // The two splits agree exactly when `\n` is the only boundary character present.
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t b = find_python_line_break(text.substr(i));
    if (b == std::string_view::npos) return false;
    if (text[i + b] != '\n') return true;
    i += b + 1;
  }
  return false;
}

std::vector<std::string> make_names_unique(const std::vector<std::string>& names) {
  std::unordered_set<std::string> present(names.begin(), names.end());
  if (present.size() == names.size()) return names;
  std::vector<std::string> out = names;
  std::unordered_set<std::string> seen;
  std::unordered_map<std::string, std::uint64_t> counter;
  for (auto& name : out) {
    if (seen.insert(name).second) continue;  // the first occurrence keeps its name
    for (;;) {
      const std::string candidate = name + "-" + std::to_string(++counter[name]);
      if (present.insert(candidate).second) {
        name = candidate;
        break;
      }
    }
  }
  return out;
}

}  // namespace tessera::cells
