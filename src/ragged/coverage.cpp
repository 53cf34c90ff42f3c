// Coverage structures of a morton-hive store (spec §4.5, §4.6): the leaf's `coverage.moc`
// occupancy bitmap and the root coverage MOC (ranges of shard ids, optional tier-1 shard times).
#include <algorithm>
#include <charconv>

#include "tessera/codec/json_fields.hpp"
#include "tessera/codec/zstd.hpp"
#include "tessera/core/error.hpp"
#include "tessera/ragged/hive.hpp"
#include "tessera/ragged/morton.hpp"

namespace tessera::ragged::hive {

using codec::json::Json;

namespace {

std::uint64_t bitmap_bytes(int depth) {
  if (depth < 1 || depth > 28) throw UsageError("coverage bitmap: depth " + std::to_string(depth) + " outside 1..28");
  return (morton::pow4(depth) + 7) / 8;
}

// The root MOC may expand to at most this many shards (a larger set is refused, not allocated).
constexpr std::uint64_t kMaxRootShards = std::uint64_t{1} << 24;

}  // namespace

std::vector<std::byte> encode_bitmap(std::span<const std::uint64_t> ranks, int depth) {
  std::vector<std::byte> raw(bitmap_bytes(depth));
  for (const std::uint64_t r : ranks) {
    if (r >= morton::pow4(depth))
      throw UsageError("coverage bitmap: rank " + std::to_string(r) + " outside the subtree");
    raw[r / 8] |= static_cast<std::byte>(0x80u >> (r % 8));
  }
  return raw;
}

std::vector<std::uint64_t> decode_bitmap(std::span<const std::byte> raw, int depth, std::string_view key) {
  const std::uint64_t expected = bitmap_bytes(depth);
  if (raw.size() != expected)
    fail_at<FormatError>(key, "coverage bitmap",
                         "decoded " + std::to_string(raw.size()) + " bytes, expected exactly " +
                             std::to_string(expected) + " (ceil(4^" + std::to_string(depth) + " / 8))");
  std::vector<std::uint64_t> ranks;
  const std::uint64_t cells = morton::pow4(depth);
  for (std::uint64_t i = 0; i < cells; ++i)
    if ((std::to_integer<unsigned>(raw[i / 8]) >> (7 - i % 8)) & 1u) ranks.push_back(i);
  return ranks;
}

std::vector<std::uint64_t> decode_sidecar(std::span<const std::byte> object, int depth, std::string_view key) {
  const std::uint64_t expected = bitmap_bytes(depth);
  std::vector<std::byte> raw;
  try {
    raw = codec::zstd_decompress_capped(object, expected + 1);
  } catch (const LimitError&) {
    // More bytes than the bitmap holds: a corrupt sidecar raises, it never degrades.
    fail_at<FormatError>(key, "coverage bitmap", "decompresses to more than " + std::to_string(expected) + " bytes");
  } catch (const FormatError& e) {
    fail_at<FormatError>(key, "coverage bitmap", e.what());
  }
  return decode_bitmap(raw, depth, key);
}

bool bitmap_pad_bits_set(std::span<const std::byte> raw, int depth) noexcept {
  const std::uint64_t cells = morton::pow4(depth);
  for (std::uint64_t i = cells; i < raw.size() * 8; ++i)
    if ((std::to_integer<unsigned>(raw[i / 8]) >> (7 - i % 8)) & 1u) return true;
  return false;
}

std::optional<RootMoc> parse_root_moc(std::string_view text, std::string_view key) {
  Json doc;
  try {
    doc = codec::json::parse_strict(text, key);
  } catch (const FormatError&) {
    return std::nullopt;  // unparsable: the reader falls back to the walk
  }
  if (!doc.is_object()) return std::nullopt;
  const auto str = [&](const Json& obj, const char* name) -> std::optional<std::string> {
    const auto it = obj.find(name);
    if (it == obj.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
  };
  if (str(doc, "spec") != "morton-moc/1" || str(doc, "encoding") != "ranges") return std::nullopt;
  const codec::json::Fields f(doc, key, "root coverage");
  RootMoc moc;
  moc.order = static_cast<int>(f.integer_in("order", 0, 29));
  moc.source = str(doc, "source");
  moc.generated_at = str(doc, "generated_at");
  const Json& ranges = f.get("ranges");
  if (!ranges.is_array()) f.fail("ranges", "must be an array");
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    const Json& r = ranges[i];
    const std::string where = "ranges[" + std::to_string(i) + "]";
    if (!r.is_array() || r.size() != 2 || !r[0].is_string() || !r[1].is_string())
      f.fail(where, "must be a pair of decimal id strings");
    std::uint64_t ends[2];
    for (int e = 0; e < 2; ++e) {
      const std::string id = r[static_cast<std::size_t>(e)].get<std::string>();
      try {
        ends[e] = morton::parse_decimal(id, morton::Source::File);
      } catch (const FormatError& err) {
        f.fail(where, err.what());
      }
      if (morton::is_point(ends[e]) || morton::order_of(ends[e]) != moc.order)
        f.fail(where, "'" + id + "' is not an area id at order " + std::to_string(moc.order));
    }
    if (morton::base_cell_of(ends[0]) != morton::base_cell_of(ends[1])) f.fail(where, "range crosses base cells");
    const std::uint64_t lo = morton::nested(ends[0]), hi = morton::nested(ends[1]);
    if (lo > hi) f.fail(where, "range is reversed");
    if (hi - lo >= kMaxRootShards || moc.shards.size() + (hi - lo) >= kMaxRootShards)
      fail_at<LimitError>(key, "root coverage", "more than " + std::to_string(kMaxRootShards) + " shards");
    for (std::uint64_t n = lo; n <= hi; ++n) moc.shards.push_back(morton::from_nested(n, moc.order));
  }
  std::sort(moc.shards.begin(), moc.shards.end());
  moc.shards.erase(std::unique(moc.shards.begin(), moc.shards.end()), moc.shards.end());

  // Tier 1 of the temporal section; an unknown temporal spec reads as absent.
  if (const auto t = doc.find("temporal");
      t != doc.end() && t->is_object() && str(*t, "spec") == "zagg-coverage-toc/1") {
    const codec::json::Fields tf(*t, key, "root coverage.temporal");
    if (const auto fields = t->find("fields"); fields != t->end() && fields->is_array())
      for (const Json& name : *fields)
        if (name.is_string()) moc.temporal_fields.push_back(name.get<std::string>());
    if (tf.has("shards")) {
      const Json& shards = tf.get("shards");
      if (!shards.is_object()) tf.fail("shards", "must be an object");
      for (const auto& [id, word] : shards.items()) {
        std::uint64_t shard = 0;
        try {
          shard = morton::parse_decimal(id, morton::Source::File);
        } catch (const FormatError& err) {
          tf.fail("shards", err.what());
        }
        std::uint64_t w = 0;
        const std::string text = word.is_string() ? word.get<std::string>() : std::string();
        const auto res = std::from_chars(text.data(), text.data() + text.size(), w);
        if (text.empty() || res.ec != std::errc() || res.ptr != text.data() + text.size())
          tf.fail("shards." + id, "must be a toc word as a decimal string");
        moc.shard_times[shard] = w;
      }
    }
    if (const auto d = t->find("digest"); d != t->end()) moc.temporal_digest = *d;
  }
  moc.document = std::move(doc);
  return moc;
}

std::optional<RootMoc> read_root_moc(const io::Store& store) {
  const auto bytes = store.get(std::string(kRootCoverageKey));
  if (!bytes) return std::nullopt;
  return parse_root_moc(std::string_view(reinterpret_cast<const char*>(bytes->data()), bytes->size()),
                        kRootCoverageKey);
}

}  // namespace tessera::ragged::hive
