// LoadedLibrary: a library opened by soname on first use, its symbols bound, and the errors that
// name the library, the purpose and the symbol when either is missing.
#include "tessera/core/loaded_library.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "tessera/core/error.hpp"

namespace {

using tessera::LoadedLibrary;
using tessera::UnsupportedError;

TEST(LoadedLibrary, BindsAFunctionOfTheLoadedLibrary) {
  const LoadedLibrary zlib("libz.so.1", "testing");
  EXPECT_EQ(zlib.soname(), "libz.so.1");
  decltype(&::zlibVersion) version = nullptr;
  zlib.bind(version, "zlibVersion");
  ASSERT_NE(version, nullptr);
  // The same library instance the process linked: the same function, the same text.
  EXPECT_EQ(version, &::zlibVersion);
  EXPECT_STREQ(version(), ::zlibVersion());
}

TEST(LoadedLibrary, AMissingLibraryIsAnErrorNamingItAndThePurpose) {
  try {
    const LoadedLibrary missing("libtessera-no-such-library.so.7", "reading test files");
    FAIL() << "loaded a library that does not exist";
  } catch (const UnsupportedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("reading test files needs the shared library libtessera-no-such-library.so.7"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("cannot open shared object file"), std::string::npos) << what;
    EXPECT_EQ(e.structure(), "libtessera-no-such-library.so.7");
  }
}

TEST(LoadedLibrary, AMissingSymbolIsAnErrorNamingItAndTheLibrary) {
  const LoadedLibrary zlib("libz.so.1", "testing");
  try {
    (void)zlib.symbol("tessera_no_such_symbol");
    FAIL() << "found a symbol that does not exist";
  } catch (const UnsupportedError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the shared library libz.so.1 has no symbol tessera_no_such_symbol"), std::string::npos)
        << what;
    EXPECT_NE(what.find("not the version this build of tessera was made against"), std::string::npos) << what;
  }
  // A failed lookup leaves the library usable.
  EXPECT_NE(zlib.symbol("zlibVersion"), nullptr);
}

}  // namespace
