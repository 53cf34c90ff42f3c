// The documents of remote writes without a server: S3's multipart answers (CreateMultipartUpload,
// ListMultipartUploads, CompleteMultipartUpload, including the error S3 may send with status 200)
// and the write journal a lock object holds (io/publish.hpp), on good input and on every
// truncation and bit flip. The requests themselves run against the S3 emulator in
// tests/python/test_remote_writes.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessera/core/error.hpp"
#include "tessera/io/bucket.hpp"
#include "tessera/io/publish.hpp"

namespace tessera::io {
namespace {

constexpr const char* kUploads = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Bucket>b</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>
<NextKeyMarker>out/z.tet</NextKeyMarker><NextUploadIdMarker>id-3</NextUploadIdMarker>
<IsTruncated>true</IsTruncated>
<Upload><Key>out/a.tet</Key><UploadId>id-1</UploadId><Initiated>2026-12-03T10:00:00.000Z</Initiated></Upload>
<Upload><Key>out/z.tet</Key><UploadId>id-3</UploadId><Initiated>2026-12-03T11:00:00.000Z</Initiated></Upload>
</ListMultipartUploadsResult>)";

// Calls `parse` on every prefix of `doc` and on every single-bit flip of it: each must parse or
// throw a FormatError, never anything else.
template <typename Parse>
void survives_damage(const std::string& doc, Parse parse) {
  for (std::size_t n = 0; n < doc.size(); ++n) {
    try {
      parse(doc.substr(0, n));
    } catch (const FormatError&) {
    }
  }
  std::string flipped = doc;
  for (std::size_t i = 0; i < flipped.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
      try {
        parse(flipped);
      } catch (const FormatError&) {
      }
      flipped[i] = static_cast<char>(flipped[i] ^ (1 << bit));
    }
  }
}

TEST(MultipartDocuments, InitiateGivesTheUploadId) {
  EXPECT_EQ(parse_initiate_multipart("<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
                                     "<UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>",
                                     "s3://b/k"),
            "VXBsb2FkIElE");
  EXPECT_THROW(parse_initiate_multipart("<InitiateMultipartUploadResult/>", "s3://b/k"), FormatError);
  try {
    parse_initiate_multipart("<Error><Code>AccessDenied</Code></Error>", "s3://b/k");
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_EQ(std::string(e.what()),
              "s3://b/k: not a CreateMultipartUpload answer: the root element is <Error>, not "
              "<InitiateMultipartUploadResult>");
  }
}

TEST(MultipartDocuments, ListedUploadsAndTheirMarkers) {
  const ListUploadsPage page = parse_list_uploads_page(kUploads, "s3://b");
  ASSERT_EQ(page.uploads.size(), 2u);
  EXPECT_EQ(page.uploads[0].key, "out/a.tet");
  EXPECT_EQ(page.uploads[0].upload_id, "id-1");
  EXPECT_EQ(page.uploads[1].initiated, "2026-12-03T11:00:00.000Z");
  EXPECT_TRUE(page.truncated);
  EXPECT_EQ(page.next_key_marker, "out/z.tet");
  EXPECT_EQ(page.next_upload_id_marker, "id-3");
  EXPECT_THROW(parse_list_uploads_page("<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
                                       "</ListMultipartUploadsResult>",
                                       "s3://b"),
               FormatError);
  EXPECT_THROW(
      parse_list_uploads_page(
          "<ListMultipartUploadsResult><IsTruncated>true</IsTruncated></ListMultipartUploadsResult>", "s3://b"),
      FormatError);
  survives_damage(kUploads, [](const std::string& d) { (void)parse_list_uploads_page(d, "s3://b"); });
}

TEST(MultipartDocuments, CompletionMayReportAnErrorWithStatus200) {
  const CompleteAnswer ok = parse_complete_multipart(
      "<CompleteMultipartUploadResult><Key>k</Key><ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag>"
      "</CompleteMultipartUploadResult>",
      "s3://b/k");
  EXPECT_EQ(ok.etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
  EXPECT_TRUE(ok.error_code.empty());
  const CompleteAnswer failed = parse_complete_multipart(
      "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>", "s3://b/k");
  EXPECT_EQ(failed.error_code, "InternalError");
  EXPECT_EQ(failed.error_message, "We encountered an internal error.");
  EXPECT_THROW(parse_complete_multipart("<CompleteMultipartUploadResult>", "s3://b/k"), FormatError);
  EXPECT_THROW(parse_complete_multipart("<Other/>", "s3://b/k"), FormatError);
}

WriteJournal sample_journal() {
  return WriteJournal{"node-7",
                      4242,
                      "2026-12-03T12:00:00Z",
                      {"manifest.json"},
                      {""},
                      {"gene_order.npy", "tiles/tile_000000.dct", "manifest.json"},
                      {}};
}

TEST(WriteJournal, RoundTripsAndNamesWhatIsWrong) {
  const std::string text = format_journal(sample_journal());
  EXPECT_EQ(text,
            "tessera-write-journal 1\nhost node-7\npid 4242\nstarted 2026-12-03T12:00:00Z\ncommit manifest.json\n"
            "scope \nwrite gene_order.npy\nwrite tiles/tile_000000.dct\nwrite manifest.json\nend\n");
  const WriteJournal back = parse_journal(text, "s3://b/ds/.tessera-write");
  EXPECT_EQ(back.host, "node-7");
  EXPECT_EQ(back.pid, 4242u);
  EXPECT_EQ(back.commit_keys, sample_journal().commit_keys);
  EXPECT_EQ(back.scopes, std::vector<std::string>{""});
  EXPECT_EQ(back.writes, sample_journal().writes);
  const auto message_of = [](const std::string& doc) {
    try {
      (void)parse_journal(doc, "s3://b/ds/.tessera-write");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message_of(text.substr(0, text.size() - 4)),
            "s3://b/ds/.tessera-write: line 9: no 'end' line (the journal is cut short) (not a tessera write journal)");
  EXPECT_EQ(message_of("tessera-write-journal 1\nwrite ../escape\nend\n"),
            "s3://b/ds/.tessera-write: line 2: '../escape' is not an object key (not a tessera write journal)");
  EXPECT_EQ(message_of("tessera-write-journal 2\nend\n"),
            "s3://b/ds/.tessera-write: line 1: expected 'tessera-write-journal 1' (not a tessera write journal)");
  EXPECT_EQ(message_of("tessera-write-journal 1\npid 99999999999999999999\nend\n"),
            "s3://b/ds/.tessera-write: line 2: pid '99999999999999999999' is not a number (not a tessera write "
            "journal)");
  EXPECT_EQ(message_of(""), "s3://b/ds/.tessera-write: line 0: empty (not a tessera write journal)");
  survives_damage(text, [](const std::string& d) { (void)parse_journal(d, "lock"); });
}

}  // namespace
}  // namespace tessera::io
