// rankscope-record end to end as root: stop by SIGINT / SIGTERM / duration always leaves a
// valid bundle; bad input fails with one line and leaves no file behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "kernel_test.h"
#include "recorder_runner.h"
#include "rscore/time_arg.h"

namespace rs::rec::ktest {
namespace {

bool Exists(const std::string& p) { return access(p.c_str(), F_OK) == 0; }

int CountLines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// No bundle, no temporary or partial file left in `dir`.
void ExpectEmptyDir(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ADD_FAILURE() << "left behind: " << e.path();
  }
}

void ExpectValidBundle(const std::string& bundle, const std::string& node) {
  ASSERT_TRUE(Exists(bundle)) << bundle;
  struct stat st {};
  ASSERT_EQ(stat(bundle.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Sh("zstd -q -t '" + bundle + "'"), 0) << "zstd frame integrity";
  EXPECT_EQ(Sh("zstd -q -dc '" + bundle + "' | head -c 16 | grep -q 'SQLite format 3'"), 0);
  auto opened = rs::OpenRankscopeFile(bundle);
  ASSERT_TRUE(opened.ok()) << opened.error().message();
  const rs::BundleInfo& info = opened->info();
  EXPECT_EQ(info.node, node);
  EXPECT_GT(info.start_ns, 0);
  EXPECT_GE(info.end_ns, info.start_ns);
  rs::Db& db = opened->db();
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'start'"), 1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM clock_refs WHERE kind = 'end'"), 1);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM sources WHERE source IN "
                         "('tcp', 'sched', 'block', 'process') AND method <> 'off'"),
            4);
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM interfaces WHERE ifname = 'lo'"), 2);
  // Never stored: the command line or simulated clock values.
  EXPECT_EQ(*db.QueryInt("SELECT COUNT(*) FROM metadata WHERE key LIKE '%simulate%' OR "
                         "value LIKE '%--out%' OR value LIKE '%9876543%'"),
            0);
}

TEST(RecorderCli, SigintMidRecordingFinalizesBundle) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string out = dir.File("sigint.rsb");
  auto p = RecorderProcess::Start({"--out", out, "--node", "ksigint", "--duration", "5m",
                                   "--simulate-clock-offset", "9876543"});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  usleep(300'000);
  EXPECT_EQ(p->Stop(SIGINT), 0) << p->stderr_text();
  ExpectValidBundle(out, "ksigint");
  EXPECT_EQ(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND "
                            "value = 'SIGINT'"),
            1);
}

TEST(RecorderCli, SigtermMidRecordingFinalizesBundle) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string out = dir.File("sigterm.rsb");
  auto p = RecorderProcess::Start({"--out", out, "--node", "ksigterm"});
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(p->WaitReady()) << p->stderr_text();
  usleep(1'300'000);  // past one periodic clock reference
  EXPECT_EQ(p->Stop(SIGTERM), 0) << p->stderr_text();
  ExpectValidBundle(out, "ksigterm");
  EXPECT_EQ(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM metadata WHERE key = 'stop_reason' AND "
                            "value = 'SIGTERM'"),
            1);
  EXPECT_GE(*QueryBundleInt(out, "SELECT COUNT(*) FROM clock_refs WHERE kind = 'periodic'"), 1);
  // The per-CPU scheduler aggregate was read at least once per second.
  EXPECT_GE(*QueryBundleInt(out, "SELECT COUNT(DISTINCT timestamp_ns) FROM sched_summary"), 1);
}

TEST(RecorderCli, DurationEndsRecordingAndNodeComesFromEnv) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string out = dir.File("dur.rsb");
  setenv("RANKSCOPE_NODE", "kenvnode", 1);
  RunResult r = RunRecorder({"--out", out, "--duration", "700ms"});
  unsetenv("RANKSCOPE_NODE");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  ExpectValidBundle(out, "kenvnode");
  EXPECT_EQ(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM metadata WHERE key = 'node_source' AND "
                            "value = 'env'"),
            1);
  int64_t span =
      *QueryBundleInt(out,
                      "SELECT (SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'end_ns') - "
                      "(SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'start_ns')");
  EXPECT_GE(span, 700'000'000);
  EXPECT_LT(span, 15'000'000'000);
  // The start line and the final line say the recording's start in UTC: the start_ns of the
  // bundle, the zero of +offsets in every tool.
  const int64_t start_ns =
      *QueryBundleInt(out, "SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'start_ns'");
  const std::string utc = rs::FormatUtc(start_ns);
  EXPECT_NE(r.stderr_text.find("recording node kenvnode ("), std::string::npos) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find("-> " + out + ", from " + utc + "\n"), std::string::npos)
      << utc << "\n"
      << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(" from " + utc + ", stopped by duration\n"), std::string::npos)
      << utc << "\n"
      << r.stderr_text;
  // -q: the same recording without those lines.
  const std::string quiet_out = dir.File("quiet.rsb");
  RunResult q = RunRecorder({"-q", "--out", quiet_out, "--node", "kquiet", "--duration", "300ms"});
  ASSERT_EQ(q.exit_code, 0) << q.stderr_text;
  ExpectValidBundle(quiet_out, "kquiet");
  EXPECT_EQ(q.stderr_text.find("recording node"), std::string::npos) << q.stderr_text;
  EXPECT_EQ(q.stderr_text.find("wrote "), std::string::npos) << q.stderr_text;
}

