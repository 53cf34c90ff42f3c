// codec/npy: headers byte-identical to numpy's, parsing of numpy-written files, and every
// header rule broken on purpose (each a FormatError naming the source, never a crash).
#include "tessera/codec/npy.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "support/testing.hpp"
#include "tessera/core/endian.hpp"
#include "tessera/core/error.hpp"
#include "tessera/io/byte_source.hpp"

namespace tessera::codec {
namespace {

using Shape = std::vector<std::uint64_t>;

constexpr DType kAllDTypes[] = {DType::Bool, DType::U8,  DType::U16, DType::U32, DType::U64, DType::I8,
                                DType::I16,  DType::I32, DType::I64, DType::F16, DType::F32, DType::F64};

std::vector<std::byte> bytes_of(std::string_view s) {
  std::vector<std::byte> out(s.size());
  if (!s.empty()) std::memcpy(out.data(), s.data(), s.size());
  return out;
}

std::string shape_csv(const Shape& shape) {
  if (shape.empty()) return "-";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "," : "") + std::to_string(shape[i]);
  return out;
}

NpyHeader parse_bytes(std::string_view file, const std::string& name = "bad.npy") {
  const auto src = io::owned_memory_source(bytes_of(file), name);
  return parse_npy_header(*src);
}

// A file with `header_text` used verbatim after the prefix of version `major`.`minor`.
std::string make_raw(std::string_view header_text, std::uint64_t data_len, int major = 1, int minor = 0) {
  std::string out(kNpyMagic);
  out += static_cast<char>(major);
  out += static_cast<char>(minor);
  if (major == 1) append_le<std::uint16_t>(out, static_cast<std::uint16_t>(header_text.size()));
  else append_le<std::uint32_t>(out, static_cast<std::uint32_t>(header_text.size()));
  out += header_text;
  out.append(data_len, '\0');
  return out;
}

// The same, with the dict padded the way numpy pads it.
std::string make_npy(std::string_view dict, std::uint64_t data_len, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string text(dict);
  const std::size_t total = (prefix + text.size() + 1 + 63) / 64 * 64 - prefix;
  text.append(total - text.size() - 1, ' ');
  text += '\n';
  return make_raw(text, data_len, major);
}

void expect_format_error(std::string_view file, std::string_view rule) {
  try {
    parse_bytes(file);
    ADD_FAILURE() << "accepted; expected a FormatError containing: " << rule;
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << "message: " << e.what();
    EXPECT_EQ(e.path(), "bad.npy");
    EXPECT_EQ(e.structure(), "npy header");
  }
}

// --- Writing ------------------------------------------------------------------------------------

TEST(NpyHeader, KnownBytes) {
  const Shape shape{2, 3};
  const std::string h = npy_header(DType::F32, shape);
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_EQ(load_le<std::uint16_t>(h.data() + 8), 118);
  EXPECT_EQ(h.substr(10, dict.size()), dict);
  EXPECT_EQ(h.substr(10 + dict.size()), std::string(128 - 11 - dict.size(), ' ') + "\n");

  EXPECT_NE(npy_header(DType::U8, Shape{5}).find("'descr': '|u1', 'fortran_order': False, 'shape': (5,), }"),
            std::string::npos);
  EXPECT_NE(npy_header(DType::Bool, Shape{}).find("'descr': '|b1', 'fortran_order': False, 'shape': (), }\x20\x20"),
            std::string::npos);
}

TEST(NpyHeader, FullPadWhenAlreadyAligned) {
  // The dict plus '\n' ends exactly on a 64-byte boundary here; numpy still pads 64 spaces.
  const Shape shape{7, 1, 1, 1, 1, 1, 1, 1, 100000000000000000};
  const std::string h = npy_header(DType::F64, shape);
  EXPECT_EQ(h.size(), 192u);
  EXPECT_EQ(h.substr(h.size() - 65), std::string(64, ' ') + "\n");
}

TEST(NpyHeader, Version2WhenTheDictOutgrowsU16) {
  const Shape shape(30000, 1);
  const std::string h = npy_header(DType::I16, shape);
  EXPECT_EQ(h.substr(0, 8), std::string("\x93NUMPY\x02\x00", 8));
  EXPECT_EQ(h.size() % 64, 0u);
  EXPECT_EQ(load_le<std::uint32_t>(h.data() + 8), h.size() - 12);
  const NpyHeader parsed = parse_bytes(h + std::string(2, '\0'));
  EXPECT_EQ(parsed.shape, shape);
}

// One file per case, written by numpy; the test compares bytes and parses the file.
struct NumpyCase {
  DType dtype;
  Shape shape;
  std::string mode;  // save | header | guess | fortran | v2 | v3
};

class NumpyFiles : public ::testing::Test {
 protected:
  void write_with_numpy(const std::vector<NumpyCase>& cases) {
    std::string input;
    for (std::size_t i = 0; i < cases.size(); ++i)
      input += std::string(dtype_info(cases[i].dtype).numpy_descr) + " " + cases[i].mode + " " +
               (dir_ / (std::to_string(i) + ".npy")).string() + " " + shape_csv(cases[i].shape) + "\n";
    const char* code = R"PY(
import sys, warnings
import numpy as np
from numpy.lib import format as fmt
warnings.simplefilter('ignore')
for line in sys.stdin:
    descr, mode, path, shape = line.split()
    shape = tuple(int(x) for x in shape.split(',')) if shape != '-' else ()
    d = {'descr': descr, 'fortran_order': False, 'shape': shape}
    with open(path, 'wb') as f:
        if mode == 'save':
            np.save(f, np.zeros(shape, dtype=np.dtype(descr)))
        elif mode == 'fortran':
            np.save(f, np.asfortranarray(np.zeros(shape, dtype=np.dtype(descr))))
        elif mode == 'header':
            fmt.write_array_header_1_0(f, d)
        elif mode == 'guess':
            fmt._write_array_header(f, d, None)
        elif mode == 'v2':
            fmt.write_array(f, np.zeros(shape, dtype=np.dtype(descr)), version=(2, 0))
        elif mode == 'v3':
            fmt.write_array(f, np.zeros(shape, dtype=np.dtype(descr)), version=(3, 0))
)PY";
    testing::RunOptions options;
    options.stdin_data = input;
    const testing::RunResult r = testing::run_python(code, {}, options);
    ASSERT_EQ(r.rc, 0) << r.err;
  }

