// 10x MatrixMarket directories: the scan, the counting pass and the band-by-band transpose into
// cell-major CSR (spec deltacells.md §7.1, §7.2).
#include "tessera/cells/mtx_source.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "rules.hpp"
#include "tessera/core/error.hpp"

namespace fs = std::filesystem;

namespace tessera::cells {
namespace {

// Lines of a plain or gzip-compressed text file (zlib reads plain files unchanged).
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path), buffer_(std::size_t{1} << 20) {
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) throw IoError(path + ": cannot open: " + std::strerror(errno), path);
    gzbuffer(file_, 1 << 18);
  }
  ~LineReader() { gzclose(file_); }
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The next line without its "\n" or "\r\n"; false at the end of the file.
  bool next(std::string_view& line) {
    for (;;) {
      const char* begin = buffer_.data() + begin_;
      const void* nl = std::memchr(begin, '\n', end_ - begin_);
      if (nl != nullptr) {
        const auto len = static_cast<std::size_t>(static_cast<const char*>(nl) - begin);
        begin_ += len + 1;
        return emit(line, begin, len);
      }
      if (eof_) {
        if (begin_ == end_) return false;
        const std::size_t len = end_ - begin_;
        begin_ = end_;
        return emit(line, begin, len);
      }
      fill();
    }
  }
  std::uint64_t line_number() const noexcept { return line_number_; }
  const std::string& path() const noexcept { return path_; }

 private:
  bool emit(std::string_view& line, const char* p, std::size_t len) {
    if (len > 0 && p[len - 1] == '\r') --len;
    line = std::string_view(p, len);
    ++line_number_;
    return true;
  }
  void fill() {
    if (begin_ > 0) {
      std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
    }
    if (end_ == buffer_.size()) buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
    const int got = gzread(file_, buffer_.data() + end_, static_cast<unsigned>(buffer_.size() - end_));
    int code = Z_OK;
    const char* message = gzerror(file_, &code);
    if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
      if (code == Z_ERRNO) throw IoError(path_ + ": read failed: " + std::strerror(errno), path_);
      throw FormatError(path_ + ": corrupt gzip stream: " + (message ? message : "unknown error"), path_);
    }
    if (got == 0) eof_ = true;
    end_ += static_cast<std::size_t>(got);
  }

  std::string path_;
  gzFile file_ = nullptr;
  std::vector<char> buffer_;
  std::size_t begin_ = 0, end_ = 0;
  bool eof_ = false;
  std::uint64_t line_number_ = 0;
};

[[noreturn]] void fail_at(const LineReader& in, const std::string& what) {
  detail::fail(in.path(), "line " + std::to_string(in.line_number()), what, "");
}

