// h5ad converter inputs: the scan (matrix encoding, shape, var and obs indexes) and the matrix
// source (see h5ad.hpp).
#include "tessera/interop/h5ad.hpp"

#include "anndata_frame.hpp"
#include "cells_matrix.hpp"
#include "tessera/core/checked.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  throw FormatError(path + ": " + object + ": " + what, path, object);
}

std::uint64_t index_length(const Hdf5File& f, const std::string& object) {
  return detail::string_index(f, object).shape()[0];
}

std::string matrix_of(const H5adOptions& o) {
  if (o.use_raw && !o.layer.empty()) throw UsageError("choose at most one of a layer and raw/X");
  if (o.use_raw) return "raw/X";
  return o.layer.empty() ? std::string("X") : "layers/" + o.layer;
}

// A layer that does not exist: name the ones that do.
[[noreturn]] void missing_matrix(const Hdf5File& f, const std::string& matrix, const H5adOptions& o) {
  std::string what = "missing";
  if (!o.layer.empty()) {
    std::string present;
    if (f.kind("layers") == Hdf5Kind::Group)
      for (const auto& name : f.members("layers")) present += (present.empty() ? "" : ", ") + name;
    what += present.empty() ? " (the file has no layers)" : " (layers: " + present + ")";
  } else if (o.use_raw) {
    what += " (the file has no raw)";
  }
  fail(f.path(), matrix, what);
}

void scan_sparse(const Hdf5File& f, H5adScan& s) {
  const std::string& path = f.path();
  const auto enc = f.string_attribute(s.matrix, "encoding-type");
  const auto legacy = f.string_attribute(s.matrix, "h5sparse_format");
  if (enc) {
    if (*enc == "csr_matrix") s.layout = H5adLayout::Csr;
    else if (*enc == "csc_matrix") s.layout = H5adLayout::Csc;
    else
      throw UnsupportedError(
          path + ": " + s.matrix + ": encoding-type '" + *enc + "' is not csr_matrix or csc_matrix (or a dense array)",
          path, s.matrix);
  } else if (legacy) {
    if (*legacy == "csr") s.layout = H5adLayout::Csr;
    else if (*legacy == "csc") s.layout = H5adLayout::Csc;
    else
      throw UnsupportedError(path + ": " + s.matrix + ": h5sparse_format '" + *legacy + "' is not csr or csc", path,
                             s.matrix);
  } else {
    fail(path, s.matrix, "a group with neither an encoding-type nor an h5sparse_format attribute");
  }
  auto shape = f.integer_attribute(s.matrix, "shape");
  if (!shape) shape = f.integer_attribute(s.matrix, "h5sparse_shape");
  if (!shape) fail(path, s.matrix, "no integer 'shape' (or 'h5sparse_shape') attribute");
  if (shape->size() != 2 || (*shape)[0] < 0 || (*shape)[1] < 0)
    fail(path, s.matrix, "the shape attribute must hold two non-negative integers");
  s.n_cells = static_cast<std::uint64_t>((*shape)[0]);
  s.n_genes = static_cast<std::uint64_t>((*shape)[1]);
  const bool csr = s.layout == H5adLayout::Csr;
  const auto g = detail::check_sparse_group(f, s.matrix, csr ? s.n_cells : s.n_genes, csr ? s.n_genes : s.n_cells);
  s.nnz = g.nnz;
  s.real_values = g.real_values;
}

void scan_dense(const Hdf5File& f, H5adScan& s) {
  const Hdf5Dataset d = f.dataset(s.matrix);
  if (d.shape().size() != 2)
    fail(f.path(), s.matrix,
         "a dense matrix must be 2-D, this one has " + std::to_string(d.shape().size()) + " dimensions");
  const Hdf5Element e = d.element();
  if (e != Hdf5Element::Integer && e != Hdf5Element::Float && e != Hdf5Element::Bool)
    fail(f.path(), s.matrix, "holds " + d.type_name() + ", not numbers");
  s.layout = H5adLayout::Dense;
  s.n_cells = d.shape()[0];
  s.n_genes = d.shape()[1];
  s.nnz = checked_mul(s.n_cells, s.n_genes, "dense matrix size");
  s.real_values = e == Hdf5Element::Float;
}

}  // namespace

H5adScan scan_h5ad(const std::string& path, const H5adOptions& o) {
  const Hdf5File f(path);
  H5adScan s;
  s.path = path;
  s.matrix = matrix_of(o);
  switch (f.kind(s.matrix)) {
    case Hdf5Kind::Group: scan_sparse(f, s); break;
    case Hdf5Kind::Dataset: scan_dense(f, s); break;
    case Hdf5Kind::Missing: missing_matrix(f, s.matrix, o);
    case Hdf5Kind::Other: fail(path, s.matrix, "neither a group nor a dataset");
  }
  const std::string var_index = detail::dataframe_index(f, o.use_raw ? "raw/var" : "var");
  const std::uint64_t n_names = index_length(f, var_index);
  if (n_names != s.n_genes)
    fail(path, var_index,
         std::to_string(n_names) + " gene names, but " + s.matrix + " has " + std::to_string(s.n_genes) + " genes");
  s.var_names = f.dataset(var_index).read_strings(0, n_names);
  if (f.kind("layers") == Hdf5Kind::Group) s.layers = f.members("layers");
  s.has_raw = f.kind("raw/X") != Hdf5Kind::Missing;
  for (const char* group : {"obsm", "varm", "obsp", "varp", "uns"})
    if (f.kind(group) == Hdf5Kind::Group)
      for (const auto& member : f.members(group)) s.not_converted.push_back(std::string(group) + "/" + member);
  for (const auto& layer : s.layers)
    if ("layers/" + layer != s.matrix) s.not_converted.push_back("layers/" + layer);
  if (s.has_raw && s.matrix != "raw/X") s.not_converted.push_back("raw/X");
  if (s.matrix != "X" && f.kind("X") != Hdf5Kind::Missing) s.not_converted.push_back("X");
  if (f.kind("obs") != Hdf5Kind::Missing) {
    const std::string obs_index = detail::dataframe_index(f, "obs");
    const std::uint64_t n_obs = index_length(f, obs_index);
    if (n_obs != s.n_cells)
      fail(path, obs_index,
           std::to_string(n_obs) + " cell names, but " + s.matrix + " has " + std::to_string(s.n_cells) + " cells");
  }
  return s;
}

std::unique_ptr<cells::CsrBlockSource> open_h5ad_matrix(const H5adScan& s, const H5adOptions& o) {
  switch (s.layout) {
    case H5adLayout::Csr:
      return detail::open_major_rows({s.path, s.matrix, s.n_cells, s.n_genes, s.nnz, s.real_values});
    case H5adLayout::Csc:
      return detail::open_minor_rows({s.path, s.matrix, s.n_genes, s.n_cells, s.nnz, s.real_values}, o.memory_budget);
    case H5adLayout::Dense: return detail::open_dense_rows(s.path, s.matrix, s.n_cells, s.n_genes);
  }
  throw UsageError("unknown h5ad layout");
}

}  // namespace tessera::interop
