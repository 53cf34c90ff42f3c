// Streaming-fold kernels for the unsigned integer dtypes (see query_fold_kernels.hpp).
#include "query_fold_kernels.hpp"

namespace tessera::tet::qe::fold {
TESSERA_FOLD_INSTANTIATE(, std::uint8_t)
TESSERA_FOLD_INSTANTIATE(, std::uint16_t)
TESSERA_FOLD_INSTANTIATE(, std::uint32_t)
TESSERA_FOLD_INSTANTIATE(, std::uint64_t)
}  // namespace tessera::tet::qe::fold
