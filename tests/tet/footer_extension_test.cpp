// The tessera footer extension: typed attributes round-trip with their types, a file with the
// extension is the file without it plus an ignorable footer key (the reference's bytes and
// footer keys unchanged), a large extension spills into a blob the payload end excludes, chunk
// CRC-32C are recorded as independently computed, and `verify --deep` reports every single-byte
// flip inside a checksummed raw chunk (which would otherwise decode).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/codec/checksum.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_sink.hpp"
#include "tessera/io/byte_source.hpp"
#include "tessera/tet/footer.hpp"
#include "tessera/tet/layout.hpp"
#include "tessera/tet/reader.hpp"
#include "tessera/tet/verify.hpp"
#include "tessera/tet/writer.hpp"

namespace {

namespace io = tessera::io;
namespace tet = tessera::tet;
using tessera::DType;
using tessera::FormatError;
using tet::AttributeValue;
using tet::FooterExtension;

using Bytes = std::vector<std::byte>;

FooterExtension sample_extension() {
  FooterExtension ext;
  ext.attrs = {{"title", AttributeValue::string("run 7")},
               {"flags", AttributeValue::signed_integer("int8", {1, -2, 4}, false)},
               {"one_element_array", AttributeValue::real("float64", {2.5}, false)}};
  tet::DatasetExtension d;
  d.attrs = {{"valid_max", AttributeValue::real("float32", {400.0})},
             {"valid_range", AttributeValue::real("float64", {-1.0, std::numeric_limits<double>::infinity()}, false)},
             {"_FillValue", AttributeValue::signed_integer("int16", {-32767})},
             {"big", AttributeValue::unsigned_integer("uint64", {std::numeric_limits<std::uint64_t>::max()})},
             {"small", AttributeValue::signed_integer("int64", {std::numeric_limits<std::int64_t>::min()})},
             {"flag_meanings", AttributeValue::string("a b")},
             {"names", AttributeValue::string("x")}};
  d.attrs.back().second.text = {"x", "y"};
  d.attrs.back().second.scalar = false;
  d.source_dtype = "int16";
  d.applied = {"_FillValue", "scale_factor"};
  ext.datasets["v"] = d;
  return ext;
}

TEST(FooterExtension, TypedValuesRoundTripWithTheirTypes) {
  const FooterExtension ext = sample_extension();
  const auto back = tet::parse_footer_extension(tet::serialize_footer_extension(ext));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, ext);
  const auto nan = tet::parse_footer_extension(R"({"version":1,"attrs":[["m",{"type":"float32","value":"NaN"}]]})");
  ASSERT_TRUE(nan);
  EXPECT_TRUE(std::isnan(nan->attrs.at(0).second.real_values.at(0)));
}

TEST(FooterExtension, AnotherVersionIsIgnoredAndAMalformedOneIsAFooterError) {
  EXPECT_FALSE(tet::parse_footer_extension(R"({"version":2,"whatever":[1]})"));
  for (const char* bad : {R"([1])", R"({"attrs":[]})", R"({"version":1,"attrs":[["a",{"type":"int8","value":300}]]})",
                          R"({"version":1,"attrs":[["a",{"type":"complex64","value":1}]]})",
                          R"({"version":1,"datasets":{"v":{"applied":["units"]}}})",
                          R"({"version":1,"chunk_crc32c":[4294967296]})", R"({"version":1,"attrs":[["a"]]})"}) {
    try {
      tet::parse_footer_extension(bad);
      ADD_FAILURE() << bad;
    } catch (const FormatError& e) {
      EXPECT_NE(std::string(e.what()).find("history footer tessera extension is invalid"), std::string::npos) << bad;
    }
  }
}

struct Written {
  Bytes bytes;
  tet::Layout layout;
};

