// `tessera info PATH` and `tessera verify PATH`: detect the format of PATH and run the format's
// own command with the same arguments (`tessera info X.tet --json` is `tessera tet info X.tet
// --json`). Detection looks at bytes and directory entries, never at extensions alone:
//   - a file starting with `TETR`                         → tet
//   - a directory holding `morton_hive.json` or `zarr.json` → ragged (hive roots, leaves, plain
//     Zarr v3 stores; spec zagg-ragged.md §8.6)
//   - a directory whose `manifest.json` says `"format": "deltacells-dataset"`, or a file
//     starting with `DELTACEL` (one tile)                 → cells (spec deltacells.md §9)
// Anything else is refused with an error naming PATH. A remote PATH (http(s)://, s3://, gs://) is probed the same way
// through the URI resolver: as an object first (its magic), then as a prefix holding
// `morton_hive.json`, `zarr.json` or a deltacells `manifest.json` (HEAD and GET by name; nothing
// is listed).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void not_recognized(const std::string& path) {
  throw UnsupportedError(path +
                             ": format not recognized (tessera reads .tet files, deltacells datasets and tiles, "
                             "and Zarr v3 / morton-hive stores)",
                         path);
}

bool has_magic(const io::ByteSource& src, std::string_view magic) {
  if (src.size() < magic.size()) return false;
  std::string head(magic.size(), '\0');
  src.read_at(0, std::as_writable_bytes(std::span(head)));
  return head == magic;
}

bool starts_with_magic(const std::string& path, std::string_view magic) {
  return has_magic(*io::open_file(path, io::OpenMode::Pread), magic);
}

// A deltacells dataset: its manifest names the format (read as text; the cells command parses
// it strictly).
bool is_deltacells_dataset(const fs::path& dir) {
  std::error_code ec;
  const fs::path manifest = dir / "manifest.json";
  if (!fs::is_regular_file(manifest, ec)) return false;
  const auto src = io::open_file(manifest.string(), io::OpenMode::Pread);
  const std::uint64_t n = std::min<std::uint64_t>(src->size(), 1 << 20);
  std::string text(static_cast<std::size_t>(n), '\0');
  src->read_at(0, std::as_writable_bytes(std::span(text)));
  return text.find("\"deltacells-dataset\"") != std::string::npos;
}

std::string detect_remote_group(const std::string& url) {
  try {
    const auto src = io::open_source(url);
    if (has_magic(*src, "TETR")) return "tet";
    if (has_magic(*src, "DELTACEL")) return "cells";
    not_recognized(io::display_url(url));
  } catch (const IoError&) {
    // Not an object (a prefix, or missing): probe it as a store.
    const auto store = io::open_store(url);
    if (store->exists("morton_hive.json") || store->exists("zarr.json")) return "ragged";
    if (const auto manifest = store->get("manifest.json")) {
      const std::string_view text(reinterpret_cast<const char*>(manifest->data()), manifest->size());
      if (text.find("\"deltacells-dataset\"") != std::string_view::npos) return "cells";
    }
    return "tet";  // whose error names the URL and the HTTP status
  }
}

// The command group that reads PATH. A PATH that cannot be opened goes to `tet`, whose error
// names the file and the OS reason.
std::string detect_group(const std::string& path) {
  if (io::is_remote_uri(path)) return detect_remote_group(path);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    if (fs::exists(fs::path(path) / "morton_hive.json", ec) || fs::exists(fs::path(path) / "zarr.json", ec))
      return "ragged";
    if (is_deltacells_dataset(path)) return "cells";
    not_recognized(path);
  }
  if (!fs::exists(path, ec)) return "tet";
  if (starts_with_magic(path, "TETR")) return "tet";
  if (starts_with_magic(path, "DELTACEL")) return "cells";
  not_recognized(path);
}

// The PATH among a command's arguments: the first non-option argument that names an existing
// file or directory (option values such as `-n 1` rarely do), else the last non-option one.
std::optional<std::string> find_path_argument(const std::vector<std::string>& args) {
  std::optional<std::string> last;
  std::error_code ec;
  for (const auto& arg : args) {
    if (arg.empty() || arg[0] == '-') continue;
    if (io::is_remote_uri(arg) || fs::exists(arg, ec)) return arg;
    last = arg;
  }
  return last;
}

}  // namespace

std::vector<std::string> route_detected_command(const std::vector<std::string>& args) {
  if (args.empty() || (args[0] != "info" && args[0] != "verify")) return args;
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const auto& arg : rest)
    if (arg == "-h" || arg == "--help") return args;
  const auto path = find_path_argument(rest);
  if (!path) return args;  // CLI11 reports the missing PATH (exit 2)
  std::vector<std::string> routed{detect_group(*path)};
  routed.insert(routed.end(), args.begin(), args.end());
  return routed;
}

void register_detect(CLI::App& app, int& rc) {
  // Only reached for help and for a missing PATH: main() routes every other `info`/`verify`
  // command line to the detected format's group before parsing.
  CLI::App* info = app.add_subcommand("info", "Summary of a data file or store (format detected from its bytes)");
  info->add_option("PATH", "a .tet file, a deltacells dataset or tile, or a Zarr v3 / morton-hive store")->required();
  info->allow_extras();
  CLI::App* verify = app.add_subcommand("verify", "Check a data file or store (format detected from its bytes)");
  verify->add_option("PATH", "a .tet file, a deltacells dataset or tile, or a Zarr v3 / morton-hive store")->required();
  verify->allow_extras();
  (void)rc;
}

}  // namespace tessera::cli
