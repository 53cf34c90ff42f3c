#include "commands.hpp"

namespace tessera::cli {

void register_tet_info(CLI::App& tet, int& rc) {
  (void)tet;
  (void)rc;
}

}  // namespace tessera::cli