  std::string file_text(std::size_t i) const {
    const auto bytes = testing::read_file_bytes(dir_ / (std::to_string(i) + ".npy"));
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }

  std::filesystem::path path(std::size_t i) const { return dir_ / (std::to_string(i) + ".npy"); }

  testing::TempDir dir_{"tessera-npy"};
};

TEST_F(NumpyFiles, SaveHeadersAreByteIdenticalAndParse) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  const std::vector<Shape> shapes{{}, {0}, {5}, {2, 3}, {1, 2, 3, 4, 5, 6, 7, 8}, {0, 4294967296, 3}, {4294967296, 0}};
  std::vector<NumpyCase> cases;
  for (const DType t : kAllDTypes)
    for (const Shape& s : shapes) cases.push_back({t, s, "save"});
  ASSERT_NO_FATAL_FAILURE(write_with_numpy(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(std::string(dtype_info(cases[i].dtype).name) + " shape " + shape_csv(cases[i].shape));
    const std::string file = file_text(i);
    const std::string ours = npy_header(cases[i].dtype, cases[i].shape);
    ASSERT_GE(file.size(), ours.size());
    EXPECT_EQ(file.substr(0, ours.size()), ours);

    const auto src = io::open_file(path(i).string());
    const NpyHeader h = parse_npy_header(*src);
    EXPECT_EQ(h.dtype, cases[i].dtype);
    EXPECT_EQ(h.shape, cases[i].shape);
    EXPECT_FALSE(h.fortran_order);
    EXPECT_EQ(h.data_offset, ours.size());
    std::uint64_t count = 1;
    for (const auto e : cases[i].shape) count *= e;
    EXPECT_EQ(h.data_bytes, count * dtype_size(cases[i].dtype));
    EXPECT_EQ(h.data_offset + h.data_bytes, file.size());
  }
}

TEST_F(NumpyFiles, LargeExtentHeadersAreByteIdentical) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  // Header-only: numpy's own header writer with extents no array could have in memory.
  const std::vector<Shape> shapes{
      {18446744073709551615ull},
      {9223372036854775807ull, 3},
      {1000000, 2000000, 3000000, 4, 5, 6, 7, 8},
      {4294967296, 4294967296, 4294967296, 4294967296, 4294967296, 4294967296, 4294967296, 4294967296},
      {7, 1, 1, 1, 1, 1, 1, 1, 100000000000000000}};
  std::vector<NumpyCase> cases;
  for (const DType t : kAllDTypes)
    for (const Shape& s : shapes) cases.push_back({t, s, "header"});
  cases.push_back({DType::F32, Shape(30000, 1), "guess"});  // too long for version 1.0
  ASSERT_NO_FATAL_FAILURE(write_with_numpy(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(std::string(dtype_info(cases[i].dtype).name) + " shape of rank " +
                 std::to_string(cases[i].shape.size()));
    EXPECT_EQ(file_text(i), npy_header(cases[i].dtype, cases[i].shape));
  }
}

