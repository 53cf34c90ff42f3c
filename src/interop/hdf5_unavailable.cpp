// Built instead of the HDF5 room (hdf5, hdf5_handle, hdf5_file, hdf5_chunk: the only code that
// includes hdf5.h) when TESSERA_WITH_HDF5 is OFF (cmake/TesseraFeatures.cmake). Opening a file is
// refused here, so every reader built on these two entry points (h5ad and 10x HDF5 inputs,
// ICESat-2 granules, HDF5 inputs of tet convert) throws FeatureUnavailable naming the file.
#include "tessera/core/feature.hpp"
#include "tessera/interop/hdf5_file.hpp"
#include "tessera/interop/source.hpp"

namespace tessera::interop {

namespace {

[[noreturn]] void refuse(const std::string& path) {
  throw FeatureUnavailable(Feature::Hdf5, "reading the HDF5 file " + path, path);
}

[[noreturn]] void refuse() { throw FeatureUnavailable(Feature::Hdf5, "reading HDF5"); }

}  // namespace

std::unique_ptr<ArraySource> open_hdf5_source(const std::string& path) { refuse(path); }

struct Hdf5File::Impl {};
struct Hdf5Dataset::Impl {};

Hdf5File::Hdf5File(const std::string& path) { refuse(path); }

// No Hdf5File or Hdf5Dataset exists in this build (the constructor above is the only way in); the
// members are defined for the linker and refuse like it.
Hdf5File::~Hdf5File() = default;
Hdf5File::Hdf5File(Hdf5File&&) noexcept = default;
Hdf5File& Hdf5File::operator=(Hdf5File&&) noexcept = default;
const std::string& Hdf5File::path() const { refuse(); }
Hdf5Kind Hdf5File::kind(const std::string&) const { refuse(); }
std::vector<std::string> Hdf5File::members(const std::string&) const { refuse(); }
std::optional<std::string> Hdf5File::string_attribute(const std::string&, const std::string&) const { refuse(); }
std::optional<std::vector<std::string>> Hdf5File::string_list_attribute(const std::string&, const std::string&) const {
  refuse();
}
std::optional<std::string> Hdf5File::referenced_object(const std::string&, const std::string&) const { refuse(); }
std::optional<std::vector<std::int64_t>> Hdf5File::integer_attribute(const std::string&, const std::string&) const {
  refuse();
}
std::optional<double> Hdf5File::number_attribute(const std::string&, const std::string&) const { refuse(); }
Hdf5Dataset Hdf5File::dataset(const std::string&) const { refuse(); }

Hdf5Dataset::~Hdf5Dataset() = default;
Hdf5Dataset::Hdf5Dataset(Hdf5Dataset&&) noexcept = default;
Hdf5Dataset& Hdf5Dataset::operator=(Hdf5Dataset&&) noexcept = default;
const std::string& Hdf5Dataset::name() const { refuse(); }
const std::vector<std::uint64_t>& Hdf5Dataset::shape() const { refuse(); }
Hdf5Element Hdf5Dataset::element() const { refuse(); }
std::string Hdf5Dataset::type_name() const { refuse(); }
void Hdf5Dataset::read(std::span<const std::uint64_t>, std::span<const std::uint64_t>, std::span<std::int64_t>) const {
  refuse();
}
void Hdf5Dataset::read(std::span<const std::uint64_t>, std::span<const std::uint64_t>, std::span<double>) const {
  refuse();
}
void Hdf5Dataset::read(std::span<const std::uint64_t>, std::span<const std::uint64_t>, std::span<std::uint64_t>) const {
  refuse();
}
std::vector<std::string> Hdf5Dataset::read_strings(std::uint64_t, std::uint64_t) const { refuse(); }

}  // namespace tessera::interop
