// YAML documents as JSON trees (codec/yaml.hpp). Truth: every pipeline config zagg ships, read by
// PyYAML's safe_load (zagg's own reader) and dumped as JSON, must give the same tree; scalar
// resolution follows PyYAML's YAML 1.1 rules; malformed and hostile documents are errors naming
// the file and line.
#include "tessera/codec/yaml.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

namespace tessera::codec::yaml {
namespace {

namespace fs = std::filesystem;
using json::Json;

Json pyyaml(const fs::path& file) {
  const auto r = tessera::testing::run_process(
      {"/usr/bin/python3", "-c",
       "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1], encoding='utf-8'))))",
       file.string()});
  EXPECT_EQ(r.rc, 0) << r.err;
  return Json::parse(r.out);
}

TEST(Yaml, EveryZaggConfigReadsAsPyYamlReadsIt) {
  int n = 0;
  for (const auto& entry : fs::directory_iterator(tessera::testing::conformance_dir() / "zagg" / "configs")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const Json mine = parse(tessera::testing::read_file_text(entry.path()), entry.path().string());
    EXPECT_EQ(mine, pyyaml(entry.path()));
    ++n;
  }
  EXPECT_GE(n, 8);
}

TEST(Yaml, ScalarsResolveAsYaml11) {
  const Json doc = parse(
      "a: ~\nb:\nc: Yes\nd: off\ne: 010\nf: 0x1F\ng: 1_000\nh: 1.5\ni: 1e5\nj: .inf\nk: -.INF\nl: '12'\nm: \"true\"\n"
      "n: -9223372036854775808\no: !!str 7\np: !!float 3\nq: [1, two, 3.0]\nr: {x: 1}\n1: key\n",
      "t.yaml");
  EXPECT_TRUE(doc["a"].is_null());
  EXPECT_TRUE(doc["b"].is_null());
  EXPECT_EQ(doc["c"], true);
  EXPECT_EQ(doc["d"], false);
  EXPECT_EQ(doc["e"], 8);  // YAML 1.1 octal
  EXPECT_EQ(doc["f"], 31);
  EXPECT_EQ(doc["g"], 1000);
  EXPECT_EQ(doc["h"], 1.5);
  EXPECT_EQ(doc["i"], "1e5");  // PyYAML's floats need a '.'
  EXPECT_TRUE(std::isinf(doc["j"].get<double>()) && doc["j"].get<double>() > 0);
  EXPECT_TRUE(std::isinf(doc["k"].get<double>()) && doc["k"].get<double>() < 0);
  EXPECT_EQ(doc["l"], "12");
  EXPECT_EQ(doc["m"], "true");
  EXPECT_EQ(doc["n"], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(doc["o"], "7");
  EXPECT_EQ(doc["p"], 3.0);
  EXPECT_EQ(doc["q"], Json::parse(R"([1, "two", 3.0])"));
  EXPECT_EQ(doc["r"], Json::parse(R"({"x": 1})"));
  EXPECT_EQ(doc["1"], "key");
  EXPECT_TRUE(parse("", "empty.yaml").is_null());
  EXPECT_EQ(parse("base: &b {x: 1}\nuse: *b\n", "t.yaml")["use"], Json::parse(R"({"x": 1})"));
}

std::string error_of(const std::string& text, const Limits& limits = {}) {
  try {
    (void)parse(text, "config.yaml", limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Yaml, MalformedAndHostileDocumentsAreErrors) {
  EXPECT_EQ(error_of("a: 1\na: 2\n"), "config.yaml: line 2, column 1: duplicate key 'a'");
  EXPECT_NE(error_of("a: [1, 2\n").find("config.yaml: line "), std::string::npos);
  EXPECT_EQ(error_of("a: !!python/object:os.system x\n"),
            "config.yaml: line 1, column 4: unsupported tag tag:yaml.org,2002:python/object:os.system");
  EXPECT_EQ(error_of("a: 1\n---\nb: 2\n"), "config.yaml: line 2, column 1: more than one document");
  EXPECT_NE(error_of("a: 99999999999999999999\n").find("outside the 64-bit range"), std::string::npos);
  EXPECT_NE(error_of("a: *nothing\n").find("names no anchor"), std::string::npos);
  EXPECT_NE(error_of(std::string(1000, '[') + std::string(1000, ']')).find("nested deeper than 256"),
            std::string::npos);
  // A billion laughs: nine levels of ten aliases each would expand to 10^9 nodes.
  std::string laughs = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    laughs += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) laughs += std::string(i ? ", *" : "*") + static_cast<char>(c - 1);
    laughs += "]\n";
  }
  EXPECT_NE(error_of(laughs).find("more than 1000000 nodes"), std::string::npos);
}

}  // namespace
}  // namespace tessera::codec::yaml
