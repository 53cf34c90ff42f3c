// The HDF5 scans of `tessera cells convert` run in a child process (isolated.hpp). libhdf5 1.10
// trusts the global heap that holds variable-length strings (AnnData's indexes and
// `encoding-type` attributes, 10x feature names): a damaged heap or string descriptor can make
// it read out of bounds or loop forever. Every such read happens in the scan (the matrix reads
// that follow touch numeric datasets only), so the scan runs in the child, and one still running
// after kScanTimeout is stopped. The h5ad obs and var tables (cell names, string columns,
// categories) are read in the same child and travel back column by column (type, validity,
// data, offsets, categories).
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cells_convert.hpp"
#include "isolated.hpp"
#include "tessera/core/error.hpp"

namespace tessera::cli {
namespace {

constexpr auto kScanTimeout = std::chrono::seconds(120);

// The scan's tables on the wire.
void put(Wire& w, const columnar::Column& c) {
  w.put(static_cast<std::uint64_t>(c.type));
  w.put(c.length);
  w.put_raw(c.validity);
  w.put_raw(c.data);
  w.put_raw(c.offsets);
}

void put(Wire& w, const cells::InputObsTable& t) {
  w.put(t.n_rows);
  w.put(static_cast<std::uint64_t>(t.columns.size()));
  for (const auto& c : t.columns) {
    w.put(c.name);
    w.put(static_cast<std::uint64_t>(c.kind));
    put(w, c.values);
    w.put(c.categories);
  }
  w.put(t.skipped);
}

void put(Wire& w, const cells::VarTable& t) {
  w.put(t.column_names);
  for (const auto& c : t.columns) put(w, c);
  w.put(t.index_name);
  put(w, t.index);
}

columnar::Column column(Unwire& u) {
  const std::uint64_t type = u.u64();
  if (type > static_cast<std::uint64_t>(columnar::ColumnType::String)) throw Error("scan result malformed");
  columnar::Column c(static_cast<columnar::ColumnType>(type));
  c.length = u.u64();
  c.validity = u.raw<std::uint8_t>();
  c.data = u.raw<std::byte>();
  c.offsets = u.raw<std::uint64_t>();
  try {
    c.check_shape();
  } catch (const UsageError&) {
    throw Error("scan result malformed");
  }
  return c;
}

cells::InputObsTable obs_table(Unwire& u, const std::string& source) {
  cells::InputObsTable t;
  t.source = source;
  t.n_rows = u.u64();
  const std::uint64_t n = u.u64();
  for (std::uint64_t i = 0; i < n; ++i) {
    cells::InputObsColumn c;
    c.name = u.str();
    const std::uint64_t kind = u.u64();
    if (kind > static_cast<std::uint64_t>(cells::ObsKind::String)) throw Error("scan result malformed");
    c.kind = static_cast<cells::ObsKind>(kind);
    c.values = column(u);
    c.categories = u.strings();
    t.columns.push_back(std::move(c));
  }
  t.skipped = u.strings();
  return t;
}

cells::VarTable var_table(Unwire& u) {
  cells::VarTable t;
  t.column_names = u.strings();
  for (std::size_t i = 0; i < t.column_names.size(); ++i) t.columns.push_back(column(u));
  t.index_name = u.str();
  t.index = column(u);
  return t;
}

std::string run_scan(const std::string& path, const std::function<std::string()>& work) {
  return run_isolated(path, work, IsolationLimits{kScanTimeout, "reading the file's structure"});
}

}  // namespace

H5adInputScan scan_h5ad_input_isolated(const std::string& path, const interop::H5adOptions& options,
                                       const H5adTablesRequest& request) {
  const std::string bytes = run_scan(path, [&] {
    const auto s = interop::scan_h5ad(path, options);
    Wire w;
    w.put(s.matrix);
    w.put(static_cast<std::uint64_t>(s.layout));
    for (const std::uint64_t v : {s.n_cells, s.n_genes, s.nnz, std::uint64_t{s.real_values}}) w.put(v);
    w.put(s.var_names);
    w.put(s.layers);
    w.put(std::uint64_t{s.has_raw});
    w.put(s.not_converted);
    if (request.obs) {
      const auto obs = interop::read_h5ad_obs(path, request.options);
      put(w, obs.table);
      w.put(obs.names);
    }
    if (request.var) put(w, interop::read_h5ad_var(path, request.options));
    return w.bytes();
  });
  Unwire u(bytes);
  H5adInputScan r;
  interop::H5adScan& s = r.scan;
  s.path = path;
  s.matrix = u.str();
  s.layout = static_cast<interop::H5adLayout>(u.u64());
  s.n_cells = u.u64();
  s.n_genes = u.u64();
  s.nnz = u.u64();
  s.real_values = u.u64() != 0;
  s.var_names = u.strings();
  s.layers = u.strings();
  s.has_raw = u.u64() != 0;
  s.not_converted = u.strings();
  if (request.obs) {
    r.obs.emplace();
    r.obs->table = obs_table(u, path);
    r.obs->names = u.strings();
  }
  if (request.var) r.var = std::make_shared<cells::VarTable>(var_table(u));
  return r;
}

interop::H5adScan scan_h5ad_isolated(const std::string& path, const interop::H5adOptions& options) {
  return scan_h5ad_input_isolated(path, options, {}).scan;
}

interop::TenxH5Scan scan_tenx_h5_isolated(const std::string& path, const std::string& genome) {
  const std::string bytes = run_scan(path, [&] {
    const auto s = interop::scan_tenx_h5(path, genome);
    Wire w;
    w.put(s.group);
    for (const std::uint64_t v : {s.n_cells, s.n_genes, s.nnz, std::uint64_t{s.real_values}}) w.put(v);
    w.put(s.gene_ids);
    w.put(s.gene_symbols);
    w.put(s.feature_types);
    w.put(s.genomes);
    w.put(s.barcodes);
    return w.bytes();
  });
  Unwire u(bytes);
  interop::TenxH5Scan s;
  s.path = path;
  s.group = u.str();
  s.n_cells = u.u64();
  s.n_genes = u.u64();
  s.nnz = u.u64();
  s.real_values = u.u64() != 0;
  s.gene_ids = u.strings();
  s.gene_symbols = u.strings();
  s.feature_types = u.strings();
  s.genomes = u.strings();
  s.barcodes = u.strings();
  return s;
}

}  // namespace tessera::cli