// One u16 dataset of 4 raw chunks (and one zstd dataset), with `metadata` and `extension`.
Written write_sample(const tet::Metadata& metadata, const FooterExtension& extension, bool checksums) {
  io::MemorySink sink;
  tet::WriterOptions options;
  options.history = {{"write", "test", "1700000000", {}, {}}};
  options.metadata = metadata;
  options.extension = extension;
  options.chunk_checksums = checksums;
  tet::TetWriter writer(sink, options);
  writer.add_dataset({"v", DType::U16, {64}, {16}, tet::Codec::Raw, 0});
  writer.add_dataset({"z", DType::F64, {100}, {30}, tet::Codec::Zstd, 3});
  std::vector<std::uint16_t> v(64);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint16_t>(i * 7);
  std::vector<double> z(100);
  for (std::size_t i = 0; i < z.size(); ++i) z[i] = std::sin(static_cast<double>(i));
  writer.write_dataset(0, std::as_bytes(std::span(v)));
  writer.write_dataset(1, std::as_bytes(std::span(z)));
  writer.commit();
  Bytes bytes = sink.bytes();
  auto source = io::owned_memory_source(bytes, "<sample>");
  return {std::move(bytes), tet::parse_layout(*source)};
}

std::string footer_json(const Written& w) {
  const std::size_t end = w.bytes.size() - tet::FooterTail::kSize;
  return {reinterpret_cast<const char*>(w.bytes.data()) + end - w.layout.footer_json_len, w.layout.footer_json_len};
}

TEST(FooterExtension, TheReferencesBytesAndKeysStayWhatTheyAreWithoutIt) {
  tet::Metadata md;
  md.datasets["v"].attrs = {{"units", "K"}};
  const Written plain = write_sample(md, {}, /*checksums=*/false);
  const Written extended = write_sample(md, sample_extension(), /*checksums=*/true);
  ASSERT_TRUE(extended.layout.footer->extension);
  EXPECT_EQ(*extended.layout.footer->extension->datasets.find("v"), *sample_extension().datasets.find("v"));
  EXPECT_EQ(extended.layout.footer->extension->attrs, sample_extension().attrs);
  // Superblock, catalog, index and payloads: byte for byte.
  ASSERT_EQ(plain.layout.payload_end, extended.layout.payload_end);
  EXPECT_TRUE(std::equal(plain.bytes.begin(),
                         plain.bytes.begin() + static_cast<std::ptrdiff_t>(plain.layout.payload_end),
                         extended.bytes.begin()));
  // The footer JSON: the reference's keys first and unchanged, then the one key it ignores.
  const std::string a = footer_json(plain), b = footer_json(extended);
  ASSERT_EQ(b.substr(0, a.size() - 1), a.substr(0, a.size() - 1));
  EXPECT_EQ(b.substr(a.size() - 1, 12), R"(,"tessera":{)");
  const tet::FooterJson parsed = tet::parse_footer_json(b);
  EXPECT_EQ(parsed.history.size(), 1u);
  EXPECT_EQ(parsed.metadata->datasets.at("v").attrs.at("units"), "K");
}

TEST(FooterExtension, ChecksumsAreTheCrc32cOfEachStoredPayload) {
  const Written w = write_sample({}, {}, /*checksums=*/true);
  const auto& crcs = w.layout.footer->extension->chunk_crc32c;
  ASSERT_EQ(crcs.size(), w.layout.entries.size());
  for (std::size_t i = 0; i < crcs.size(); ++i) {
    const auto& e = w.layout.entries[i];
    const std::span<const std::byte> stored(w.bytes.data() + e.payload_offset, e.stored_byte_len);
    EXPECT_EQ(crcs[i], tessera::codec::crc32c(stored)) << "chunk " << i;
  }
  const Written none = write_sample({}, {}, /*checksums=*/false);
  EXPECT_FALSE(none.layout.footer->extension);  // nothing to record: no extension key at all
}

