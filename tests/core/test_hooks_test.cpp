// The test hooks (core/test_hooks.hpp): inert unless armed, a trace lists every pass, a kill
// point ends the process with SIGKILL on exactly the n-th pass, a pause point holds the thread
// that reaches it until the release file appears, and malformed settings are refused.
#include "tessera/core/test_hooks.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

const char* const kSettings[] = {"TESSERA_TEST_KILL_AT", "TESSERA_TEST_PAUSE_AT", "TESSERA_TEST_PAUSE_DIR",
                                 "TESSERA_TEST_TRACE"};

// Sets the given variables (and clears the other hook settings) for one scope.
class Armed {
 public:
  explicit Armed(std::initializer_list<std::pair<const char*, std::string>> settings) {
    for (const char* name : kSettings) ::unsetenv(name);
    for (const auto& [name, value] : settings) ::setenv(name, value.c_str(), 1);
    test_hooks::reload();
  }
  ~Armed() {
    for (const char* name : kSettings) ::unsetenv(name);
    test_hooks::reload();
  }
};

TEST(TestHooks, UnarmedPointsDoNothing) {
  testing::TempDir dir;
  Armed none({});
  for (int i = 0; i < 1000; ++i) test_hooks::point("core.test");
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(TestHooks, TraceListsEveryPass) {
  testing::TempDir dir;
  {
    Armed trace({{"TESSERA_TEST_TRACE", (dir / "trace").string()}});
    for (int i = 0; i < 3; ++i) test_hooks::point("core.a");
    test_hooks::point("core.b");
  }
  test_hooks::point("core.a");  // disarmed again
  EXPECT_EQ(testing::read_file_text(dir / "trace"), "core.a\ncore.a\ncore.a\ncore.b\n");
  const auto passes = testing::read_trace(dir / "trace");
  EXPECT_EQ(passes.at("core.a"), 3u);
  EXPECT_EQ(passes.at("core.b"), 1u);
}

TEST(TestHooks, KillAtTheNthPass) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    ::setenv("TESSERA_TEST_KILL_AT", "core.kill:3", 1);
    test_hooks::reload();
    for (char pass = '1'; pass <= '5'; ++pass) {
      test_hooks::point("core.other");
      if (::write(fds[1], &pass, 1) != 1) ::_exit(2);
      test_hooks::point("core.kill");
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string passes;
  char c;
  while (::read(fds[0], &c, 1) == 1) passes += c;
  ::close(fds[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(passes, "123");  // killed on the third pass of core.kill, not before or after
}

TEST(TestHooks, PauseHoldsTheThreadUntilReleased) {
  testing::TempDir dir;
  Armed pause({{"TESSERA_TEST_PAUSE_AT", "core.pause:2"}, {"TESSERA_TEST_PAUSE_DIR", dir.path().string()}});
  std::atomic<int> passed{0};
  std::thread worker([&] {
    for (int i = 0; i < 3; ++i) {
      test_hooks::point("core.pause");
      ++passed;
    }
  });
  ASSERT_TRUE(testing::wait_until([&] { return fs::exists(dir / "core.pause.reached"); }, "the pause point"));
  EXPECT_EQ(passed.load(), 1);  // held in its second pass
  testing::write_file_text(dir / "core.pause.release", "");
  worker.join();
  EXPECT_EQ(passed.load(), 3);
}

TEST(TestHooks, MalformedSettingsAreRefused) {
  for (const char* bad : {"core.x", "core.x:0", ":3", "core.x:three", "core.x:-1"}) {
    ::setenv("TESSERA_TEST_KILL_AT", bad, 1);
    EXPECT_THROW(test_hooks::reload(), UsageError) << bad;
  }
  ::unsetenv("TESSERA_TEST_KILL_AT");
  ::setenv("TESSERA_TEST_PAUSE_AT", "core.x:1", 1);
  EXPECT_THROW(test_hooks::reload(), UsageError);
  ::unsetenv("TESSERA_TEST_PAUSE_AT");
  test_hooks::reload();
}

}  // namespace
}  // namespace tessera
