// Capture on the real libraries of the CUDA toolkit (no GPU needed: the calls fail fast but
// the uprobes fire with the real arguments), and discovery of a library that a process
// started after the recorder dlopen()s from a venv under /tmp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "capture_session.h"
#include "kernel_test.h"
#include "recorder/cuda_probe.h"
#include "recorder/nccl_probe.h"
#include "rscore/comm_hash.h"

namespace {

namespace fs = std::filesystem;
using capture_test::Child;
using capture_test::Int;
using capture_test::Row;
using capture_test::Rows;
using capture_test::Session;
using capture_test::Text;

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The usual places of the CUDA toolkit's libraries ($CUDA_HOME first); `sub` is a
// subdirectory of each ("stubs" for the toolkit's driver stub).
std::string FindLibrary(const std::vector<std::string>& names, const std::string& sub = "") {
  std::vector<std::string> dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* v = std::getenv(var)) {
      dirs.push_back(std::string(v) + "/lib");
      dirs.push_back(std::string(v) + "/lib64");
    }
  }
  for (const char* d :
       {"/usr/local/cuda/lib", "/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"}) {
    dirs.push_back(d);
  }
  for (const std::string& d : dirs) {
    for (const std::string& n : names) {
      const std::string path = sub.empty() ? d + "/" + n : d + "/" + sub + "/" + n;
      if (fs::exists(path)) return path;
    }
  }
  return "";
}

