// HDF5 sparse groups and dense datasets as cell rows (see cells_matrix.hpp).
#include "cells_matrix.hpp"

#include <algorithm>
#include <optional>
#include <variant>
#include <vector>

#include "tessera/cells/transpose_source.hpp"
#include "tessera/core/error.hpp"

namespace tessera::interop::detail {
namespace {

constexpr std::uint64_t kMajorBlock = std::uint64_t{1} << 16;  // indptr entries per read (CSC)
constexpr std::uint64_t kEntryBlock = std::uint64_t{1} << 20;  // indices/data entries per read (CSC)
constexpr std::uint64_t kDenseBlock = std::uint64_t{1} << 22;  // elements per dense read (32 MiB as int64)

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  throw FormatError(path + ": " + object + ": " + what, path, object);
}

template <typename T>
void read_range(const Hdf5Dataset& d, std::uint64_t first, std::uint64_t count, std::vector<T>& out) {
  out.resize(static_cast<std::size_t>(count));
  const std::uint64_t origin[1] = {first};
  const std::uint64_t extent[1] = {count};
  d.read(origin, extent, std::span<T>(out));
}

// The three datasets of a sparse group, open.
struct OpenGroup {
  Hdf5File file;
  Hdf5Dataset data, indices, indptr;
  explicit OpenGroup(const SparseGroup& g)
      : file(g.path),
        data(file.dataset(g.group + "/data")),
        indices(file.dataset(g.group + "/indices")),
        indptr(file.dataset(g.group + "/indptr")) {}
};

// indptr[first .. first + ip.size() − 1] must not decrease and must stay within 0..nnz.
void check_indptr(const SparseGroup& g, std::uint64_t first, const std::vector<std::int64_t>& ip) {
  for (std::size_t i = 0; i < ip.size(); ++i) {
    if (ip[i] < 0 || static_cast<std::uint64_t>(ip[i]) > g.nnz)
      fail(g.path, g.group + "/indptr",
           "entry " + std::to_string(first + i) + " is " + std::to_string(ip[i]) + ", outside 0.." +
               std::to_string(g.nnz));
    if (i > 0 && ip[i] < ip[i - 1])
      fail(g.path, g.group + "/indptr",
           "decreases at entry " + std::to_string(first + i) + " (" + std::to_string(ip[i - 1]) + " then " +
               std::to_string(ip[i]) + ")");
  }
}

// indices[first ..] must lie within 0..n_minor − 1.
void check_indices(const SparseGroup& g, std::uint64_t first, const std::vector<std::int64_t>& indices) {
  for (std::size_t k = 0; k < indices.size(); ++k)
    if (indices[k] < 0 || static_cast<std::uint64_t>(indices[k]) >= g.n_minor)
      fail(g.path, g.group + "/indices",
           "entry " + std::to_string(first + k) + " is " + std::to_string(indices[k]) + ", outside 0.." +
               std::to_string(g.n_minor - 1));
}

class MajorRows final : public cells::CsrBlockSource {
 public:
  explicit MajorRows(SparseGroup g) : g_(std::move(g)) {}
  std::uint64_t n_cells() const override { return g_.n_major; }
  std::uint64_t n_genes() const override { return g_.n_minor; }
  void release() override { open_.reset(); }
  std::string locate(std::uint64_t row) const override {
    return g_.path + ": " + g_.group + " row " + std::to_string(row);
  }

  void read_rows(std::uint64_t first, std::uint64_t count, cells::CsrBlock& out) override {
    if (!open_) open_.emplace(g_);
    read_range(open_->indptr, first, count + 1, ip_);
    check_indptr(g_, first, ip_);
    const auto lo = static_cast<std::uint64_t>(ip_.front());
    const auto n = static_cast<std::uint64_t>(ip_.back()) - lo;
    read_range(open_->indices, lo, n, out.indices);
    check_indices(g_, lo, out.indices);
    if (g_.real_values) {
      std::vector<double> v;
      read_range(open_->data, lo, n, v);
      out.values = std::move(v);
    } else {
      std::vector<std::int64_t> v;
      read_range(open_->data, lo, n, v);
      out.values = std::move(v);
    }
    out.indptr.resize(count + 1);
    for (std::uint64_t r = 0; r <= count; ++r) out.indptr[r] = ip_[r] - static_cast<std::int64_t>(lo);
  }

