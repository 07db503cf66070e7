// The recording database without BPF or root: --out checks, temp names, a full database
// (SQLite's page limit standing in for a full disk) during a recording, a recorder killed
// mid-recording and its database recovered into a bundle.
#include "recorder/recording_db.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "recorder/event_loop.h"
#include "rscore/bundle.h"
#include "rscore/zstd_file.h"

namespace rs::rec {
namespace {

namespace fs = std::filesystem;

// As rankscope-record does, before any database is opened.
const bool kWatching = WatchSqliteFullErrors().ok();

class RecordingDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rs_recdb.XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  std::string dir_;
};

TEST(RecordingDbNames, TempNamesParseBackToBundleAndPid) {
  auto p = ParseTempName(".node3.rsb.rec-4242-Ab12Cd.db");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, "node3.rsb");
  EXPECT_EQ(p->second, 4242);
  auto dotted = ParseTempName(".a.rec-1.rsb.rec-7-xxxxxx.db");  // the last marker counts
  ASSERT_TRUE(dotted.has_value());
  EXPECT_EQ(dotted->first, "a.rec-1.rsb");
  EXPECT_EQ(dotted->second, 7);
  for (const char* bad : {"node3.rsb", ".node3.rsb.rec-4242-Ab12Cd.db-journal",
                          ".node3.rsb.rec-42x-Ab12Cd.db", ".node3.rsb.rec-4242-Ab12.db",
                          ".rec-4242-Ab12Cd.db", ".n.rec--Ab12Cd.db", ".n.db.Ab12Cd"}) {
    EXPECT_FALSE(ParseTempName(bad).has_value()) << bad;
  }
}

TEST_F(RecordingDbTest, OutPathChecks) {
  const std::string out = dir_ + "/n.rsb";
  bool usage = true;
  EXPECT_TRUE(CheckOutPath(out, false, &usage).ok());
  EXPECT_FALSE(usage);
  std::ofstream(out) << "precious";
  auto refused = CheckOutPath(out, false, &usage);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(usage);
  EXPECT_NE(refused.error().message().find("--force"), std::string::npos);
  EXPECT_TRUE(CheckOutPath(out, true, &usage).ok());
  auto missing = CheckOutPath(dir_ + "/no/such/n.rsb", true, &usage);
  ASSERT_FALSE(missing.ok());
  EXPECT_FALSE(usage);
  EXPECT_NE(missing.error().message().find("does not exist"), std::string::npos);
  auto is_dir = CheckOutPath(dir_, true, &usage);
  ASSERT_FALSE(is_dir.ok());
  EXPECT_NE(is_dir.error().message().find("is a directory"), std::string::npos);
  // '-' is no file name here: a usage error, even with --force.
  auto dash = CheckOutPath("-", true, &usage);
  ASSERT_FALSE(dash.ok());
  EXPECT_TRUE(usage);
  EXPECT_NE(dash.error().message().find("a bundle is a file"), std::string::npos);
}

TEST(RecordingDbNames, WorkingDirectoriesAndPartialsParse) {
  auto p = ParseTempName(".node3.rsb.rec-4242-Ab12Cd");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->first, "node3.rsb");
  EXPECT_EQ(p->second, 4242);
  EXPECT_EQ(ParsePartialName(".node3.rsb.partial-77-xY12zz"), std::optional<pid_t>(77));
  for (const char* bad : {"node3.rsb.partial", ".n.partial-x-abcdef", ".n.partial-7-abc"}) {
    EXPECT_FALSE(ParsePartialName(bad).has_value()) << bad;
  }
  EXPECT_EQ(WorkDirOf("/d/.n.rsb.rec-1-abcdef/recording.db"), "/d/.n.rsb.rec-1-abcdef");
  EXPECT_EQ(WorkDirOf("/d/recording.db"), "");
  EXPECT_EQ(WorkDirOf("/d/.n.rsb.rec-1-abcdef/other.db"), "");
}