uint64_t HashOfHex(const std::string& hex) {
  unsigned char id[128] = {};
  for (size_t i = 0; i < 128 && 2 * i + 1 < hex.size(); ++i) {
    id[i] = static_cast<unsigned char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return rs::CommIdHash(id);
}

// Waits for `dlopen_driver driver` (the driver API on the toolkit's stub libcuda), ends the
// recording and returns the program's cuda_events rows in call order (none on a failure).
std::vector<Row> DriverProgramRows(Session& s, rs::rec::CudaProbe& probe, Child& child) {
  const pid_t pid = child.pid();  // Wait() forgets it
  const bool ran = child.ReadUntil("ctx_sync_ret", 30000);
  EXPECT_TRUE(ran);
  EXPECT_EQ(child.Wait(), 0);
  const bool finished = s.Finish(probe).ok();
  EXPECT_TRUE(finished);
  if (!ran || !finished) return {};
  return Rows(s.db(), "SELECT * FROM cuda_events WHERE pid = " + std::to_string(pid) +
                          " ORDER BY timestamp_ns, id");
}

std::vector<std::string> Apis(const std::vector<Row>& rows) {
  std::vector<std::string> apis;
  for (const Row& r : rows) apis.push_back(*Text(r, "api"));
  return apis;
}

TEST(RealLibraries, NcclAndCudaRuntimeCallsDecodeWithTheirReturnCodes) {
  REQUIRE_ROOT_OR_SKIP();
  const std::string nccl = FindLibrary({"libnccl.so.2"});
  const std::string cudart = FindLibrary({"libcudart.so.13", "libcudart.so.12"});
  SKIP_UNLESS_OR_FAIL_IN_CI(!nccl.empty() && !cudart.empty(),
                            "the CUDA toolkit's libnccl.so.2 / libcudart.so is not installed");
  rs::rec::RecorderOptions opts;
  opts.nccl_libs = {nccl};
  opts.cuda_libs = {cudart};
  Session s(opts);
  rs::rec::NcclProbe nccl_probe;
  rs::rec::CudaProbe cuda_probe(1);
  ASSERT_TRUE(s.Start(nccl_probe).ok());
  ASSERT_TRUE(s.Start(cuda_probe).ok());
  EXPECT_GE(nccl_probe.attacher()->libraries(), 1);
  EXPECT_GE(cuda_probe.attacher()->libraries(), 1);
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "real", nccl, cudart});
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.ReadUntil("sync_ret", 30000));
  s.Tick(nccl_probe);  // rows written (and callers symbolized) while the process runs
  child.Write("exit\n");
  ASSERT_EQ(child.Wait(), 0);
  ASSERT_TRUE(s.Finish(nccl_probe).ok());
  ASSERT_TRUE(s.Finish(cuda_probe).ok());

  // The real NCCL without a GPU: init fails (ncclUnhandledCudaError), a NULL comm is invalid.
  EXPECT_EQ(child.Int("get_unique_id_ret"), 0);
  // Other processes may use NCCL meanwhile (host-wide recording): only the driver's rows.
  const std::string where = " WHERE pid = " + std::to_string(pid) + " ORDER BY timestamp_ns, id";
  auto nrows = Rows(s.db(), "SELECT * FROM nccl_events" + where);
  ASSERT_EQ(nrows.size(), 3u);
  const int64_t cpid = pid;
  EXPECT_EQ(Int(nrows[0], "pid"), cpid);
  const Row& init = nrows[0];
  EXPECT_EQ(Text(init, "op"), "COMM_INIT");
  EXPECT_EQ(Int(init, "ret"), child.Int("init_ret"));
  EXPECT_EQ(Int(init, "ret"), 1);
  EXPECT_EQ(Int(init, "rank"), 3);
  EXPECT_EQ(Int(init, "nranks"), 4);
  EXPECT_EQ(Int(init, "comm_id_hash"), static_cast<int64_t>(HashOfHex(child.Value("unique_id"))));
  EXPECT_FALSE(Int(init, "comm"));  // failed: no communicator
  const Row& ar = nrows[1];
  EXPECT_EQ(Text(ar, "op"), "ALL_REDUCE");
  EXPECT_EQ(Int(ar, "pid"), cpid);
  EXPECT_EQ(Int(ar, "ret"), child.Int("allreduce_ret"));
  EXPECT_EQ(Int(ar, "ret"), 4);
  EXPECT_EQ(Int(ar, "count"), 16);
  EXPECT_EQ(Text(ar, "datatype"), "float32");
  EXPECT_EQ(Text(ar, "reduce_op"), "sum");
  EXPECT_EQ(Int(ar, "bytes"), 64);
  EXPECT_EQ(Int(ar, "stream"), 0x5151);
  EXPECT_EQ(Int(ar, "comm"), 0);
  EXPECT_FALSE(Int(ar, "seq"));
  EXPECT_FALSE(Int(ar, "rank"));
  ASSERT_TRUE(Int(ar, "duration_ns"));
  // ncclBcast calls ncclBroadcast through the PLT (lower sp, return armed): one row, the
  // outer call, whose caller is the driver, not libnccl.
  const Row& bc = nrows[2];
  EXPECT_EQ(Text(bc, "op"), "BROADCAST");
  EXPECT_EQ(Int(bc, "ret"), child.Int("bcast_ret"));
  EXPECT_EQ(Int(bc, "count"), 16);
  EXPECT_EQ(Int(bc, "root"), 1);
  EXPECT_EQ(Int(bc, "stream"), 0x5252);
  auto frames = s.db().QueryText("SELECT frames FROM stacks WHERE id = " +
                                 std::to_string(Int(bc, "stack_id").value_or(0)));
  ASSERT_TRUE(frames.ok() && *frames);
  EXPECT_NE((**frames).find("dlopen_driver"), std::string::npos) << **frames;
  EXPECT_EQ((**frames).find("libnccl"), std::string::npos) << **frames;

  // The CUDA runtime: every call returns an error without a device, with its arguments.
  auto crows = Rows(s.db(), "SELECT * FROM cuda_events" + where);
  std::vector<std::string> apis;
  for (const Row& r : crows) apis.push_back(*Text(r, "api"));
  ASSERT_EQ(apis,
            (std::vector<std::string>{"cudaMalloc", "cudaLaunchKernel", "cudaStreamSynchronize"}));
  for (const Row& r : crows) {
    EXPECT_EQ(Int(r, "pid"), cpid);
    EXPECT_EQ(Text(r, "library"), "cudart");
    EXPECT_EQ(Text(r, "state"), "complete");
    EXPECT_EQ(Int(r, "sample_weight"), 1);
    EXPECT_TRUE(Int(r, "duration_ns"));
  }
  EXPECT_EQ(Int(crows[0], "ret"), child.Int("malloc_ret"));
  EXPECT_NE(Int(crows[0], "ret"), 0);
  EXPECT_EQ(Int(crows[0], "bytes"), 1 << 20);
  EXPECT_FALSE(Int(crows[0], "ptr"));  // failed: no pointer
  EXPECT_EQ(Int(crows[1], "ret"), child.Int("launch_ret"));
  EXPECT_EQ(Int(crows[1], "kernel"), 0x1234);
  EXPECT_EQ(Int(crows[1], "stream"), 0x7777);
  EXPECT_EQ(Int(crows[2], "ret"), child.Int("sync_ret"));
  EXPECT_EQ(Int(crows[2], "ret"), 35);  // cudaErrorInsufficientDriver
  EXPECT_EQ(Int(crows[2], "stream"), 0x7777);

  // Attachments name the real files with their build ids; aliases were probed once.
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'nccl' AND ok = 1 "
                             "AND symbol = 'ncclAllReduce' AND target = '" +
                             nccl + "' AND length(build_id) = 40"),
            1);
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'cudart' AND ok = 1 "
                             "AND symbol = 'cudaMalloc' AND target = '" +
                             cudart + "'"),
            1);
}