 private:
  SparseGroup g_;
  std::optional<OpenGroup> open_;
  std::vector<std::int64_t> ip_;
};

// The entries of a genes-major group in file order, in blocks.
class MinorEntries final : public cells::GeneMajorEntries {
 public:
  explicit MinorEntries(SparseGroup g) : g_(std::move(g)), name_(g_.path + ": " + g_.group) {}
  const std::string& name() const override { return name_; }
  std::uint64_t n_cells() const override { return g_.n_minor; }
  std::uint64_t n_genes() const override { return g_.n_major; }
  bool real_values() const override { return g_.real_values; }
  void release() override { open_.reset(); }

  void scan(bool with_values, const std::function<void(const cells::EntryBlock&)>& sink) override {
    if (!open_) open_.emplace(g_);
    std::vector<std::int64_t> ip, cells, genes, ints;
    std::vector<double> reals;
    for (std::uint64_t g0 = 0; g0 < g_.n_major; g0 += kMajorBlock) {
      const std::uint64_t g1 = std::min(g_.n_major, g0 + kMajorBlock);
      read_range(open_->indptr, g0, g1 - g0 + 1, ip);
      check_indptr(g_, g0, ip);
      std::uint64_t gene = g0;
      for (auto e = static_cast<std::uint64_t>(ip.front()); e < static_cast<std::uint64_t>(ip.back());) {
        const std::uint64_t e1 = std::min<std::uint64_t>(static_cast<std::uint64_t>(ip.back()), e + kEntryBlock);
        read_range(open_->indices, e, e1 - e, cells);
        check_indices(g_, e, cells);
        cells::EntryBlock b;
        b.cells = cells;
        if (with_values) {
          genes.resize(static_cast<std::size_t>(e1 - e));
          for (std::uint64_t k = e; k < e1; ++k) {
            while (static_cast<std::uint64_t>(ip[gene - g0 + 1]) <= k) ++gene;
            genes[k - e] = static_cast<std::int64_t>(gene);
          }
          b.genes = genes;
          if (g_.real_values) {
            read_range(open_->data, e, e1 - e, reals);
            b.real_values = reals;
          } else {
            read_range(open_->data, e, e1 - e, ints);
            b.int_values = ints;
          }
        }
        sink(b);
        e = e1;
      }
    }
  }

 private:
  SparseGroup g_;
  std::string name_;
  std::optional<OpenGroup> open_;
};

class DenseRows final : public cells::CsrBlockSource {
 public:
  DenseRows(std::string path, std::string dataset, std::uint64_t n_cells, std::uint64_t n_genes)
      : path_(std::move(path)), name_(std::move(dataset)), n_cells_(n_cells), n_genes_(n_genes) {}
  std::uint64_t n_cells() const override { return n_cells_; }
  std::uint64_t n_genes() const override { return n_genes_; }
  void release() override {
    data_.reset();
    file_.reset();
  }
  std::string locate(std::uint64_t row) const override { return path_ + ": " + name_ + " row " + std::to_string(row); }

  void read_rows(std::uint64_t first, std::uint64_t count, cells::CsrBlock& out) override {
    if (!file_) {
      file_.emplace(path_);
      data_.emplace(file_->dataset(name_));
    }
    out.indptr.assign(1, 0);
    out.indices.clear();
    if (data_->element() == Hdf5Element::Float) {
      std::vector<double> values;
      read_typed(first, count, out, values);
      out.values = std::move(values);
    } else {
      std::vector<std::int64_t> values;
      read_typed(first, count, out, values);
      out.values = std::move(values);
    }
  }

 private:
  template <typename T>
  void read_typed(std::uint64_t first, std::uint64_t count, cells::CsrBlock& out, std::vector<T>& values) {
    const std::uint64_t cols = std::min(n_genes_, kDenseBlock);
    const std::uint64_t rows = n_genes_ == 0 ? count : std::max<std::uint64_t>(1, kDenseBlock / n_genes_);
    std::vector<T> buffer;
    const auto append = [&](std::uint64_t row, std::uint64_t width, std::uint64_t c0) {
      const T* p = buffer.data() + row * width;
      for (std::uint64_t j = 0; j < width; ++j)
        if (p[j] != T(0)) {  // NaN is kept, and refused when the tile is canonicalized
          out.indices.push_back(static_cast<std::int64_t>(c0 + j));
          values.push_back(p[j]);
        }
    };
    for (std::uint64_t r0 = first; r0 < first + count; r0 += rows) {
      const std::uint64_t r1 = std::min(first + count, r0 + rows);
      if (cols == n_genes_) {  // whole rows (also when there are no genes)
        read_box(r0, r1 - r0, 0, n_genes_, buffer);
        for (std::uint64_t r = 0; r < r1 - r0; ++r) {
          append(r, n_genes_, 0);
          out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
        }
        continue;
      }
      // A row wider than the block (then r1 == r0 + 1): read in column pieces.
      for (std::uint64_t c0 = 0; c0 < n_genes_; c0 += cols) {
        const std::uint64_t width = std::min(cols, n_genes_ - c0);
        read_box(r0, 1, c0, width, buffer);
        append(0, width, c0);
      }
      out.indptr.push_back(static_cast<std::int64_t>(out.indices.size()));
    }
  }

