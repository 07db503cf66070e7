// Loads NCCL / CUDA runtime libraries with dlopen (no link-time dependency, like a Python
// process importing a wheel) and calls them with known arguments for the capture tests.
//
//   dlopen_driver real NCCL_LIB CUDART_LIB   real libnccl.so.2 + libcudart.so.13 without a GPU:
//       ncclGetUniqueId, ncclCommInitRank (fails fast), ncclAllReduce and ncclBcast with a
//       NULL comm, cudaMalloc, cudaLaunchKernel, cudaStreamSynchronize; then waits for a line
//       on stdin before it exits (its callers are symbolized while it runs)
//   dlopen_driver launches CUDART_LIB N      N cudaLaunchKernel calls
//   dlopen_driver attach-latency NCCL_LIB    dlopen, print the wall-clock time of the load
//       ('loaded_ns'), then ncclGroupStart + ncclGroupEnd every 100 us for 300 ms: the first
//       recorded call tells how soon after the load the recorder attached
//   dlopen_driver loop NCCL_LIB MS           ncclGroupStart + ncclGroupEnd back to back until a
//       line arrives on stdin, for MS milliseconds at most (prints 'looping' first, then
//       'calls N': the pairs made)
//   dlopen_driver abandon JUMP_LIB N         tests/capture/jump_lib.cc: ncclGroupStart, left
//       with siglongjmp from a SIGALRM handler after 100 ms, then N ncclGroupEnd calls from
//       the same frame (prints 'calls N')
//   dlopen_driver driver CUDA_LIB            the driver API (the toolkit's libcuda.so stub
//       returns CUDA_ERROR_STUB_LIBRARY): cuMemAlloc_v2, cuMemcpyHtoD_v2,
//       cuMemcpyDtoHAsync_v2, cuLaunchKernel, cuStreamSynchronize, cuCtxSynchronize
//   dlopen_driver late NCCL_LIB [now]        the test bed's library (no peers): prints
//       'loaded', waits for a line on stdin (not with 'now': straight on), then
//       CommInitRank (rank 2 of 3) + one AllReduce
//
// Output lines: 'key value'.
#include <dlfcn.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

struct UniqueId {
  char internal[128];
};
struct Dim3 {
  unsigned x, y, z;
};
using GetUniqueIdFn = int (*)(UniqueId*);
using CommInitRankFn = int (*)(void**, int, UniqueId, int);
using AllReduceFn = int (*)(const void*, void*, size_t, int, int, void*, void*);
using BcastFn = int (*)(void*, size_t, int, int, void*, void*);
using MallocFn = int (*)(void**, size_t);
using LaunchFn = int (*)(const void*, Dim3, Dim3, void**, size_t, void*);
using StreamSyncFn = int (*)(void*);
using CuMemAllocFn = int (*)(unsigned long long*, size_t);
using CuMemcpyHtoDFn = int (*)(unsigned long long, const void*, size_t);
using CuMemcpyDtoHAsyncFn = int (*)(void*, unsigned long long, size_t, void*);
using CuLaunchKernelFn = int (*)(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 unsigned, void*, void**, void**);
using CuCtxSyncFn = int (*)();

void* Open(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "dlopen_driver: %s\n", dlerror());
    std::exit(1);
  }
  return h;
}

