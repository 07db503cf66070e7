// The gpu probe without root: regions built by hand (gpu_ring_fake.h) in this process or in
// forked children, found through /proc (or a /proc of links to a few real processes, to keep
// other processes of the machine out), rows written to an in-memory bundle.
#include "recorder/gpu_probe.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "recorder/attach_log.h"
#include "recorder/gpu_ring_fake.h"
#include "recorder/library_attacher.h"
#include "recorder/log.h"
#include "recorder/options.h"
#include "recorder/process_table.h"
#include "recorder/test_db.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

// Threads of this process (/proc/self/task).
size_t Threads() {
  size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

namespace fs = std::filesystem;
using testing::FakeGpuRegion;
using testing::TestDb;

// A /proc that lists only the given processes: PID -> /proc/PID.
class LinkedProc {
 public:
  LinkedProc() {
    dir_ = fs::temp_directory_path() / ("rs_gpu_proc_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~LinkedProc() { fs::remove_all(dir_); }
  void Add(int pid) {
    fs::create_directory_symlink("/proc/" + std::to_string(pid), dir_ / std::to_string(pid));
  }
  void Remove(int pid) { fs::remove(dir_ / std::to_string(pid)); }  // as /proc after an exit
  std::string root() const { return dir_.string(); }

 private:
  fs::path dir_;
};

// The recorder's context around one probe.
class Env {
 public:
  explicit Env(const std::string& proc_root, std::vector<int> pids = {}, uint64_t netns = 0)
      : log_file_(std::tmpfile()),
        old_sink_(SetLogSink(log_file_)),
        log_(&t.db, "n1", /*verbose=*/false),
        processes_(&t.db, "n1", proc_root, netns, [] { return int64_t{1}; }),
        maps(proc_root) {
    opts.out = "x.rsb";
    opts.pids = std::move(pids);
    for (int pid : opts.pids) EXPECT_TRUE(processes_.Trace(pid).ok());
    ctx.db = &t.db;
    ctx.node = "n1";
    ctx.ids = &t.ids;
    ctx.clock = &t.clock;
    ctx.options = &opts;
    ctx.scope_netns = netns;
    ctx.proc_root = proc_root;
    ctx.attach_log = &log_;
    ctx.processes = &processes_;
    ctx.library_maps = &maps;
  }
  ~Env() {
    SetLogSink(old_sink_);
    std::fclose(log_file_);
  }
  std::string LogText() {
    std::fflush(log_file_);
    std::rewind(log_file_);
    std::string s;
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof(buf), log_file_)) s.append(buf, n);
    return s;
  }
  int64_t Int(const std::string& sql) { return t.Int(sql); }
  std::string Meta(const std::string& key) {
    return t.Text("SELECT value FROM metadata WHERE key = '" + key + "'");
  }

  TestDb t;
  RecorderOptions opts;
  RecorderContext ctx;

 private:
  FILE* log_file_;
  FILE* old_sink_;
  AttachLog log_;
  ProcessTable processes_;

 public:
  ProcLibraryMaps maps;  // the readings the NCCL / CUDA rescans would share
};

std::string Pid(int pid) { return std::to_string(pid); }

// A forked child that runs `body` once started, then waits for a byte before it exits.
class Child {
 public:
  template <typename F>
  explicit Child(F body) {
    int go[2], ready[2];
    EXPECT_EQ(pipe(go), 0);
    EXPECT_EQ(pipe(ready), 0);
    pid_ = fork();
    if (pid_ == 0) {
      close(go[1]);  // else its own copy keeps the pipe open: no end of file to exit at
      close(ready[0]);
      body();
      char c = 'r';
      (void)!write(ready[1], &c, 1);
      (void)!read(go[0], &c, 1);
      _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    go_ = go[1];
    char c;
    EXPECT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
  }
  ~Child() { Exit(); }
  void Exit() {
    if (pid_ <= 0) return;
    close(go_);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int go_ = -1;
};

TEST(GpuProbe, ReadsTheRegionOfAChosenProcessIntoGpuOps) {
  FakeGpuRegion region(8, 16);
  region.h->ops_unrecorded = 3;  // launched before any recorder read
  region.h->drops_slots_full = 5;
  region.h->drops_late_event = 1;
  region.WriteMany(1, 2);  // in the ring before this recording: an earlier recording's
  const int self = getpid();
  Env env("/proc", {self});
  GpuProbe probe;
  const size_t threads = Threads();
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  // No thread before the loop ticks: the recorder returns to the node's mount namespace after
  // every probe started, and setns refuses a process with threads.
  EXPECT_EQ(Threads(), threads);
  EXPECT_EQ(probe.method(), "plugin");
  EXPECT_EQ(probe.regions_read(), 1u);
  EXPECT_GT(__atomic_load_n(&region.h->reader_heartbeat_ns, __ATOMIC_ACQUIRE), 0);
  EXPECT_EQ(probe.events(), 0u);

  rs_gpu_op op = FakeGpuRegion::Op(3);
  op.device_start_ns = 1'500'000'000'000;
  op.device_end_ns = 1'500'000'100'000;
  op.clock_error_ns = 700;
  op.algo = RS_GPU_ALGO_TREE;
  op.proto = RS_GPU_PROTO_LL;
  op.channels = 4;
  op.count = 10;
  op.rank = 1;
  op.nranks = 2;
  op.tid = self;
  op.net_bytes_sent = 40;
  region.Write(op);
  region.WriteMany(4, 2);
  probe.Tick(env.ctx);
  EXPECT_EQ(probe.events(), 3u);
  // Two operations in flight when recording ends: one started on the device, one not.
  rs_gpu_op started = FakeGpuRegion::Op(6), enqueued = FakeGpuRegion::Op(7);
  started.state = RS_GPU_STARTED;
  started.device_start_ns = 1'600'000'000'000;
  enqueued.state = RS_GPU_ENQUEUED;
  region.Hold(3, enqueued);
  region.Hold(1, started);
  region.h->drops_slots_full = 7;  // two during the recording
  // The process's NCCL rows name the communicator (and another process's do not count).
  ASSERT_TRUE(env.t.db
                  .Exec("INSERT INTO nccl_events(id, node, timestamp_ns, pid, tid, op,"
                        " comm_id_hash, nccl_comm_hash) VALUES (1, 'n1', 1, " +
                        Pid(self) + ", 1, 'ALL_REDUCE', 119, 2748), (2, 'n1', 1, " + Pid(self + 1) +
                        ", 1, 'ALL_REDUCE', 120, 2748)")
                  .ok());
  auto finished = probe.Finish(env.ctx);
  ASSERT_TRUE(finished.ok()) << finished.error().message();
  probe.Tick(env.ctx);  // nothing after Finish
  EXPECT_EQ(probe.events(), 5u);

  const std::string where = " FROM gpu_ops WHERE pid = " + Pid(self);
  EXPECT_EQ(env.Int("SELECT COUNT(*)" + where), 5);
  EXPECT_EQ(env.Int("SELECT COUNT(*)" + where + " AND node = 'n1' AND op = 'ALL_REDUCE'"), 5);
  EXPECT_EQ(env.t.Text("SELECT group_concat(seq || state, ' ') FROM (SELECT seq, state" + where +
                       " ORDER BY id)"),
            "3completed 4completed 5completed 6started 7enqueued");
  EXPECT_EQ(env.Int("SELECT COUNT(*)" + where + " AND comm_id_hash = 119"), 5);  // 2748 = 0xabc
  // Every column of the third, times on the wall clock.
  EXPECT_EQ(env.Int("SELECT timestamp_ns" + where + " AND seq = 3"), env.t.clock.Convert(1003));
  EXPECT_EQ(env.Int("SELECT device_start_ns" + where + " AND seq = 3"),
            env.t.clock.Convert(1'500'000'000'000));
  EXPECT_EQ(env.Int("SELECT device_end_ns - device_start_ns" + where + " AND seq = 3"), 100'000);
  EXPECT_EQ(env.t.Text("SELECT tid || ' ' || rank || '/' || nranks || ' ' || nccl_comm_hash ||"
                       " ' ' || nccl_seq || ' ' || count || ' ' || datatype || ' ' || bytes ||"
                       " ' ' || algorithm || ' ' || protocol || ' ' || channels || ' ' ||"
                       " clock_error_ns || ' ' || net_bytes_sent || ' ' || net_bytes_recv" +
                       where + " AND seq = 3"),
            Pid(self) + " 1/2 2748 2 10 float32 40 TREE LL 4 700 40 0");
  EXPECT_EQ(env.Int("SELECT COUNT(*)" + where + " AND seq = 7 AND device_start_ns IS NULL"), 1);
  EXPECT_EQ(env.Int("SELECT COUNT(*)" + where +
                    " AND seq = 6 AND device_end_ns IS NULL"
                    " AND device_start_ns IS NOT NULL"),
            1);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM gpu_ops WHERE peer IS NOT NULL OR root IS NOT NULL"), 0);
  EXPECT_EQ(env.Int("SELECT nccl_profiler_api FROM processes WHERE pid = " + Pid(self)), 5);
  // Counters: drops of this recording only; operations nobody read are no drops.
  EXPECT_EQ(env.Meta("gpu_drops_slots_full"), "2");
  EXPECT_EQ(env.Meta("gpu_drops_late_event"), "0");
  EXPECT_EQ(env.Meta("gpu_drops_overrun"), "0");
  EXPECT_EQ(env.Meta("gpu_drops_undecodable"), "0");
  EXPECT_EQ(env.Meta("gpu_ops_unrecorded"), "3");
  EXPECT_EQ(env.Meta("gpu_in_flight"), "2");
  EXPECT_EQ(env.Meta("gpu_regions"), "1");
  EXPECT_EQ(env.Meta("gpu_ring_version"), std::to_string(RS_GPU_RING_VERSION));
  EXPECT_EQ(probe.drops(), 2u);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu' AND ok = 1 AND target ="
                    " 'pid " +
                    Pid(self) + "'"),
            1);
}

TEST(GpuProbe, CountsOverrunsAndUndecodableRecordsAsDrops) {
  FakeGpuRegion region(4, 8);
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  region.WriteMany(1, 12);  // four more than the ring holds between two reads
  rs_gpu_op unknown = FakeGpuRegion::Op(13);
  unknown.func = RS_GPU_FUNC_UNKNOWN;
  probe.Tick(env.ctx);
  region.Write(unknown);
  probe.Tick(env.ctx);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(probe.events(), 8u);
  EXPECT_EQ(env.Int("SELECT MIN(seq) FROM gpu_ops"), 5);
  EXPECT_EQ(env.Meta("gpu_drops_overrun"), "4");
  EXPECT_EQ(env.Meta("gpu_drops_undecodable"), "1");
  EXPECT_EQ(probe.drops(), 5u);
}

// A startup window's records read from the ring's beginning: those of operations over
// before the recording started are not this recording's (counted as unrecorded); one that
// was still running when it started is kept.
TEST(GpuProbe, StartupRecordsOverBeforeTheRecordingAreCountedNotWritten) {
  FakeGpuRegion region(4, 8);
  region.h->startup_until_ns = rs::MonotonicNowNs() + 5'000'000'000;
  const int64_t long_ago = rs::MonotonicNowNs() - 1'000'000'000;
  rs_gpu_op over = FakeGpuRegion::Op(1), running = FakeGpuRegion::Op(2);
  over.enqueue_ns = long_ago;
  over.device_start_ns = long_ago + 10;
  over.device_end_ns = long_ago + 20;
  running.enqueue_ns = long_ago + 30;
  running.device_start_ns = long_ago + 40;
  running.device_end_ns = rs::MonotonicNowNs() + 1'000'000'000;  // after Start below
  region.Write(over);
  region.Write(running);
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  rs_gpu_op later = FakeGpuRegion::Op(3);
  later.enqueue_ns = rs::MonotonicNowNs();
  region.Write(later);
  probe.Tick(env.ctx);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(env.t.Text("SELECT group_concat(seq, ' ') FROM (SELECT seq FROM gpu_ops ORDER BY"
                       " seq)"),
            "2 3");
  EXPECT_EQ(probe.events(), 2u);
  EXPECT_EQ(probe.drops(), 0u);
  EXPECT_EQ(env.Meta("gpu_ops_unrecorded"), "1");
}

TEST(GpuProbe, AForkedChildSharesItsParentsRegionAndRowsCarryTheCreator) {
  FakeGpuRegion region(4, 8);
  Child child([] {});  // inherits the memfd and its mapping, as a DataLoader worker does
  LinkedProc proc;
  proc.Add(child.pid());
  proc.Add(getpid());
  Env env(proc.root());  // every process of that /proc: the probe reads their maps itself
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  EXPECT_EQ(probe.regions_read(), 1u);
  EXPECT_EQ(probe.open_regions(), 1u);
  region.WriteMany(1, 3);
  probe.Tick(env.ctx);
  EXPECT_EQ(probe.events(), 3u);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM gpu_ops WHERE pid = " + Pid(getpid())), 3);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu'"), 1);
  child.Exit();
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(probe.events(), 3u);  // read once
}

