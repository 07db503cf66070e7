// The four kernel probes driven in-process through rs::rec::EventLoop, once with the tp_btf
// programs and once forced onto the classic tracepoint programs: both variants must record
// the same things (process exec / exit, run-queue contention, a SYN retransmit in a network
// namespace of the test, O_DIRECT writes).
#include <bpf/btf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "kernel_test.h"
#include "recorder/block_probe.h"
#include "recorder/event_loop.h"
#include "recorder/kernel_probe.h"
#include "recorder/preflight.h"
#include "recorder/process_probe.h"
#include "recorder/sched_probe.h"
#include "recorder/tcp_probe.h"
#include "recorder_runner.h"

namespace rs::rec::ktest {
namespace {

// Whether the running kernel's BTF has struct `type` with a member `member`.
bool KernelTypeHasMember(const char* type, const char* member) {
  struct btf* btf = btf__load_vmlinux_btf();
  if (!btf) return false;
  bool found = false;
  int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
  if (id > 0) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    const struct btf_member* m = btf_members(t);
    for (int i = 0; i < btf_vlen(t) && !found; ++i) {
      found = std::strcmp(btf__name_by_offset(btf, m[i].name_off), member) == 0;
    }
  }
  btf__free(btf);
  return found;
}

pid_t SpawnShell(const std::string& cmd) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

class KernelProbes : public ::testing::TestWithParam<bool> {
 protected:
  void TearDown() override { ForceClassicTracepointsForTesting(false); }
};

TEST_P(KernelProbes, RecordEveryFamily) {
  REQUIRE_ROOT_OR_SKIP();
  // Classic tracepoints need tracefs (mounted for this process where it is not, as
  // rankscope-record does).
  auto tracefs = rs::rec::EnsureTracefs();
  ASSERT_TRUE(tracefs.ok()) << tracefs.error().message();
  const bool classic = GetParam();
  ForceClassicTracepointsForTesting(classic);
  TempDir dir;
  std::string ns = "rs_kp_" + std::to_string(getpid()) + (classic ? "_tp" : "_btf");
  ASSERT_EQ(Sh("ip netns add " + ns + " && ip netns exec " + ns + " ip link set lo up && " +
               "ip netns exec " + ns + " iptables -A INPUT -p tcp --dport 9 -j DROP"),
            0);
  std::string ns_inode = ShOut("stat -L -c %i /run/netns/" + ns);

  // Block: a preallocated file on the root filesystem, overwritten with O_DIRECT.
  std::string file = "/var/tmp/rs_kp_" + std::to_string(getpid());
  constexpr size_t kBlock = 64 * 1024;
  constexpr int kWrites = 8;
  ASSERT_EQ(Sh("dd if=/dev/zero of=" + file + " bs=64k count=8 conv=fsync status=none"), 0);

  pid_t traced = SpawnSpinner(0, "rs_kp_traced", 20);
  pid_t competitor = SpawnSpinner(0, "rs_kp_comp", 20);
  RecorderOptions opts;
  opts.out = dir.File("kp.rsb");
  opts.duration_ns = 3'500'000'000;
  opts.pids = {traced};
  auto writer = RecordingDb::Create(opts.out);
  ASSERT_TRUE(writer.ok()) << writer.error().message();
  std::vector<std::unique_ptr<Probe>> probes;
  probes.push_back(std::make_unique<ProcessProbe>());
  probes.push_back(std::make_unique<TcpProbe>());
  probes.push_back(std::make_unique<SchedProbe>());
  probes.push_back(std::make_unique<BlockProbe>());
  EventLoop loop(opts, rs::NodeName{"kprobes", "flag"}, std::move(*writer), std::move(probes));

  pid_t ok_child = -1, exit3_child = -1, syn_child = -1;
  ssize_t written = 0;
  std::thread workload([&] {
    usleep(800'000);  // the loop attaches first
    ok_child = SpawnShell("exec /bin/true");
    exit3_child = SpawnShell("exit 3");
    syn_child = SpawnShell("ip netns exec " + ns +
                           " timeout 2 socat -u OPEN:/dev/null TCP:127.0.0.1:9 2>/dev/null");
    int fd = open(file.c_str(), O_WRONLY | O_DIRECT);
    void* buf = nullptr;
    if (fd >= 0 && posix_memalign(&buf, 4096, kBlock) == 0) {
      std::memset(buf, 0x11, kBlock);
      for (int i = 0; i < kWrites; ++i) {
        written += pwrite(fd, buf, kBlock, static_cast<off_t>(i * kBlock));
      }
      free(buf);
    }
    if (fd >= 0) close(fd);
    for (pid_t p : {ok_child, exit3_child, syn_child}) waitpid(p, nullptr, 0);
  });
  auto summary = loop.Run();
  workload.join();
  Reap(traced);
  Reap(competitor);
  unlink(file.c_str());
  Sh("ip netns del " + ns);
  ASSERT_TRUE(summary.ok()) << summary.error().message();
  const std::string out = opts.out;
  auto q = [&](const std::string& sql) {
    auto v = QueryBundleInt(out, sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() ? *v : -1;
  };
  std::string method = classic ? "tracepoint" : "tp_btf";
  EXPECT_EQ(q("SELECT COUNT(*) FROM sources WHERE method = '" + method + "'"), 4);
  // Drops by reason add up to sources.drops; none but the runs the kernel itself skipped
  // (a tracepoint in an interrupt while its program ran on that CPU: load-dependent).
  auto reason = [](const std::string& name) {
    return "IFNULL((SELECT CAST(value AS INTEGER) FROM metadata WHERE key = s.source || "
           "'_drops_" + name + "'), -1)";
  };
  EXPECT_EQ(q("SELECT COUNT(*) FROM sources s WHERE drops = " + reason("ring_full") + " + " +
              reason("lost_state") + " + " + reason("undecodable") + " + " +
              reason("kernel_skipped") + " AND " + reason("ring_full") + " = 0 AND " +
              reason("lost_state") + " = 0 AND " + reason("undecodable") + " = 0 AND " +
              reason("kernel_skipped") + " >= 0 AND method = '" + method + "'"),
            4);
  EXPECT_EQ(q("SELECT COUNT(*) FROM attachments WHERE ok = 0"), 0);

  // process: exec with file name, exits with their codes.
  EXPECT_EQ(q("SELECT COUNT(*) FROM process_events WHERE event = 'exec' AND pid = " +
              std::to_string(ok_child) +
              " AND filename = '/bin/true' AND ppid = " + std::to_string(getpid())),
            1);
  EXPECT_EQ(q("SELECT exit_code FROM process_events WHERE event = 'exit' AND pid = " +
              std::to_string(ok_child)),
            0);
  EXPECT_EQ(q("SELECT exit_code FROM process_events WHERE event = 'exit' AND pid = " +
              std::to_string(exit3_child)),
            3);

  // sched: the traced spinner waits on the run queue and goes off CPU (which task ran instead
  // depends on the machine's load; sched_contention_test pins that down).
  EXPECT_GT(q("SELECT COUNT(*) FROM sched_events WHERE event = 'runq_latency' AND pid = " +
              std::to_string(traced) + " AND other_pid IS NOT NULL AND cpu = 0"),
            0);
  EXPECT_GT(q("SELECT COUNT(*) FROM sched_events WHERE event = 'off_cpu' AND pid = " +
              std::to_string(traced)),
            0);
  EXPECT_EQ(q("SELECT COUNT(*) FROM sched_events WHERE pid <> " + std::to_string(traced)), 0);

  // tcp: the dropped SYN is retransmitted (after 1 s) in the test's namespace, by the
  // retransmission timer (congestion state Loss), and sent: err 0 where the kernel reports
  // the result (its tracepoint record has an err field: Linux 6.17 on), which both variants
  // must read; NULL before.
  const bool err_known = KernelTypeHasMember("trace_event_raw_tcp_retransmit_skb", "err");
  EXPECT_GE(q("SELECT COUNT(*) FROM tcp_events WHERE dport = 9 AND state = 'SYN_SENT' AND "
              "saddr = '127.0.0.1' AND ca_state = 'Loss' AND " +
              std::string(err_known ? "err = 0" : "err IS NULL") + " AND netns = " + ns_inode),
            1);

  // block: exactly the bytes written, attributed to this process.
  ASSERT_EQ(written, static_cast<ssize_t>(kWrites * kBlock));
  EXPECT_EQ(q("SELECT IFNULL(SUM(bytes), 0) FROM block_events WHERE op = 'write' AND pid = " +
              std::to_string(getpid())),
            static_cast<int64_t>(kWrites * kBlock));

  EXPECT_EQ(static_cast<int64_t>(summary->events),
            q("SELECT (SELECT COUNT(*) FROM process_events) + (SELECT COUNT(*) FROM "
              "tcp_events) + (SELECT COUNT(*) FROM sched_events) + (SELECT COUNT(*) FROM "
              "block_events)"));
}

INSTANTIATE_TEST_SUITE_P(Variants, KernelProbes, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "tracepoint" : "tp_btf"; });

}  // namespace
}  // namespace rs::rec::ktest
