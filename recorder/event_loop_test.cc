// The event loop with fake probes (no BPF, no root): lifecycle order, fan-out of traced and
// exec'd pids, per-source counters in `sources`, clock references, metadata, finalize.
#include "recorder/event_loop.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "recorder/process_table.h"
#include "rscore/bundle.h"

namespace rs::rec {
namespace {

struct Calls {
  int start = 0, ticks = 0, finish = 0;
  std::vector<int> traced, execs;
};

// Writes one process_events row per Tick; optionally fails to start.
class FakeProbe : public Probe {
 public:
  FakeProbe(std::string name, Calls* calls, bool fail_start = false, bool report_exec = false)
      : name_(std::move(name)), calls_(calls), fail_(fail_start), report_exec_(report_exec) {}
  std::string_view source() const override { return name_; }
  rs::Result<void> Start(RecorderContext& ctx) override {
    ++calls_->start;
    if (fail_) return rs::Error(name_ + ": no such tracepoint (fake)");
    auto st = ctx.db->Prepare(
        "INSERT INTO process_events(id, node, timestamp_ns, event, pid) VALUES (?, ?, ?, "
        "'exec', ?)");
    if (!st.ok()) return st.error();
    insert_ = std::move(*st);
    return rs::Ok();
  }
  void Tick(RecorderContext& ctx) override {
    ++calls_->ticks;
    auto r = insert_.Bind(1, ctx.ids->Next())
                 .Bind(2, ctx.node)
                 .Bind(3, ctx.clock->Convert(1))
                 .Bind(4, 1)
                 .Run();
    if (r.ok()) ++events_;
    if (report_exec_ && calls_->ticks == 2) ctx.execs.push_back({4242, 1});
  }
  void OnProcessTraced(RecorderContext&, int pid) override { calls_->traced.push_back(pid); }
  void OnProcessExec(RecorderContext&, const ProcessExec& exec) override {
    calls_->execs.push_back(exec.pid);
  }
  rs::Result<void> Finish(RecorderContext&) override {
    ++calls_->finish;
    return rs::Ok();
  }
  std::string method() const override { return "fake"; }
  uint64_t events() const override { return events_; }
  uint64_t drops() const override { return 7; }

 private:
  std::string name_;
  Calls* calls_;
  bool fail_, report_exec_;
  rs::Statement insert_;
  uint64_t events_ = 0;
};

class EventLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rs_loop.XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(EventLoopTest, RecordsUntilDurationAndWritesEverything) {
  RecorderOptions opts;
  opts.out = dir_ + "/n.rsb";
  opts.duration_ns = 450'000'000;
  opts.pids = {getpid()};
  opts.simulate_clock_offset_ns = 123456789;
  auto writer = RecordingDb::Create(opts.out);
  ASSERT_TRUE(writer.ok());
  Calls a, b, c;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<FakeProbe>("alpha", &a, false, /*report_exec=*/true));
  probes.push_back(std::make_unique<FakeProbe>("broken", &b, /*fail_start=*/true));
  probes.push_back(std::make_unique<FakeProbe>("gamma", &c));
  LoopConfig cfg;
  cfg.tick_period_ns = 50'000'000;
  cfg.clock_ref_period_ns = 100'000'000;
  cfg.poll_timeout_ms = 10;
  EventLoop loop(opts, rs::NodeName{"loopnode", "flag"}, std::move(*writer), std::move(probes),
                 cfg);
  auto summary = loop.Run();
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->stop_reason, "duration");

  // Lifecycle: every probe started once; only started ones ticked and finished.
  EXPECT_EQ(a.start, 1);
  EXPECT_EQ(b.start, 1);
  EXPECT_EQ(b.ticks, 0);
  EXPECT_EQ(b.finish, 0);
  EXPECT_EQ(a.finish, 1);
  EXPECT_GE(a.ticks, 3);
  // --pid reached every started probe; the exec reported by one reached all of them.
  EXPECT_EQ(a.traced, std::vector<int>{getpid()});
  EXPECT_EQ(c.traced, std::vector<int>{getpid()});
  EXPECT_TRUE(b.traced.empty());
  EXPECT_EQ(a.execs, std::vector<int>{4242});
  EXPECT_EQ(c.execs, std::vector<int>{4242});

