// `tessera info PATH` and `tessera verify PATH`: detect the format from the bytes and dispatch.
// A file starting with `TETR` behaves exactly like `tessera tet info/verify` with the same flags;
// every other format (directories included) is not supported yet.
#include <cstring>
#include <filesystem>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::cli {
namespace {

[[noreturn]] void not_supported(const std::string& path) {
  throw UnsupportedError(path + ": format not supported yet (only .tet is supported in this version)", path);
}

// A PATH that cannot be opened fails here with the I/O error, as it would in the tet command.
void require_tet(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) not_supported(path);
  const auto src = io::open_file(path, io::OpenMode::Pread);
  char magic[4];
  if (src->size() < sizeof magic) not_supported(path);
  src->read_at(0, std::as_writable_bytes(std::span(magic)));
  if (std::memcmp(magic, "TETR", sizeof magic) != 0) not_supported(path);
}

}  // namespace

void register_detect(CLI::App& app, int& rc) {
  CLI::App* info = app.add_subcommand("info", "Summary of a data file (format detected; .tet in this version)");
  add_tet_info_command(*info, rc, require_tet);
  CLI::App* verify = app.add_subcommand("verify", "Check a data file (format detected; .tet in this version)");
  add_tet_verify_command(*verify, rc, require_tet);
}

}  // namespace tessera::cli
