// What the h5ad converter tests share: whether Debian's /usr/bin/python3 can write h5ad fixtures,
// and the fixture script (tests/cells/h5ad_fixtures.py).
#pragma once

#include <string>

#include "support/testing.hpp"

namespace tessera::cells::test {

// Whether /usr/bin/python3 imports anndata, h5py and scipy (checked once).
inline bool have_anndata() {
  static const bool ok = testing::run_process({"/usr/bin/python3", "-c", "import anndata, h5py, scipy"}).rc == 0;
  return ok;
}

inline std::string h5ad_fixtures_script() { return (testing::source_dir() / "tests/cells/h5ad_fixtures.py").string(); }

}  // namespace tessera::cells::test
