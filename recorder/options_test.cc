#include "recorder/options.h"

#include <gtest/gtest.h>

#include <regex>

#include "recorder/probe.h"
#include "recorder/probes.h"

namespace rs::rec {
namespace {

RecorderOptions MustParse(const std::vector<std::string>& args) {
  auto r = ParseOptions(args);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return r.ok() ? *r : RecorderOptions{};
}

std::string ErrorOf(const std::vector<std::string>& args) {
  auto r = ParseOptions(args);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message();
}

TEST(ParseOptions, EveryFlag) {
  RecorderOptions o = MustParse({"--out",
                                 "/tmp/n.rsb",
                                 "--duration",
                                 "500ms",
                                 "--node",
                                 "n3",
                                 "--config",
                                 "/etc/rs.conf",
                                 "--pid",
                                 "10",
                                 "-p",
                                 "11",
                                 "--scope",
                                 "netns",
                                 "--simulate-clock-offset",
                                 "-2500000",
                                 "--simulate-clock-drift",
                                 "12.5",
                                 "--simulate-rdma-sysfs",
                                 "/tmp/fake-sys",
                                 "--nccl-lib",
                                 "/a/libnccl.so",
                                 "--cuda-lib",
                                 "/b/libcudart.so",
                                 "--cuda-lib",
                                 "/c/libcuda.so",
                                 "--cuda-launch-sample",
                                 "16",
                                 "--no-load-tracepoint",
                                 "--no-gpu",
                                 "--nccl-calls",
                                 "setup",
                                 "-v"});
  EXPECT_EQ(o.out, "/tmp/n.rsb");
  ASSERT_TRUE(o.duration_ns);
  EXPECT_EQ(*o.duration_ns, 500'000'000);
  EXPECT_EQ(o.node.value_or(""), "n3");
  EXPECT_EQ(o.config_path.value_or(""), "/etc/rs.conf");
  EXPECT_EQ(o.pids, (std::vector<int>{10, 11}));
  EXPECT_EQ(o.scope, Scope::kNetns);
  EXPECT_EQ(o.simulate_clock_offset_ns, -2500000);
  EXPECT_DOUBLE_EQ(o.simulate_clock_drift_ppm, 12.5);
  EXPECT_EQ(o.simulate_rdma_sysfs, "/tmp/fake-sys");
  EXPECT_EQ(o.nccl_libs, (std::vector<std::string>{"/a/libnccl.so"}));
  EXPECT_EQ(o.cuda_libs, (std::vector<std::string>{"/b/libcudart.so", "/c/libcuda.so"}));
  EXPECT_EQ(o.cuda_launch_sample, 16);
  EXPECT_FALSE(o.load_tracepoint);
  EXPECT_FALSE(o.gpu);
  EXPECT_TRUE(o.nccl_calls_setup_only);
  EXPECT_TRUE(o.verbose);
}

TEST(ParseOptions, RingAndCut) {
  RecorderOptions o = MustParse({"--ring", "15m", "--ring-size", "512M", "--ring-dir", "/r"});
  ASSERT_TRUE(o.ring_ns);
  EXPECT_EQ(*o.ring_ns, int64_t{15} * 60 * 1'000'000'000);
  EXPECT_EQ(o.ring_size_bytes, uint64_t{512} << 20);
  EXPECT_EQ(o.ring_dir, "/r");
  EXPECT_EQ(CutDir(o), "/r/cuts");
  o = MustParse({"--ring", "2s", "--cut-dir", "/nfs/cuts"});
  EXPECT_EQ(o.ring_dir, kDefaultRingDir);
  EXPECT_EQ(o.ring_size_bytes, kDefaultRingSizeBytes);
  EXPECT_EQ(CutDir(o), "/nfs/cuts");
  EXPECT_NE(ErrorOf({"--ring", "2s", "--out", "x.rsb"}).find("no --out"), std::string::npos);
  EXPECT_NE(ErrorOf({"--ring", "0s"}).find("--ring '0s'"), std::string::npos);
  EXPECT_NE(ErrorOf({"--ring", "2s", "--ring-size", "10K"}).find("at least 1M"), std::string::npos);
  EXPECT_NE(ErrorOf({"--ring", "2s", "--ring-size", "2X"}).find("unknown unit"), std::string::npos);

  o = MustParse({"--ring", "2s", "--cut-on-slowdown", "0.5", "--cut-on-stall", "30s"});
  EXPECT_EQ(*o.cut_on_slowdown, 0.5);
  EXPECT_EQ(*o.cut_on_stall_ns, int64_t{30'000'000'000});
  EXPECT_NE(ErrorOf({"--ring", "2s", "--cut-on-slowdown", "1.5"}).find("between 0 and 1"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--out", "x.rsb", "--cut-on-slowdown", "0.5"}).find("give --ring too"),
            std::string::npos);

  o = MustParse({"cut", "--ring-dir", "/r", "--timeout", "5s"});
  EXPECT_TRUE(o.cut_command);
  EXPECT_EQ(o.ring_dir, "/r");
  EXPECT_EQ(o.cut_timeout_ns, int64_t{5'000'000'000});
  EXPECT_NE(ErrorOf({"cut", "--out", "x.rsb"}).find("cut takes only"), std::string::npos);
}

TEST(ParseBytes, UnitsArePowersOf1024) {
  EXPECT_EQ(*ParseBytes("1048576"), uint64_t{1} << 20);
  EXPECT_EQ(*ParseBytes("2G"), uint64_t{2} << 30);
  EXPECT_EQ(*ParseBytes("3k"), uint64_t{3} << 10);
  EXPECT_FALSE(ParseBytes("").ok());
  EXPECT_FALSE(ParseBytes("G").ok());
  EXPECT_FALSE(ParseBytes("1.5G").ok());
  EXPECT_FALSE(ParseBytes("99999999999999T").ok());
}

TEST(ParseOptions, LaunchSampleZeroMeansLaunchesAreNotProbed) {
  EXPECT_EQ(MustParse({"--out=x.rsb", "--cuda-launch-sample", "0"}).cuda_launch_sample, 0);
}

TEST(ParseOptions, DefaultsAndEqualsForm) {
  RecorderOptions o = MustParse({"--out=x.rsb"});
  EXPECT_EQ(o.out, "x.rsb");
  EXPECT_FALSE(o.duration_ns);
  EXPECT_EQ(o.scope, Scope::kHost);
  EXPECT_EQ(o.cuda_launch_sample, 1);
  EXPECT_TRUE(o.load_tracepoint);
  EXPECT_TRUE(o.gpu);
  EXPECT_EQ(o.simulate_clock_offset_ns, 0);
  EXPECT_FALSE(o.verbose);
  EXPECT_EQ(MustParse({"-o", "y.rsb", "-d", "2m"}).duration_ns.value_or(0), 120'000'000'000);
  EXPECT_EQ(MustParse({"--out", "y.rsb", "--duration", "30s"}).duration_ns.value_or(0),
            30'000'000'000);
}

TEST(ParseOptions, QuietIsOffUnlessAsked) {
  EXPECT_FALSE(MustParse({"-o", "x.rsb"}).quiet);
  EXPECT_TRUE(MustParse({"-o", "x.rsb", "-q"}).quiet);
  EXPECT_TRUE(MustParse({"--quiet", "-o", "x.rsb"}).quiet);
  EXPECT_TRUE(MustParse({"cut", "-q"}).quiet);
}

TEST(ParseOptions, HelpAndVersionNeedNoOut) {
  EXPECT_TRUE(MustParse({"--help"}).help);
  EXPECT_TRUE(MustParse({"--version"}).version);
}

TEST(ParseOptions, ErrorsAreOneLineAndNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{"--out", "x.rsb", "--bogus"}, "unknown option '--bogus'"},
      {{"--out", "x.rsb", "-z"}, "unknown option '-z'"},
      {{"--out", "x.rsb", "--duration", "soon"}, "--duration 'soon'"},
      {{"--out", "x.rsb", "--duration", "0s"}, "--duration '0s'"},
      {{"--out", "x.rsb", "--duration", "-5s"}, "--duration '-5s'"},
      {{"--out", "x.rsb", "--pid", "abc"}, "--pid 'abc'"},
      {{"--out", "x.rsb", "--pid", "0"}, "--pid '0'"},
      {{"--out", "x.rsb", "--scope", "world"}, "--scope 'world'"},
      {{"--out", "x.rsb", "--cuda-launch-sample", "-1"}, "--cuda-launch-sample '-1'"},
      {{"--out", "x.rsb", "--simulate-clock-drift", "fast"}, "--simulate-clock-drift 'fast'"},
      {{"--out", "x.rsb", "--simulate-clock-offset", "1.5"}, "--simulate-clock-offset '1.5'"},
      {{"--out", "x.rsb", "stray"}, "unexpected argument 'stray'"},
      {{"--out"}, "--out needs a value"},
      {{"--duration", "5s"}, "--out FILE.rsb is required"},
      {{"--out", "-", "--duration", "5s"}, "--out -: a bundle is a file"},
      {{"-o", "-"}, "give a path, then copy it"},
  };
  for (const auto& c : cases) {
    std::string e = ErrorOf(c.args);
    EXPECT_NE(e.find(c.needle), std::string::npos) << "got: " << e << " want: " << c.needle;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(ParseOptions, NcclCallsIsAllOrSetup) {
  auto d = ParseOptions({"--out", "x.rsb"});
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->nccl_calls_setup_only);
  auto all = ParseOptions({"--out", "x.rsb", "--nccl-calls", "all"});
  ASSERT_TRUE(all.ok());
  EXPECT_FALSE(all->nccl_calls_setup_only);
  auto bad = ParseOptions({"--out", "x.rsb", "--nccl-calls", "some"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("--nccl-calls 'some': use all or setup"), std::string::npos)
      << bad.error().message();
}

TEST(ParseOptions, UsageNamesEveryOptionAndMarksTestingOnes) {
  std::string u = UsageText();
  for (const char* flag :
       {"--out", "--duration", "--node", "--config", "--pid", "--scope", "--nccl-lib", "--cuda-lib",
        "--cuda-launch-sample", "--no-load-tracepoint", "--no-gpu", "--nccl-calls", "--sources",
        "--verbose", "--quiet", "--help", "--version", "--simulate-clock-offset",
        "--simulate-clock-drift"}) {
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
  }
  EXPECT_LT(u.find("Testing only"), u.find("--simulate-clock-offset"));
}

// --help, getopt's table and the parser come from one table: every option --help names (the
// listed ones and those named in another's text) is known to the parser.
TEST(ParseOptions, EveryOptionTheHelpNamesIsParsed) {
  const std::string u = UsageText();
  const std::regex flag("--([a-z][a-z-]+)");
  int named = 0;
  for (auto it = std::sregex_iterator(u.begin(), u.end(), flag); it != std::sregex_iterator();
       ++it) {
    const std::string name = "--" + (*it)[1].str();
    auto r = ParseOptions({name, "1"});
    if (!r.ok()) {
      EXPECT_EQ(r.error().message().find("unknown option"), std::string::npos)
          << name << ": " << r.error().message();
    }
    ++named;
  }
  EXPECT_GT(named, 40);
  EXPECT_NE(ErrorOf({"--serve-bogus", "1"}).find("unknown option '--serve-bogus'"),
            std::string::npos);
}

TEST(ParseOptions, SourcesSelectWhatIsRecorded) {
  auto all = ParseOptions({"--out", "n.rsb"});
  ASSERT_TRUE(all.ok());
  for (std::string_view s : kSourceNames) EXPECT_TRUE(SourceSelected(*all, s)) << s;
  auto some = ParseOptions({"--out", "n.rsb", "--sources", "sched,,nccl"});
  ASSERT_TRUE(some.ok()) << some.error().message();
  EXPECT_EQ(some->sources, (std::vector<std::string>{"sched", "nccl"}));
  EXPECT_TRUE(SourceSelected(*some, "nccl"));
  EXPECT_FALSE(SourceSelected(*some, "tcp"));
  auto bad = ParseOptions({"--out", "n.rsb", "--sources", "sched,disk"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("unknown source 'disk'"), std::string::npos)
      << bad.error().message();
  EXPECT_FALSE(ParseOptions({"--out", "n.rsb", "--sources", ","}).ok());
  EXPECT_FALSE(ParseOptions({"--recover", "x.db", "--sources", "sched"}).ok());
}

// A source left out is a probe that loads nothing; process stays while a call probe follows
// processes through its exec events.
TEST(MakeProbes, LeavesOutWhatSourcesDoesNotName) {
  auto left_out = [](const std::vector<std::string>& args) {
    auto o = ParseOptions(args);
    EXPECT_TRUE(o.ok());
    std::vector<std::string> out;
    for (const auto& p : MakeProbes(*o)) {
      if (p->left_out()) out.emplace_back(p->source());
    }
    return out;
  };
  EXPECT_TRUE(left_out({"--out", "n.rsb"}).empty());
  EXPECT_EQ(left_out({"--out", "n.rsb", "--sources", "sched,block"}),
            (std::vector<std::string>{"process", "tcp", "nccl", "cuda", "gpu", "rdma"}));
  EXPECT_EQ(left_out({"--out", "n.rsb", "--sources", "nccl"}),
            (std::vector<std::string>{"tcp", "sched", "block", "cuda", "gpu", "rdma"}));
}

TEST(ParseOptions, ForceAndRecover) {
  EXPECT_FALSE(MustParse({"--out", "a.rsb"}).force);
  EXPECT_TRUE(MustParse({"--out", "a.rsb", "--force"}).force);
  RecorderOptions r = MustParse({"--recover", "/d/.a.rsb.rec-1-abcdef.db"});
  ASSERT_TRUE(r.recover.has_value());
  EXPECT_EQ(*r.recover, "/d/.a.rsb.rec-1-abcdef.db");
  EXPECT_TRUE(r.out.empty()) << "--out is optional with --recover";
  RecorderOptions ro = MustParse({"--recover", "x.db", "--out", "b.rsb", "--force", "-v"});
  EXPECT_EQ(ro.out, "b.rsb");
  EXPECT_TRUE(ro.force);
  EXPECT_NE(ErrorOf({"--recover", "x.db", "--duration", "1s"}).find("--recover FILE takes only"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--recover", ""}).find("--recover: empty path"), std::string::npos);
  EXPECT_NE(ErrorOf({"--force"}).find("--out FILE.rsb is required"), std::string::npos);
}

TEST(ParseOptions, ServeAndItsOptions) {
  RecorderOptions o = MustParse({"--ring", "15m", "--serve", ":7443", "--serve-cert", "n.pem",
                                 "--serve-key", "n.key", "--serve-ca", "ca.pem",
                                 "--serve-max-queries", "4", "--serve-query-timeout", "5s"});
  ASSERT_TRUE(o.serve.has_value());
  EXPECT_EQ(*o.serve, ":7443");
  const std::vector<std::pair<std::string, std::string>> want = {{"cert", "n.pem"},
                                                                 {"key", "n.key"},
                                                                 {"ca", "ca.pem"},
                                                                 {"max-queries", "4"},
                                                                 {"query-timeout", "5s"}};
  EXPECT_EQ(o.serve_options, want);
  EXPECT_NE(ErrorOf({"--out", "x.rsb", "--serve-ca", "ca.pem"}).find("give --serve"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--recover", "x.db", "--serve", ":7443"}).find("not with --recover"),
            std::string::npos);
  EXPECT_NE(ErrorOf({"--out", "x.rsb", "--serve"}).find("--serve needs a value"),
            std::string::npos);
}

}  // namespace
}  // namespace rs::rec