TEST(RecorderCli, ConfigFileNameBeatsEnvironmentAndFlagBeatsBoth) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string conf = dir.File("rs.conf");
  ASSERT_EQ(Sh("printf '# node identity\\nnode = kcfgnode\\n' > " + conf), 0);
  setenv("RANKSCOPE_NODE", "kenvnode", 1);
  RunResult from_config =
      RunRecorder({"--out", dir.File("c.rsb"), "--config", conf, "--duration", "300ms"});
  RunResult from_flag = RunRecorder(
      {"--out", dir.File("f.rsb"), "--config", conf, "--node", "kflag", "--duration", "300ms"});
  unsetenv("RANKSCOPE_NODE");
  ASSERT_EQ(from_config.exit_code, 0) << from_config.stderr_text;
  ASSERT_EQ(from_flag.exit_code, 0) << from_flag.stderr_text;
  EXPECT_EQ(*QueryBundleInt(dir.File("c.rsb"),
                            "SELECT COUNT(*) FROM metadata WHERE (key = 'node' AND value = "
                            "'kcfgnode') OR (key = 'node_source' AND value = 'config')"),
            2);
  EXPECT_EQ(*QueryBundleInt(dir.File("f.rsb"),
                            "SELECT COUNT(*) FROM metadata WHERE (key = 'node' AND value = "
                            "'kflag') OR (key = 'node_source' AND value = 'flag')"),
            2);
}

TEST(RecorderCli, BadInputIsOneLineNonZeroAndLeavesNoFile) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string out = dir.File("bad.rsb");
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{"--out", out, "--frobnicate"}, "unknown option '--frobnicate'"},
      {{"--out", out, "--duration", "ten"}, "--duration 'ten'"},
      {{"--out", out, "--duration", "0ms"}, "--duration '0ms'"},
      {{"--out", dir.File("missing/dir/x.rsb"), "--duration", "1s"}, "does not exist"},
      {{"--out", dir.path(), "--duration", "1s"}, "is a directory"},
      {{"--out", out, "--node", "bad name!", "--duration", "1s"}, "bad name!"},
      {{"--out", out, "--pid", "999999999", "--duration", "1s"}, "no such process"},
      {{"--out", out, "--config", dir.File("nope.conf")}, "nope.conf"},
  };
  for (const auto& c : cases) {
    RunResult r = RunRecorder(c.args);
    EXPECT_NE(r.exit_code, 0) << c.needle;
    EXPECT_EQ(CountLines(r.stderr_text), 1) << r.stderr_text;
    EXPECT_NE(r.stderr_text.find(c.needle), std::string::npos)
        << "want '" << c.needle << "' in: " << r.stderr_text;
    EXPECT_EQ(r.stderr_text.rfind("rankscope-record: ", 0), 0u) << r.stderr_text;
  }
  ExpectEmptyDir(dir.path());
}

TEST(RecorderCli, ReadOnlyDirectoryIsRefusedBeforeLoading) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string ro = dir.File("ro");
  // Root ignores permission bits: a read-only bind mount is what root cannot write.
  ASSERT_EQ(Sh("mkdir -p " + ro + " && mount --bind " + ro + " " + ro + " && mount -o " +
               "remount,bind,ro " + ro),
            0);
  RunResult r = RunRecorder({"--out", ro + "/x.rsb", "--duration", "1s"});
  Sh("umount " + ro);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(CountLines(r.stderr_text), 1) << r.stderr_text;
  EXPECT_NE(r.stderr_text.find(ro), std::string::npos) << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("recording node"), std::string::npos);
  EXPECT_FALSE(Exists(ro + "/x.rsb"));
}