// Whitespace-separated fields of a line.
class Fields {
 public:
  explicit Fields(std::string_view line) : rest_(line) {}
  bool next(std::string_view& field) {
    std::size_t i = 0;
    while (i < rest_.size() && (rest_[i] == ' ' || rest_[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < rest_.size() && rest_[j] != ' ' && rest_[j] != '\t') ++j;
    field = rest_.substr(i, j - i);
    rest_ = rest_.substr(j);
    return !field.empty();
  }

 private:
  std::string_view rest_;
};

std::uint64_t parse_u64(const LineReader& in, std::string_view s, const char* what) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size())
    fail_at(in, std::string(what) + " '" + std::string(s) + "' is not a non-negative integer");
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The banner, the comments and the size line; `in` is left before the first entry.
void read_matrix_header(LineReader& in, MtxDirectory& d) {
  std::string_view line;
  if (!in.next(line) || !line.starts_with("%%MatrixMarket"))
    fail_at(in, "missing the '%%MatrixMarket' banner");
  Fields f(line.substr(14));
  std::string_view object, format, field, symmetry, extra;
  if (!f.next(object) || !f.next(format) || !f.next(field) || !f.next(symmetry) || f.next(extra))
    fail_at(in, "the banner must read '%%MatrixMarket matrix coordinate <field> general'");
  if (lower(object) != "matrix") fail_at(in, "object '" + std::string(object) + "' is not 'matrix'");
  if (lower(format) != "coordinate")
    detail::fail<UnsupportedError>(in.path(), "line 1", "only coordinate MatrixMarket files are supported", "");
  const std::string fl = lower(field);
  if (fl == "integer") d.field = MtxField::Integer;
  else if (fl == "real") d.field = MtxField::Real;
  else if (fl == "pattern") d.field = MtxField::Pattern;
  else detail::fail<UnsupportedError>(in.path(), "line 1", "field '" + std::string(field) + "' is not integer, real or pattern", "");
  if (lower(symmetry) != "general")
    detail::fail<UnsupportedError>(in.path(), "line 1", "symmetry '" + std::string(symmetry) + "' is not 'general'", "");
  while (in.next(line)) {
    if (line.starts_with('%')) continue;
    Fields s(line);
    std::string_view rows, cols, entries;
    if (!s.next(rows) || !s.next(cols) || !s.next(entries) || s.next(extra))
      fail_at(in, "the size line must hold 'rows columns entries'");
    d.n_genes = parse_u64(in, rows, "rows");
    d.n_cells = parse_u64(in, cols, "columns");
    d.n_entries = parse_u64(in, entries, "entries");
    return;
  }
  fail_at(in, "missing the size line");
}

// One entry of the matrix, checked: 0-based gene and cell, an integral non-negative count.
struct Entry {
  std::uint64_t gene = 0, cell = 0;
  std::int64_t value = 1;
};

Entry parse_entry(const LineReader& in, std::string_view line, const MtxDirectory& d) {
  Fields f(line);
  std::string_view gi, ci, vi, extra;
  if (!f.next(gi) || !f.next(ci)) fail_at(in, "an entry needs a row and a column");
  const bool has_value = d.field != MtxField::Pattern;
  if (has_value && !f.next(vi)) fail_at(in, "an entry needs a value");
  if (f.next(extra)) fail_at(in, "unexpected field '" + std::string(extra) + "'");
  Entry e;
  e.gene = parse_u64(in, gi, "row");
  e.cell = parse_u64(in, ci, "column");
  if (e.gene < 1 || e.gene > d.n_genes)
    fail_at(in, "row " + std::to_string(e.gene) + " outside 1.." + std::to_string(d.n_genes));
  if (e.cell < 1 || e.cell > d.n_cells)
    fail_at(in, "column " + std::to_string(e.cell) + " outside 1.." + std::to_string(d.n_cells));
  --e.gene;
  --e.cell;
  if (!has_value) return e;
  const char* end = vi.data() + vi.size();
  if (d.field == MtxField::Integer) {
    const auto [p, ec] = std::from_chars(vi.data(), end, e.value);
    if (ec != std::errc() || p != end) fail_at(in, "value '" + std::string(vi) + "' is not an integer");
  } else {
    double v = 0;
    const auto [p, ec] = std::from_chars(vi.data(), end, v);
    if (ec != std::errc() || p != end || !std::isfinite(v) || v != std::floor(v) || std::fabs(v) >= 0x1p63)
      fail_at(in, "value '" + std::string(vi) + "' is not an integer count");
    e.value = static_cast<std::int64_t>(v);
  }
  if (e.value < 0) fail_at(in, "negative count " + std::string(vi));
  return e;
}

std::string first_existing(const fs::path& dir, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    std::error_code ec;
    if (fs::is_regular_file(dir / name, ec)) return (dir / name).string();
  }
  return {};
}

// Tab-separated lines; an empty final line (the file's closing newline) is not a row.
std::vector<std::vector<std::string>> read_table(const std::string& path) {
  LineReader in(path);
  std::vector<std::vector<std::string>> rows;
  std::string_view line;
  while (in.next(line)) {
    if (line.empty()) fail_at(in, "empty line");
    auto& row = rows.emplace_back();
    std::size_t start = 0;
    for (;;) {
      const std::size_t tab = line.find('\t', start);
      row.emplace_back(line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start));
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
  }
  return rows;
}

}  // namespace

