// Streaming-fold kernels for the signed integer dtypes (see query_fold_kernels.hpp).
#include "query_fold_kernels.hpp"

namespace tessera::tet::qe::fold {
TESSERA_FOLD_INSTANTIATE(, std::int16_t)
TESSERA_FOLD_INSTANTIATE(, std::int32_t)
TESSERA_FOLD_INSTANTIATE(, std::int64_t)
}  // namespace tessera::tet::qe::fold
