// The one table of chunk codec tags and names (see chunk_codec.hpp).
#include "tessera/tet/chunk_codec.hpp"

#include "tessera/core/error.hpp"

namespace tessera::tet {

std::string_view codec_name(Codec codec) noexcept {
  switch (codec) {
    case Codec::Raw: return "raw";
    case Codec::Zstd: return "zstd";
  }
  return "?";  // not a codec: only a value cast from an unchecked tag gets here
}

std::optional<Codec> codec_named(std::string_view name) noexcept {
  for (Codec c : kCodecs)
    if (codec_name(c) == name) return c;
  return std::nullopt;
}

std::optional<Codec> codec_of_tag(std::uint32_t tag) noexcept {
  for (Codec c : kCodecs)
    if (static_cast<std::uint32_t>(c) == tag) return c;
  return std::nullopt;
}

std::string codec_tags_text() {
  std::string out;
  for (Codec c : kCodecs) {
    if (!out.empty()) out += ", ";
    out += std::to_string(static_cast<std::uint32_t>(c));
    out += " = ";
    out += codec_name(c);
  }
  return out;
}

Codec entry_codec(const ChunkEntry& entry) {
  if (const auto c = codec_of_tag(entry.codec)) return *c;
  throw FormatError("unsupported codec " + std::to_string(entry.codec) + " (supported: " + codec_tags_text() + ")", "",
                    "chunk index");
}

}  // namespace tessera::tet
