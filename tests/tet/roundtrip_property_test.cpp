// Round-trip property: 1,200 seeded random files (every dtype, ranks 1–8, chunk shapes that do not
// divide the shape or exceed it, raw and zstd, 1–3 datasets, whole or streamed writes, footers
// inline, spilled or absent) are written with TetWriter, opened with TetFile and read back in full
// and through random strided boxes, each compared with a naive element-by-element reference
// computed here from the generated logical array. A sample of the files is also checked by
// /usr/bin/python3: numpy against `tessera tet cat`, and an independent Python parser of the
// raw-codec layout.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/writer.hpp"

namespace {

namespace fs = std::filesystem;
namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tessera::testing::TempDir;

constexpr int kFiles = 1200;
constexpr std::uint64_t kBaseSeed = 0x7E55E2A;

const std::vector<DType> kDTypes{DType::F32, DType::F64, DType::I32, DType::I64, DType::U8,
                                 DType::U16, DType::I16, DType::U32, DType::F16, DType::U64};

// Small helper around a seeded engine; modulo keeps the sequence identical on every library.
struct Rng {
  std::mt19937_64 engine;
  explicit Rng(std::uint64_t seed) : engine(seed) {}
  std::uint64_t below(std::uint64_t n) { return engine() % n; }
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + below(hi - lo + 1); }
  bool chance(int percent) { return below(100) < static_cast<std::uint64_t>(percent); }
};

struct GenDataset {
  tet::DatasetSpec spec;
  std::vector<std::byte> data;  // logical row-major bytes
};

struct GenFile {
  std::vector<GenDataset> datasets;
  tet::WriterOptions options;
  bool streamed = false;
};

// Largest extent per axis for each rank, so that no dataset exceeds a few thousand elements.
std::uint64_t max_extent(std::size_t rank) {
  static constexpr std::uint64_t kMax[] = {0, 300, 45, 12, 7, 5, 4, 3, 3};
  return kMax[rank];
}

GenFile generate(int index) {
  Rng rng(kBaseSeed + static_cast<std::uint64_t>(index));
  GenFile f;
  const std::size_t n = static_cast<std::size_t>(rng.between(1, 3));
  for (std::size_t k = 0; k < n; ++k) {
    GenDataset g;
    g.spec.name = "ds" + std::to_string(k) + (rng.chance(30) ? "/nested name é" : "");
    g.spec.dtype = kDTypes[(static_cast<std::size_t>(index) + k) % kDTypes.size()];  // every dtype, evenly
    const std::size_t rank = static_cast<std::size_t>(rng.between(1, 8));
    std::uint64_t elements = 1;
    for (std::size_t d = 0; d < rank; ++d) {
      const std::uint64_t extent = rng.between(1, max_extent(rank));
      g.spec.shape.push_back(extent);
      // Chunks: dividing or not, sometimes the whole axis, sometimes larger than the axis.
      const int kind = static_cast<int>(rng.below(4));
      g.spec.chunk_shape.push_back(kind == 0   ? extent
                                   : kind == 1 ? extent + rng.between(1, 3)
                                               : rng.between(1, extent));
      elements *= extent;
    }
    g.spec.codec = rng.chance(50) ? tet::Codec::Zstd : tet::Codec::Raw;
    g.spec.zstd_level = static_cast<int>(rng.between(1, 5));
    g.data.resize(elements * tessera::dtype_size(g.spec.dtype));
    const bool compressible = rng.chance(50);
    for (std::size_t i = 0; i < g.data.size(); ++i)
      g.data[i] = static_cast<std::byte>(compressible ? (i / 3) % 7 : rng.below(256));
    f.datasets.push_back(std::move(g));
  }
  f.options.chunk_checksums = index % 2 == 0;  // not drawn from rng: the other choices keep their sequence
  f.streamed = rng.chance(50);
  f.options.threads = static_cast<unsigned>(rng.below(3));
  f.options.memory_budget_percent_bps = static_cast<std::uint16_t>(rng.chance(20) ? rng.below(10001) : 0);
  f.options.memory_budget_bytes = static_cast<std::uint32_t>(rng.chance(20) ? rng.engine() : 0);
  switch (rng.below(4)) {
    case 0: break;  // no footer
    case 1: f.options.history.push_back({"write", "prop-" + std::to_string(index), "1700000000", {}, {}}); break;
    case 2: {
      f.options.history.push_back({"convert", "h5", "1", {"a.h5"}, {{"jobs", "2"}}});
      auto& dm = f.options.metadata.datasets[f.datasets[0].spec.name];
      dm.attrs["units"] = "K";
      dm.dim_names = std::vector<std::string>(f.datasets[0].spec.shape.size(), "");
      for (std::size_t d = 0; d < dm.dim_names->size(); ++d) (*dm.dim_names)[d] = "axis" + std::to_string(d);
      dm.coords["axis0"] = std::vector<std::string>(std::min<std::uint64_t>(f.datasets[0].spec.shape[0], 64), "L");
      break;
    }
    default: {
      // Many long attributes push the footer over 64 KiB, so the metadata spills.
      f.options.metadata.file = tet::FileMetadata{"prop", "0", std::to_string(index)};
      for (const auto& g : f.datasets)
        for (int a = 0; a < 64; ++a)
          f.options.metadata.datasets[g.spec.name].attrs["attr" + std::to_string(a)] =
              std::string(rng.between(1020, 1024), static_cast<char>('a' + a % 26));
      break;
    }
  }
  return f;
}