TEST(GpuProbe, ARegionWhoseProcessExitedIsClosedWithItsOperationsInFlight) {
  // The child creates its own region (the plugin in another process) and, once a reader beats
  // (the plugin records only then), writes two records and holds one operation that never
  // completes.
  Child child([] {
    static FakeGpuRegion* region = new FakeGpuRegion(4, 8);
    rs_gpu_op hung = FakeGpuRegion::Op(3);
    hung.state = RS_GPU_STARTED;
    region->Hold(2, hung);
    std::thread([] {
      for (int i = 0;
           i < 500 && __atomic_load_n(&region->h->reader_heartbeat_ns, __ATOMIC_ACQUIRE) == 0;
           ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      region->WriteMany(1, 2);
    }).detach();
  });
  LinkedProc proc;
  proc.Add(child.pid());
  Env env(proc.root());
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  for (int i = 0; i < 500 && probe.events() < 2; ++i) {  // bounded: 5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    probe.Tick(env.ctx);
  }
  EXPECT_EQ(probe.events(), 2u);
  const int pid = child.pid();
  child.Exit();
  std::this_thread::sleep_for(std::chrono::milliseconds(kLibraryRescanMs + 100));
  probe.Tick(env.ctx);  // notices the exit: last read, then the slots
  EXPECT_EQ(probe.open_regions(), 0u);
  EXPECT_EQ(probe.events(), 3u);
  EXPECT_EQ(env.t.Text("SELECT state FROM gpu_ops WHERE seq = 3 AND pid = " + Pid(pid)), "started");
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(probe.events(), 3u);
  EXPECT_EQ(env.Meta("gpu_in_flight"), "1");
}

TEST(GpuProbe, AnOperationBothInItsSlotAndInTheRingAtTheEndIsWrittenOnce) {
  // It completed while recording ended: the slot snapshot (taken first) still has it, and so
  // does the ring's last read; the ring's record, completed, is the one written.
  FakeGpuRegion region(4, 8);
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  rs_gpu_op running = FakeGpuRegion::Op(6);
  running.state = RS_GPU_STARTED;
  region.Hold(1, running);
  rs_gpu_op done = FakeGpuRegion::Op(6);
  done.state = RS_GPU_COMPLETED;
  region.Write(done);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(env.t.Text("SELECT group_concat(state) FROM gpu_ops WHERE seq = 6"), "completed");
  EXPECT_EQ(env.Meta("gpu_in_flight"), "0");
}

TEST(GpuProbe, ExecEndsTheOldImagesRegion) {
  FakeGpuRegion region(4, 8);
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  region.WriteMany(1, 1);
  rs_gpu_op held = FakeGpuRegion::Op(2);
  held.state = RS_GPU_ENQUEUED;
  region.Hold(0, held);
  probe.OnProcessExec(env.ctx, {getpid(), static_cast<uint64_t>(rs::MonotonicNowNs())});
  EXPECT_EQ(probe.open_regions(), 0u);
  EXPECT_EQ(probe.events(), 2u);
  EXPECT_EQ(env.t.Text("SELECT state FROM gpu_ops WHERE seq = 2"), "enqueued");
}

TEST(GpuProbe, KeepsToTheSelectedProcessesAndNamespace) {
  FakeGpuRegion region(4, 8);
  region.WriteMany(1, 1);
  LinkedProc proc;
  proc.Add(getpid());
  const uint64_t own = ReadNetnsInode("/proc", getpid()).value_or(0);
  ASSERT_NE(own, 0u);
  {
    Env other_ns(proc.root(), {}, own + 1);  // --scope netns of another namespace
    GpuProbe probe;
    ASSERT_TRUE(probe.Start(other_ns.ctx).ok());
    ASSERT_TRUE(probe.Finish(other_ns.ctx).ok());
    EXPECT_EQ(probe.regions_read(), 0u);
    EXPECT_EQ(probe.method(), "off");
    EXPECT_NE(probe.note().find("NCCL profiler plugin"), std::string::npos) << probe.note();
  }
  {
    Env other_pid("/proc", {1});  // --pid of another process
    GpuProbe probe;
    ASSERT_TRUE(probe.Start(other_pid.ctx).ok());
    EXPECT_EQ(probe.regions_read(), 0u);
  }
  EXPECT_EQ(region.h->reader_heartbeat_ns, 0);
  Env own_ns(proc.root(), {}, own);
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(own_ns.ctx).ok());
  EXPECT_EQ(probe.regions_read(), 1u);
  EXPECT_EQ(probe.note(), "");
}