MtxDirectory scan_mtx_directory(const std::string& path) {
  MtxDirectory d;
  d.path = path;
  std::error_code ec;
  if (!fs::is_directory(path, ec)) throw FormatError(path + ": not a 10x MatrixMarket directory", path);
  d.matrix_file = first_existing(path, {"matrix.mtx.gz", "matrix.mtx"});
  d.features_file = first_existing(path, {"features.tsv.gz", "features.tsv", "genes.tsv.gz", "genes.tsv"});
  d.barcodes_file = first_existing(path, {"barcodes.tsv.gz", "barcodes.tsv"});
  if (d.matrix_file.empty()) throw FormatError(path + ": no matrix.mtx or matrix.mtx.gz", path);
  if (d.features_file.empty()) throw FormatError(path + ": no features.tsv[.gz] or genes.tsv[.gz]", path);
  if (d.barcodes_file.empty()) throw FormatError(path + ": no barcodes.tsv or barcodes.tsv.gz", path);
  {
    LineReader in(d.matrix_file);
    read_matrix_header(in, d);
  }
  for (auto& row : read_table(d.features_file)) {
    d.gene_ids.push_back(row[0]);
    d.gene_symbols.push_back(row.size() > 1 ? row[1] : row[0]);
    d.feature_types.push_back(row.size() > 2 ? row[2] : "Gene Expression");
  }
  for (auto& row : read_table(d.barcodes_file)) d.barcodes.push_back(std::move(row[0]));
  if (d.gene_ids.size() != d.n_genes)
    throw FormatError(d.features_file + ": " + std::to_string(d.gene_ids.size()) + " features, but " + d.matrix_file +
                          " declares " + std::to_string(d.n_genes) + " rows",
                      d.features_file);
  if (d.barcodes.size() != d.n_cells)
    throw FormatError(d.barcodes_file + ": " + std::to_string(d.barcodes.size()) + " barcodes, but " + d.matrix_file +
                          " declares " + std::to_string(d.n_cells) + " columns",
                      d.barcodes_file);
  return d;
}

struct MtxCsrSource::Impl {
  std::vector<MtxDirectory> dirs;
  MtxSourceOptions options;
  std::vector<std::uint64_t> first_cell;             // global index of each directory's first cell
  std::vector<std::vector<std::int64_t>> indptr;     // per directory, from the counting pass
  std::uint64_t passes = 0;
  // The band in memory: cells [band_lo, band_hi) of directory band_dir.
  std::size_t band_dir = SIZE_MAX;
  std::uint64_t band_lo = 0, band_hi = 0;
  std::vector<std::int64_t> band_indices, band_values;

  // Pass 1: every entry validated and counted per cell.
  const std::vector<std::int64_t>& counts(std::size_t f) {
    auto& ip = indptr[f];
    if (!ip.empty()) return ip;
    const MtxDirectory& d = dirs[f];
    LineReader in(d.matrix_file);
    MtxDirectory header;
    read_matrix_header(in, header);
    ++passes;
    std::vector<std::int64_t> per_cell(d.n_cells + 1, 0);
    std::uint64_t seen = 0;
    std::string_view line;
    while (in.next(line)) {
      if (line.empty() || line.starts_with('%')) continue;
      if (seen == d.n_entries)
        fail_at(in, "more entries than the " + std::to_string(d.n_entries) + " the size line declares");
      const Entry e = parse_entry(in, line, d);
      ++per_cell[e.cell + 1];
      ++seen;
    }
    if (seen != d.n_entries)
      fail_at(in, "the size line declares " + std::to_string(d.n_entries) + " entries, the file holds " +
                      std::to_string(seen));
    for (std::uint64_t c = 0; c < d.n_cells; ++c) per_cell[c + 1] += per_cell[c];
    ip = std::move(per_cell);
    return ip;
  }

  // Pass 2: the entries of cells [lo, hi) of directory f scattered into cell-major order.
  void load_band(std::size_t f, std::uint64_t lo, std::uint64_t hi) {
    const auto& ip = counts(f);
    const MtxDirectory& d = dirs[f];
    const auto base = ip[lo];
    const auto n = static_cast<std::size_t>(ip[hi] - base);
    band_indices.assign(n, 0);
    band_values.assign(n, 0);
    std::vector<std::int64_t> cursor(ip.begin() + static_cast<std::ptrdiff_t>(lo),
                                     ip.begin() + static_cast<std::ptrdiff_t>(hi));
    LineReader in(d.matrix_file);
    MtxDirectory header;
    read_matrix_header(in, header);
    ++passes;
    std::string_view line;
    while (in.next(line)) {
      if (line.empty() || line.starts_with('%')) continue;
      const Entry e = parse_entry(in, line, d);
      if (e.cell < lo || e.cell >= hi) continue;
      auto& at = cursor[e.cell - lo];
      if (at >= ip[e.cell + 1]) fail_at(in, "the file changed while it was read");
      band_indices[static_cast<std::size_t>(at - base)] = static_cast<std::int64_t>(e.gene);
      band_values[static_cast<std::size_t>(at - base)] = e.value;
      ++at;
    }
    for (std::uint64_t c = lo; c < hi; ++c)
      if (cursor[c - lo] != ip[c + 1]) throw FormatError(d.matrix_file + ": the file changed while it was read", d.matrix_file);
    band_dir = f;
    band_lo = lo;
    band_hi = hi;
  }

