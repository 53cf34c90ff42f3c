// A program outside the tessera tree, built against an installed tessera (find_package or
// pkg-config; tests/python/test_install.py): reads a float32 .tet dataset, asks the query engine
// for its maximum, reads a deltacells dataset, all through the public headers, and prints what it
// read.
//
//   consumer FILE.tet DATASET CELLS_DIR
//   → "tet ELEMENTS SUM", "query MAX" and "cells N_CELLS N_GENES NNZ TOTAL_COUNT"
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <span>
#include <vector>

#include "tessera/cells/dataset.hpp"
#include "tessera/core/error.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet_query/query_engine.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: consumer FILE.tet DATASET CELLS_DIR\n");
    return 2;
  }
  try {
    const tessera::tet::TetFile file = tessera::tet::TetFile::open(argv[1]);
    const tessera::tet::Dataset* dataset = file.find(argv[2]);
    if (dataset == nullptr || dataset->dtype != tessera::DType::F32) {
      std::fprintf(stderr, "%s: no float32 dataset %s\n", argv[1], argv[2]);
      return 1;
    }
    std::vector<float> values(dataset->element_count);
    file.read_box(*dataset, dataset->full_box(), std::as_writable_bytes(std::span(values)));
    const double sum = std::accumulate(values.begin(), values.end(), 0.0);
    std::printf("tet %llu %.17g\n", static_cast<unsigned long long>(values.size()), sum);

    // A maximum is exact whatever order the engine folds in, so it can be compared as text.
    tessera::tet::QueryOptions options;
    options.tet_path = argv[1];
    options.execute = true;
    const tessera::codec::json::Json doc = {{"dataset", argv[2]}, {"max", tessera::codec::json::Json::array()}};
    const tessera::tet::QueryResponse response =
        tessera::tet::run_query(tessera::tet::parse_query_json(doc.dump()), options);
    std::printf("query %.17g\n", response.tree.at("execution").at("operation_max").get<double>());

    const auto cells = tessera::cells::Dataset::open(argv[3]);
    std::vector<std::int64_t> rows(cells->n_cells());
    std::iota(rows.begin(), rows.end(), std::int64_t{0});
    const tessera::cells::SparseBatch batch = cells->get_batch(rows, tessera::cells::Values::Int32);
    const long long total = std::accumulate(batch.values_int32.begin(), batch.values_int32.end(), 0LL);
    std::printf("cells %llu %llu %llu %lld\n", static_cast<unsigned long long>(cells->n_cells()),
                static_cast<unsigned long long>(cells->n_genes()), static_cast<unsigned long long>(batch.nnz()), total);
  } catch (const tessera::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
