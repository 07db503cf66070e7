// The test bed's CUDA runtime: work runs later and in stream order, the host returns at once,
// events order streams, the legacy default stream synchronizes with blocking streams (not with
// non-blocking ones), CUDA_LAUNCH_BLOCKING makes launches synchronous, arguments are copied at
// launch, errors are remembered, and each device has its own clock. Kernels that wait on a
// gate the test opens make the ordering checks independent of timing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "child_check.h"
#include "cuda_runtime_api.h"
#include "entry_byte.h"

namespace {

std::atomic<bool> g_gate{false};
std::mutex g_log_mu;
std::vector<std::string> g_log;

void Log(const std::string& s) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log.push_back(s);
}

// Kernels: each takes its arguments as 8-byte values.
void GatedKernel(void** args) {  // (const char* tag)
  while (!g_gate.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  Log(*static_cast<const char**>(args[0]));
}
void LogKernel(void** args) { Log(*static_cast<const char**>(args[0])); }  // (const char* tag)
void StoreKernel(void** args) {  // (int64_t* where, int64_t value)
  **static_cast<int64_t**>(args[0]) = *static_cast<int64_t*>(args[1]);
}
void BusyKernel(void** args) { cudacpuKernelBusy(*static_cast<uint64_t*>(args[0])); }  // (ns)

struct Registered {
  Registered() {
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&GatedKernel), "gated", 1);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&LogKernel), "log", 1);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&StoreKernel), "store", 2);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&BusyKernel), "busy", 1);
  }
};

cudaError_t Launch(void (*k)(void**), std::vector<void*> args, cudaStream_t s) {
  static Registered once;
  return cudaLaunchKernel(reinterpret_cast<const void*>(k), dim3(1), dim3(32), args.data(), 0, s);
}

void Reset() {
  g_gate = false;
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log.clear();
}

std::vector<std::string> LogCopy() {
  std::lock_guard<std::mutex> lock(g_log_mu);
  return g_log;
}

int64_t MonoNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// Runs body in a forked child (a fresh runtime that reads the environment anew); the child's
// exit status: 0 = pass, else the failing line.
int InChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

TEST(CudaCpu, EntryPointsStartWithPushRbp) {
  const void* fns[] = {reinterpret_cast<const void*>(&cudaLaunchKernel),
                       reinterpret_cast<const void*>(&cudaMemcpy),
                       reinterpret_cast<const void*>(&cudaStreamSynchronize),
                       reinterpret_cast<const void*>(&cudaEventRecord),
                       reinterpret_cast<const void*>(&cudaGetLastError)};
  for (const void* f : fns) EXPECT_EQ(FirstByteOnDisk(f), 0x55);  // push %rbp
}

TEST(CudaCpu, LaunchReturnsBeforeTheKernelRunsAndStreamOrderHolds) {
  Reset();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const char* a = "a";
  const char* b = "b";
  ASSERT_EQ(Launch(GatedKernel, {&a}, s), cudaSuccess);
  ASSERT_EQ(Launch(LogKernel, {&b}, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);  // the gate is closed: nothing ran
  EXPECT_TRUE(LogCopy().empty());
  g_gate = true;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  EXPECT_EQ(LogCopy(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
}

TEST(CudaCpu, ACapturedGraphRunsNothingUntilEachLaunch) {
  Reset();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const char* a = "a";
  const char* b = "b";
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusNone);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamIsCapturing(s, &status), cudaSuccess);
  EXPECT_EQ(status, cudaStreamCaptureStatusActive);
  EXPECT_EQ(cudacpuStreamCapturing(s, cudacpuHostDevice()), 1);
  ASSERT_EQ(Launch(LogKernel, {&a}, s), cudaSuccess);
  // A library's node: called at each launch with the launch stream.
  static std::atomic<int> launched{0}, released{0};
  ASSERT_EQ(cudacpuCaptureNode(
                s, cudacpuHostDevice(), [](void*, cudaStream_t) { ++launched; }, nullptr,
                [](void*) { ++released; }),
            1);
  ASSERT_EQ(Launch(LogKernel, {&b}, s), cudaSuccess);
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  EXPECT_EQ(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_TRUE(LogCopy().empty());  // captured, not run
  EXPECT_EQ(launched.load(), 0);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);  // the instance keeps the nodes
  EXPECT_EQ(released.load(), 0);
  cudaStream_t other = nullptr;
  ASSERT_EQ(cudaStreamCreate(&other), cudaSuccess);
  // Two streams run concurrently (CUDA orders work within a stream only): the first launch is
  // waited for before the second, so that the log shows each launch's nodes in their order.
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, other), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(other), cudaSuccess);
  EXPECT_EQ(LogCopy(), (std::vector<std::string>{"a", "b", "a", "b"}));
  EXPECT_EQ(launched.load(), 2);
  ASSERT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(released.load(), 1);
  EXPECT_EQ(cudacpuCaptureNode(
                s, cudacpuHostDevice(), [](void*, cudaStream_t) {}, nullptr, nullptr),
            0);  // not capturing
  EXPECT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(other), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalState);  // the refused second EndCapture
}

