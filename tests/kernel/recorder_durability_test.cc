// rankscope-record keeps what it recorded, as root with the real binary: killed with SIGKILL,
// its temporary database becomes a bundle with --recover (the other tools open it); a full
// file system (a small tmpfs) stops the writing, not the bundle; an existing --out is
// refused without --force.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "kernel_test.h"
#include "recorder_runner.h"
#include "rscore/bundle.h"
#include "rscore/sqlite.h"

namespace rs::rec::ktest {
namespace {

namespace fs = std::filesystem;

// A child that sleeps 20 us at a time for at most `max_s` seconds: traced with --pid, each
// sleep is an off-CPU interval (a sched_events row), thousands a second.
pid_t SpawnSleeper(int max_s) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  timespec start{}, now{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  const timespec nap{0, 20'000};
  do {
    nanosleep(&nap, nullptr);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - start.tv_sec < max_s);
  _exit(0);
}

// A tmpfs of `size` mounted on `dir` for the test's lifetime.
class Tmpfs {
 public:
  Tmpfs(const std::string& dir, const std::string& size) : dir_(dir) {
    mounted_ = Sh("mkdir -p " + dir + " && mount -t tmpfs -o size=" + size + ",mode=0755 " +
                  "rs_small " + dir) == 0;
  }
  ~Tmpfs() {
    if (mounted_) Sh("umount -l " + dir_);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string dir_;
  bool mounted_ = false;
};

// The recorders' working directories in `dir` (.BASE.rec-PID-XXXXXX, each holding
// recording.db).
std::vector<std::string> TempDbs(const std::string& dir) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename();
    if (name.rfind(".", 0) == 0 && name.find(".rec-") != std::string::npos && e.is_directory()) {
      found.push_back(e.path());
    }
  }
  return found;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int CountOf(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::string ToolPath(const char* env) {
  const char* p = std::getenv(env);
  return p ? p : "";
}

TEST(RecorderDurability, KilledRecorderIsRecoveredIntoABundleTheOtherToolsOpen) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string out = dir.File("k.rsb");
  pid_t sleeper = SpawnSleeper(30);
  auto p =
      RecorderProcess::Start({"--out", out, "--node", "kkill", "--pid", std::to_string(sleeper)});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  usleep(1'500'000);
  std::vector<std::string> dbs = TempDbs(dir.path());
  ASSERT_EQ(dbs.size(), 1u);
  const std::string temp = dbs[0];
  EXPECT_NE(temp.find(".k.rsb.rec-" + std::to_string(p->pid()) + "-"), std::string::npos) << temp;
  const std::string temp_db = temp + "/recording.db";
  // What a reader sees is committed: at least that much must come back.
  int64_t committed = 0;
  {
    auto db = rs::Db::Open(temp_db, rs::Db::Mode::kReadOnly);
    ASSERT_TRUE(db.ok()) << db.error().message();
    auto n = db->QueryInt("SELECT COUNT(*) FROM sched_events");
    ASSERT_TRUE(n.ok()) << n.error().message();
    committed = *n;
  }
  EXPECT_GT(committed, 100) << "the traced sleeper's off-CPU intervals, committed in batches";
  usleep(400'000);  // a few more commits
  EXPECT_EQ(p->Stop(SIGKILL), 128 + SIGKILL);
  Reap(sleeper);
  EXPECT_FALSE(fs::exists(out));
  ASSERT_TRUE(fs::exists(temp_db)) << "SIGKILL leaves the temporary database";

  // The next recorder in that directory names it and the command.
  RunResult next = RunRecorder({"--out", dir.File("next.rsb"), "--duration", "300ms"});
  ASSERT_EQ(next.exit_code, 0) << next.stderr_text;
  EXPECT_NE(next.stderr_text.find(temp + " ("), std::string::npos) << next.stderr_text;
  EXPECT_NE(next.stderr_text.find("left behind by recorder " + std::to_string(p->pid())),
            std::string::npos)
      << next.stderr_text;
  EXPECT_NE(next.stderr_text.find("rankscope-record --recover " + temp), std::string::npos)
      << next.stderr_text;

  RunResult rec = RunRecorder({"--recover", temp});
  ASSERT_EQ(rec.exit_code, 0) << rec.stderr_text;
  EXPECT_NE(rec.stderr_text.find("wrote " + out + ": node kkill, "), std::string::npos)
      << rec.stderr_text;
  EXPECT_NE(rec.stderr_text.find("sched_events "), std::string::npos) << rec.stderr_text;
  EXPECT_FALSE(fs::exists(temp)) << "removed once the bundle is written, with its directory";
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  rs::Db& db = opened->db();
  const int64_t rows = *db.QueryInt("SELECT COUNT(*) FROM sched_events");
  EXPECT_GE(rows, committed) << "every row committed before the kill";
  // The sources row committed with the last batch counts that batch's rows exactly.
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'sched'"), rows);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND value = "
                         "'recovered'"),
            1);
  const int64_t last_event = *db.QueryInt(
      "SELECT MAX(m) FROM (SELECT MAX(timestamp_ns) AS m FROM sched_events UNION ALL "
      "SELECT MAX(timestamp_ns) FROM process_events UNION ALL SELECT MAX(timestamp_ns) FROM "
      "block_events UNION ALL SELECT MAX(timestamp_ns) FROM tcp_events UNION ALL "
      "SELECT MAX(realtime_ns) FROM clock_refs)");
  EXPECT_EQ(opened->info().end_ns, last_event) << "the end is the last committed event";
  EXPECT_GE(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'periodic'"), 1);

  // The other tools open it.
  const std::string merge = ToolPath("RANKSCOPE_MERGE"), analyze = ToolPath("RANKSCOPE_ANALYZE");
  ASSERT_FALSE(merge.empty());
  ASSERT_FALSE(analyze.empty());
  const std::string merged = dir.File("m.rsdb");
  ASSERT_EQ(Sh(merge + " -o " + merged + " " + out + " 2>&1"), 0);
  auto m = rs::OpenRankscopeFile(merged);
  ASSERT_TRUE(m.ok()) << m.error().message();
  EXPECT_EQ(*m->db().QueryInt("SELECT COUNT(*) FROM sched_events"), rows);
  EXPECT_EQ(ShOut(analyze + " query " + out + " 'SELECT COUNT(*) AS n FROM sched_events' " +
                  "--format csv | tail -n 1"),
            std::to_string(rows));
}

// The recorder fills a 4 MiB tmpfs: it stops writing while the bundle still fits, and keeps
// recording (counting) until it is stopped.
TEST(RecorderDurability, FullFileSystemStopsTheWritingAndLeavesABundle) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  Tmpfs small(dir.File("small"), "4m");
  ASSERT_TRUE(small.mounted());
  const std::string out = dir.File("small/f.rsb");
  pid_t sleeper = SpawnSleeper(90);
  auto p =
      RecorderProcess::Start({"--out", out, "--node", "kfull", "--pid", std::to_string(sleeper)});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  const bool stopped = p->WaitFor("stopped writing events", 60'000);
  usleep(500'000);  // dropped events are counted meanwhile
  const int rc = p->Stop(SIGINT, 60'000);
  Reap(sleeper);
  const std::string err = p->stderr_text();
  ASSERT_TRUE(stopped) << err;
  ASSERT_EQ(rc, 0) << err;
  // One line says it, naming the temporary database and the free space.
  EXPECT_EQ(CountOf(err, "stopped writing events"), 1) << err;
  EXPECT_NE(err.find(dir.File("small/.f.rsb.rec-")), std::string::npos) << err;
  EXPECT_NE(err.find(" free): stopped writing events"), std::string::npos) << err;
  EXPECT_EQ(err.find("cannot store"), std::string::npos) << err;
  EXPECT_NE(err.find("for lack of disk space"), std::string::npos) << err;

  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message() << "\n" << err;
  rs::Db& db = opened->db();
  const int64_t rows = *db.QueryInt("SELECT COUNT(*) FROM sched_events");
  const int64_t no_space = *db.QueryInt(
      "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'sched_drops_no_space'");
  EXPECT_GT(rows, 1000);
  EXPECT_GT(no_space, 0);
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'sched'"), rows);
  EXPECT_GE(*db.QueryInt("SELECT drops FROM sources WHERE source = 'sched'"), no_space);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'writing_stopped_reason' "
                         "AND value = 'no_space'"),
            1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND value = "
                         "'SIGINT'"),
            1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'end'"), 1);
  EXPECT_TRUE(TempDbs(dir.File("small")).empty());
}

// An always-on recorder whose ring directory fills: one line says writing stopped, a cut
// made after it holds what was committed until then and says so, and the cut made before
// is untouched.
TEST(RecorderDurability, FullRingDirectoryKeepsCutting) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  Tmpfs small(dir.File("small"), "4m");
  ASSERT_TRUE(small.mounted());
  const std::string ring = dir.File("small/ring"), cuts = dir.File("cuts");
  pid_t sleeper = SpawnSleeper(90);
  auto p = RecorderProcess::Start({"--ring", "10m", "--ring-dir", ring, "--cut-dir", cuts, "--node",
                                   "kfull", "--pid", std::to_string(sleeper)});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  usleep(500'000);
  const std::string early = ShOut(RecorderPath() + " cut --ring-dir " + ring);
  ASSERT_FALSE(early.empty()) << p->stderr_text();
  const std::string early_bytes = ShOut("cksum < " + early);
  const bool stopped = p->WaitFor("stopped writing events", 60'000);
  ASSERT_TRUE(stopped) << p->stderr_text();
  // A later request joins the early one when it comes within 10 s of it.
  usleep(10'500'000);
  const std::string late = ShOut(RecorderPath() + " cut --ring-dir " + ring);
  const int rc = p->Stop(SIGINT, 60'000);
  Reap(sleeper);
  const std::string err = p->stderr_text();
  ASSERT_EQ(rc, 0) << err;
  EXPECT_EQ(CountOf(err, "stopped writing events"), 1) << err;
  ASSERT_FALSE(late.empty()) << err;
  ASSERT_NE(late, early);
  EXPECT_GT(*QueryBundleInt(late, "SELECT COUNT(*) FROM sched_events"), 1000) << err;
  EXPECT_EQ(*QueryBundleInt(late,
                            "SELECT COUNT(*) FROM metadata WHERE key = "
                            "'writing_stopped_reason' AND value = 'no_space'"),
            1);
  EXPECT_EQ(*QueryBundleInt(late, "SELECT events FROM sources WHERE source = 'sched'"),
            *QueryBundleInt(late, "SELECT COUNT(*) FROM sched_events"));
  EXPECT_EQ(ShOut("cksum < " + early), early_bytes) << "the earlier cut changed";
  EXPECT_GT(*QueryBundleInt(early, "SELECT COUNT(*) FROM sched_events"), 0);
}

// Another process takes the last free byte while the recorder writes: the write fails
// (ENOSPC), the batch is rolled back, the reserve held back at the start finishes the bundle.
TEST(RecorderDurability, SuddenlyFullFileSystemStillLeavesABundle) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  Tmpfs small(dir.File("small"), "4m");
  ASSERT_TRUE(small.mounted());
  const std::string out = dir.File("small/s.rsb");
  pid_t sleeper = SpawnSleeper(60);
  auto p =
      RecorderProcess::Start({"--out", out, "--node", "ksudden", "--pid", std::to_string(sleeper)});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  usleep(700'000);
  // Take every free byte. Not by asking for the free size first: the recorder writes on
  // meanwhile, so a size read a moment before can be gone when it is asked for (fallocate
  // then fails whole and fills nothing). dd writes until the file system refuses (ENOSPC,
  // its exit status 1); what it wrote is the test's precondition.
  const std::string filler = dir.File("small/filler");
  Sh("dd if=/dev/zero of=" + filler + " bs=4096 2>/dev/null");
  ASSERT_EQ(Sh("test -s " + filler), 0) << "nothing was written to " << filler;
  const bool stopped = p->WaitFor("stopped writing events", 30'000);
  usleep(300'000);
  const int rc = p->Stop(SIGTERM, 60'000);
  Reap(sleeper);
  const std::string err = p->stderr_text();
  ASSERT_TRUE(stopped) << err;
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(err.find(": disk full ("), std::string::npos) << err;
  EXPECT_EQ(CountOf(err, "stopped writing events"), 1) << err;
  EXPECT_EQ(err.find("cannot store"), std::string::npos) << err;
  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message() << "\n" << err;
  rs::Db& db = opened->db();
  const int64_t rows = *db.QueryInt("SELECT COUNT(*) FROM sched_events");
  EXPECT_GT(rows, 0);
  EXPECT_GT(*db.QueryInt(
                "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'sched_drops_no_space'"),
            0);
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'sched'"), rows);
}

TEST(RecorderDurability, ExistingOutIsRefusedWithoutForceAndReplacedWithIt) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  const std::string out = dir.File("e.rsb");
  ASSERT_EQ(Sh("printf precious > " + out + " && chmod 0644 " + out), 0);
  RunResult refused = RunRecorder({"--out", out, "--duration", "300ms"});
  EXPECT_EQ(refused.exit_code, 2) << refused.stderr_text;
  EXPECT_EQ(CountOf(refused.stderr_text, "\n"), 1) << refused.stderr_text;
  EXPECT_NE(refused.stderr_text.find(out + ": exists; add --force"), std::string::npos)
      << refused.stderr_text;
  EXPECT_EQ(refused.stderr_text.find("recording node"), std::string::npos);
  EXPECT_EQ(ReadFile(out), "precious");
  EXPECT_TRUE(TempDbs(dir.path()).empty());

  RunResult forced = RunRecorder({"--out", out, "--duration", "300ms", "--force"});
  ASSERT_EQ(forced.exit_code, 0) << forced.stderr_text;
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();

  // --recover refuses an existing bundle the same way.
  const std::string left = dir.File(".e.rsb.rec-999999-abcdef.db");
  ASSERT_EQ(Sh("printf x > " + left), 0);
  RunResult recover = RunRecorder({"--recover", left});
  EXPECT_EQ(recover.exit_code, 2) << recover.stderr_text;
  EXPECT_NE(recover.stderr_text.find("--force"), std::string::npos) << recover.stderr_text;
}

TEST(RecorderDurability, OutInAMissingDirectoryIsRefusedAtOnce) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  RunResult r = RunRecorder({"--out", dir.File("gone/x.rsb"), "--duration", "10m"}, 10'000);
  EXPECT_EQ(r.exit_code, 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("does not exist"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("recording node"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace rs::rec::ktest
