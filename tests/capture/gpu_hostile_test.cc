// A local user against the root recorder's gpu source: the real rankscope-record (--scope
// netns, in a network namespace of this test, --sources gpu) while processes of nobody make
// fake NCCL profiler plugin regions (fake_gpu_region.cc) and attack it: a region truncated
// under the recorder, counts raised under it, a region handed to a root process to forge rows
// under that process's pid. The recorder must neither crash nor take a forged row, count each
// region it did not read by reason, keep reading an honest region beside them, and end with
// exit 0 and a bundle.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kernel_test.h"
#include "recorder_runner.h"
#include "rscore/bundle.h"

namespace rs::rec::ktest {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// A network namespace with loopback up, named with our pid; its processes are killed and it
// is removed in the destructor.
class TestNetns {
 public:
  TestNetns() : name_("rs_gpuh_" + std::to_string(getpid())) {
    ok_ = Sh("ip netns add " + name_) == 0 && Sh(In("ip link set lo up")) == 0;
  }
  ~TestNetns() {
    Sh("ip netns pids " + name_ + " 2>/dev/null | xargs -r kill -9 2>/dev/null");
    Sh("ip netns del " + name_ + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  std::string In(const std::string& cmd) const { return "ip netns exec " + name_ + " " + cmd; }

 private:
  std::string name_;
  bool ok_ = false;
};

// One fake_gpu_region process, started in the background; its lines in a file.
class Attacker {
 public:
  Attacker(const TestNetns& ns, const TempDir& dir, const std::string& args, bool as_nobody)
      : out_(dir.File("attacker." + std::to_string(next_++))) {
    const std::string user = as_nobody ? "setpriv --reuid=65534 --regid=65534 --clear-groups " : "";
    Sh(ns.In(user + dir.File("fake_gpu_region") + " " + args) + " > " + out_ + " 2>&1 &");
  }
  // The value of the line "KEY VALUE" or the line KEY itself ("" then), within timeout_ms.
  std::optional<std::string> Await(const std::string& key, int timeout_ms = 40000) const {
    for (int waited = 0; waited <= timeout_ms; waited += 20) {
      std::ifstream in(out_);
      for (std::string line; std::getline(in, line);) {
        if (line == key) return "";
        if (line.rfind(key + " ", 0) == 0) return line.substr(key.size() + 1);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }
  std::string Output() const { return ShOut("cat " + out_); }

 private:
  static inline int next_ = 0;
  std::string out_;
};

TEST(GpuHostile, FakeRegionsOfALocalUserNeitherCrashTheRecorderNorForgeRows) {
  REQUIRE_ROOT_OR_SKIP();
  SKIP_UNLESS_OR_FAIL_IN_CI(Sh("command -v ip >/dev/null") == 0,
                            "needs iproute2 (apt-get install iproute2)");
  SKIP_UNLESS_OR_FAIL_IN_CI(Sh("command -v setpriv >/dev/null") == 0,
                            "needs setpriv (apt-get install util-linux)");
  TestNetns ns;
  ASSERT_TRUE(ns.ok()) << "could not create the test's network namespace";
  TempDir dir;
  // nobody runs the helper from here: the directory searchable, the copy executable.
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  ASSERT_EQ(
      Sh("install -m 0755 " + Env("GPU_HOSTILE_FAKE_REGION") + " " + dir.File("fake_gpu_region")),
      0);
  const std::string bundle = dir.File("hostile.rsb");
  auto started = RecorderProcess::Start(
      {"--out", bundle, "--node", "hostile", "--scope", "netns", "--sources", "gpu"}, ns.name());
  ASSERT_TRUE(started.ok()) << started.error().message();
  RecorderProcess recorder = std::move(started).value();
  ASSERT_TRUE(recorder.WaitReady()) << recorder.stderr_text();

  Attacker unsealed(ns, dir, "unsealed", true), counts(ns, dir, "counts", true),
      slots(ns, dir, "slots", true), give(ns, dir, "give", true), honest(ns, dir, "honest", true);
  std::map<std::string, std::string> pid;
  for (auto [name, a] :
       {std::pair{"unsealed", &unsealed}, std::pair{"counts", &counts}, std::pair{"slots", &slots},
        std::pair{"give", &give}, std::pair{"honest", &honest}}) {
    auto p = a->Await("pid");
    ASSERT_TRUE(p && a->Await("ready")) << name << ": " << a->Output();
    pid[name] = *p;
  }
  // nobody's region, mapped only by a process of root: rows there would speak for root's.
  auto fd = give.Await("fd");
  ASSERT_TRUE(fd) << give.Output();
  Attacker hold(ns, dir, "hold " + pid["give"] + " " + *fd, false);
  auto holder = hold.Await("pid");
  ASSERT_TRUE(holder && hold.Await("held")) << hold.Output();
  Sh("kill -9 " + pid["give"]);

  EXPECT_TRUE(recorder.WaitFor("could not attach gpu pid " + *holder + ":", 20000))
      << recorder.stderr_text();
  EXPECT_TRUE(recorder.WaitFor("could not attach gpu pid " + pid["unsealed"] + ":", 20000))
      << recorder.stderr_text();
  EXPECT_TRUE(counts.Await("changed")) << counts.Output();
  EXPECT_TRUE(recorder.WaitFor("gpu: pid " + pid["counts"] + ": its header changed", 20000))
      << recorder.stderr_text();
  EXPECT_TRUE(slots.Await("changed")) << slots.Output();
  EXPECT_TRUE(recorder.WaitFor("gpu: pid " + pid["slots"] + ": its header changed", 20000))
      << recorder.stderr_text();
  EXPECT_TRUE(honest.Await("wrote")) << honest.Output();
  // Truncated once the recorder read it, or (refused, never read) after 5 s.
  EXPECT_TRUE(unsealed.Await("truncated")) << unsealed.Output();
  // A few more of the recorder's reads after the truncation before it stops.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  ASSERT_EQ(recorder.Stop(SIGINT), 0) << recorder.stderr_text();
  auto opened = rs::OpenRankscopeFile(bundle);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  auto Int = [&](const std::string& sql) {
    auto v = opened->db().QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() ? *v : -1;
  };
  auto Meta = [&](const std::string& key) {
    return Int("SELECT CAST(value AS INTEGER) FROM metadata WHERE key = '" + key + "'");
  };
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE nccl_comm_hash = " + std::to_string(0xf0f6ed)),
            0);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops WHERE pid = " + pid["honest"] +
                " AND nccl_comm_hash = " + std::to_string(0x600d)),
            5);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM gpu_ops"), 5);
  EXPECT_EQ(Meta("gpu_regions_dropped_not_sealed"), 1);
  EXPECT_EQ(Meta("gpu_regions_dropped_owner"), 1) << recorder.stderr_text();
  EXPECT_EQ(Meta("gpu_regions_dropped_changed"), 2);
  EXPECT_EQ(Meta("gpu_regions_dropped_layout"), 0);
  auto gpu_metadata = opened->db().QueryText(
      "SELECT group_concat(key || '=' || value, ' ') FROM metadata WHERE key LIKE 'gpu%'");
  const std::string counts_text =
      gpu_metadata.ok() && *gpu_metadata ? **gpu_metadata : std::string("?");
  EXPECT_EQ(Int("SELECT drops FROM sources WHERE source = 'gpu'"), 4) << counts_text;
  EXPECT_EQ(Int("SELECT events FROM sources WHERE source = 'gpu'"), 5);
  EXPECT_EQ(Int("SELECT COUNT(*) FROM attachments WHERE kind = 'gpu' AND ok = 0 AND (target = "
                "'pid " +
                *holder +
                "' AND error LIKE '%owned by uid 65534, held by a process of uid 0/%'"
                " OR target = 'pid " +
                pid["unsealed"] + "' AND error LIKE '%not sealed against shrinking%')"),
            2);
}

}  // namespace
}  // namespace rs::rec::ktest