TEST_F(RecordingDbTest, TempDatabaseAndReserveAreInAPrivateDirectoryNamedAfterTheBundle) {
  {
    auto w = RecordingDb::Create(dir_ + "/n.rsb");
    ASSERT_TRUE(w.ok()) << w.error().message();
    const std::string work = fs::path(w->temp_path()).parent_path();
    EXPECT_EQ(fs::path(w->temp_path()).filename(), "recording.db");
    auto parsed = ParseTempName(fs::path(work).filename());
    ASSERT_TRUE(parsed.has_value()) << w->temp_path();
    EXPECT_EQ(parsed->first, "n.rsb");
    EXPECT_EQ(parsed->second, getpid());
    struct stat st {};
    ASSERT_EQ(stat(work.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u) << "nobody else may add a file beside the database";
    ASSERT_EQ(stat(w->temp_path().c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_GT(w->reserve_bytes(), 0u);
    EXPECT_TRUE(fs::exists(w->temp_path() + ".reserve"));
    EXPECT_TRUE(FindLeftBehind(dir_).empty()) << "this process's own database is not left behind";
    auto journal = w->db().QueryText("PRAGMA journal_mode");
    ASSERT_TRUE(journal.ok());
    EXPECT_EQ(journal.value().value_or(""), "truncate");
    EXPECT_EQ(RecoverCommand(w->temp_path()), "rankscope-record --recover " + work);
  }
  EXPECT_TRUE(Files().empty()) << "the working directory goes with its database";
}

// The attack on a bundle written into a directory others can write (fs.protected_symlinks
// 0): links planted where the recorder's files go, to a file the planter cannot write.
TEST_F(RecordingDbTest, PlantedLinksBesideTheBundleAreNeverWrittenThrough) {
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "precious";
  const std::string out = dir_ + "/n.rsb";
  ASSERT_EQ(symlink(victim.c_str(), (out + ".partial").c_str()), 0);  // an earlier name
  ASSERT_EQ(symlink(victim.c_str(), out.c_str()), 0);                 // the bundle's own
  {
    auto w = RecordingDb::Create(out, {.force = true});
    ASSERT_TRUE(w.ok()) << w.error().message();
    ASSERT_TRUE(w->SetMetadata("node", "n").ok());
    auto done = w->Finalize();
    ASSERT_TRUE(done.ok()) << done.error().message();
  }
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  EXPECT_FALSE(fs::is_symlink(out)) << "--force replaced the link, not its target";
  EXPECT_TRUE(rs::HasZstdMagic(out));
  struct stat st {};
  ASSERT_EQ(stat(victim.c_str(), &st), 0);
  EXPECT_NE(st.st_mode & 0777, 0600u) << "the victim was not chmod-ed either";
}

TEST_F(RecordingDbTest, RecoverTakesOnlyTheRecordersOwnFiles) {
  std::string work;
  {
    auto w = RecordingDb::Create(dir_ + "/n.rsb");
    ASSERT_TRUE(w.ok());
    w->Keep();
    work = fs::path(w->temp_path()).parent_path();
  }
  const std::string db = work + "/recording.db";
  ASSERT_TRUE(RecoverableDb(work).ok());
  EXPECT_EQ(*RecoverableDb(work + "/"), db);
  // A journal planted as a link, or a second name of another file, is refused.
  unlink((db + "-journal").c_str());
  ASSERT_EQ(symlink("/etc/passwd", (db + "-journal").c_str()), 0);
  auto linked = RecoverableDb(work);
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message().find("a symbolic link"), std::string::npos);
  unlink((db + "-journal").c_str());
  ASSERT_EQ(link(db.c_str(), (dir_ + "/second-name").c_str()), 0);
  auto hard = RecoverableDb(work);
  ASSERT_FALSE(hard.ok());
  EXPECT_NE(hard.error().message().find("with 2 links"), std::string::npos);
  unlink((dir_ + "/second-name").c_str());
  // A working directory others may write to is not the recorder's.
  chmod(work.c_str(), 0777);
  auto open_dir = RecoverableDb(work);
  ASSERT_FALSE(open_dir.ok());
  EXPECT_NE(open_dir.error().message().find("with mode 777"), std::string::npos);
  chmod(work.c_str(), 0700);
  ASSERT_EQ(symlink(work.c_str(), (dir_ + "/to-work").c_str()), 0);
  EXPECT_FALSE(RecoverableDb(dir_ + "/to-work").ok());
}

// Writes `rows_per_tick` process_events rows per Tick. At tick `fill_at` the database stops
// growing (max_page_count = its size: a full disk); Finish lifts the limit again, as the
// released reserve gives the finishing writes room.
class FillingProbe : public Probe {
 public:
  FillingProbe(int rows_per_tick, int fill_at) : rows_per_tick_(rows_per_tick), fill_at_(fill_at) {}
  std::string_view source() const override { return "filler"; }
  rs::Result<void> Start(RecorderContext& ctx) override {
    ASSIGN_OR_RETURN(insert_, ctx.db->Prepare("INSERT INTO process_events(id, node, timestamp_ns, "
                                              "event, pid, comm) VALUES (?, ?, ?, 'exec', ?, ?)"));
    return rs::Ok();
  }
  void Tick(RecorderContext& ctx) override {
    if (++ticks_ == fill_at_) {
      auto pages = ctx.db->QueryInt("PRAGMA page_count");
      ASSERT_TRUE(pages.ok());
      ASSERT_TRUE(ctx.db->Exec("PRAGMA max_page_count = " + std::to_string(*pages)).ok());
    }
    for (int i = 0; i < rows_per_tick_; ++i) {
      auto r = insert_.Bind(1, ctx.ids->Next())
                   .Bind(2, ctx.node)
                   .Bind(3, ctx.clock->Convert(1))
                   .Bind(4, ticks_)
                   .Bind(5, std::string(200, 'x'))
                   .Run();
      if (r.ok()) {
        ++events_;
      } else {
        ++failed_;
      }
    }
  }
  rs::Result<void> Finish(RecorderContext& ctx) override {
    return ctx.db->Exec("PRAGMA max_page_count = 4294967294");
  }
  std::string method() const override { return "fake"; }
  uint64_t events() const override { return events_; }
  uint64_t drops() const override { return failed_; }

 private:
  int rows_per_tick_, fill_at_;
  int ticks_ = 0;
  rs::Statement insert_;
  uint64_t events_ = 0, failed_ = 0;
};

TEST_F(RecordingDbTest, FullDatabaseStopsWritingAndKeepsWhatWasCommitted) {
  ASSERT_TRUE(kWatching) << "SQLite was initialized before the error log could be set";
  RecorderOptions opts;
  opts.out = dir_ + "/full.rsb";
  opts.duration_ns = 1'200'000'000;
  auto writer = RecordingDb::Create(opts.out);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  std::vector<std::unique_ptr<Probe>> probes;
  auto owned = std::make_unique<FillingProbe>(300, 6);
  FillingProbe* probe = owned.get();
  probes.push_back(std::move(owned));
  LoopConfig cfg;
  cfg.tick_period_ns = 20'000'000;
  cfg.poll_timeout_ms = 5;
  cfg.commit_period_ns = 30'000'000;
  auto loop = std::make_unique<EventLoop>(opts, rs::NodeName{"fullnode", "flag"},
                                          std::move(*writer), std::move(probes), cfg);
  testing::internal::CaptureStderr();
  auto summary = loop->Run();
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_TRUE(summary.ok()) << summary.error().message() << "\n" << err;
  EXPECT_EQ(summary->unwritten_reason, "no_space");
  EXPECT_GT(summary->unwritten, 0u);
  EXPECT_GT(summary->writing_stopped_ns, summary->start_ns);
  // One line says it, naming the file and the free space.
  EXPECT_NE(err.find(loop->writer().temp_path() + ": disk full ("), std::string::npos) << err;
  EXPECT_NE(err.find(" free): stopped writing events"), std::string::npos) << err;
  size_t lines = 0;
  for (size_t at = err.find("disk full"); at != std::string::npos;
       at = err.find("disk full", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 1u) << err;

  auto opened = rs::OpenRankscopeFile(opts.out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  rs::Db& db = opened->db();
  const int64_t rows = *db.QueryInt("SELECT COUNT(*) FROM process_events");
  const int64_t no_space = *db.QueryInt(
      "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'filler_drops_no_space'");
  EXPECT_GE(rows, 300 * 4) << "the batches committed before the database filled";
  EXPECT_GT(no_space, 0);
  EXPECT_EQ(static_cast<uint64_t>(no_space), summary->unwritten);
  // Every row the probe wrote is either in the bundle or counted as dropped for lack of space.
  EXPECT_EQ(static_cast<uint64_t>(rows + no_space), probe->events());
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'filler'"), rows);
  EXPECT_EQ(*db.QueryInt("SELECT drops FROM sources WHERE source = 'filler'"),
            no_space + static_cast<int64_t>(probe->drops()));
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'writing_stopped_reason' "
                         "AND value = 'no_space'"),
            1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'end'"), 1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND value = "
                         "'duration'"),
            1);
  loop.reset();
  EXPECT_EQ(Files(), std::vector<std::string>{"full.rsb"}) << "no temporary file or reserve";
}

// Ticks write one row each; used by a child process that is killed.
class TickProbe : public Probe {
 public:
  std::string_view source() const override { return "ticker"; }
  rs::Result<void> Start(RecorderContext& ctx) override {
    ASSIGN_OR_RETURN(insert_, ctx.db->Prepare("INSERT INTO process_events(id, node, timestamp_ns, "
                                              "event, pid) VALUES (?, ?, ?, 'exec', ?)"));
    return rs::Ok();
  }
  void Tick(RecorderContext& ctx) override {
    for (int i = 0; i < 50; ++i) {
      if (insert_.Bind(1, ctx.ids->Next())
              .Bind(2, ctx.node)
              .Bind(3, ctx.clock->Convert(rs::MonotonicNowNs()))
              .Bind(4, 1)
              .Run()
              .ok()) {
        ++events_;
      }
    }
  }
  rs::Result<void> Finish(RecorderContext&) override { return rs::Ok(); }
  std::string method() const override { return "fake"; }
  uint64_t events() const override { return events_; }
  uint64_t drops() const override { return 0; }

 private:
  rs::Statement insert_;
  uint64_t events_ = 0;
};

TEST_F(RecordingDbTest, KilledRecorderLeavesADatabaseThatRecoversIntoABundle) {
  const std::string out = dir_ + "/killed.rsb";
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RecorderOptions opts;
    opts.out = out;
    auto writer = RecordingDb::Create(opts.out);
    if (!writer.ok()) _exit(3);
    std::vector<std::unique_ptr<Probe>> probes;
    probes.push_back(std::make_unique<TickProbe>());
    LoopConfig cfg;
    cfg.tick_period_ns = 10'000'000;
    cfg.poll_timeout_ms = 5;
    EventLoop loop(opts, rs::NodeName{"killednode", "flag"}, std::move(*writer), std::move(probes),
                   cfg);
    (void)loop.Run();  // no duration: until killed
    _exit(4);
  }
  usleep(900'000);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << WEXITSTATUS(status);

  std::vector<LeftBehind> left = FindLeftBehind(dir_);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].pid, child);
  EXPECT_FALSE(fs::exists(left[0].path + ".reserve")) << "a dead recorder's reserve is freed";
  auto res = Recover(left[0].path, out, /*force=*/false);
  ASSERT_TRUE(res.ok()) << res.error().message();
  EXPECT_FALSE(res->finished);
  EXPECT_EQ(res->node, "killednode");
  EXPECT_GT(res->events, 0);
  EXPECT_GE(res->end_ns, res->start_ns);
  EXPECT_EQ(Files(), std::vector<std::string>{"killed.rsb"}) << "the database is gone";
  struct stat st {};
  ASSERT_EQ(stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  auto opened = rs::OpenRankscopeFile(out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  rs::Db& db = opened->db();
  const int64_t rows = *db.QueryInt("SELECT COUNT(*) FROM process_events");
  EXPECT_EQ(rows, res->events);
  // The sources row committed with the last batch counts exactly the rows of that batch.
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'ticker'"), rows);
  EXPECT_EQ(opened->info().end_ns, *db.QueryInt("SELECT MAX(timestamp_ns) FROM process_events"))
      << "the end is the last committed event";
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND value = "
                         "'recovered'"),
            1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'recovered_ns'"), 1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'start'"), 1);
}

TEST_F(RecordingDbTest, RecoverRefusesAnExistingBundleAndABundleAsInput) {
  const std::string out = dir_ + "/x.rsb";
  std::ofstream(out) << "precious";
  const std::string fake = dir_ + "/.x.rsb.rec-999999-abcdef.db";
  {
    auto w = RecordingDb::Create(dir_ + "/y.rsb");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->SetMetadata("recording_id", "0123456789abcdef0123456789abcdef").ok());
    ASSERT_TRUE(w->SetMetadata("node", "n").ok());
    ASSERT_TRUE(w->SetMetadata("start_ns", "1").ok());
    fs::copy_file(w->temp_path(), fake);
  }
  auto refused = Recover(fake, out, /*force=*/false);
  ASSERT_FALSE(refused.ok());
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
  EXPECT_TRUE(fs::exists(fake)) << "kept when no bundle was written";
  auto forced = Recover(fake, out, /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.error().message();
  EXPECT_TRUE(rs::OpenRankscopeFile(out).ok());
  auto again = Recover(out, dir_ + "/z.rsb", false);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("already a compressed bundle"), std::string::npos);
}

}  // namespace
}  // namespace rs::rec