TEST(RealLibraries, KernelLaunchesAreSampledOneInN) {
  REQUIRE_ROOT_OR_SKIP();
  const std::string cudart = FindLibrary({"libcudart.so.13", "libcudart.so.12"});
  SKIP_UNLESS_OR_FAIL_IN_CI(!cudart.empty(), "the CUDA toolkit's libcudart.so is not installed");
  rs::rec::RecorderOptions opts;
  opts.cuda_libs = {cudart};
  opts.cuda_launch_sample = 4;
  Session s(opts);
  rs::rec::CudaProbe probe(opts.cuda_launch_sample);
  ASSERT_TRUE(s.Start(probe).ok());
  constexpr int kLaunches = 400;
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "launches", cudart, std::to_string(kLaunches)});
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.ReadUntil("launch_ret", 30000));
  ASSERT_EQ(child.Wait(), 0);
  ASSERT_TRUE(s.Finish(probe).ok());
  auto rows = Rows(s.db(), "SELECT * FROM cuda_events WHERE pid = " + std::to_string(pid));
  // One in 4 per CPU: at most kLaunches / 4, at most one short per CPU the thread ran on.
  const int ncpu = static_cast<int>(sysconf(_SC_NPROCESSORS_CONF));
  EXPECT_LE(static_cast<int>(rows.size()), kLaunches / 4);
  EXPECT_GE(static_cast<int>(rows.size()), kLaunches / 4 - ncpu);
  for (const Row& r : rows) {
    EXPECT_EQ(Text(r, "api"), "cudaLaunchKernel");
    EXPECT_EQ(Int(r, "sample_weight"), 4);
    EXPECT_EQ(Int(r, "kernel"), 0x1234);
  }
  auto sample = s.db().QueryText("SELECT value FROM metadata WHERE key = 'cuda_launch_sample'");
  ASSERT_TRUE(sample.ok() && *sample);
  EXPECT_EQ(**sample, "4");
}

