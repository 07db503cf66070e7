// The ring directory's claim: a lock the kernel drops with its process, so that a pid file
// left behind names nobody, and `rankscope-record cut` signals only the recorder holding it.
#include "recorder/ring_dir_claim.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "recorder/test_temp_dir.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

constexpr int64_t kSec = 1'000'000'000;

using TempDirGuard = testing::TempDir;

// A child that sleeps, with SIGUSR1's default action (it ends the process).
pid_t SleepingChild() {
  const pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

bool StillRunning(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == 0;
}

void Reap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST(ProcessStartTime, Field22AfterANameWithSpacesAndParentheses) {
  TempDirGuard proc;
  ASSERT_EQ(system(("mkdir -p " + proc.path + "/42").c_str()), 0);
  std::ofstream(proc.path + "/42/stat")
      << "42 (a) b (c) S 1 42 42 0 -1 4194560 100 0 0 0 5 6 0 0 20 0 1 0 987654 1000 10\n";
  EXPECT_EQ(ProcessStartTime(42, proc.path), 987654u);
  EXPECT_FALSE(ProcessStartTime(43, proc.path).has_value());
  EXPECT_TRUE(ProcessStartTime(getpid()).has_value());
}

TEST(RingDirClaim, WritesPidAndStartTimeUnderALockAndReleases) {
  TempDirGuard dir;
  ASSERT_TRUE(ClaimRingDir(dir.path).ok());
  std::ifstream in(PidFilePath(dir.path));
  long long pid = 0;
  unsigned long long start = 0;
  in >> pid >> start;
  EXPECT_EQ(pid, getpid());
  EXPECT_EQ(start, ProcessStartTime(getpid()).value_or(1));
  EXPECT_FALSE(ClaimRingDir(dir.path).ok()) << "one claim per process";
  ReleaseRingDir(dir.path);
  EXPECT_NE(access(PidFilePath(dir.path).c_str(), F_OK), 0);
  ASSERT_TRUE(ClaimRingDir(dir.path).ok());
  ReleaseRingDir(dir.path);
}

// A pid file left behind whose pid now belongs to an unrelated process: not a reason to
// refuse a start, and never signalled.
TEST(RingDirClaim, AStalePidOfAnUnrelatedProcessIsNeitherBelievedNorSignalled) {
  TempDirGuard dir;
  const pid_t other = SleepingChild();
  ASSERT_GT(other, 0);
  std::ofstream(PidFilePath(dir.path))
      << other << " " << ProcessStartTime(other).value_or(0) << "\n";
  auto cut = RequestCut(dir.path, kSec);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message().find("no recorder holds it"), std::string::npos)
      << cut.error().message();
  usleep(100'000);
  EXPECT_TRUE(StillRunning(other)) << "SIGUSR1 would have ended it";
  EXPECT_TRUE(ClaimRingDir(dir.path).ok()) << "the file names a live process, but no recorder";
  ReleaseRingDir(dir.path);
  Reap(other);
}

// The claim held by another process (a recorder): a second claim is refused naming it, and
// a cut request reaches it and returns the line it appends.
TEST(RingDirClaim, ACutRequestReachesTheProcessHoldingTheClaim) {
  TempDirGuard dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {
    static std::string g_dir;
    g_dir = dir.path;
    signal(SIGUSR1, [](int) { AppendCutLog(g_dir, g_dir + "/cuts/x/n1.rsb"); });
    const char ok = ClaimRingDir(dir.path).ok() ? 'y' : 'n';
    (void)!write(ready[1], &ok, 1);
    for (;;) pause();
  }
  close(ready[1]);
  char ok = 0;
  ASSERT_EQ(read(ready[0], &ok, 1), 1);
  close(ready[0]);
  ASSERT_EQ(ok, 'y');
  auto refused = ClaimRingDir(dir.path);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("recorder " + std::to_string(holder) + " records"),
            std::string::npos)
      << refused.error().message();
  auto cut = RequestCut(dir.path, 10 * kSec);
  ASSERT_TRUE(cut.ok()) << cut.error().message();
  EXPECT_EQ(*cut, dir.path + "/cuts/x/n1.rsb");
  Reap(holder);
  // Its lock went with it: the file stays, believed by nobody.
  auto after = RequestCut(dir.path, kSec);
  ASSERT_FALSE(after.ok());
  EXPECT_NE(after.error().message().find("no recorder holds it"), std::string::npos);
  EXPECT_TRUE(ClaimRingDir(dir.path).ok());
  ReleaseRingDir(dir.path);
}

}  // namespace
}  // namespace rs::rec