TEST(GpuProbe, ARegionThatCannotBeOpenedIsLoggedOnceWithThePidAndIsNotFatal) {
  FakeGpuRegion region(4, 8);
  region.h->version = RS_GPU_RING_VERSION + 1;
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  probe.Tick(env.ctx);  // retried within the grace (the plugin may still be writing it)
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(probe.method(), "off");
  EXPECT_EQ(probe.events(), 0u);
  EXPECT_EQ(region.h->reader_heartbeat_ns, 0);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu'"), 1);
  const std::string error = env.t.Text("SELECT error FROM attachments WHERE kind = 'gpu'");
  EXPECT_NE(error.find("GPU ring version " + std::to_string(RS_GPU_RING_VERSION + 1)),
            std::string::npos)
      << error;
  const std::string log = env.LogText();
  EXPECT_NE(log.find("gpu pid " + Pid(getpid())), std::string::npos) << log;
}

TEST(GpuProbe, AFailureOfAProcessThatExitsWithinTheGraceIsLoggedThen) {
  Child child([] {
    static FakeGpuRegion* region = new FakeGpuRegion(4, 8);
    region->h->version = RS_GPU_RING_VERSION + 1;
  });
  const int pid = child.pid();
  LinkedProc proc;
  proc.Add(pid);
  Env env(proc.root());
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments"), 0);  // within the grace: retried
  child.Exit();
  proc.Remove(pid);
  // A rescan lists the processes: it is gone. (A second ahead of now, in ms with the ns part:
  // a whole-second value could fall within the listing's 20 ms reuse of the one Start made.)
  (void)env.maps.Pids(rs::MonotonicNowNs() / 1'000'000 + 1000);
  probe.Tick(env.ctx);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu' AND ok = 0 AND"
                    " target = 'pid " +
                    Pid(pid) + "' AND error LIKE '%version%'"),
            1);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments"), 1);  // once
}

