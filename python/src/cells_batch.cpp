// Column selection on raw CSR batch arrays (`_tessera.cells_select_columns`): the batches an
// epoch yields to the Torch loader, which do not go through get_batch. The arrays are checked to
// describe one batch before the library's select_columns runs on them.
#include <cstdint>
#include <utility>
#include <vector>

#include "bindings.hpp"
#include "tessera/cells/batch_columns.hpp"
#include "tessera/core/error.hpp"

namespace tessera::python {
namespace {

using cells::Values;

// indptr int64, indices int32, values float32 or int32.
py::tuple select_raw_columns(const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& indptr,
                             const py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>& indices,
                             const py::array& values, std::uint64_t n_genes, const py::handle& positions) {
  cells::SparseBatch batch;
  batch.n_genes = n_genes;
  batch.indptr.assign(indptr.data(), indptr.data() + indptr.size());
  batch.indices.assign(indices.data(), indices.data() + indices.size());
  const bool int32 = py::dtype::of<std::int32_t>().is(values.dtype());
  batch.values = int32 ? Values::Int32 : Values::Float32;
  if (int32) {
    const auto v = py::array_t<std::int32_t, py::array::c_style>::ensure(values);
    batch.values_int32.assign(v.data(), v.data() + v.size());
  } else {
    const auto v = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(values);
    batch.values_float32.assign(v.data(), v.data() + v.size());
  }
  if (batch.indptr.empty() || static_cast<std::uint64_t>(batch.indptr.back()) != batch.indices.size() ||
      batch.indices.size() != (int32 ? batch.values_int32.size() : batch.values_float32.size()))
    throw UsageError("select_columns: indptr, indices and values do not describe one CSR batch");
  for (std::size_t r = 0; r + 1 < batch.indptr.size(); ++r)
    if (batch.indptr[r] < 0 || batch.indptr[r] > batch.indptr[r + 1])
      throw UsageError("select_columns: indptr is not ascending from 0");
  for (const auto j : batch.indices)
    if (j < 0 || static_cast<std::uint64_t>(j) >= n_genes)
      throw UsageError("select_columns: a column index outside [0, n_genes)");
  const auto columns = as_index_vector(positions);
  cells::SparseBatch out;
  {
    py::gil_scoped_release release;
    out = cells::select_columns(std::move(batch), columns);
  }
  py::array values_out =
      int32 ? py::array(to_numpy(std::move(out.values_int32))) : py::array(to_numpy(std::move(out.values_float32)));
  return py::make_tuple(to_numpy(std::move(out.indptr)), to_numpy(std::move(out.indices)), values_out);
}

}  // namespace

void bind_cells_batch(py::module_& m) {
  m.def("cells_select_columns", &select_raw_columns, py::arg("indptr"), py::arg("indices"), py::arg("values"),
        py::arg("n_genes"), py::arg("positions"));
}

}  // namespace tessera::python