  // Makes cells [lo, hi) of directory f resident; a new band extends by whole requests of
  // `step` cells while it fits the budget.
  void ensure(std::size_t f, std::uint64_t lo, std::uint64_t hi, std::uint64_t step) {
    if (band_dir == f && lo >= band_lo && hi <= band_hi) return;
    const auto& ip = counts(f);
    const std::uint64_t budget = std::max<std::uint64_t>(1, options.memory_budget / 16);
    std::uint64_t end = hi;
    while (end < dirs[f].n_cells) {
      const std::uint64_t next = std::min(dirs[f].n_cells, end + std::max<std::uint64_t>(1, step));
      if (static_cast<std::uint64_t>(ip[next] - ip[lo]) > budget) break;
      end = next;
    }
    band_indices.clear();
    band_indices.shrink_to_fit();
    band_values.clear();
    band_values.shrink_to_fit();
    load_band(f, lo, end);
  }
};

MtxCsrSource::MtxCsrSource(std::vector<MtxDirectory> directories, MtxSourceOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (directories.empty()) throw UsageError("no MatrixMarket directories");
  for (std::size_t f = 1; f < directories.size(); ++f) {
    const auto& a = directories[0].gene_ids;
    const auto& b = directories[f].gene_ids;
    if (a == b) continue;
    std::size_t k = 0;
    while (k < a.size() && k < b.size() && a[k] == b[k]) ++k;
    const std::string detail =
        k < a.size() && k < b.size()
            ? "gene " + std::to_string(k) + " is '" + b[k] + "', expected '" + a[k] + "'"
            : std::to_string(b.size()) + " genes, expected " + std::to_string(a.size());
    throw FormatError(directories[f].features_file + ": gene identifiers differ from " + directories[0].features_file +
                          " (" + detail + ")",
                      directories[f].features_file);
  }
  impl_->options = options;
  std::uint64_t total = 0;
  for (const auto& d : directories) {
    impl_->first_cell.push_back(total);
    total += d.n_cells;
  }
  impl_->first_cell.push_back(total);
  impl_->indptr.resize(directories.size());
  impl_->dirs = std::move(directories);
}

MtxCsrSource::~MtxCsrSource() = default;

std::uint64_t MtxCsrSource::n_cells() const { return impl_->first_cell.back(); }
std::uint64_t MtxCsrSource::n_genes() const { return impl_->dirs[0].n_genes; }
const std::vector<MtxDirectory>& MtxCsrSource::directories() const { return impl_->dirs; }
std::uint64_t MtxCsrSource::matrix_passes() const { return impl_->passes; }

void MtxCsrSource::read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) {
  Impl& m = *impl_;
  if (count > n_cells() || first > n_cells() - count)
    throw UsageError("rows " + std::to_string(first) + ".." + std::to_string(first + count) + " outside 0.." +
                     std::to_string(n_cells()));
  out.indptr.assign(1, 0);
  out.indices.clear();
  std::vector<std::int64_t> values;
  if (auto* v = std::get_if<std::vector<std::int64_t>>(&out.values)) values.swap(*v);
  values.clear();
  std::uint64_t row = first;
  const std::uint64_t end = first + count;
  while (row < end) {
    // The directory holding `row` (directories with no cells are skipped).
    const auto it = std::upper_bound(m.first_cell.begin(), m.first_cell.end(), row);
    const auto f = static_cast<std::size_t>(it - m.first_cell.begin() - 1);
    const std::uint64_t lo = row - m.first_cell[f];
    const std::uint64_t hi = std::min(end, m.first_cell[f + 1]) - m.first_cell[f];
    m.ensure(f, lo, hi, count);
    const auto& ip = m.indptr[f];
    const auto base = ip[m.band_lo];
    const auto a = static_cast<std::size_t>(ip[lo] - base);
    const auto b = static_cast<std::size_t>(ip[hi] - base);
    out.indices.insert(out.indices.end(), m.band_indices.begin() + static_cast<std::ptrdiff_t>(a),
                       m.band_indices.begin() + static_cast<std::ptrdiff_t>(b));
    values.insert(values.end(), m.band_values.begin() + static_cast<std::ptrdiff_t>(a),
                  m.band_values.begin() + static_cast<std::ptrdiff_t>(b));
    const std::int64_t offset = out.indptr.back() - ip[lo];
    for (std::uint64_t c = lo; c < hi; ++c) out.indptr.push_back(ip[c + 1] + offset);
    row = m.first_cell[f] + hi;
  }
  out.values = std::move(values);
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