// A hostile region: its rows so far stay (read while it was intact); once it changes as the
// plugin never changes it, it is read no more (not even its slots at the end), not opened
// again, counted by reason and logged once, and the recording ends as usual.
TEST(GpuProbe, ARegionChangedWhileReadIsDroppedCountedAndLoggedOnce) {
  FakeGpuRegion region(4, 8);
  region.Hold(2, FakeGpuRegion::Op(40));
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  region.WriteMany(1, 2);
  probe.Tick(env.ctx);
  EXPECT_EQ(probe.events(), 2u);
  region.h->ring_records = UINT32_MAX;  // what crashed the recorder: a count raised under it
  region.h->head = 1'000'000;
  for (int i = 0; i < 3; ++i) probe.Tick(env.ctx);
  EXPECT_EQ(probe.open_regions(), 0u);
  region.h->ring_records = 8;  // put back: still not read
  region.h->head = 2;
  region.WriteMany(3, 2);
  probe.Tick(env.ctx);
  auto finished = probe.Finish(env.ctx);
  ASSERT_TRUE(finished.ok()) << finished.error().message();
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM gpu_ops"), 2);
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM gpu_ops WHERE seq > 2"), 0);
  EXPECT_EQ(env.Meta("gpu_regions_dropped_changed"), "1");
  EXPECT_EQ(env.Meta("gpu_regions_dropped_layout"), "0");
  EXPECT_EQ(env.Meta("gpu_regions_dropped_owner"), "0");
  EXPECT_EQ(env.Meta("gpu_regions_dropped_not_sealed"), "0");
  EXPECT_EQ(env.Meta("gpu_in_flight"), "0");
  EXPECT_EQ(probe.drops(), 1u);
  EXPECT_NE(probe.note().find("1 profiler plugin region(s) refused or dropped"), std::string::npos);
  const std::string log = env.LogText();
  const std::string line = "gpu: pid " + Pid(getpid()) + ": its header changed";
  EXPECT_NE(log.find(line), std::string::npos) << log;
  EXPECT_EQ(log.find(line, log.find(line) + 1), std::string::npos) << log;  // once
}