void write(const GenFile& f, tet::TetWriter& writer) {
  for (const auto& g : f.datasets) writer.add_dataset(g.spec);
  for (std::uint32_t id = 0; id < f.datasets.size(); ++id) {
    const auto& data = f.datasets[id].data;
    if (!f.streamed) {
      writer.write_dataset(id, data);
      continue;
    }
    std::size_t offset = 0;
    for (std::uint64_t row = 0; row < writer.chunk_rows(id); ++row) {
      const std::size_t len = writer.chunk_row_bytes(id, row);
      writer.write_chunk_row(id, row, std::span(data).subspan(offset, len));
      offset += len;
    }
    EXPECT_EQ(offset, data.size());
  }
  writer.commit();
}

// The selected elements of `box`, gathered one by one from the logical array.
std::vector<std::byte> naive_box(const GenDataset& g, const tet::Box& box) {
  const std::size_t nd = box.size();
  const std::size_t es = tessera::dtype_size(g.spec.dtype);
  std::uint64_t count = 1;
  for (const auto& r : box) count *= r.count();
  std::vector<std::byte> out;
  out.reserve(count * es);
  std::vector<std::uint64_t> idx(nd, 0);
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t logical = 0;
    for (std::size_t d = 0; d < nd; ++d) logical = logical * g.spec.shape[d] + box[d].start + idx[d] * box[d].step;
    out.insert(out.end(), g.data.begin() + static_cast<std::ptrdiff_t>(logical * es),
               g.data.begin() + static_cast<std::ptrdiff_t>((logical + 1) * es));
    for (std::size_t d = nd; d-- > 0;) {
      if (++idx[d] < box[d].count()) break;
      idx[d] = 0;
    }
  }
  return out;
}

tet::Box random_box(Rng& rng, const std::vector<std::uint64_t>& shape) {
  tet::Box box;
  for (auto extent : shape) {
    tet::AxisRange r;
    r.start = rng.below(extent);
    r.stop = rng.between(r.start + 1, extent);
    r.step = rng.between(1, 3);
    box.push_back(r);
  }
  return box;
}

void expect_same_footer(const tet::Footer& f, const tet::WriterOptions& o) {
  ASSERT_EQ(f.history.size(), o.history.size());
  for (std::size_t i = 0; i < f.history.size(); ++i) {
    EXPECT_EQ(f.history[i].op, o.history[i].op);
    EXPECT_EQ(f.history[i].source, o.history[i].source);
    EXPECT_EQ(f.history[i].at, o.history[i].at);
    EXPECT_EQ(f.history[i].parents, o.history[i].parents);
    EXPECT_EQ(f.history[i].params, o.history[i].params);
  }
  EXPECT_EQ(f.metadata.file.has_value(), o.metadata.file.has_value());
  if (f.metadata.file && o.metadata.file) {
    EXPECT_EQ(f.metadata.file->tool, o.metadata.file->tool);
    EXPECT_EQ(f.metadata.file->created_at, o.metadata.file->created_at);
  }
  ASSERT_EQ(f.metadata.datasets.size(), o.metadata.datasets.size());
  for (const auto& [name, dm] : o.metadata.datasets) {
    const auto& got = f.metadata.datasets.at(name);
    EXPECT_EQ(got.attrs, dm.attrs);
    EXPECT_EQ(got.dim_names, dm.dim_names);
    EXPECT_EQ(got.coords, dm.coords);
  }
}

