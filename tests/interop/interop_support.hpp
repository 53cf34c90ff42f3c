// Helpers shared by the interop tests: the conformance convert sources, converting with the
// library, writing every dataset of a `.tet` as `.npy` files plus a manifest for the Python
// checks, and running zarrita (node) over an exported store.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/json.hpp"
#include "tessera/interop/tet_convert.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/tet/npy_export.hpp"
#include "tessera/tet/reader.hpp"

namespace tessera::interop::test {

namespace fs = std::filesystem;

inline fs::path sources_dir() { return testing::tet_fixture("sources"); }

// Every convert source of the conformance data: sources/{h5,netcdf,zarr}/*.
inline std::vector<fs::path> all_sources() {
  std::vector<fs::path> out;
  for (const char* kind : {"h5", "netcdf", "zarr"})
    for (const auto& entry : fs::directory_iterator(sources_dir() / kind)) out.push_back(entry.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Writes `<dir>/<i>.npy` for dataset i and `<dir>/manifest.json`:
// [{"name", "npy", "dtype", "shape", "chunk_shape"}].
inline void dump_datasets(const fs::path& tet_path, const fs::path& dir) {
  fs::create_directories(dir);
  const auto file = tet::TetFile::open(tet_path.string());
  codec::json::Json manifest = codec::json::Json::array();
  for (const auto& ds : file.datasets()) {
    const fs::path npy = dir / (std::to_string(ds.id) + ".npy");
    io::AtomicFileSink sink(npy.string());
    tet::write_npy(file, ds, ds.full_box(), sink);
    sink.commit();
    manifest.push_back({{"name", ds.name},
                        {"npy", npy.string()},
                        {"dtype", std::string(dtype_info(ds.dtype).name)},
                        {"shape", ds.shape},
                        {"chunk_shape", ds.chunk_shape}});
  }
  testing::write_file_text(dir / "manifest.json", codec::json::dump(manifest));
}

// Runs a Python check that prints "OK" on success (anything else is the failure report).
inline void expect_python_ok(const std::string& script, const std::vector<std::string>& args) {
  const auto run = testing::run_python(script, args);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_EQ(run.out, "OK\n") << run.out << run.err;
}

// The zarrita test project shared with the zarr tests; empty when node or zarrita is missing.
inline fs::path zarrita_dir() {
  const fs::path dir = testing::source_dir() / "tests/zarr/node";
  if (!fs::exists(dir / "node_modules/zarrita")) return {};
  if (testing::run_process({"node", "--version"}).rc != 0) return {};
  return dir;
}

// Reads every array path of `store` with zarrita: {"<path>": {"dtype", "shape", "values": [text]}}.
// Runs with the zarrita project as working directory so its node_modules resolve.
inline codec::json::Json read_with_zarrita(const fs::path& store, const std::vector<std::string>& paths) {
  static const char* kScript = R"(
import * as zarr from "zarrita";
import { FileSystemStore } from "@zarrita/storage";
const [root, ...paths] = process.argv.slice(1);
const store = new FileSystemStore(root);
const out = {};
for (const path of paths) {
  const array = await zarr.open(zarr.root(store).resolve(path), { kind: "array" });
  const chunk = await zarr.get(array);
  out[path] = { dtype: array.dtype, shape: chunk.shape, fill: String(array.fillValue),
                dims: array.dimensionNames ?? null,
                values: Array.from(chunk.data, (v) => Object.is(v, -0) ? "-0" : String(v)) };
}
process.stdout.write(JSON.stringify(out));
)";
  std::vector<std::string> argv = {"node", "--input-type=module", "-e", kScript, store.string()};
  argv.insert(argv.end(), paths.begin(), paths.end());
  const auto run = testing::run_process(argv, {.cwd = zarrita_dir()});
  if (run.rc != 0) throw std::runtime_error("zarrita failed: " + run.err);
  return codec::json::parse_strict(run.out, "zarrita output");
}

}  // namespace tessera::interop::test
