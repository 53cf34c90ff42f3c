// The error a converter raises when the input matrix holds values that are not counts (a
// normalised or log-transformed X): its own type, so a caller that knows where the counts may be
// instead (an h5ad's layers or raw/X) can say so.
#pragma once

#include "tessera/core/error.hpp"

namespace tessera::cells {

class NonIntegerCount : public FormatError {
 public:
  using FormatError::FormatError;
};

}  // namespace tessera::cells