// Checks one written file against its generator; returns whether the footer spilled.
bool check(const GenFile& f, const tet::TetFile& file, Rng& rng) {
  const auto& L = file.layout();
  EXPECT_EQ(file.datasets().size(), f.datasets.size());
  EXPECT_EQ(L.index_header.memory_budget_percent_bps, f.options.memory_budget_percent_bps);
  EXPECT_EQ(L.index_header.memory_budget_bytes, f.options.memory_budget_bytes);
  const bool has_footer = !f.options.history.empty() || f.options.metadata.has_content() || f.options.chunk_checksums;
  EXPECT_EQ(L.footer.has_value(), has_footer);
  if (L.footer) expect_same_footer(*L.footer, f.options);
  // Checksums, when recorded, are the CRC-32C of each stored payload.
  EXPECT_EQ(L.footer && L.footer->extension, f.options.chunk_checksums);
  if (f.options.chunk_checksums && L.footer && L.footer->extension) {
    const auto& crcs = L.footer->extension->chunk_crc32c;
    EXPECT_EQ(crcs.size(), L.entries.size());
    for (std::size_t i = 0; i < std::min(crcs.size(), L.entries.size()); ++i)
      EXPECT_EQ(crcs[i], tessera::codec::crc32c(
                             file.source().read_vector(L.entries[i].payload_offset, L.entries[i].stored_byte_len)));
  }
  // Payloads are contiguous in index order right after the index.
  std::uint64_t offset = L.superblock.chunk_index_offset + L.superblock.chunk_index_length;
  for (const auto& e : L.entries) {
    EXPECT_EQ(e.payload_offset, offset);
    offset += e.stored_byte_len;
  }
  EXPECT_EQ(offset, L.payload_end);
  for (std::uint32_t id = 0; id < f.datasets.size(); ++id) {
    const GenDataset& g = f.datasets[id];
    const tet::Dataset& ds = file.datasets()[id];
    EXPECT_EQ(ds.name, g.spec.name);
    EXPECT_EQ(ds.dtype, g.spec.dtype);
    EXPECT_EQ(ds.shape, g.spec.shape);
    EXPECT_EQ(ds.chunk_shape, g.spec.chunk_shape);
    std::vector<std::byte> full(g.data.size());
    file.read_box(ds, ds.full_box(), full, {static_cast<unsigned>(rng.below(3))});
    EXPECT_EQ(full, g.data) << "full read of dataset " << id;
    for (int b = 0; b < 3; ++b) {
      const tet::Box box = random_box(rng, g.spec.shape);
      const auto expected = naive_box(g, box);
      std::vector<std::byte> got(expected.size());
      file.read_box(ds, box, got);
      EXPECT_EQ(got, expected) << "box " << b << " of dataset " << id;
    }
  }
  return L.footer && L.footer->metadata_ref.has_value();
}

TEST(TetRoundTripProperty, RandomFilesReadBackExactly) {
  TempDir dir;
  int spilled = 0, footers = 0, zstd = 0, streamed = 0;
  std::vector<int> ranks(9, 0), dtypes(kDTypes.size(), 0);
  for (int i = 0; i < kFiles; ++i) {
    SCOPED_TRACE("file " + std::to_string(i));
    const GenFile f = generate(i);
    std::vector<std::byte> bytes;
    if (i % 100 == 0) {  // some through the atomic file sink
      const auto path = dir / ("prop" + std::to_string(i) + ".tet");
      tet::TetWriter writer(path.string(), f.options);
      write(f, writer);
      bytes = tessera::testing::read_file_bytes(path);
      EXPECT_EQ(writer.file_size(), bytes.size());
    } else {
      io::MemorySink sink;
      tet::TetWriter writer(sink, f.options);
      write(f, writer);
      bytes = sink.bytes();
    }
    const auto file =
        tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(std::move(bytes))));
    Rng rng(kBaseSeed ^ static_cast<std::uint64_t>(i) * 7919);
    spilled += check(f, file, rng);
    footers += file.layout().footer.has_value();
    streamed += f.streamed;
    for (const auto& g : f.datasets) {
      zstd += g.spec.codec == tet::Codec::Zstd;
      ++ranks[g.spec.shape.size()];
      for (std::size_t t = 0; t < kDTypes.size(); ++t) dtypes[t] += kDTypes[t] == g.spec.dtype;
    }
    if (::testing::Test::HasFailure()) break;  // one broken file is enough to report
  }
  // The generator really covered what the property claims.
  EXPECT_GT(spilled, 100);
  EXPECT_GT(footers - spilled, 300);
  EXPECT_GT(zstd, 500);
  EXPECT_GT(streamed, 400);
  for (std::size_t r = 1; r <= 8; ++r) EXPECT_GT(ranks[r], 100) << "rank " << r;
  for (std::size_t t = 0; t < kDTypes.size(); ++t) EXPECT_GT(dtypes[t], 100) << "dtype " << t;
}

