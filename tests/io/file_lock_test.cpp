// io::FileLock's refusal names the holder's pid, also when it comes in the moment between the
// holder's flock and the holder writing its pid.
#include "tessera/io/file_lock.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/testing.hpp"
#include "tessera/core/error.hpp"

namespace {

using tessera::io::FileLock;

TEST(FileLock, ARefusalNamesAHolderThatWritesItsPidJustAfterTakingTheLock) {
  tessera::testing::TempDir dir("file-lock");
  const std::string path = (dir.path() / "store.lock").string();
  // The holder: another open file description of the same file, locked with no pid written yet.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  const std::string pid = std::to_string(::getpid());
  std::thread late_writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(::pwrite(fd, pid.data(), pid.size(), 0), static_cast<ssize_t>(pid.size()));
  });
  try {
    FileLock refused(path, "test lock", FileLock::Wait::FailIfHeld);
    ADD_FAILURE() << "the lock was granted while held";
  } catch (const tessera::IoError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": in use by pid " + pid + " (test lock)");
  }
  late_writer.join();
  ::close(fd);
  // Held by no one now: granted, and it records this process.
  const FileLock granted(path, "test lock", FileLock::Wait::FailIfHeld);
}

TEST(FileLock, AHolderThatNeverNamesItselfIsAnotherProcess) {
  tessera::testing::TempDir dir("file-lock");
  const std::string path = (dir.path() / "shared.lock").string();
  const FileLock shared(path, "test lock", FileLock::Wait::FailIfHeld, {}, FileLock::Mode::Shared);
  EXPECT_THROW(
      {
        try {
          FileLock refused(path, "test lock", FileLock::Wait::FailIfHeld);
        } catch (const tessera::IoError& e) {
          EXPECT_EQ(std::string(e.what()), path + ": in use by another process (test lock)");
          throw;
        }
      },
      tessera::IoError);
}

}  // namespace
