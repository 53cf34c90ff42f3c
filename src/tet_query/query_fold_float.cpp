// Streaming-fold kernels for the floating-point dtypes (see query_fold_kernels.hpp).
#include "query_fold_kernels.hpp"

namespace tessera::tet::qe::fold {
TESSERA_FOLD_INSTANTIATE(, float)
TESSERA_FOLD_INSTANTIATE(, double)
TESSERA_FOLD_INSTANTIATE(, F16)
}  // namespace tessera::tet::qe::fold
