// The chunk codecs of tet.md §1.6 (the `codec` tag of a chunk index entry): the one table of
// their tags and names, and the codec of an entry. Code that does something different per codec
// `switch`es over `Codec` without `default`, so a codec added to the enum that some path does not
// handle fails the build (-Wswitch under -Werror) instead of taking another codec's path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tessera/tet/format.hpp"

namespace tessera::tet {

// Every codec, in tag order.
inline constexpr Codec kCodecs[] = {Codec::Raw, Codec::Zstd};

// "raw" or "zstd": the name the CLI, Python and `info` use.
std::string_view codec_name(Codec codec) noexcept;

// The codec called `name`, or nullopt.
std::optional<Codec> codec_named(std::string_view name) noexcept;

// The codec a stored tag stands for, or nullopt for a tag that is no codec (the structural pass
// refuses such entries: S13).
std::optional<Codec> codec_of_tag(std::uint32_t tag) noexcept;

// "0 = raw, 1 = zstd": every tag and name, for messages.
std::string codec_tags_text();

// The codec of an entry. FormatError "unsupported codec N (supported: 0 = raw, 1 = zstd)" (the
// structural pass's text) for a tag that is no codec, which only an entry built past that pass has.
Codec entry_codec(const ChunkEntry& entry);

}  // namespace tessera::tet
