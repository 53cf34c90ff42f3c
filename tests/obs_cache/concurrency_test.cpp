// Several processes (and threads, and a Python process) localizing the same columns at once (C3):
// the flock makes exactly one of them build each cache file, the others find it built, and all
// read the same values.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "obs_cache/obs_cache_support.hpp"
#include "tessera/core/error.hpp"
#include "tessera/core/test_hooks.hpp"

namespace tessera::cells {
namespace {

using obs_test::expect_take;
using obs_test::make_obs_dataset;
using obs_test::random_cells;

// The bytes of every taken column (values, validity, offsets), for comparing processes.
std::string serialize(const std::vector<ObsTakeColumn>& cols) {
  std::string out;
  for (const auto& c : cols) {
    out += c.name + '\0' + std::to_string(static_cast<int>(c.values.type)) + '\0';
    out.append(reinterpret_cast<const char*>(c.values.data.data()), c.values.data.size());
    out.append(reinterpret_cast<const char*>(c.values.validity.data()), c.values.validity.size());
    for (const auto o : c.values.offsets) out += std::to_string(o) + ',';
    for (const auto& cat : c.categories) out += cat + '\0';
  }
  return out;
}

// One child: waits on the barrier, localizes through its own CountingStore, takes, and writes
// "<fetched> <gets>\n" and the serialized values to `result`. Never returns.
[[noreturn]] void child(const obs_test::ObsDataset& d, const std::vector<std::string>& cols,
                        const std::vector<std::int64_t>& cells, int barrier, const std::string& result) {
  int rc = 0;
  try {
    char c;
    while (::read(barrier, &c, 1) < 0) {
    }
    auto inner = d.store();
    const auto counting = std::make_shared<io::CountingStore>(*inner);
    ObsStore store(counting, d.manifest, {.cache_dir = d.cache});
    counting->reset();
    const auto fetched = store.localize(cols, 2);
    const std::uint64_t gets = counting->gets();
    const auto values = store.take(cells, cols);
    std::ofstream out(result, std::ios::binary);
    out << fetched.size() << ' ' << gets << '\n' << serialize(values);
    if (!out) rc = 4;
  } catch (const std::exception& e) {
    std::ofstream(result + ".err") << e.what();
    rc = 3;
  }
  std::_Exit(rc);
}

TEST(ObsConcurrency, FourProcessesBuildEachFileOnce) {
  const auto d = make_obs_dataset(2000, 80, 4);
  const std::vector<std::string> cols = {"cell type", "age", "donor/id", "is_doublet"};
  const std::uint64_t n_tiles = d->manifest.n_tiles();
  const auto cells = random_cells(2000, 700, 42);
  // GETs of the footers alone.
  std::uint64_t footer_gets = 0;
  {
    auto inner = d->store();
    const auto counting = std::make_shared<io::CountingStore>(*inner);
    ObsStore probe(counting, d->manifest, {.cache_dir = d->cache + "/probe"});
    counting->reset();
    probe.column_nbytes();
    footer_gets = counting->gets();
  }
  constexpr int kProcesses = 4;
  for (int round = 0; round < 3; ++round) {
    std::filesystem::remove_all(d->cache);
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    std::vector<pid_t> pids;
    std::vector<std::string> results;
    for (int p = 0; p < kProcesses; ++p) {
      results.push_back((d->tmp / ("result" + std::to_string(p))).string());
      const pid_t pid = ::fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        ::close(fds[1]);
        child(*d, cols, cells, fds[0], results.back());
      }
      pids.push_back(pid);
    }
    ::close(fds[0]);
    ::close(fds[1]);  // all children start at once
    for (int p = 0; p < kProcesses; ++p) {
      int status = 0;
      ASSERT_EQ(::waitpid(pids[p], &status, 0), pids[p]);
      ASSERT_TRUE(WIFEXITED(status)) << "child " << p;
      std::string err;
      if (std::filesystem::exists(results[p] + ".err")) err = testing::read_file_text(results[p] + ".err");
      ASSERT_EQ(WEXITSTATUS(status), 0) << "child " << p << ": " << err;
    }
    std::uint64_t total_gets = 0, builders = 0;
    std::string first_values;
    for (int p = 0; p < kProcesses; ++p) {
      const std::string text = testing::read_file_text(results[p]);
      std::istringstream in(text);
      std::uint64_t fetched = 0, gets = 0;
      in >> fetched >> gets;
      const std::string values = text.substr(text.find('\n') + 1);
      EXPECT_TRUE(fetched == 0 || fetched == cols.size()) << "child " << p << " fetched " << fetched;
      builders += fetched == cols.size() ? 1 : 0;
      total_gets += gets;
      if (p == 0) first_values = values;
      else EXPECT_EQ(values, first_values) << "child " << p << " read other values";
    }
    EXPECT_EQ(builders, 1u) << "round " << round;
    EXPECT_EQ(total_gets, footer_gets + n_tiles * cols.size()) << "round " << round << ": more than one build";
    EXPECT_TRUE(obs_test::files_containing(d->cache, ".tmp").empty());
    // And the values are right.
    const auto store = d->open();
    const auto got = store->take(cells, cols);
    EXPECT_EQ(serialize(got), first_values);
    for (const auto& col : got) expect_take(*d, col, cells);
  }
}

// Threads of one process share one store: each file is still built once.
TEST(ObsConcurrency, ThreadsOfOneProcessShareTheBuild) {
  const auto d = make_obs_dataset(800, 50, 3);
  auto inner = d->store();
  const auto counting = std::make_shared<io::CountingStore>(*inner);
  ObsStore store(counting, d->manifest, {.cache_dir = d->cache});
  store.column_nbytes();
  counting->reset();
  const std::vector<std::string> cols = {"n_genes", "donor/id"};
  const auto cells = random_cells(800, 300, 8);
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(6);
  for (int i = 0; i < 6; ++i) threads.emplace_back([&, i] { outputs[i] = serialize(store.take(cells, cols)); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counting->gets(), d->manifest.n_tiles() * cols.size());
  for (int i = 1; i < 6; ++i) EXPECT_EQ(outputs[i], outputs[0]);
  for (const auto& col : store.take(cells, cols)) expect_take(*d, col, cells);
}

// Arms the library's test hooks in this process for one scope (see core/test_hooks.hpp).
class ScopedTestHooks {
 public:
  explicit ScopedTestHooks(const std::vector<std::pair<std::string, std::string>>& settings) : settings_(settings) {
    for (const auto& [name, value] : settings_) ::setenv(name.c_str(), value.c_str(), 1);
    test_hooks::reload();
  }
  ~ScopedTestHooks() {
    for (const auto& [name, value] : settings_) ::unsetenv(name.c_str());
    test_hooks::reload();
  }
  ScopedTestHooks(const ScopedTestHooks&) = delete;
  ScopedTestHooks& operator=(const ScopedTestHooks&) = delete;

 private:
  std::vector<std::pair<std::string, std::string>> settings_;
};

// The lock is a BSD flock, the one Python's fcntl.flock takes: while a Python process holds it,
// localize waits (POSIX record locks would not exclude each other). The waiting is shown without
// a clock: localize pauses at the test point it passes when its lock attempt finds the lock held
// (obs_cache.lock_busy), and nothing is built until the test has let the Python process go.
TEST(ObsConcurrency, WaitsForAPythonFlock) {
  if (testing::run_process({"/usr/bin/python3", "--version"}).rc != 0) GTEST_SKIP() << "no python3";
  const auto d = make_obs_dataset(300, 100, 2);
  const auto store = d->open();
  const std::string fp_dir = d->cache + "/" + d->manifest.obs_fingerprint;
  std::filesystem::create_directories(fp_dir);
  const auto hooks = d->tmp / "hooks";
  std::filesystem::create_directories(hooks);
  const std::string locked = (d->tmp / "locked").string(), released = (d->tmp / "released").string();
  const std::string go = (d->tmp / "go").string();  // a FIFO: the Python process holds the lock until it opens
  ASSERT_EQ(::mkfifo(go.c_str(), 0600), 0);
  const ScopedTestHooks armed(
      {{"TESSERA_TEST_PAUSE_AT", "obs_cache.lock_busy:1"}, {"TESSERA_TEST_PAUSE_DIR", hooks.string()}});
  std::thread holder([&] {
    testing::run_python(
        "import fcntl, sys\n"
        "f = open(sys.argv[1], 'a')\n"
        "fcntl.flock(f, fcntl.LOCK_EX)\n"
        "open(sys.argv[2], 'w').close()\n"
        "open(sys.argv[3]).read()\n"  // blocks until the test opens and closes the FIFO
        "open(sys.argv[4], 'w').close()\n",
        {fp_dir + "/.lock", locked, go, released});
  });
  const auto let_python_go = [&] {
    const int fd = ::open(go.c_str(), O_WRONLY);
    if (fd >= 0) ::close(fd);
  };
  if (!testing::wait_until([&] { return std::filesystem::exists(locked); }, "the Python process to take the flock")) {
    let_python_go();
    holder.join();
    return;
  }
  const std::vector<std::string> cols = {"age"};
  std::atomic<bool> done{false};
  std::vector<std::string> fetched;
  std::string error;
  std::thread localizer([&] {
    try {
      fetched = store->localize(cols);
    } catch (const std::exception& e) {
      error = e.what();
    }
    done = true;
  });
  const auto busy = hooks / "obs_cache.lock_busy.reached";
  testing::wait_until([&] { return std::filesystem::exists(busy) || done; }, "localize to reach the lock");
  EXPECT_TRUE(std::filesystem::exists(busy)) << "localize took the lock while the Python process held it";
  EXPECT_FALSE(done) << "localize finished while the Python process held the lock";
  EXPECT_TRUE(obs_test::files_containing(d->cache, ".arrow").empty()) << "a cache file was built under a held lock";
  let_python_go();
  testing::write_file_text(hooks / "obs_cache.lock_busy.release", "");
  localizer.join();
  holder.join();
  EXPECT_EQ(error, "");
  EXPECT_EQ(fetched, cols);
  EXPECT_TRUE(std::filesystem::exists(released));
  const auto cells = random_cells(300, 50, 1);
  for (const auto& col : store->take(cells, cols)) expect_take(*d, col, cells);
}

}  // namespace
}  // namespace tessera::cells