TEST(FooterExtension, ALargeExtensionSpillsBeforeTheMetadataSpillAndThePayloadsEndBeforeIt) {
  FooterExtension ext = sample_extension();
  for (int i = 0; i < 2000; ++i)
    ext.attrs.emplace_back("attr" + std::to_string(i), AttributeValue::string(std::string(40, 'a' + i % 26)));
  tet::Metadata md;  // big enough to spill by itself
  for (int i = 0; i < 200; ++i)
    for (int k = 0; k < 60; ++k)
      md.datasets["d" + std::to_string(i)].attrs["k" + std::to_string(k)] = std::string(8, 'x');
  for (const bool metadata_spills : {false, true}) {
    const Written plain = write_sample(metadata_spills ? md : tet::Metadata{}, {}, false);
    const Written w = write_sample(metadata_spills ? md : tet::Metadata{}, ext, true);
    const tet::Footer& footer = *w.layout.footer;
    ASSERT_TRUE(footer.extension_ref);
    ASSERT_TRUE(footer.extension);
    EXPECT_EQ(footer.extension->attrs, ext.attrs);
    EXPECT_EQ(footer.extension_ref->offset, w.layout.payload_end);
    EXPECT_EQ(w.layout.payload_end, plain.layout.payload_end);
    EXPECT_EQ(footer.metadata_ref.has_value(), metadata_spills);
    if (metadata_spills) {
      EXPECT_EQ(footer.metadata_ref->offset, footer.extension_ref->offset + footer.extension_ref->len);
      EXPECT_EQ(footer.metadata.datasets.size(), md.datasets.size());
    }
    // The reference's payload region end (spec §1.8) includes the blob: every payload still fits.
    const std::uint64_t spill = metadata_spills ? footer.metadata_ref->len : 0;
    const std::uint64_t reference_end = w.bytes.size() - tet::FooterTail::kSize - w.layout.footer_json_len - spill;
    EXPECT_EQ(reference_end, w.layout.payload_end + footer.extension_ref->len);
    const auto report = tet::verify(*io::owned_memory_source(w.bytes, "<spilled>"), {.deep_decode = true});
    EXPECT_TRUE(report.ok);
  }
}

TEST(FooterExtension, VerifyDeepReportsEverySingleByteFlipInAChecksummedChunk) {
  const Written w = write_sample({}, {}, /*checksums=*/true);
  EXPECT_TRUE(tet::verify(*io::owned_memory_source(w.bytes, "<clean>"), {.deep_decode = true}).ok);
  // Chunk 1 is raw (any flipped byte still decodes), chunk 4 the first zstd one.
  for (const std::size_t index : {std::size_t{1}, std::size_t{4}}) {
    const tet::ChunkEntry& chunk = w.layout.entries.at(index);
    const std::string expected = "chunk " + std::to_string(index) + ": stored bytes do not match their CRC-32C";
    for (std::uint64_t at = chunk.payload_offset; at < chunk.payload_offset + chunk.stored_byte_len; ++at) {
      for (const std::uint8_t mask : {std::uint8_t{0x01}, std::uint8_t{0x80}}) {
        Bytes bad = w.bytes;
        bad[at] ^= std::byte{mask};
        const auto report = tet::verify(*io::owned_memory_source(std::move(bad), "<flipped>"), {.deep_decode = true});
        ASSERT_FALSE(report.ok) << "byte " << at;
        bool named = false;
        for (const auto& f : report.findings)
          named = named || (f.check == "chunk_decode" && f.detail && f.detail->find(expected) != std::string::npos);
        EXPECT_TRUE(named) << "byte " << at;
      }
    }
  }
}

TEST(FooterExtension, AReadWithVerifyChecksumsRefusesAFlippedChunkOthersReadIt) {
  Written w = write_sample({}, {}, /*checksums=*/true);
  const tet::ChunkEntry& chunk = w.layout.entries.at(2);  // raw u16 elements 32..47
  w.bytes[chunk.payload_offset + 3] ^= std::byte{0x10};
  const auto file =
      tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(w.bytes, "f.tet")));
  const tet::Dataset& ds = file.datasets()[0];
  std::vector<std::uint16_t> out(64);
  file.read_box(ds, ds.full_box(), std::as_writable_bytes(std::span(out)));  // no check: a wrong value
  EXPECT_NE(out[33], 33 * 7);
  EXPECT_EQ(out[32], 32 * 7);
  try {
    file.read_box(ds, ds.full_box(), std::as_writable_bytes(std::span(out)), {.verify_checksums = true});
    ADD_FAILURE() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("chunk 2: stored bytes do not match their CRC-32C"), std::string::npos);
    EXPECT_EQ(e.path(), "f.tet");
  }
  // A box that does not touch the flipped chunk reads under the check.
  tet::Box first = ds.full_box();
  first[0] = {0, 16, 1};
  std::vector<std::uint16_t> head(16);
  file.read_box(ds, first, std::as_writable_bytes(std::span(head)), {.verify_checksums = true});
  EXPECT_EQ(head[5], 35);
}

