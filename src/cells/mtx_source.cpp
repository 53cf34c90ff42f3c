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

#include "rules.hpp"
#include "tessera/cells/concat_source.hpp"
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
  if (!in.next(line) || !line.starts_with("%%MatrixMarket")) fail_at(in, "missing the '%%MatrixMarket' banner");
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
  else
    detail::fail<UnsupportedError>(in.path(), "line 1",
                                   "field '" + std::string(field) + "' is not integer, real or pattern", "");
  if (lower(symmetry) != "general")
    detail::fail<UnsupportedError>(in.path(), "line 1", "symmetry '" + std::string(symmetry) + "' is not 'general'",
                                   "");
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

namespace {

// The entries of one matrix file, validated on every pass (§7.1): 1-based indices within the
// size line, integer counts, exactly the declared number of entries.
class MtxEntries final : public GeneMajorEntries {
 public:
  explicit MtxEntries(MtxDirectory d) : d_(std::move(d)) {}
  const std::string& name() const override { return d_.matrix_file; }
  std::uint64_t n_cells() const override { return d_.n_cells; }
  std::uint64_t n_genes() const override { return d_.n_genes; }
  bool real_values() const override { return false; }

  void scan(bool with_values, const std::function<void(const EntryBlock&)>& sink) override {
    constexpr std::size_t kBlock = std::size_t{1} << 16;
    LineReader in(d_.matrix_file);
    MtxDirectory header;
    read_matrix_header(in, header);
    std::vector<std::int64_t> cells, genes, values;
    const auto flush = [&] {
      EntryBlock b;
      b.cells = cells;
      if (with_values) {
        b.genes = genes;
        b.int_values = values;
      }
      sink(b);
      cells.clear();
      genes.clear();
      values.clear();
    };
    std::uint64_t seen = 0;
    std::string_view line;
    while (in.next(line)) {
      if (line.empty() || line.starts_with('%')) continue;
      if (seen == d_.n_entries)
        fail_at(in, "more entries than the " + std::to_string(d_.n_entries) + " the size line declares");
      const Entry e = parse_entry(in, line, d_);
      cells.push_back(static_cast<std::int64_t>(e.cell));
      if (with_values) {
        genes.push_back(static_cast<std::int64_t>(e.gene));
        values.push_back(e.value);
      }
      ++seen;
      if (cells.size() == kBlock) flush();
    }
    if (seen != d_.n_entries)
      fail_at(in, "the size line declares " + std::to_string(d_.n_entries) + " entries, the file holds " +
                      std::to_string(seen));
    if (!cells.empty()) flush();
  }

 private:
  MtxDirectory d_;
};

// What a matrix source needs of a directory (the tables can be large).
MtxDirectory matrix_only(const MtxDirectory& d) {
  MtxDirectory m;
  m.path = d.path;
  m.matrix_file = d.matrix_file;
  m.features_file = d.features_file;
  m.barcodes_file = d.barcodes_file;
  m.field = d.field;
  m.n_genes = d.n_genes;
  m.n_cells = d.n_cells;
  m.n_entries = d.n_entries;
  return m;
}

}  // namespace

std::unique_ptr<TransposedCsrSource> open_mtx_matrix(const MtxDirectory& directory, MtxSourceOptions options) {
  return std::make_unique<TransposedCsrSource>(std::make_unique<MtxEntries>(matrix_only(directory)),
                                               TransposeOptions{.memory_budget = options.memory_budget});
}

struct MtxCsrSource::Impl {
  std::vector<MtxDirectory> dirs;
  std::vector<const TransposedCsrSource*> parts;
  std::unique_ptr<ConcatCsrSource> cells;
};

MtxCsrSource::MtxCsrSource(std::vector<MtxDirectory> directories, MtxSourceOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (directories.empty()) throw UsageError("no MatrixMarket directories");
  for (std::size_t f = 1; f < directories.size(); ++f)
    check_same_genes(directories[0].gene_ids, directories[0].features_file, directories[f].gene_ids,
                     directories[f].features_file);
  std::vector<std::unique_ptr<CsrBlockSource>> parts;
  for (const auto& d : directories) {
    auto part = open_mtx_matrix(d, options);
    impl_->parts.push_back(part.get());
    parts.push_back(std::move(part));
  }
  impl_->cells = std::make_unique<ConcatCsrSource>(std::move(parts));
  impl_->dirs = std::move(directories);
}

MtxCsrSource::~MtxCsrSource() = default;

std::uint64_t MtxCsrSource::n_cells() const { return impl_->cells->n_cells(); }
std::uint64_t MtxCsrSource::n_genes() const { return impl_->cells->n_genes(); }
const std::vector<MtxDirectory>& MtxCsrSource::directories() const { return impl_->dirs; }
void MtxCsrSource::release() { impl_->cells->release(); }
std::string MtxCsrSource::locate(std::uint64_t row) const { return impl_->cells->locate(row); }

std::uint64_t MtxCsrSource::matrix_passes() const {
  std::uint64_t n = 0;
  for (const auto* p : impl_->parts) n += p->passes();
  return n;
}

void MtxCsrSource::read_rows(std::uint64_t first, std::uint64_t count, CsrBlock& out) {
  impl_->cells->read_rows(first, count, out);
}

}  // namespace tessera::cells