// ---- independent readers ----------------------------------------------------------------------

struct Sample {
  fs::path tet, npy, bin;
  std::string dataset;
  std::string descr;
  std::vector<std::uint64_t> shape;
  tet::Box box;
};

std::string numpy_descr(DType t) { return std::string(tessera::dtype_info(t).numpy_descr); }

std::string selection_json(const tet::Box& box) {
  std::string s = "[";
  for (std::size_t d = 0; d < box.size(); ++d) {
    if (d) s += ",";
    s += "{\"start\":" + std::to_string(box[d].start) + ",\"stop\":" + std::to_string(box[d].stop) +
         ",\"step\":" + std::to_string(box[d].step) + "}";
  }
  return s + "]";
}

// Writes ~20 of the generated files to `dir`, with the first dataset's logical array as raw
// bytes and a random box to select.
std::vector<Sample> write_samples(const TempDir& dir, bool raw_only) {
  std::vector<Sample> samples;
  for (int i = 0; samples.size() < 20 && i < kFiles; ++i) {
    GenFile f = generate(i * 37 + 5);
    if (raw_only) {
      bool all_raw = true;
      for (const auto& g : f.datasets) all_raw &= g.spec.codec == tet::Codec::Raw;
      if (!all_raw) continue;
    }
    Sample s;
    s.tet = dir / ("s" + std::to_string(i) + ".tet");
    s.npy = dir / ("s" + std::to_string(i) + ".npy");
    s.bin = dir / ("s" + std::to_string(i) + ".bin");
    tet::TetWriter writer(s.tet.string(), f.options);
    write(f, writer);
    const GenDataset& g = f.datasets.back();
    s.dataset = g.spec.name;
    s.descr = numpy_descr(g.spec.dtype);
    s.shape = g.spec.shape;
    Rng rng(static_cast<std::uint64_t>(i));
    s.box = random_box(rng, g.spec.shape);
    tessera::testing::write_file_bytes(s.bin, g.data);
    samples.push_back(std::move(s));
  }
  return samples;
}

std::string python_list(const std::vector<std::uint64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

// One line per sample: paths, dataset, descr, shape and box as whitespace-free fields.
std::string manifest(const std::vector<Sample>& samples) {
  std::string m;
  for (const auto& s : samples) {
    std::vector<std::uint64_t> box;
    for (const auto& r : s.box) box.insert(box.end(), {r.start, r.stop, r.step});
    m += s.tet.string() + "\t" + s.npy.string() + "\t" + s.bin.string() + "\t" + s.dataset + "\t" + s.descr + "\t" +
         python_list(s.shape) + "\t" + python_list(box) + "\n";
  }
  return m;
}

TEST(TetRoundTripNumpy, CatOutputMatchesTheWrittenArray) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  if (tessera::testing::run_cli({"tet", "cat", "--help"}).rc != 0) GTEST_SKIP() << "`tessera tet cat` is not available";
  TempDir dir;
  const auto samples = write_samples(dir, /*raw_only=*/false);
  ASSERT_EQ(samples.size(), 20u);
  for (const auto& s : samples) {
    const auto r = tessera::testing::run_cli(
        {"tet", "cat", s.tet.string(), s.dataset, "--out", s.npy.string(), "--selection", selection_json(s.box)});
    ASSERT_EQ(r.rc, 0) << s.tet << ": " << r.err;
  }
  tessera::testing::write_file_text(dir / "manifest.tsv", manifest(samples));
  const auto py = tessera::testing::run_python(R"(
import json, sys
import numpy as np
bad = 0
for line in open(sys.argv[1], encoding="utf-8"):
    tet, npy, binf, name, descr, shape, box = line.rstrip("\n").split("\t")
    shape, box = json.loads(shape), json.loads(box)
    full = np.fromfile(binf, dtype=np.dtype(descr)).reshape(shape)
    want = np.ascontiguousarray(full[tuple(slice(box[3*d], box[3*d+1], box[3*d+2]) for d in range(len(shape)))])
    got = np.load(npy)
    if got.dtype != want.dtype or got.shape != want.shape or got.tobytes() != want.tobytes():
        bad += 1
        print(f"{tet} {name}: got {got.dtype} {got.shape}, want {want.dtype} {want.shape}")
print(f"checked; {bad} mismatches")
sys.exit(1 if bad else 0)
)",
                                               {(dir / "manifest.tsv").string()});
  EXPECT_EQ(py.rc, 0) << py.out << py.err;
}