TEST(RecorderCli, NotRootIsOneLineAndLeavesNoFile) {
  REQUIRE_ROOT_OR_SKIP();  // root drops to 'nobody' for this case
  SKIP_UNLESS_OR_FAIL_IN_CI(Sh("command -v setpriv >/dev/null") == 0,
                            "needs setpriv (apt-get install util-linux)");
  TempDir dir;
  // A copy 'nobody' can execute wherever the build tree lives.
  std::string bin = dir.File("bin");
  ASSERT_EQ(Sh("mkdir -m 0755 " + bin + " && cp " + RecorderPath() + " " + bin +
               "/rankscope-record && chmod 0777 " + dir.path()),
            0);
  std::string out = ShOut("setpriv --reuid=65534 --regid=65534 --clear-groups " + bin +
                          "/rankscope-record --out " + dir.File("out/x.rsb") +
                          " --duration 1s 2>&1; echo \"exit=$?\"");
  EXPECT_NE(out.find("must run as root"), std::string::npos) << out;
  EXPECT_NE(out.find("exit=1"), std::string::npos) << out;
  EXPECT_EQ(CountLines(out), 1) << out;  // the error line + the exit line without newline
  EXPECT_NE(Sh("test -e " + dir.File("out")), 0) << "nothing created";
}

// A node without tracefs mounted (no systemd, or inside `ip netns exec`): the recorder mounts
// one in a mount namespace of its own, so its classic tracepoint (the library-load reports on
// syscalls/sys_enter_mmap) attaches; the node's mounts stay as they were, and once its probes
// are attached the recorder is back in the node's mount namespace (a filesystem the node
// mounts or unmounts meanwhile shows up, or goes, for the recorder too: it keeps none alive).
TEST(RecorderCli, MissingTracefsIsMountedForTheRecorderAlone) {
  REQUIRE_ROOT_OR_SKIP();
  TempDir dir;
  std::string out = dir.File("t.rsb"), err_file = dir.File("err"), mnt = dir.File("mnt");
  // The "node" is a mount namespace of the test's own, with private mounts as on a node
  // without systemd (nothing reaches the real node): tracefs (and debugfs, whose tracing/
  // directory mounts tracefs on access) unmounted there. Exit codes 90-95 name what went wrong.
  std::string script = R"(
    umount -l /sys/kernel/tracing 2>/dev/null; umount -l /sys/kernel/debug 2>/dev/null
    test -e /sys/kernel/tracing/events && exit 90
    REC --out OUT --node tnode --duration 3s --verbose 2> ERR & rp=$!
    for i in $(seq 100); do grep -q "recording node" ERR && break; sleep 0.1; done
    grep -q " /sys/kernel/tracing " /proc/$rp/mountinfo && exit 95
    mkdir MNT && mount -t tmpfs rs_tmpfs MNT || exit 94
    grep -q " MNT " /proc/$rp/mountinfo || exit 92
    umount MNT; grep -q " MNT " /proc/$rp/mountinfo && exit 93
    wait $rp; rc=$?
    test -e /sys/kernel/tracing/events && exit 91
    exit $rc)";
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"REC", RecorderPath()}, {"OUT", out}, {"ERR", err_file}, {"MNT", mnt}}) {
    for (size_t at = script.find(key); at != std::string::npos;
         at = script.find(key, at + value.size())) {
      script.replace(at, key.size(), value);
    }
  }
  int rc = Sh("unshare -m --propagation private sh -c '" + script + "'");
  std::string err = ShOut("cat " + err_file);
  ASSERT_NE(rc, 94) << "could not set up the test's mount namespace";
  ASSERT_NE(rc, 90) << "could not unmount tracefs for the test";
  EXPECT_NE(rc, 91) << "tracefs left mounted outside the recorder";
  EXPECT_NE(rc, 92) << "a mount of the node did not reach the recorder's namespace";
  EXPECT_NE(rc, 93) << "an unmount of the node did not reach the recorder's namespace";
  EXPECT_NE(rc, 95) << "the recorder still sees its own tracefs mount while recording";
  ASSERT_EQ(rc, 0) << err;
  EXPECT_NE(err.find("tracefs mounted at /sys/kernel/tracing in the recorder's own mount "
                     "namespace"),
            std::string::npos)
      << err;
  ExpectValidBundle(out, "tnode");
  EXPECT_EQ(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM attachments WHERE kind = 'tracepoint' AND "
                            "target = 'syscalls/sys_enter_mmap' AND ok = 1"),
            2)
      << "nccl and cuda library loads";
}

TEST(RecorderCli, HelpAndVersion) {
  RunResult h = RunRecorder({"--help"});
  EXPECT_EQ(h.exit_code, 0);
  RunResult v = RunRecorder({"--version"});
  EXPECT_EQ(v.exit_code, 0);
}

}  // namespace
}  // namespace rs::rec::ktest