TEST(CudaCpu, StreamWaitEventOrdersTwoStreams) {
  Reset();
  cudaStream_t compute = nullptr, comm = nullptr;
  cudaEvent_t ready = nullptr;
  ASSERT_EQ(cudaStreamCreate(&compute), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&comm, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), cudaSuccess);
  const char* grad = "grad";
  const char* reduce = "reduce";
  ASSERT_EQ(Launch(GatedKernel, {&grad}, compute), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(ready, compute), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(ready), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamWaitEvent(comm, ready, 0), cudaSuccess);
  ASSERT_EQ(Launch(LogKernel, {&reduce}, comm), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(cudaStreamQuery(comm), cudaErrorNotReady);  // waits for compute's event
  EXPECT_TRUE(LogCopy().empty());
  g_gate = true;
  ASSERT_EQ(cudaStreamSynchronize(comm), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(ready), cudaSuccess);
  EXPECT_EQ(LogCopy(), (std::vector<std::string>{"grad", "reduce"}));
  cudaEventDestroy(ready);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(comm);
}

TEST(CudaCpu, BlockingMemcpyWaitsForBlockingStreamsOnly) {
  Reset();
  cudaStream_t blocking = nullptr, nonblocking = nullptr;
  ASSERT_EQ(cudaStreamCreate(&blocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking), cudaSuccess);
  const char* tag = "nb";
  ASSERT_EQ(Launch(GatedKernel, {&tag}, nonblocking), cudaSuccess);
  int64_t src = 7, dst = 0;
  // The gate is closed: a copy that waited for the non-blocking stream would never return.
  ASSERT_EQ(cudaMemcpy(&dst, &src, sizeof(src), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(dst, 7);
  EXPECT_EQ(cudaStreamQuery(nonblocking), cudaErrorNotReady);

  // Work on a blocking stream: the loss copy must wait for it.
  const char* tag2 = "blocking";
  ASSERT_EQ(Launch(GatedKernel, {&tag2}, blocking), cudaSuccess);
  std::atomic<bool> copied{false};
  std::thread host([&] {
    int64_t v = 9, out = 0;
    cudaMemcpy(&out, &v, sizeof(v), cudaMemcpyDeviceToHost);
    copied = out == 9;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(copied.load()) << "cudaMemcpy returned before the blocking stream's kernel ran";
  g_gate = true;
  host.join();
  EXPECT_TRUE(copied.load());
  std::vector<std::string> log = LogCopy();  // the copy returned after the kernel ran
  EXPECT_NE(std::find(log.begin(), log.end(), "blocking"), log.end());
  cudaStreamSynchronize(nonblocking);
  cudaStreamDestroy(blocking);
  cudaStreamDestroy(nonblocking);
}

TEST(CudaCpu, ArgumentsAreCopiedAtLaunch) {
  Reset();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  const char* tag = "gate";
  ASSERT_EQ(Launch(GatedKernel, {&tag}, s), cudaSuccess);
  int64_t where = 0;
  int64_t* ptr = &where;
  int64_t value = 41;
  ASSERT_EQ(Launch(StoreKernel, {&ptr, &value}, s), cudaSuccess);
  value = 1000;  // after the launch: the kernel must still store 41
  g_gate = true;
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(where, 41);
  cudaStreamDestroy(s);
}

TEST(CudaCpu, PerThreadAndExtendedLaunchVariants) {
  Reset();
  int64_t a = 0, b = 0;
  int64_t* pa = &a;
  int64_t* pb = &b;
  int64_t one = 1, two = 2;
  std::vector<void*> args_a{&pa, &one}, args_b{&pb, &two};
  static Registered once;
  // _ptsz: NULL is this thread's own stream, which the legacy-stream sync covers (blocking).
  ASSERT_EQ(cudaLaunchKernel_ptsz(reinterpret_cast<const void*>(&StoreKernel), dim3(1), dim3(1),
                                  args_a.data(), 0, nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize_ptsz(nullptr), cudaSuccess);
  EXPECT_EQ(a, 1);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  cudaLaunchConfig_t config{};
  config.stream = s;
  ASSERT_EQ(
      cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(&StoreKernel), args_b.data()),
      cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(b, 2);
  void* p = nullptr;
  ASSERT_EQ(cudaMallocManaged(&p, 64, cudaMemAttachGlobal), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  cudaStreamDestroy(s);
}

TEST(CudaCpu, ErrorsAreReturnedAndRemembered) {
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  int not_a_kernel = 0;
  EXPECT_EQ(cudaLaunchKernel(&not_a_kernel, dim3(1), dim3(1), nullptr, 0, nullptr),
            cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(99), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(0x1234)),
            cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaFree(&not_a_kernel), cudaErrorInvalidValue);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorNotReady), "device not ready");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice");
  cudaGetLastError();
}

TEST(CudaCpu, EventsTimeTheDevicesBusyTime) {
  cudaStream_t s = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  uint64_t ns = 20000000;
  int64_t host0 = MonoNs();
  ASSERT_EQ(cudaEventRecord(start, s), cudaSuccess);
  ASSERT_EQ(Launch(BusyKernel, {&ns}, s), cudaSuccess);
  ASSERT_EQ(Launch(BusyKernel, {&ns}, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(stop, s), cudaSuccess);
  int64_t enqueue_ns = MonoNs() - host0;
  ASSERT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 40.0f);  // two kernels of 20 ms of device time, in order
  EXPECT_LT(enqueue_ns, 40000000) << "the launches waited for the kernels";
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
}

TEST(CudaCpu, FreeWaitsForTheDevice) {
  Reset();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 1000), cudaSuccess);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  const char* tag = "last use";
  ASSERT_EQ(Launch(GatedKernel, {&tag}, s), cudaSuccess);
  std::atomic<bool> freed{false};
  std::thread host([&] {
    cudaFree(p);
    freed = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(freed.load()) << "cudaFree did not wait for the device";
  g_gate = true;
  host.join();
  EXPECT_EQ(LogCopy().back(), "last use");
  cudaStreamDestroy(s);
}

TEST(CudaCpu, DestroyedStreamStillFinishesItsWork) {
  Reset();
  cudaStream_t s = nullptr;
  cudaEvent_t done = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&done), cudaSuccess);
  const char* tag = "after destroy";
  ASSERT_EQ(Launch(GatedKernel, {&tag}, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(done, s), cudaSuccess);
  ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  cudaGetLastError();
  g_gate = true;
  ASSERT_EQ(cudaEventSynchronize(done), cudaSuccess);
  EXPECT_EQ(LogCopy(), (std::vector<std::string>{"after destroy"}));
  cudaEventDestroy(done);
}

TEST(CudaCpu, LaunchBlockingMakesLaunchesSynchronous) {
  int status = InChild([] {
    setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
    CHILD_CHECK(cudacpuLaunchBlocking() == 1);
    cudaStream_t s = nullptr;
    CHILD_CHECK(cudaStreamCreate(&s) == cudaSuccess);
    int64_t where = 0;
    int64_t* ptr = &where;
    int64_t value = 5;
    CHILD_CHECK(Launch(StoreKernel, {&ptr, &value}, s) == cudaSuccess);
    CHILD_CHECK(where == 5);  // done when the launch returned
    CHILD_CHECK(cudaStreamQuery(s) == cudaSuccess);
    return 0;
  });
  EXPECT_EQ(status, 0);
  EXPECT_EQ(cudacpuLaunchBlocking(), 0);  // this process did not set it
}

TEST(CudaCpu, EachDeviceClockFollowsItsConfiguration) {
  int status = InChild([] {
    setenv("RANKSCOPE_CUDA_CPU_CLOCK", "5000000000,200", 1);
    (void)cudacpuGlobaltimer();  // the runtime starts (and reads the variable) here
    // The device clock's offset from CLOCK_MONOTONIC, bracketed by host readings before and
    // after it: [lo, hi]; the tightest of several tries.
    auto offset = [](int64_t* lo, int64_t* hi) {
      int64_t width = INT64_MAX;
      for (int i = 0; i < 20; ++i) {
        int64_t before = MonoNs();
        auto g = static_cast<int64_t>(cudacpuGlobaltimer());
        int64_t after = MonoNs();
        if (after - before < width) {
          width = after - before;
          *lo = g - after;
          *hi = g - before;
        }
      }
    };
    int64_t lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
    int64_t t1 = MonoNs();
    offset(&lo1, &hi1);
    CHILD_CHECK(lo1 < 5000000000 + 2000000 && hi1 > 5000000000 - 2000000);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int64_t t2 = MonoNs();
    offset(&lo2, &hi2);
    // 200 ppm of the time that passed: the offset grew by that, within the brackets (and the
    // few microseconds between taking t and the brackets).
    int64_t want = (t2 - t1) / 5000;
    CHILD_CHECK(lo2 - hi1 <= want + 2000 && hi2 - lo1 >= want - 2000);
    return 0;
  });
  EXPECT_EQ(status, 0);
  status = InChild([] {  // relative to the wall clock
    setenv("RANKSCOPE_CUDA_CPU_CLOCK", "realtime-3000000", 1);
    timespec real{};
    clock_gettime(CLOCK_REALTIME, &real);
    int64_t wall = int64_t{real.tv_sec} * 1000000000 + real.tv_nsec;
    int64_t diff = static_cast<int64_t>(cudacpuGlobaltimer()) - wall;
    CHILD_CHECK(diff > -3000000 - 1000000 && diff < -3000000 + 1000000);
    return 0;
  });
  EXPECT_EQ(status, 0);
  // Default: the globaltimer counts from the Unix epoch, like a GPU's.
  timespec real{};
  clock_gettime(CLOCK_REALTIME, &real);
  int64_t wall = int64_t{real.tv_sec} * 1000000000 + real.tv_nsec;
  int64_t diff = static_cast<int64_t>(cudacpuGlobaltimer()) - wall;
  EXPECT_LT(std::llabs(diff), 50000000);
}

TEST(CudaCpu, WorkersKnowTheirDevice) {
  ASSERT_EQ(cudaSetDevice(3), cudaSuccess);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  std::atomic<int> seen{-2};
  ASSERT_EQ(
      cudaLaunchHostFunc(
          s,
          [](void* p) { static_cast<std::atomic<int>*>(p)->store(cudacpuCurrentWorkerDevice()); },
          &seen),
      cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(seen.load(), 3);
  EXPECT_EQ(cudacpuCurrentWorkerDevice(), -1);  // the test's own thread is a host thread
  cudaStreamDestroy(s);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

}  // namespace
