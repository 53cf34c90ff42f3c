#include "commands.hpp"

namespace tessera::cli {

void register_detect(CLI::App& app, int& rc) {
  (void)app;
  (void)rc;
}

}  // namespace tessera::cli