// The driver API on the toolkit's libcuda.so stub (what programs link against when built
// without a driver): the real symbols, every call returning CUDA_ERROR_STUB_LIBRARY (34).
TEST(RealLibraries, DriverApiCallsOnTheToolkitStubDecode) {
  REQUIRE_ROOT_OR_SKIP();
  const std::string cuda = FindLibrary({"libcuda.so"}, "stubs");
  SKIP_UNLESS_OR_FAIL_IN_CI(!cuda.empty(), "the CUDA toolkit's stubs/libcuda.so is not installed");
  rs::rec::RecorderOptions opts;
  opts.cuda_libs = {cuda};
  Session s(opts);
  rs::rec::CudaProbe probe(1);
  ASSERT_TRUE(s.Start(probe).ok());
  // The stub, and any CUDA runtime other processes of the machine have mapped (the test bed's
  // libcudart, loaded with its libnccl by tests running beside this one): the stub's
  // attachment is checked below.
  EXPECT_GE(probe.attacher()->libraries(), 1);
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "driver", cuda});
  auto rows = DriverProgramRows(s, probe, child);
  const std::vector<std::string> apis = Apis(rows);
  ASSERT_EQ(apis, (std::vector<std::string>{"cuMemAlloc_v2", "cuMemcpyHtoD_v2",
                                            "cuMemcpyDtoHAsync_v2", "cuLaunchKernel",
                                            "cuStreamSynchronize", "cuCtxSynchronize"}));
  const char* rets[] = {"mem_alloc_ret", "memcpy_htod_ret", "memcpy_dtoh_async_ret",
                        "launch_ret",    "stream_sync_ret", "ctx_sync_ret"};
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    EXPECT_EQ(Text(r, "library"), "cuda");
    EXPECT_EQ(Text(r, "state"), "complete");
    EXPECT_EQ(Int(r, "sample_weight"), 1);
    EXPECT_TRUE(Int(r, "duration_ns"));
    EXPECT_EQ(Int(r, "ret"), child.Int(rets[i])) << apis[i];
    EXPECT_EQ(Int(r, "ret"), 34) << apis[i];  // CUDA_ERROR_STUB_LIBRARY
  }
  EXPECT_EQ(Int(rows[0], "bytes"), 4096);
  EXPECT_FALSE(Int(rows[0], "ptr"));  // failed: no device pointer was written
  EXPECT_EQ(Int(rows[1], "ptr"), 0xd000);
  EXPECT_EQ(Int(rows[1], "bytes"), 256);
  EXPECT_EQ(Int(rows[1], "memcpy_kind"), 1);  // host to device
  EXPECT_FALSE(Int(rows[1], "stream"));
  EXPECT_EQ(Int(rows[2], "bytes"), 128);
  EXPECT_EQ(Int(rows[2], "memcpy_kind"), 2);  // device to host
  EXPECT_EQ(Int(rows[2], "stream"), 0x8888);
  EXPECT_EQ(Int(rows[3], "kernel"), 0x4321);
  EXPECT_EQ(Int(rows[3], "stream"), 0x8888);  // the 9th argument, [sp+24]
  EXPECT_EQ(Int(rows[4], "stream"), 0x8888);
  EXPECT_FALSE(Int(rows[5], "stream"));
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'cuda' AND ok = 1 "
                             "AND symbol = 'cuLaunchKernel' AND target = '" +
                             cuda + "'"),
            1);
}

// --cuda-launch-sample 0: the launch functions are not probed (a sampled-out launch still pays
// the breakpoint); every other call is still recorded.
TEST(RealLibraries, LaunchSampleZeroLeavesTheLaunchFunctionsUnprobed) {
  REQUIRE_ROOT_OR_SKIP();
  const std::string cuda = FindLibrary({"libcuda.so"}, "stubs");
  SKIP_UNLESS_OR_FAIL_IN_CI(!cuda.empty(), "the CUDA toolkit's stubs/libcuda.so is not installed");
  rs::rec::RecorderOptions opts;
  opts.cuda_libs = {cuda};
  opts.cuda_launch_sample = 0;
  Session s(opts);
  rs::rec::CudaProbe probe(opts.cuda_launch_sample);
  ASSERT_TRUE(s.Start(probe).ok());
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "driver", cuda});
  EXPECT_EQ(Apis(DriverProgramRows(s, probe, child)),
            (std::vector<std::string>{"cuMemAlloc_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoHAsync_v2",
                                      "cuStreamSynchronize", "cuCtxSynchronize"}));
  const std::string on_file = " AND target = '" + cuda + "'";
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE symbol = 'cuLaunchKernel'" +
                             on_file),
            0);
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'cuda' AND ok = 1 "
                             "AND symbol = 'cuStreamSynchronize'" +
                             on_file),
            1);
  auto sample = s.db().QueryText("SELECT value FROM metadata WHERE key = 'cuda_launch_sample'");
  ASSERT_TRUE(sample.ok() && *sample);
  EXPECT_EQ(**sample, "0");
}