// One that could be truncated under the recorder is refused when found, without the grace
// of a region still being made, and counted.
TEST(GpuProbe, AnUnsealedRegionIsRefusedAtOnceAndCounted) {
  FakeGpuRegion region(4, 8, RS_GPU_RING_NAME, /*seal=*/false);
  region.WriteMany(1, 3);
  Env env("/proc", {getpid()});
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu' AND ok = 0 AND error"
                    " LIKE '%not sealed against shrinking%'"),
            1);
  probe.Tick(env.ctx);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(env.Int("SELECT COUNT(*) FROM attachments"), 1);  // once
  EXPECT_EQ(probe.events(), 0u);
  EXPECT_EQ(region.h->reader_heartbeat_ns, 0);
  EXPECT_EQ(env.Meta("gpu_regions_dropped_not_sealed"), "1");
  EXPECT_EQ(probe.drops(), 1u);
}

TEST(GpuProbe, NoGpuLeavesThePluginUnread) {
  FakeGpuRegion region(4, 8);
  region.WriteMany(1, 1);
  Env env("/proc", {getpid()});
  env.opts.gpu = false;
  GpuProbe probe;
  ASSERT_TRUE(probe.Start(env.ctx).ok());
  probe.Tick(env.ctx);
  ASSERT_TRUE(probe.Finish(env.ctx).ok());
  EXPECT_EQ(probe.method(), "off");
  EXPECT_EQ(probe.note(), "--no-gpu");
  EXPECT_EQ(probe.events(), 0u);
  EXPECT_EQ(region.h->reader_heartbeat_ns, 0);
}

