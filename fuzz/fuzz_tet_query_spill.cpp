// Fuzz target for the query engine's spill paths (spec tet.md §4.6): the input is a query
// document (JSON or TOML, sniffed as the CLI does) executed against a small two-dataset `.tet`
// file with a memory budget of a few bytes, so every materializing operation goes through a
// temporary spill file, `spill` exports are written through the atomic spill output, and the
// user's spill and write paths are checked against the allowed roots. Only tessera::Error may
// escape. Cross-checks: every path the response reports (`*_path` fields) lies in the scratch
// directory that holds both allowed roots (the `.tet` directory and the platform cache), and no
// hidden temporary of an atomic write remains after the query returns.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/tet/writer.hpp"
#include "tessera/tet_query/query_document.hpp"
#include "tessera/tet_query/query_engine.hpp"

namespace {

namespace fs = std::filesystem;
namespace tet = tessera::tet;

struct Scratch {
  fs::path root;
  fs::path file;
  Scratch() {
    std::string pattern = (fs::temp_directory_path() / "fuzz-spill-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    root = fs::canonical(pattern);
    // The platform cache roots (§4.6) come from these: keep them inside the scratch directory.
    ::setenv("XDG_CACHE_HOME", (root / "cache").c_str(), 1);
    ::setenv("HOME", (root / "home").c_str(), 1);
    ::setenv("TESSERA_TET_AVAILABLE_RAM_BYTES", "4096", 1);
    file = root / "data" / "f.tet";
    fs::create_directories(file.parent_path());
    tet::TetWriter writer(file.string());
    const auto a =
        writer.add_dataset({.name = "a", .dtype = tessera::DType::F32, .shape = {6, 5}, .chunk_shape = {4, 2}});
    const auto b = writer.add_dataset(
        {.name = "b", .dtype = tessera::DType::I16, .shape = {9}, .chunk_shape = {4}, .codec = tet::Codec::Zstd});
    std::vector<float> av(30);
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i) * 0.5f - 3.0f;
    std::vector<std::int16_t> bv = {5, -2, 7, 7, 0, 1, -9, 3, 2};
    writer.write_dataset(a, std::as_bytes(std::span(av)));
    writer.write_dataset(b, std::as_bytes(std::span(bv)));
    writer.commit();
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

const Scratch& scratch() {
  static const Scratch s;
  return s;
}

// Everything the query left: files outside the scratch root would have been refused, so only
// the data file's directory and the cache may hold them. Removes them for the next input.
void check_and_clear(const Scratch& s) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(s.root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const fs::path p = it->path();
    if (p == s.file || it->is_directory()) continue;
    const std::string name = p.filename().string();
    if (name.find(".tmp-") != std::string::npos) std::abort();  // an atomic write left its temporary
  }
  for (const auto& entry : fs::directory_iterator(s.root, ec)) {
    if (entry.path() == s.file.parent_path()) continue;
    fs::remove_all(entry.path(), ec);
  }
  for (const auto& entry : fs::directory_iterator(s.file.parent_path(), ec))
    if (entry.path() != s.file) fs::remove_all(entry.path(), ec);
}

// Every string field named `*_path` in the response tree names a file under `root`.
void check_paths(const tessera::codec::json::Json& node, const std::string& root) {
  if (node.is_object()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string& key = it.key();
      if (it->is_string() && key.size() > 5 && key.compare(key.size() - 5, 5, "_path") == 0 &&
          it->get<std::string>().rfind(root + "/", 0) != 0)
        std::abort();
      check_paths(*it, root);
    }
  } else if (node.is_array()) {
    for (const auto& child : node) check_paths(child, root);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Scratch& s = scratch();
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tet::QueryDocument doc;
  try {
    doc = tet::parse_query_text(text, tet::detect_query_syntax(std::nullopt, text));
  } catch (const tessera::Error&) {
    return 0;
  }
  tet::QueryOptions options;
  options.tet_path = s.file.string();
  options.execute = true;
  options.preview = 4;
  options.threads = 1;
  try {
    check_paths(tet::run_query(doc, options).tree, s.root.string());
  } catch (const tessera::Error&) {
  }
  check_and_clear(s);
  return 0;
}