// Attaching to a process that is calling the library in a loop: every call is recorded from
// the first one whose entry is seen. (A call entered between the creation of the entry and
// the return probes must not leave its thread's slot active: later calls from the same frame
// would look like tail calls of it and never be recorded.) Both attach methods.
TEST(Attach, CallsOfALoopRunningDuringTheAttachAreRecorded) {
  REQUIRE_ROOT_OR_SKIP();
  for (bool multi : {true, false}) {
    SCOPED_TRACE(multi ? "uprobe_multi" : "uprobe");
    rs::rec::RecorderOptions opts;
    opts.nccl_libs = {Env("CAPTURE_NCCL_CPU_LIB")};
    Child child({Env("CAPTURE_DLOPEN_DRIVER"), "loop", opts.nccl_libs[0], "20000"});
    const pid_t pid = child.pid();
    ASSERT_TRUE(child.ReadUntil("looping"));
    Session s(opts);
    rs::rec::NcclProbe probe;
    if (!multi) probe.DisableUprobeMulti();
    ASSERT_TRUE(s.Start(probe).ok());
    ASSERT_EQ(probe.attacher()->uprobe_multi(), multi);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(s.Finish(probe).ok());
    child.Write("stop\n");
    ASSERT_TRUE(child.ReadUntil("calls", 30000));
    ASSERT_EQ(child.Wait(), 0);
    const std::string of_pid = " FROM nccl_events WHERE pid = " + std::to_string(pid);
    const int64_t complete =
        *s.db().QueryInt("SELECT COUNT(*)" + of_pid + " AND state = 'complete'");
    const int64_t in_flight =
        *s.db().QueryInt("SELECT COUNT(*)" + of_pid + " AND state = 'in_flight'");
    // 200 ms of back-to-back calls (each a few microseconds with the probes on).
    EXPECT_GE(complete, 1000);
    EXPECT_LE(in_flight, 1);  // at most the call under way when recording ended
    // A call entered with no return probe armed would leave its slot stale (counted here):
    // return probes go first, so none is. (Most calls of the 200 ms are dropped as ring_full:
    // the rings are read only at Finish here.)
    EXPECT_EQ(*s.db().QueryInt("SELECT CAST(value AS INTEGER) FROM metadata WHERE key = "
                               "'nccl_drops_stale_entry'"),
              0);
  }
}

// A call left with siglongjmp never returns; the thread's next calls come from the same
// stack frame (the same sp as the abandoned entry, as a tail call would have). Each one is
// recorded: the abandoned entry's return address is not the uretprobe trampoline, so it is
// not under way any more; it is replaced and counted as a drop.
TEST(Attach, CallsAfterALongjmpOutOfAProbedCallAreRecorded) {
  REQUIRE_ROOT_OR_SKIP();
  rs::rec::RecorderOptions opts;
  opts.nccl_libs = {Env("CAPTURE_JUMP_LIB")};
  Session s(opts);
  rs::rec::NcclProbe probe;
  ASSERT_TRUE(s.Start(probe).ok());
  ASSERT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE ok = 1 AND symbol IN "
                             "('ncclGroupStart', 'ncclGroupEnd') AND target = '" +
                             opts.nccl_libs[0] + "'"),
            2);
  constexpr int kCalls = 50;
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "abandon", opts.nccl_libs[0], std::to_string(kCalls)});
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.ReadUntil("calls", 30000));
  ASSERT_EQ(child.Wait(), 0);
  ASSERT_TRUE(s.Finish(probe).ok());
  const std::string of_pid = " FROM nccl_events WHERE pid = " + std::to_string(pid);
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*)" + of_pid +
                             " AND op = 'GROUP_END' AND state = "
                             "'complete' AND ret = 0"),
            kCalls);
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*)" + of_pid + " AND op = 'GROUP_START'"), 0);
  // The abandoned ncclGroupStart, dropped as a stale entry (other processes of the host may
  // add theirs).
  EXPECT_GE(*s.db().QueryInt("SELECT CAST(value AS INTEGER) FROM metadata WHERE key = "
                             "'nccl_drops_stale_entry'"),
            1);
}

