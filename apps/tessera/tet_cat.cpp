#include "commands.hpp"

namespace tessera::cli {

void register_tet_cat(CLI::App& tet, int& rc) {
  (void)tet;
  (void)rc;
}

}  // namespace tessera::cli