  auto opened = rs::OpenRankscopeFile(opts.out);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  rs::Db& db = opened->db();
  EXPECT_EQ(opened->info().node, "loopnode");
  EXPECT_EQ(opened->info().recording_id, summary->recording_id);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM process_events"),
            static_cast<int64_t>(a.ticks + c.ticks));
  EXPECT_EQ(*db.QueryInt("SELECT events FROM sources WHERE source = 'alpha'"), a.ticks);
  EXPECT_EQ(*db.QueryText("SELECT method FROM sources WHERE source = 'gamma'"), "fake");
  EXPECT_EQ(*db.QueryInt("SELECT drops FROM sources WHERE source = 'gamma'"), 7);
  EXPECT_EQ(*db.QueryText("SELECT method || ' ' || note FROM sources WHERE source = 'broken'"),
            "off broken: no such tracepoint (fake)");
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM processes WHERE pid = " + std::to_string(getpid())),
            1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'start'"), 1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'end'"), 1);
  EXPECT_GE(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'periodic'"), 2);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE seq = 0 AND kind = 'start'"), 1);
  // The simulated offset shifts the wall clock but is never written anywhere.
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE value LIKE '%123456789%'"), 0);
  for (const char* key :
       {"recording_id", "node", "node_source", "host", "kernel", "boot_id", "recorder_version",
        "start_ns", "end_ns", "scope", "cuda_launch_sample", "bpf_abi_version", "stop_reason"}) {
    EXPECT_EQ(*db.QueryInt(std::string("SELECT COUNT(*) FROM metadata WHERE key = '") + key +
                           "' AND value <> ''"),
              1)
        << key;
  }
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key = 'start_ns' AND "
                         "CAST(value AS INTEGER) = " +
                         std::to_string(summary->start_ns)),
            1);
  EXPECT_GE(summary->end_ns - summary->start_ns, 450'000'000);
}

TEST_F(EventLoopTest, StopRequestEndsRecording) {
  RecorderOptions opts;
  opts.out = dir_ + "/stop.rsb";
  auto writer = RecordingDb::Create(opts.out);
  ASSERT_TRUE(writer.ok());
  Calls a;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<FakeProbe>("alpha", &a));
  LoopConfig cfg;
  cfg.poll_timeout_ms = 10;
  EventLoop loop(opts, rs::NodeName{"n", "hostname"}, std::move(*writer), std::move(probes), cfg);
  std::thread stopper([] {
    usleep(200'000);
    RequestStop(SIGTERM);
  });
  auto summary = loop.Run();
  stopper.join();
  RequestStop(0);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  EXPECT_EQ(summary->stop_reason, "SIGTERM");
  EXPECT_TRUE(std::filesystem::exists(opts.out));
}

TEST_F(EventLoopTest, NothingStartedMeansNoBundle) {
  RecorderOptions opts;
  opts.out = dir_ + "/none.rsb";
  opts.duration_ns = 100'000'000;
  auto writer = RecordingDb::Create(opts.out);
  ASSERT_TRUE(writer.ok());
  Calls a;
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<FakeProbe>("alpha", &a, /*fail_start=*/true));
  {
    EventLoop loop(opts, rs::NodeName{"n", "flag"}, std::move(*writer), std::move(probes));
    auto summary = loop.Run();
    ASSERT_FALSE(summary.ok());
    EXPECT_NE(summary.error().message().find("no capture source could start"), std::string::npos);
    EXPECT_NE(summary.error().message().find("alpha: no such tracepoint"), std::string::npos);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir_)) << "no bundle, no temporary file";
}

}  // namespace
}  // namespace rs::rec