// A copy that a process loads while recording: with the library-load tracepoint it is
// attached as soon as the kernel reports the process mapping it (an mmap of the library's
// code), before any rescan: here the probe's periodic work (Tick) does not run, only the ring
// buffers are read. With --no-load-tracepoint nothing is reported and the periodic rescan
// (Tick) attaches it. Either way its calls after the attach are recorded.
void LateLoadIsAttached(bool load_tracepoint) {
  const fs::path root = fs::temp_directory_path() / ("rs_libmap_" + std::to_string(getpid()));
  const fs::path lib = root / "libnccl.so.2";
  fs::create_directories(root);
  fs::copy_file(Env("CAPTURE_NCCL_CPU_LIB"), lib, fs::copy_options::overwrite_existing);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{root};

  rs::rec::RecorderOptions opts;
  opts.load_tracepoint = load_tracepoint;
  Session s(opts);
  rs::rec::NcclProbe probe;
  ASSERT_TRUE(s.Start(probe).ok());
  EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'tracepoint' AND "
                             "target = 'syscalls/sys_enter_mmap' AND ok = 1"),
            load_tracepoint ? 1 : 0);
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "late", lib.string()});
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.ReadUntil("loaded"));
  auto attached = [&] {
    for (const auto& a : s.log().entries()) {
      if (a.ok && a.symbol == "ncclAllReduce" && a.target == lib.string()) return true;
    }
    return false;
  };
  EXPECT_FALSE(attached());
  s.ctx().poller->Consume();
  if (load_tracepoint) {
    ASSERT_TRUE(attached()) << "no attachment to " << lib << " after the library-load report";
    EXPECT_GE(probe.library_loads(), 1u);
  } else {
    EXPECT_FALSE(attached()) << "attached without a report or a rescan";
    EXPECT_EQ(probe.library_loads(), 0u);
    EXPECT_EQ(*s.db().QueryInt("SELECT COUNT(*) FROM attachments WHERE kind = 'tracepoint' AND "
                               "target = 'syscalls/sys_enter_mmap' AND ok = 0 AND "
                               "error = 'not attached: --no-load-tracepoint'"),
              1);
    for (int i = 0; i < 40 && !attached(); ++i) {  // the first Tick rescans
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      s.Tick(probe);
    }
    ASSERT_TRUE(attached()) << "no attachment to " << lib << " after 2 s of rescans";
  }
  child.Write("go\n");
  ASSERT_TRUE(child.ReadUntil("unique_id"));
  ASSERT_EQ(child.Wait(), 0);
  ASSERT_TRUE(s.Finish(probe).ok());
  auto rows = Rows(s.db(), "SELECT * FROM nccl_events WHERE pid = " + std::to_string(pid) +
                               " ORDER BY timestamp_ns, id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(Text(rows[0], "op"), "COMM_INIT");
  EXPECT_EQ(Int(rows[0], "rank"), 2);
  EXPECT_EQ(Int(rows[1], "seq"), 1);
}

TEST(LibraryDiscovery, LibraryLoadIsAttachedWhenTheKernelReportsItsMapping) {
  REQUIRE_ROOT_OR_SKIP();
  LateLoadIsAttached(/*load_tracepoint=*/true);
}

TEST(LibraryDiscovery, WithoutTheLoadTracepointTheRescanAttachesALibraryLoadedLater) {
  REQUIRE_ROOT_OR_SKIP();
  LateLoadIsAttached(/*load_tracepoint=*/false);
}