// An independent Python parser of the raw-codec layout (superblock, directory, index, clipped
// tiles) reassembles each dataset and compares it with the array that was written.
TEST(TetRoundTripNumpy, IndependentPythonParserReassemblesRawFiles) {
  if (!tessera::testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy is not available";
  TempDir dir;
  const auto samples = write_samples(dir, /*raw_only=*/true);
  ASSERT_EQ(samples.size(), 20u);
  tessera::testing::write_file_text(dir / "manifest.tsv", manifest(samples));
  const auto py = tessera::testing::run_python(R"(
import json, struct, sys
import numpy as np
TAGS = {1: "<f4", 2: "<f8", 3: "<i4", 4: "<i8", 5: "|u1", 6: "<u2", 7: "<i2", 8: "<u4", 9: "<f2", 10: "<u8"}
def parse(path):
    b = open(path, "rb").read()
    assert b[:4] == b"TETR"
    _, count, flags, idx_off, idx_len = struct.unpack_from("<IIIQQ", b, 4)
    cur, out = 40, {}
    for ds in range(count):
        name_len, tag, ndim, _ = struct.unpack_from("<IIII", b, cur)
        name = b[cur + 16: cur + 16 + name_len].decode("utf-8")
        cur += (16 + name_len + 7) // 8 * 8
        shape = struct.unpack_from(f"<{ndim}Q", b, cur); cur += 8 * ndim
        chunks = struct.unpack_from(f"<{ndim}Q", b, cur); cur += 8 * ndim
        out[ds] = (name, np.zeros(shape, dtype=np.dtype(TAGS[tag])), chunks)
    assert idx_off == (cur + 7) // 8 * 8 and b[idx_off:idx_off + 4] == b"TIDX"
    (entries,) = struct.unpack_from("<Q", b, idx_off + 8)
    for i in range(entries):
        e = idx_off + 32 + 104 * i
        ds, *coord = struct.unpack_from("<9Q", b, e)
        off, raw, stored, codec = struct.unpack_from("<QQQI", b, e + 72)
        assert codec == 0 and raw == stored
        name, arr, chunks = out[ds]
        sl = tuple(slice(c * cs, min((c + 1) * cs, n)) for c, cs, n in zip(coord, chunks, arr.shape))
        tile_shape = tuple(s.stop - s.start for s in sl)
        arr[sl] = np.frombuffer(b[off:off + stored], dtype=arr.dtype).reshape(tile_shape)
    return {name: arr for name, arr, _ in out.values()}
bad = 0
for line in open(sys.argv[1], encoding="utf-8"):
    tet, npy, binf, name, descr, shape, box = line.rstrip("\n").split("\t")
    got = parse(tet)[name]
    want = np.fromfile(binf, dtype=np.dtype(descr)).reshape(json.loads(shape))
    if got.dtype != want.dtype or got.tobytes() != want.tobytes():
        bad += 1
        print(f"{tet} {name}: mismatch")
sys.exit(1 if bad else 0)
)",
                                               {(dir / "manifest.tsv").string()});
  EXPECT_EQ(py.rc, 0) << py.out << py.err;
}

}  // namespace