  template <typename T>
  void read_box(std::uint64_t r0, std::uint64_t n_rows, std::uint64_t c0, std::uint64_t n_cols,
                std::vector<T>& buffer) {
    buffer.resize(static_cast<std::size_t>(n_rows * n_cols));
    const std::uint64_t origin[2] = {r0, c0};
    const std::uint64_t extent[2] = {n_rows, n_cols};
    data_->read(origin, extent, std::span<T>(buffer));
  }

  std::string path_, name_;
  std::uint64_t n_cells_, n_genes_;
  std::optional<Hdf5File> file_;
  std::optional<Hdf5Dataset> data_;
};

}  // namespace

SparseGroup check_sparse_group(const Hdf5File& file, const std::string& group, std::uint64_t n_major,
                               std::uint64_t n_minor) {
  const std::string& path = file.path();
  SparseGroup g{path, group, n_major, n_minor, 0, false};
  std::vector<std::uint64_t> lengths;
  for (const char* member : {"data", "indices", "indptr"}) {
    const std::string object = group + "/" + member;
    if (file.kind(object) != Hdf5Kind::Dataset)
      fail(path, object, "missing (a sparse matrix group needs data, indices and indptr)");
    const Hdf5Dataset d = file.dataset(object);
    if (d.shape().size() != 1)
      fail(path, object, "must be 1-D, has " + std::to_string(d.shape().size()) + " dimensions");
    const bool is_data = member[0] == 'd';
    const Hdf5Element e = d.element();
    if (e != Hdf5Element::Integer && !(is_data && (e == Hdf5Element::Float || e == Hdf5Element::Bool)))
      fail(path, object, "holds " + d.type_name() + (is_data ? ", not numbers" : ", not integers"));
    if (is_data) g.real_values = e == Hdf5Element::Float;
    lengths.push_back(d.shape()[0]);
  }
  if (lengths[0] != lengths[1])
    fail(path, group + "/data",
         "has " + std::to_string(lengths[0]) + " entries but " + group + "/indices has " + std::to_string(lengths[1]));
  g.nnz = lengths[0];
  if (lengths[2] != n_major + 1)
    fail(path, group + "/indptr",
         "has " + std::to_string(lengths[2]) + " entries, expected " + std::to_string(n_major + 1) + " (the shape's " +
             std::to_string(n_major) + " + 1)");
  const Hdf5Dataset indptr = file.dataset(group + "/indptr");
  std::vector<std::int64_t> ends;
  read_range(indptr, 0, 1, ends);
  if (ends[0] != 0) fail(path, group + "/indptr", "starts at " + std::to_string(ends[0]) + ", not 0");
  read_range(indptr, n_major, 1, ends);
  if (ends[0] < 0 || static_cast<std::uint64_t>(ends[0]) != g.nnz)
    fail(path, group + "/indptr",
         "ends at " + std::to_string(ends[0]) + ", but data and indices hold " + std::to_string(g.nnz) + " entries");
  return g;
}

std::unique_ptr<cells::CsrBlockSource> open_major_rows(const SparseGroup& group) {
  return std::make_unique<MajorRows>(group);
}

std::unique_ptr<cells::CsrBlockSource> open_minor_rows(const SparseGroup& group, std::uint64_t memory_budget) {
  return std::make_unique<cells::TransposedCsrSource>(std::make_unique<MinorEntries>(group),
                                                      cells::TransposeOptions{.memory_budget = memory_budget});
}

std::unique_ptr<cells::CsrBlockSource> open_dense_rows(const std::string& path, const std::string& dataset,
                                                       std::uint64_t n_cells, std::uint64_t n_genes) {
  return std::make_unique<DenseRows>(path, dataset, n_cells, n_genes);
}

}  // namespace tessera::interop::detail