// A library load reported when recording ends (still in the ring at Finish) attaches nothing:
// after Finish has detached, no probe may be created again.
TEST(LibraryDiscovery, LibraryLoadReportedAtFinishAttachesNothing) {
  REQUIRE_ROOT_OR_SKIP();
  const fs::path root = fs::temp_directory_path() / ("rs_libfin_" + std::to_string(getpid()));
  const fs::path lib = root / "libnccl.so.2";
  fs::create_directories(root);
  fs::copy_file(Env("CAPTURE_NCCL_CPU_LIB"), lib, fs::copy_options::overwrite_existing);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{root};
  Session s(rs::rec::RecorderOptions{});
  rs::rec::NcclProbe probe;
  ASSERT_TRUE(s.Start(probe).ok());
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "late", lib.string()});
  ASSERT_TRUE(child.ReadUntil("loaded"));
  ASSERT_TRUE(s.Finish(probe).ok());
  for (const auto& a : s.log().entries()) EXPECT_NE(a.target, lib.string()) << a.symbol;
  child.Write("go\n");
  ASSERT_TRUE(child.ReadUntil("unique_id"));
  ASSERT_EQ(child.Wait(), 0);
}

TEST(LibraryDiscovery, VenvCopyDlopenedByALaterProcessIsRecorded) {
  REQUIRE_ROOT_OR_SKIP();
  const fs::path root = fs::temp_directory_path() / ("rs_capture_" + std::to_string(getpid()));
  const fs::path libdir = root / "venv/lib/python3.11/site-packages/nvidia/nccl/lib";
  fs::create_directories(libdir);
  const fs::path lib = libdir / "libnccl.so.2";
  fs::copy_file(Env("CAPTURE_NCCL_CPU_LIB"), lib, fs::copy_options::overwrite_existing);
  struct Cleanup {
    fs::path p;
    ~Cleanup() { fs::remove_all(p); }
  } cleanup{root};

  Session s(rs::rec::RecorderOptions{});  // no --nccl-lib: discovery only
  rs::rec::NcclProbe probe;
  ASSERT_TRUE(s.Start(probe).ok());
  Child child({Env("CAPTURE_DLOPEN_DRIVER"), "late", lib.string()});
  const pid_t pid = child.pid();
  ASSERT_TRUE(child.ReadUntil("loaded"));
  // The recorder's periodic rescan finds the new copy and attaches to it.
  bool attached = false;
  for (int i = 0; i < 50 && !attached; ++i) {
    s.Tick(probe);
    for (const auto& a : s.log().entries()) {
      attached |= a.ok && a.symbol == "ncclAllReduce" && a.target == lib.string();
    }
    if (!attached) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(attached) << "no attachment to " << lib;
  child.Write("go\n");
  ASSERT_TRUE(child.ReadUntil("unique_id"));
  ASSERT_EQ(child.Wait(), 0);
  ASSERT_TRUE(s.Finish(probe).ok());

  auto rows = Rows(s.db(), "SELECT * FROM nccl_events WHERE pid = " + std::to_string(pid) +
                               " ORDER BY timestamp_ns, id");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(Text(rows[0], "op"), "COMM_INIT");
  EXPECT_EQ(Int(rows[0], "rank"), 2);
  EXPECT_EQ(Int(rows[0], "nranks"), 3);
  EXPECT_EQ(Int(rows[0], "ret"), 0);
  const int64_t hash = static_cast<int64_t>(HashOfHex(child.Value("unique_id")));
  EXPECT_EQ(Int(rows[0], "comm_id_hash"), hash);
  EXPECT_EQ(Text(rows[1], "op"), "ALL_REDUCE");
  EXPECT_EQ(Int(rows[1], "rank"), 2);
  EXPECT_EQ(Int(rows[1], "comm_id_hash"), hash);
  EXPECT_EQ(Int(rows[1], "seq"), 1);
  EXPECT_EQ(Int(rows[1], "ret"), child.Int("allreduce_ret"));
}

}  // namespace
