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

// Python checks shared by the convert tests: the spec's type map and CF decoding, and the
// comparison of a dump_datasets manifest with what h5py / netCDF4 make of the source (names and
// order, `.tet` element types, chunk shapes, values). Run as kPythonCommon + kHdf5Check (or
// kNetCdfCheck) with arguments SOURCE MANIFEST.
inline constexpr const char* kPythonCommon = R"(
import sys, json, numpy as np
TARGET = {'b': 'u8', 'i1': 'i16', 'u1': 'u8', 'i2': 'i16', 'u2': 'u16', 'i4': 'i32', 'u4': 'u32',
          'i8': 'i64', 'u8': 'u64', 'f2': 'f16', 'f4': 'f32', 'f8': 'f64'}
NP = {'u8': np.uint8, 'i16': np.int16, 'u16': np.uint16, 'i32': np.int32, 'u32': np.uint32, 'i64': np.int64,
      'u64': np.uint64, 'f16': np.float16, 'f32': np.float32, 'f64': np.float64}
def key(dt):
    return 'b' if dt.kind == 'b' else dt.kind + str(dt.itemsize)
def cf_decode(raw, scale, offset, fill, double_attr):
    kind = raw.dtype.kind
    if kind == 'f' and raw.dtype.itemsize >= 4:
        target = raw.dtype.type
    else:
        target = np.float64 if double_attr else np.float32
    out = (raw.astype(np.float64) * scale + offset).astype(target)
    if fill is not None:
        tol = max(abs(fill) * 1e-6, 1e-6)
        if raw.dtype == np.float64:
            mask = (np.abs(raw - fill) <= tol) | (np.isnan(raw) & np.isnan(fill))
        elif kind == 'f':
            f = raw.astype(np.float32); f32 = np.float32(fill)
            mask = (f.view(np.uint32) == np.array([f32]).view(np.uint32)[0]) | (np.abs(f - f32) <= np.float32(tol))
        else:
            mask = raw.astype(np.float64) == fill
        out[mask] = np.nan
    return out, {np.float32: 'f32', np.float64: 'f64'}[target]
def compare(expected, manifest):
    errors = []
    names = [e[0] for e in expected]
    got = [m['name'] for m in manifest]
    if names != got:
        errors.append('names %r != %r' % (got, names))
    for (name, values, dtype, chunks), m in zip(expected, manifest):
        a = np.load(m['npy'])
        if m['dtype'] != dtype: errors.append('%s: dtype %s != %s' % (name, m['dtype'], dtype))
        if list(m['chunk_shape']) != list(chunks): errors.append('%s: chunks %r != %r' % (name, m['chunk_shape'], chunks))
        if a.shape != values.shape or not np.array_equal(a, values.astype(NP[dtype]), equal_nan=True):
            errors.append('%s: values differ' % name)
    print('\n'.join(errors) if errors else 'OK')
)";

inline constexpr const char* kHdf5Check = R"(
import h5py
src, manifest = sys.argv[1], json.load(open(sys.argv[2]))
f = h5py.File(src, 'r')
def num(ds, n):
    v = ds.attrs.get(n)
    return None if v is None else (float(np.asarray(v).reshape(-1)[0]), np.asarray(v).dtype == np.float64)
expected = []
def walk(g, prefix):
    for n in sorted(g.keys(), key=lambda s: s.encode()):
        if not isinstance(g.get(n, getlink=True), h5py.HardLink): continue
        o = g[n]
        if isinstance(o, h5py.Group): walk(o, prefix + n + '/'); continue
        if not isinstance(o, h5py.Dataset) or o.shape == () or 0 in o.shape or key(o.dtype) not in TARGET: continue
        raw = o[...]
        scale, offset = num(o, 'scale_factor'), num(o, 'add_offset')
        if (scale or offset) and o.dtype.kind != 'b':
            fill = num(o, '_FillValue')
            values, dtype = cf_decode(raw, scale[0] if scale else 1.0, offset[0] if offset else 0.0,
                                      fill[0] if fill else None, bool((scale and scale[1]) or (offset and offset[1])))
            chunks = list(o.shape)
        else:
            dtype = TARGET[key(o.dtype)]
            values = raw.view(np.uint8) if o.dtype.kind == 'b' else raw
            chunks = [min(c, s) for c, s in zip(o.chunks, o.shape)] if o.chunks else list(o.shape)
        expected.append((prefix + n, values, dtype, chunks))
walk(f, '')
compare(expected, manifest)
)";

inline constexpr const char* kNetCdfCheck = R"(
import netCDF4
src, manifest = sys.argv[1], json.load(open(sys.argv[2]))
d = netCDF4.Dataset(src)
expected = []
def walk(g, prefix):
    for n in sorted(g.variables, key=lambda s: s.encode()):
        v = g.variables[n]
        if v.ndim == 0 or not isinstance(v.datatype, np.dtype) or key(v.dtype) not in TARGET or 0 in v.shape: continue
        v.set_auto_maskandscale(False)
        raw = np.asarray(v[...])
        attrs = v.ncattrs()
        if 'scale_factor' in attrs or 'add_offset' in attrs:
            a = lambda k: np.asarray(v.getncattr(k)) if k in attrs else None
            s, o = a('scale_factor'), a('add_offset')
            if '_FillValue' in attrs: fill = float(v.getncattr('_FillValue'))
            elif raw.dtype.kind == 'f': fill = float(netCDF4.default_fillvals[raw.dtype.str[1:]])
            else: fill = None
            values, dtype = cf_decode(raw, float(s) if s is not None else 1.0, float(o) if o is not None else 0.0, fill,
                                      (s is not None and s.dtype == np.float64) or (o is not None and o.dtype == np.float64))
            # The same values as netCDF4's own CF decoding, to float rounding.
            v.set_auto_maskandscale(True)
            theirs = np.ma.filled(np.ma.asarray(v[...]).astype(np.float64), np.nan)
            if not np.allclose(values.astype(np.float64), theirs, rtol=1e-6, atol=1e-6, equal_nan=True):
                print('%s: CF decoding differs from netCDF4' % n)
            chunks = list(v.shape)
        else:
            dtype = TARGET[key(v.dtype)]
            c = v.chunking()
            chunks = list(v.shape) if c == 'contiguous' else [min(x, s) for x, s in zip(c, v.shape)]
            values = raw
        expected.append((prefix + n, values, dtype, chunks))
    for n in sorted(g.groups, key=lambda s: s.encode()):
        walk(g.groups[n], prefix + n + '/')
walk(d, '')
compare(expected, manifest)
)";

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
