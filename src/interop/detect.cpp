// Input detection for `tessera tet convert` (spec tet.md §6.6): Zarr v3 directory, extension after
// peeling compression suffixes, then the HDF5 / NetCDF-3 signatures.
#include "tessera/interop/detect.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "tessera/codec/json.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/io/uri.hpp"

namespace tessera::interop {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 5> kCompressionSuffixes = {"gz", "bz2", "xz", "zst", "zip"};
constexpr std::array<std::string_view, 5> kHdf5Extensions = {"h5", "hdf5", "hdf", "he2", "he5"};
constexpr std::array<std::string_view, 6> kNetCdfExtensions = {"nc", "netcdf", "nc4", "nc3", "cdf", "ncdf"};
constexpr unsigned char kHdf5Magic[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string lower_ascii(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// The extension of a file name without its dot, lower-cased ("" when there is none).
std::string extension_of(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext.empty() ? std::string() : lower_ascii(ext.substr(1));
}

// A directory whose zarr.json parses as JSON with `zarr_format` 3.
bool is_zarr_v3_directory(const std::string& path) {
  std::error_code ec;
  const fs::path meta = fs::path(path) / "zarr.json";
  if (!fs::is_directory(path, ec) || !fs::is_regular_file(meta, ec)) return false;
  try {
    const auto src = io::open_file(meta.string(), io::OpenMode::Pread);
    const auto bytes = src->read_vector(0, src->size());
    const auto doc = codec::json::parse_strict(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), meta.string());
    const auto it = doc.find("zarr_format");
    return doc.is_object() && it != doc.end() && it->is_number_integer() && it->get<std::int64_t>() == 3;
  } catch (const Error&) {
    return false;
  }
}

enum class Signature { None, Hdf5, NetCdf3 };

Signature sniff(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return Signature::None;
  const auto src = io::open_file(path, io::OpenMode::Pread);  // IoError naming the path if unreadable
  unsigned char head[8] = {};
  const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(src->size(), sizeof head));
  src->read_at(0, std::as_writable_bytes(std::span(head, n)));
  if (n == sizeof head && std::memcmp(head, kHdf5Magic, sizeof head) == 0) return Signature::Hdf5;
  if (n >= 4 && head[0] == 'C' && head[1] == 'D' && head[2] == 'F' && (head[3] == 1 || head[3] == 2))
    return Signature::NetCdf3;
  return Signature::None;
}

}  // namespace

bool is_hdf5_file(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && sniff(path) == Signature::Hdf5;
}

std::string_view history_source(InputFormat format) noexcept {
  switch (format) {
    case InputFormat::Hdf5: return "h5";
    case InputFormat::NetCdf: return "nc";
    case InputFormat::Zarr: return "zarr";
    case InputFormat::Tet: return "tet";
  }
  return "h5";
}

InputFormat detect_convert_input(const std::string& path) {
  // HDF5 and NetCDF read local files: a remote input is refused before anything is read.
  if (io::uri_kind(path) != io::UriKind::Local)
    throw UnsupportedError("convert input `" + io::display_url(path) +
                               "` is remote; converting from a URL or bucket is not supported yet (download it first)",
                           io::display_url(path));
  if (is_zarr_v3_directory(path)) return InputFormat::Zarr;

  // Peel compression suffixes: `model.nc.gz` is matched as `model.nc`.
  fs::path logical = fs::path(path).filename();
  std::string peeled;
  while (contains(kCompressionSuffixes, extension_of(logical))) {
    if (peeled.empty()) peeled = extension_of(logical);
    logical = logical.stem();
  }
  const std::string ext = extension_of(logical);
  std::optional<InputFormat> by_extension;
  if (contains(kHdf5Extensions, ext)) by_extension = InputFormat::Hdf5;
  else if (contains(kNetCdfExtensions, ext)) by_extension = InputFormat::NetCdf;
  else if (ext == "zarr") by_extension = InputFormat::Zarr;
  else if (ext == "tet") by_extension = InputFormat::Tet;

  if (by_extension) {
    // The libraries read plain files only; a compressed one would fail deep inside them with a
    // message that does not say why, so refuse it here unless its bytes are in fact plain.
    if (!peeled.empty() && *by_extension != InputFormat::Zarr && sniff(path) == Signature::None)
      throw UnsupportedError("convert input `" + path + "` is compressed (." + peeled +
                                 "); decompress it first (HDF5 and NetCDF inputs are read uncompressed)",
                             path);
    return *by_extension;
  }
  switch (sniff(path)) {
    case Signature::Hdf5: return InputFormat::Hdf5;
    case Signature::NetCdf3: return InputFormat::NetCdf;
    case Signature::None: break;
  }
  throw UnsupportedError("unsupported convert input `" + path + "`: extension `" + ext +
                             "` (supported extensions: .h5, .hdf5, .hdf, .he2, .he5; .nc, .netcdf, .nc4, .nc3, .cdf, "
                             ".ncdf; .zarr directory store (v3 zarr.json at root); or recognizable HDF5 / NetCDF-3 "
                             "file signature / Zarr v3 directory store)",
                         path);
}

}  // namespace tessera::interop