// Opening must succeed or throw a tessera::Error; anything else fails the test.
void open_or_error(Bytes bytes) {
  try {
    const auto file =
        tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(std::move(bytes))));
    (void)tet::verify(file.source(), {.deep_decode = true});
  } catch (const tessera::Error&) {
  }
}

TEST(FooterExtension, CorruptExtensionsAreErrorsNeverCrashes) {
  FooterExtension ext = sample_extension();
  const Written inline_file = write_sample({}, ext, true);
  for (int i = 0; i < 3000; ++i)
    ext.attrs.emplace_back("k" + std::to_string(i), AttributeValue::string(std::string(40, 'v')));
  const Written spilled = write_sample({}, ext, true);
  ASSERT_TRUE(spilled.layout.footer->extension_ref);
  for (const Written* w : {&inline_file, &spilled}) {
    const std::size_t size = w->bytes.size();
    const std::size_t footer_start = size - tet::FooterTail::kSize - w->layout.footer_json_len;
    // Bit flips through the footer JSON and the tail; a stride through a spilled blob.
    for (std::size_t at = footer_start; at < size; ++at)
      for (const std::uint8_t mask : {std::uint8_t{0x01}, std::uint8_t{0x20}, std::uint8_t{0x80}}) {
        Bytes bad = w->bytes;
        bad[at] ^= std::byte{mask};
        open_or_error(std::move(bad));
      }
    for (std::size_t at = w->layout.payload_end; at < footer_start; at += 997) {
      Bytes bad = w->bytes;
      bad[at] ^= std::byte{0x04};
      open_or_error(std::move(bad));
    }
    // Truncation anywhere after the payloads.
    for (std::size_t len = w->layout.payload_end; len < size; len += w == &spilled ? 613 : 1)
      open_or_error(Bytes(w->bytes.begin(), w->bytes.begin() + static_cast<std::ptrdiff_t>(len)));
  }
  // Huge counts and deep nesting inside the extension text.
  std::string deep = R"({"version":1,"attrs":[["a",)";
  for (int i = 0; i < 600; ++i) deep += "[";
  EXPECT_THROW(tet::parse_footer_extension(deep), FormatError);
  // A footer naming a blob it cannot have: huge, or not right after the payloads.
  const std::size_t footer_start =
      inline_file.bytes.size() - tet::FooterTail::kSize - inline_file.layout.footer_json_len;
  for (const std::string ref : {R"({"offset":0,"len":18446744073709551615})", R"({"offset":0,"len":8})"}) {
    const std::string json = R"({"history":[],"tessera_ref":)" + ref + "}";
    Bytes bad(inline_file.bytes.begin(), inline_file.bytes.begin() + static_cast<std::ptrdiff_t>(footer_start));
    for (const char c : json) bad.push_back(static_cast<std::byte>(c));
    bad.resize(bad.size() + tet::FooterTail::kSize);
    tet::FooterTail{json.size(), 1}.encode_to(bad.data() + bad.size() - tet::FooterTail::kSize);
    EXPECT_THROW(tet::TetFile::open(std::shared_ptr<const io::ByteSource>(io::owned_memory_source(bad))), FormatError)
        << ref;
  }
}

TEST(FooterExtension, AChecksumListOfTheWrongLengthIsReported) {
  io::MemorySink sink;
  tet::WriterOptions options;
  options.chunk_checksums = false;
  options.extension.chunk_crc32c = {1, 2};  // written as given: a file that lies about its chunks
  tet::TetWriter writer(sink, options);
  writer.add_dataset({"v", DType::U8, {8}, {2}, tet::Codec::Raw, 0});
  const std::vector<std::uint8_t> v(8, 3);
  writer.write_dataset(0, std::as_bytes(std::span(v)));
  writer.commit();
  const auto report = tet::verify(*io::owned_memory_source(sink.bytes(), "<short>"), {.deep_decode = true});
  EXPECT_FALSE(report.ok);
  bool named = false;
  for (const auto& f : report.findings)
    named = named || (f.detail && f.detail->find("records 2 chunk checksums for 4 chunks") != std::string::npos);
  EXPECT_TRUE(named);
}

}  // namespace