template <typename F>
F Sym(void* h, const char* name) {
  void* p = dlsym(h, name);
  if (!p) {
    std::fprintf(stderr, "dlopen_driver: missing %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

std::string Hex(const UniqueId& id) {
  std::string s;
  char b[3];
  for (unsigned char c : id.internal) {
    std::snprintf(b, sizeof(b), "%02x", c);
    s += b;
  }
  return s;
}

int Real(const char* nccl_path, const char* cudart_path) {
  void* nccl = Open(nccl_path);
  UniqueId id;
  std::memset(&id, 0, sizeof(id));
  int r = Sym<GetUniqueIdFn>(nccl, "ncclGetUniqueId")(&id);
  std::printf("get_unique_id_ret %d\nunique_id %s\n", r, Hex(id).c_str());
  void* comm = nullptr;
  r = Sym<CommInitRankFn>(nccl, "ncclCommInitRank")(&comm, 4, id, 3);
  std::printf("init_ret %d\n", r);
  float a[16] = {}, b[16] = {};
  r = Sym<AllReduceFn>(nccl, "ncclAllReduce")(a, b, 16, /*float32*/ 7, /*sum*/ 0, nullptr,
                                              reinterpret_cast<void*>(0x5151));
  std::printf("allreduce_ret %d\n", r);
  // NCCL's ncclBcast calls ncclBroadcast (a nested probed call: one row, the outer one).
  r = Sym<BcastFn>(nccl, "ncclBcast")(a, 16, /*float32*/ 7, /*root*/ 1, nullptr,
                                      reinterpret_cast<void*>(0x5252));
  std::printf("bcast_ret %d\n", r);
  void* cudart = Open(cudart_path);
  void* dev = nullptr;
  r = Sym<MallocFn>(cudart, "cudaMalloc")(&dev, 1 << 20);
  std::printf("malloc_ret %d\n", r);
  r = Sym<LaunchFn>(cudart, "cudaLaunchKernel")(reinterpret_cast<void*>(0x1234), Dim3{2, 1, 1},
                                                Dim3{64, 1, 1}, nullptr, 256,
                                                reinterpret_cast<void*>(0x7777));
  std::printf("launch_ret %d\n", r);
  r = Sym<StreamSyncFn>(cudart, "cudaStreamSynchronize")(reinterpret_cast<void*>(0x7777));
  std::printf("sync_ret %d\n", r);
  std::fflush(stdout);
  char line[64];
  return std::fgets(line, sizeof(line), stdin) ? 0 : 1;  // stays until told to exit
}

int Late(const char* nccl_path, bool wait) {
  setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "sync", 1);
  void* nccl = Open(nccl_path);
  std::printf("loaded\n");
  std::fflush(stdout);
  char line[64];
  if (wait && !std::fgets(line, sizeof(line), stdin)) return 1;
  UniqueId id;
  for (int i = 0; i < 128; ++i) id.internal[i] = static_cast<char>(i * 3 + 11);
  void* comm = nullptr;
  int r = Sym<CommInitRankFn>(nccl, "ncclCommInitRank")(&comm, 3, id, 2);
  float a[8] = {}, b[8] = {};
  int r2 = Sym<AllReduceFn>(nccl, "ncclAllReduce")(a, b, 8, 7, 0, comm, nullptr);
  std::printf("init_ret %d\nallreduce_ret %d\nunique_id %s\n", r, r2, Hex(id).c_str());
  std::fflush(stdout);
  return 0;
}

int AttachLatency(const char* nccl_path) {
  using GroupFn = int (*)();
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  const long long t0 = ts.tv_sec * 1000000000LL + ts.tv_nsec;
  void* nccl = Open(nccl_path);
  auto start = Sym<GroupFn>(nccl, "ncclGroupStart");
  auto end = Sym<GroupFn>(nccl, "ncclGroupEnd");
  for (int i = 0; i < 3000; ++i) {
    start();
    end();
    usleep(100);
  }
  std::printf("loaded_ns %lld\n", t0);
  std::fflush(stdout);
  return 0;
}

long long NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int Loop(const char* nccl_path, int ms) {
  using GroupFn = int (*)();
  void* nccl = Open(nccl_path);
  auto start = Sym<GroupFn>(nccl, "ncclGroupStart");
  auto end = Sym<GroupFn>(nccl, "ncclGroupEnd");
  std::printf("looping\n");
  std::fflush(stdout);
  const long long until = NowNs() + ms * 1000000LL;
  long long calls = 0;
  pollfd in{0, POLLIN, 0};
  while (NowNs() < until) {
    start();
    end();
    if (++calls % 1024 == 0 && poll(&in, 1, 0) > 0) break;
  }
  std::printf("calls %lld\n", calls);
  std::fflush(stdout);
  return 0;
}

sigjmp_buf g_jump;

void JumpOut(int) { siglongjmp(g_jump, 1); }

int Abandon(const char* lib_path, int n) {
  using GroupFn = int (*)();
  void* lib = Open(lib_path);
  auto start = Sym<GroupFn>(lib, "ncclGroupStart");
  auto end = Sym<GroupFn>(lib, "ncclGroupEnd");
  signal(SIGALRM, JumpOut);
  itimerval once{};
  once.it_value.tv_usec = 100000;
  if (sigsetjmp(g_jump, 1) == 0) {
    setitimer(ITIMER_REAL, &once, nullptr);
    start();  // never returns
  }
  for (int i = 0; i < n; ++i) end();
  std::printf("calls %d\n", n);
  std::fflush(stdout);
  return 0;
}

int Launches(const char* cudart_path, int n) {
  void* cudart = Open(cudart_path);
  auto launch = Sym<LaunchFn>(cudart, "cudaLaunchKernel");
  int last = 0;
  for (int i = 0; i < n; ++i) {
    last = launch(reinterpret_cast<void*>(0x1234), Dim3{1, 1, 1}, Dim3{32, 1, 1}, nullptr, 0,
                  reinterpret_cast<void*>(0x7777));
  }
  std::printf("launch_ret %d\n", last);
  std::fflush(stdout);
  return 0;
}

int Driver(const char* cuda_path) {
  void* cuda = Open(cuda_path);
  void* stream = reinterpret_cast<void*>(0x8888);
  unsigned long long dev = 0;
  int r = Sym<CuMemAllocFn>(cuda, "cuMemAlloc_v2")(&dev, 4096);
  std::printf("mem_alloc_ret %d\n", r);
  char host[256] = {};
  r = Sym<CuMemcpyHtoDFn>(cuda, "cuMemcpyHtoD_v2")(0xd000, host, sizeof(host));
  std::printf("memcpy_htod_ret %d\n", r);
  r = Sym<CuMemcpyDtoHAsyncFn>(cuda, "cuMemcpyDtoHAsync_v2")(host, 0xd000, 128, stream);
  std::printf("memcpy_dtoh_async_ret %d\n", r);
  r = Sym<CuLaunchKernelFn>(cuda, "cuLaunchKernel")(reinterpret_cast<void*>(0x4321), 2, 1, 1, 64, 1,
                                                    1, 128, stream, nullptr, nullptr);
  std::printf("launch_ret %d\n", r);
  r = Sym<StreamSyncFn>(cuda, "cuStreamSynchronize")(stream);
  std::printf("stream_sync_ret %d\n", r);
  r = Sym<CuCtxSyncFn>(cuda, "cuCtxSynchronize")();
  std::printf("ctx_sync_ret %d\n", r);
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "real") == 0) return Real(argv[2], argv[3]);
  if ((argc == 3 || argc == 4) && std::strcmp(argv[1], "late") == 0) {
    return Late(argv[2], argc == 3 || std::strcmp(argv[3], "now") != 0);
  }
  if (argc == 3 && std::strcmp(argv[1], "driver") == 0) return Driver(argv[2]);
  if (argc == 3 && std::strcmp(argv[1], "attach-latency") == 0) return AttachLatency(argv[2]);
  if (argc == 4 && std::strcmp(argv[1], "loop") == 0) return Loop(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "abandon") == 0) {
    return Abandon(argv[2], std::atoi(argv[3]));
  }
  if (argc == 4 && std::strcmp(argv[1], "launches") == 0) {
    return Launches(argv[2], std::atoi(argv[3]));
  }
  std::fprintf(stderr,
               "usage: dlopen_driver real NCCL_LIB CUDART_LIB | launches CUDART_LIB N | late "
               "NCCL_LIB [now] | driver CUDA_LIB | attach-latency NCCL_LIB | loop NCCL_LIB MS | "
               "abandon JUMP_LIB N\n");
  return 2;
}