TEST_F(NumpyFiles, FortranOrderAndLaterVersionsParse) {
  if (!testing::have_python_numpy()) GTEST_SKIP() << "/usr/bin/python3 with numpy not available";
  const std::vector<NumpyCase> cases{
      {DType::F64, {2, 3}, "fortran"}, {DType::I32, {4, 5}, "v2"}, {DType::U16, {3}, "v3"}, {DType::Bool, {}, "v3"}};
  ASSERT_NO_FATAL_FAILURE(write_with_numpy(cases));
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].mode);
    const auto src = io::open_file(path(i).string());
    const NpyHeader h = parse_npy_header(*src);
    EXPECT_EQ(h.dtype, cases[i].dtype);
    EXPECT_EQ(h.shape, cases[i].shape);
    EXPECT_EQ(h.fortran_order, cases[i].mode == "fortran");
    EXPECT_EQ(h.data_offset % kNpyAlign, 0u);
    EXPECT_EQ(h.data_offset + h.data_bytes, src->size());
  }
}

// --- Reading: accepted variants -----------------------------------------------------------------

TEST(NpyParse, AcceptsLiteralVariants) {
  // Other writers use double quotes, other key orders, no trailing comma or other spacing.
  NpyHeader h = parse_bytes(make_npy(R"({"shape": (2, 3), "fortran_order": True, "descr": "<f8"})", 48));
  EXPECT_EQ(h.dtype, DType::F64);
  EXPECT_EQ(h.shape, (Shape{2, 3}));
  EXPECT_TRUE(h.fortran_order);

  // No padding and no final newline: numpy's reader accepts it, so do we.
  const std::string tight = "{'descr':'<i2','fortran_order':False,'shape':(4,),}";
  h = parse_bytes(make_raw(tight, 8));
  EXPECT_EQ(h.dtype, DType::I16);
  EXPECT_EQ(h.shape, Shape{4});
  EXPECT_EQ(h.data_offset, 10u + tight.size());

  h = parse_bytes(make_npy("{\n\t'descr' : '=u4' ,\r\n 'fortran_order': False, 'shape': ( 2 , 1 , ) }", 8));
  EXPECT_EQ(h.dtype, DType::U32);
  EXPECT_EQ(h.shape, (Shape{2, 1}));

  // Single-byte types with any byte-order mark.
  for (const char* d : {"<u1", ">u1", "=u1", "|u1"})
    EXPECT_EQ(
        parse_bytes(make_npy(std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': (3,), }", 3)).dtype,
        DType::U8);
  EXPECT_EQ(parse_bytes(make_npy("{'descr': '<b1', 'fortran_order': False, 'shape': (), }", 1)).dtype, DType::Bool);
  EXPECT_EQ(parse_bytes(make_npy("{'descr': '>i1', 'fortran_order': False, 'shape': (), }", 1)).dtype, DType::I8);

  // Python 2 writers put an L after extents in version 1.0 and 2.0 files.
  h = parse_bytes(make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (3L, 2L), }", 12));
  EXPECT_EQ(h.shape, (Shape{3, 2}));
  h = parse_bytes(make_npy("{'descr': '<f2', 'fortran_order': False, 'shape': (3L,), }", 6, 2));
  EXPECT_EQ(h.shape, Shape{3});
}

// --- Reading: every rule broken -----------------------------------------------------------------

const std::string kGood = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";

TEST(NpyParse, BadMagicAndVersion) {
  std::string file = make_npy(kGood, 24);
  ASSERT_NO_THROW(parse_bytes(file));
  for (const std::size_t i : {0, 1, 5}) {
    std::string bad = file;
    bad[i] ^= 0x20;
    expect_format_error(bad, "bad magic");
  }
  expect_format_error("PK\x03\x04 not an npy file at all", "bad magic");
  expect_format_error("", "too short");
  for (const auto& [major, minor] : {std::pair{0, 0}, {4, 0}, {1, 1}, {2, 1}, {255, 255}}) {
    std::string bad = file;
    bad[6] = static_cast<char>(major);
    bad[7] = static_cast<char>(minor);
    expect_format_error(bad, "unsupported npy version");
  }
}

TEST(NpyParse, HeaderLengthPastTheEnd) {
  std::string file = make_npy(kGood, 0);
  store_le<std::uint16_t>(file.data() + 8, 0xFFFF);
  expect_format_error(file, "runs past the end of the file");
  std::string v2 = make_npy(kGood, 24, 2);
  store_le<std::uint32_t>(v2.data() + 8, 0xFFFFFFFFu);
  expect_format_error(v2, "runs past the end of the file");
}

TEST(NpyParse, BadDescr) {
  const auto with_descr = [](std::string_view descr) {
    return make_npy("{'descr': " + std::string(descr) + ", 'fortran_order': False, 'shape': (2,), }", 8);
  };
  expect_format_error(with_descr("'>f4'"), "big-endian descr '>f4'");
  expect_format_error(with_descr("'>i8'"), "big-endian");
  for (const char* d : {"'<c8'", "'|O'", "'<U3'", "'<f3'", "'f4'", "''", "'|f4'", "'<f16'", "'<M8[s]'"})
    expect_format_error(with_descr(d), "unsupported descr");
  expect_format_error(with_descr("[('a', '<f4')]"), "structured descr");
  expect_format_error(with_descr("42"), "expected a quoted string for 'descr' value");
  expect_format_error(make_npy("{'descr': '<f4", 24), "unterminated string");
  expect_format_error(with_descr("'<f\\x34'"), "escape sequences");
}

TEST(NpyParse, MalformedDict) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"['descr', '<f4']", "must be a dict"},
      {"", "must be a dict"},
      {"{'descr': '<f4', 'fortran_order': False}", "lacks key 'shape'"},
      {"{'descr': '<f4', 'shape': (2, 3)}", "lacks key 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (2, 3)}", "lacks key 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'fortran_order': False, 'shape': (2, 3)}", "duplicate key"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (2, 3)}", "duplicate key 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", "unexpected key 'extra'"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected a quoted string for dict key"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3)}", "expected ':'"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}", "expected ',' or '}'"},
      {"{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2, 3)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6)}", "is not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-6,)}", "negative extent"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6.0,)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (6x,)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (,)}", "tuple of integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "expected ',' or ')'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (06,)}", "leading zero"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3", "unterminated 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551616,)}", "does not fit in u64"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x", "unexpected text after the header dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}}", "unexpected text after the header dict"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)", "expected ',' or '}'"},
  };
  for (const auto& [dict, rule] : cases) {
    SCOPED_TRACE(dict);
    expect_format_error(make_npy(dict, 24), rule);
  }
  // The Python 2 'L' suffix belongs to versions 1.0 and 2.0 only.
  std::string v3 = make_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }", 24, 2);
  v3[6] = 3;
  expect_format_error(v3, "tuple of integers");
}

