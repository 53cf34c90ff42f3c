// Built instead of png.cpp when TESSERA_WITH_PNG is OFF (cmake/TesseraFeatures.cmake): pictures are
// still drawn (raster, quicklook, charts need no library), and encoding them is refused.
#include "tessera/core/feature.hpp"
#include "tessera/image/png.hpp"

namespace tessera::image {

std::vector<std::byte> encode_png_rgba(std::uint32_t, std::uint32_t, std::span<const std::uint8_t>) {
  throw FeatureUnavailable(Feature::Png, "encoding a PNG picture");
}

}  // namespace tessera::image
