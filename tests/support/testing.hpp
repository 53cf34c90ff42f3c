// Helpers shared by every test suite: where the conformance data lives, scratch directories,
// running child processes (the tessera CLI, /usr/bin/python3 as an independent reader, the zstd
// CLI) with their output captured, and whole-file reads and writes.
//
// Test files should name GoogleTest's namespace as `::testing` when they also open
// `namespace tessera`, since `testing` there resolves to this namespace.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tessera/io/byte_source.hpp"

namespace tessera::testing {

// The conformance data: $TESSERA_CONFORMANCE_DIR when set, else the copy vendored in the
// repository (tests/data/conformance, configured at build time).
std::filesystem::path conformance_dir();

// The repository root the tests were built from (fuzz seeds, docs, scripts).
std::filesystem::path source_dir();

// A file of the `.tet` conformance data: conformance_dir() / "tetration" / relative.
std::filesystem::path tet_fixture(const std::string& relative);

// The bytes of a vector of trivially copyable values (test data for writers and decoders).
template <typename T>
std::vector<std::byte> bytes_of(const std::vector<T>& values) {
  std::vector<std::byte> out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.data(), out.size());
  return out;
}

// A fresh, uniquely named directory under $TMPDIR (or /tmp), removed with everything in it when
// the object is destroyed.
class TempDir {
 public:
  explicit TempDir(std::string_view prefix = "tessera-test");
  ~TempDir();
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  // path() / relative, for brevity at call sites.
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }

 private:
  void remove() noexcept;
  std::filesystem::path path_;
};

struct RunResult {
  int rc = -1;      // exit status, or 128 + signal number when the child was killed by a signal
  std::string out;  // everything the child wrote to stdout
  std::string err;  // everything the child wrote to stderr
  // The child's peak resident set size (ru_maxrss of that process alone). It includes the
  // high-water mark of this process at the spawn (posix_spawn shares its memory until exec):
  // tests that bound it keep this process small (see run_in_child).
  long peak_rss_kib = 0;
};

struct RunOptions {
  // Every member has a default initializer so designated initializers may name any subset
  // (`{.stdin_data = bytes}`) without -Wmissing-field-initializers.
  std::filesystem::path cwd{};                             // empty: the current directory
  std::vector<std::pair<std::string, std::string>> env{};  // added to / overriding the environment
  std::string stdin_data{};                                // empty: the child sees stdin at EOF
};

// Runs argv[0] (looked up on PATH when it has no '/') with the given arguments and waits for it.
// stdout and stderr are captured separately; stdin is a pipe carrying `stdin_data` and then EOF.
// Throws std::system_error when the program cannot be started.
RunResult run_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// The tessera CLI built alongside the tests.
std::string cli_path();

// Runs the tessera CLI built alongside the tests.
RunResult run_cli(const std::vector<std::string>& args, const RunOptions& options = {});

// What a CLI run's peak RSS adds to the CLI's own start-up footprint (`tessera --version`,
// measured once per test process), in KiB; 0 when below it. Memory bounds are asserted on this,
// not on the absolute peak, because the build decides the footprint (a sanitized binary maps
// over 100 MB before doing anything).
long rss_above_idle_cli_kib(const RunResult& run);

// Starts argv[0] with stdin, stdout and stderr on /dev/null and returns at once with its pid
// (for tests that stop, kill or race the child); `wait_process` collects it.
pid_t start_process(const std::vector<std::string>& argv, const RunOptions& options = {});

// Waits for a child of start_process: its exit status, or 128 + signal number.
int wait_process(pid_t pid);

// Runs `fn` in a forked child and waits for it: rc 0 when it returned, 1 when it threw (`err`
// holds the exception's type kind and what(): "FormatError: …", "LimitError: …", "std: …"), or
// 128 + signal; `peak_rss_kib` is the child's own peak resident set size. For tests that bound
// the memory one library call takes. The child leaves with _exit, running no destructors.
RunResult run_in_child(const std::function<void()>& fn);

// A valid zstd frame decoding to `prefix` followed by `zeros` zero bytes: the prefix as a raw
// block, the zeros as RLE blocks of 128 KiB (4 bytes each), a 1 MiB window. Gigabytes of content
// in kilobytes, cheap to stream: compression bombs, or real data that is simply large. With
// `declare_size` false the header omits the content size.
std::vector<std::byte> zstd_zeros_frame(std::span<const std::byte> prefix, std::uint64_t zeros,
                                        bool declare_size = true);

// Checks `condition` every millisecond until it holds. Fails the test (ADD_FAILURE naming `what`)
// and returns false after 60 s: a bound for a run that is stuck, never a measurement — nothing
// may depend on how long the wait took.
bool wait_until(const std::function<bool()>& condition, const std::string& what);

// A TESSERA_TEST_TRACE file (one test point name per line) as point name -> number of passes;
// empty when the file does not exist.
std::map<std::string, std::uint64_t> read_trace(const std::filesystem::path& path);

// Whether `/usr/bin/python3 -c 'import numpy'` succeeds (checked once per process).
bool have_python_numpy();

// Runs `/usr/bin/python3 -c code args...`; inside the script the arguments are sys.argv[1:].
RunResult run_python(const std::string& code, const std::vector<std::string>& args = {},
                     const RunOptions& options = {});

// Whole-file helpers; they throw std::runtime_error naming the path on failure.
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);
std::string read_file_text(const std::filesystem::path& path);
void write_file_bytes(const std::filesystem::path& path, std::span<const std::byte> bytes);
void write_file_text(const std::filesystem::path& path, std::string_view text);

// Sets an environment variable for one scope, then restores what was there (or unsets it).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace tessera::testing

namespace tessera::io {

// GoogleTest finds this by argument-dependent lookup, so parameterised tests over an OpenMode
// print "Mmap"/"Pread"/"MapAndRead" (and ::testing::PrintToStringParamName() names them so) instead of raw bytes.
inline void PrintTo(OpenMode mode, std::ostream* os) {
  *os << (mode == OpenMode::Mmap ? "Mmap" : mode == OpenMode::Pread ? "Pread" : "MapAndRead");
}

}  // namespace tessera::io
