#include "fixtures.hpp"

#include <algorithm>
#include <cstring>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/endian.hpp"

namespace tessera::zarr::test {

fs::path zagg_dir() { return testing::conformance_dir() / "zagg"; }

std::vector<fs::path> all_metadata_files() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(zagg_dir()))
    if (e.is_regular_file() && e.path().filename() == "zarr.json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string FixtureArray::name() const { return fs::relative(root, zagg_dir()).generic_string() + ":" + path; }

std::vector<FixtureArray> all_fixture_arrays() {
  std::vector<FixtureArray> out;
  for (const fs::path& file : all_metadata_files()) {
    const std::string text = testing::read_file_text(file);
    if (text.find("\"node_type\": \"array\"") == std::string::npos) continue;
    fs::path root = file.parent_path();
    while (root.extension() != ".zarr") root = root.parent_path();
    out.push_back({root, fs::relative(file.parent_path(), root).generic_string()});
  }
  return out;
}

std::vector<fs::path> all_fixture_objects() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(zagg_dir())) {
    if (!e.is_regular_file()) continue;
    const std::string p = e.path().generic_string();
    if (p.find(".zarr/") != std::string::npos && e.path().filename() != "coverage.moc") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::span<const std::byte> as_bytes(std::string_view s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

std::string hex(std::span<const std::byte> bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const auto b : bytes) {
    out += kHex[std::to_integer<unsigned>(b) >> 4];
    out += kHex[std::to_integer<unsigned>(b) & 15];
  }
  return out;
}

std::vector<std::byte> from_hex(std::string_view h) {
  std::vector<std::byte> out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<std::byte>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  return out;
}

std::string content_hash(const Array& array) {
  codec::Sha256 sha;
  if (!array.data_type().vlen) {
    sha.update(array.read_all());
    return sha.finish_hex();
  }
  // Elements in flat C order over the whole array: walk read chunks, keeping the elements that
  // lie inside the shape, in row order of the array.
  const std::size_t rank = array.rank();
  std::uint64_t total = 1;
  for (const auto n : array.shape()) total *= n;
  std::vector<std::vector<std::byte>> values(total);
  Coords grid = array.read_chunk_grid();
  Coords rc(rank, 0);
  while (true) {
    const VlenChunk chunk = array.read_vlen_chunk(rc);
    const Coords& cs = array.read_chunk_shape();
    for (std::uint64_t i = 0; i < chunk.size(); ++i) {
      std::uint64_t rest = i, flat = 0;
      Coords local(rank);
      for (std::size_t d = rank; d-- > 0;) local[d] = rest % cs[d], rest /= cs[d];
      bool inside = true;
      for (std::size_t d = 0; d < rank; ++d) {
        const std::uint64_t g = rc[d] * cs[d] + local[d];
        inside = inside && g < array.shape()[d];
        flat = flat * array.shape()[d] + g;
      }
      if (inside) values[flat].assign(chunk[i].begin(), chunk[i].end());
    }
    std::size_t d = rank;
    while (d-- > 0) {
      if (++rc[d] < grid[d]) break;
      rc[d] = 0;
    }
    if (d == static_cast<std::size_t>(-1)) break;
  }
  for (const auto& v : values) {
    std::byte len[8];
    store_le<std::uint64_t>(len, v.size());
    sha.update(len);
    sha.update(v);
  }
  return sha.finish_hex();
}

std::vector<std::string> decimal_values(const Array& array) {
  const std::vector<std::byte> all = array.read_all();
  const DType t = array.data_type().dtype;
  const std::size_t item = array.data_type().item_size();
  std::vector<std::string> out;
  for (std::size_t off = 0; off < all.size(); off += item) {
    visit_dtype(t, [&](auto v) {
      std::memcpy(&v, all.data() + off, sizeof v);
      if constexpr (std::is_floating_point_v<decltype(v)>) out.push_back(std::to_string(v));
      else if constexpr (sizeof(v) == 1) out.push_back(std::to_string(static_cast<int>(v)));
      else out.push_back(std::to_string(v));
    });
  }
  return out;
}

}  // namespace tessera::zarr::test
