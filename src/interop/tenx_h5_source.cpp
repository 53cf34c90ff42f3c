// Cell Ranger HDF5 converter inputs: the scan (layout version, genome, shape, features,
// barcodes) and the matrix source (see tenx_h5.hpp).
#include "tessera/interop/tenx_h5.hpp"

#include "cells_matrix.hpp"
#include "tessera/core/error.hpp"
#include "tessera/interop/hdf5_file.hpp"

namespace tessera::interop {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& object, const std::string& what) {
  throw FormatError(path + ": " + object + ": " + what, path, object);
}

// A 1-D string dataset of exactly `n` entries.
std::vector<std::string> read_names(const Hdf5File& f, const std::string& object, std::uint64_t n, const char* what) {
  if (f.kind(object) != Hdf5Kind::Dataset) fail(f.path(), object, "missing");
  const Hdf5Dataset d = f.dataset(object);
  if (d.shape().size() != 1 || d.element() != Hdf5Element::String)
    fail(f.path(), object,
         "must be a 1-D list of strings, not " + std::to_string(d.shape().size()) + "-D " + d.type_name());
  if (d.shape()[0] != n)
    fail(f.path(), object,
         std::to_string(d.shape()[0]) + " entries, but the shape has " + std::to_string(n) + " " + what);
  return d.read_strings(0, n);
}

// The matrix group: `matrix` (v3+), or the genome group of a v2 file.
std::string matrix_group(const Hdf5File& f, const std::string& genome) {
  const std::string& path = f.path();
  if (f.kind("matrix") == Hdf5Kind::Group) {
    if (!genome.empty())
      throw UsageError(
          path + ": --10x-genome selects a genome group of a Cell Ranger 2 file; this file has one 'matrix' group",
          path);
    return "matrix";
  }
  std::vector<std::string> genomes;
  for (const auto& name : f.members("/"))
    if (f.kind(name) == Hdf5Kind::Group && f.kind(name + "/genes") == Hdf5Kind::Dataset) genomes.push_back(name);
  if (genomes.empty())
    throw FormatError(path +
                          ": neither a 'matrix' group (Cell Ranger 3 and later) nor genome groups with 'genes' "
                          "(Cell Ranger 2)",
                      path);
  std::string list;
  for (const auto& g : genomes) list += (list.empty() ? "" : ", ") + g;
  if (genome.empty()) {
    if (genomes.size() == 1) return genomes[0];
    throw UsageError(path + ": several genomes (" + list + "); choose one with --10x-genome", path);
  }
  for (const auto& g : genomes)
    if (g == genome) return g;
  throw UsageError(path + ": no genome '" + genome + "' (genomes: " + list + ")", path);
}

}  // namespace

TenxH5Scan scan_tenx_h5(const std::string& path, const std::string& genome) {
  const Hdf5File f(path);
  TenxH5Scan s;
  s.path = path;
  s.group = matrix_group(f, genome);
  const std::string shape_name = s.group + "/shape";
  if (f.kind(shape_name) != Hdf5Kind::Dataset) fail(path, shape_name, "missing");
  const Hdf5Dataset shape_ds = f.dataset(shape_name);
  if (shape_ds.shape() != std::vector<std::uint64_t>{2} || shape_ds.element() != Hdf5Element::Integer)
    fail(path, shape_name, "must hold two integers [features, barcodes]");
  std::vector<std::int64_t> shape(2);
  const std::uint64_t origin[1] = {0}, extent[1] = {2};
  shape_ds.read(origin, extent, std::span<std::int64_t>(shape));
  if (shape[0] < 0 || shape[1] < 0) fail(path, shape_name, "negative extent");
  s.n_genes = static_cast<std::uint64_t>(shape[0]);
  s.n_cells = static_cast<std::uint64_t>(shape[1]);
  const auto g = detail::check_sparse_group(f, s.group, s.n_cells, s.n_genes);
  s.nnz = g.nnz;
  s.real_values = g.real_values;
  if (s.group == "matrix") {
    s.gene_ids = read_names(f, "matrix/features/id", s.n_genes, "features");
    s.gene_symbols = read_names(f, "matrix/features/name", s.n_genes, "features");
    if (f.kind("matrix/features/feature_type") != Hdf5Kind::Missing)
      s.feature_types = read_names(f, "matrix/features/feature_type", s.n_genes, "features");
    if (f.kind("matrix/features/genome") != Hdf5Kind::Missing)
      s.genomes = read_names(f, "matrix/features/genome", s.n_genes, "features");
  } else {
    s.gene_ids = read_names(f, s.group + "/genes", s.n_genes, "features");
    s.gene_symbols = read_names(f, s.group + "/gene_names", s.n_genes, "features");
  }
  if (s.feature_types.empty()) s.feature_types.assign(s.n_genes, "Gene Expression");
  s.barcodes = read_names(f, s.group + "/barcodes", s.n_cells, "barcodes");
  return s;
}

std::unique_ptr<cells::CsrBlockSource> open_tenx_h5_matrix(const TenxH5Scan& s) {
  return detail::open_major_rows({s.path, s.group, s.n_cells, s.n_genes, s.nnz, s.real_values});
}

}  // namespace tessera::interop