TEST(GpuProbe, WriteGpuRowConvertsTimesAndFillsNulls) {
  TestDb t;
  auto st = PrepareGpuInsert(t.db);
  ASSERT_TRUE(st.ok()) << st.error().message();
  GpuOpRow row;
  row.enqueue_mono_ns = 1'200'000'000'000;
  row.op = "SEND";
  row.peer = 3;
  row.state = "enqueued";
  ASSERT_TRUE(WriteGpuRow(*st, row, "n7", 42, 99, &t.clock).ok());
  EXPECT_EQ(t.Int("SELECT timestamp_ns FROM gpu_ops WHERE id = 42"),
            TestDb::kOffset + 1'200'000'000'000);
  EXPECT_EQ(t.Text("SELECT node || ' ' || pid || ' ' || op || ' ' || peer || ' ' || state ||"
                   " ' ' || net_bytes_sent FROM gpu_ops"),
            "n7 99 SEND 3 enqueued 0");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM gpu_ops WHERE tid IS NULL AND rank IS NULL AND"
                  " comm_id_hash IS NULL AND nccl_comm_hash IS NULL AND seq IS NULL AND"
                  " device_start_ns IS NULL AND device_end_ns IS NULL AND clock_error_ns IS NULL"),
            1);
}

TEST(GpuProbe, CommIdHashComesFromTheSameProcessesNcclRowsWhenUnambiguous) {
  TestDb t;
  ASSERT_TRUE(t.db.Exec("INSERT INTO nccl_events(node, timestamp_ns, pid, tid, op, comm_id_hash,"
                        " nccl_comm_hash) VALUES"
                        " ('n1', 1, 10, 10, 'COMM_INIT', 500, 7),"
                        " ('n1', 2, 10, 10, 'ALL_REDUCE', 500, 7),"
                        " ('n1', 1, 11, 11, 'COMM_INIT', 600, 7),"  // another process's view
                        " ('n1', 1, 12, 12, 'COMM_INIT', 700, 8),"  // two hashes for one:
                        " ('n1', 2, 12, 12, 'COMM_INIT', 701, 8),"  // never guessed
                        " ('n2', 1, 13, 13, 'COMM_INIT', 800, 9),"  // another node
                        " ('n1', 1, 14, 14, 'COMM_INIT', NULL, 10)")
                  .ok());
  ASSERT_TRUE(t.db.Exec("INSERT INTO gpu_ops(id, node, timestamp_ns, pid, op, nccl_comm_hash,"
                        " state) VALUES"
                        " (1, 'n1', 1, 10, 'ALL_REDUCE', 7, 'completed'),"
                        " (2, 'n1', 2, 10, 'ALL_REDUCE', 7, 'completed'),"
                        " (3, 'n1', 1, 11, 'ALL_REDUCE', 7, 'completed'),"
                        " (4, 'n1', 1, 12, 'ALL_REDUCE', 8, 'completed'),"
                        " (5, 'n1', 1, 13, 'ALL_REDUCE', 9, 'completed'),"
                        " (6, 'n1', 1, 14, 'ALL_REDUCE', 10, 'completed'),"
                        " (7, 'n1', 1, 10, 'ALL_REDUCE', NULL, 'completed')")
                  .ok());
  auto n = FillGpuCommIdHash(t.db, "n1");
  ASSERT_TRUE(n.ok()) << n.error().message();
  EXPECT_EQ(*n, 3);
  EXPECT_EQ(t.Text("SELECT group_concat(id || ':' || IFNULL(comm_id_hash, '-'), ' ') FROM"
                   " (SELECT id, comm_id_hash FROM gpu_ops ORDER BY id)"),
            "1:500 2:500 3:600 4:- 5:- 6:- 7:-");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM sqlite_temp_master WHERE name = 'gpu_comm_map'"), 0);
}

}  // namespace
}  // namespace rs::rec