TEST(NpyParse, DataLengthAndOverflow) {
  expect_format_error(make_npy(kGood, 23), "data length 23 != product(shape) x itemsize = 24");
  expect_format_error(make_npy(kGood, 25), "data length 25 != product(shape) x itemsize = 24");
  expect_format_error(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 0),
                      "overflows u64");
  // A zero extent does not excuse the others from fitting (numpy refuses these too).
  expect_format_error(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 4294967296), }", 0),
                      "overflows u64");
  const NpyHeader h =
      parse_bytes(make_npy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4294967296, 3), }", 0));
  EXPECT_EQ(h.data_bytes, 0u);
}

TEST(NpyParse, ErrorNamesTheSource) {
  try {
    parse_bytes("garbage!", "data/input.npy");
    FAIL() << "accepted garbage";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.path(), "data/input.npy");
    EXPECT_NE(e.describe().find("data/input.npy: npy header: bad magic"), std::string::npos) << e.describe();
  }
}

TEST(NpyParse, EveryTruncationIsAFormatError) {
  for (const int major : {1, 2}) {
    const std::string file =
        major == 1 ? npy_header(DType::F32, Shape{2, 3}) + std::string(24, '\x7f') : make_npy(kGood, 24, 2);
    ASSERT_NO_THROW(parse_bytes(file));
    for (std::size_t len = 0; len < file.size(); ++len) {
      SCOPED_TRACE("version " + std::to_string(major) + ", length " + std::to_string(len));
      EXPECT_THROW(parse_bytes(file.substr(0, len)), FormatError);
    }
  }
}

TEST(NpyParse, EveryHeaderBitFlipIsCleanlyHandled) {
  const std::string file = npy_header(DType::U16, Shape{3, 4}) + std::string(24, '\x01');
  const std::size_t header_size = file.size() - 24;
  std::size_t accepted = 0;
  for (std::size_t i = 0; i < header_size; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = file;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      try {
        const NpyHeader h = parse_bytes(bad);
        EXPECT_EQ(h.data_offset + h.data_bytes, bad.size());
        ++accepted;
      } catch (const FormatError&) {
      }
    }
  }
  // Only flips inside the padding (space <-> other whitespace) or the fortran flag's letter case
  // could keep the header valid; most flips must be refused.
  EXPECT_LT(accepted, header_size * 8 / 2);
}

}  // namespace
}  // namespace tessera::codec
