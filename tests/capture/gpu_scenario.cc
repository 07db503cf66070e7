// Ranks of the test bed (libnccl.so.2 in async mode: collectives run later on the test bed's
// CUDA streams) with rankscope's NCCL profiler plugin loaded (NCCL_PROFILER_PLUGIN), for the
// gpu capture test. Each rank joins its communicator, waits until a recorder reads its plugin
// region (the heartbeat), then makes one warm-up call: NCCL reads the profiler's activation
// mask once per call, so the first operation after a recorder came is counted, not recorded.
//
//   gpu_scenario ops N   N >= 4 ranks (forked, loopback): after the warm-up AllReduce, two
//                        AllReduces, AllGather, Broadcast (root 0), Reduce (root 1),
//                        ReduceScatter, a group of Send to the next rank and Recv from the
//                        previous one; then ncclCommSplit by rank parity (each child asks its
//                        rank and size), two AllReduces and a Send to the next / Recv from
//                        the previous rank of the child;
//                        destroys both and exits 0 when every rank succeeded
//   gpu_scenario hang    2 ranks: the warm-up, one AllReduce together; then rank 1 stops
//                        calling NCCL and rank 0 enqueues two more AllReduces: the first one
//                        starts on the device and waits for rank 1, the second waits behind
//                        it; prints 'hanging' and stays until killed
//
// Output lines (one write each): 'rank<R>_pid PID', 'rank<R>_ops N' (operations launched
// after the warm-up), 'hanging'.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "cuda_runtime_api.h"
#include "nccl.h"
#include "recorder/plugin/gpu_ring.h"

namespace {

void Line(const char* fmt, ...) {
  char buf[128];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
  va_end(ap);
  buf[n] = '\n';
  (void)!write(1, buf, static_cast<size_t>(n) + 1);
}

#define CHECK_OK(call)                                                                       \
  do {                                                                                       \
    if (int rc_ = static_cast<int>(call); rc_ != 0) {                                        \
      std::fprintf(stderr, "gpu_scenario: %s failed: %d (line %d)\n", #call, rc_, __LINE__); \
      std::exit(10);                                                                         \
    }                                                                                        \
  } while (0)

// The recorder's heartbeat in this process's plugin region (gpu_ring.h); 0: none yet, or no
// region yet (it is made at the first communicator).
int64_t ReaderHeartbeat() {
  const std::string link_text = "/memfd:" RS_GPU_RING_NAME " (deleted)";
  int64_t beat = 0;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return 0;
  while (dirent* de = readdir(dir)) {
    const std::string path = std::string("/proc/self/fd/") + de->d_name;
    char buf[256];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    if (n <= 0 || std::string(buf, static_cast<size_t>(n)) != link_text) continue;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) break;
    void* p = mmap(nullptr, RS_GPU_HEADER_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) break;
    const auto* h = static_cast<const rs_gpu_ring_header*>(p);
    if (h->magic == RS_GPU_RING_MAGIC) {
      beat = __atomic_load_n(&h->reader_heartbeat_ns, __ATOMIC_ACQUIRE);
    }
    munmap(p, RS_GPU_HEADER_BYTES);
    break;
  }
  closedir(dir);
  return beat;
}

bool WaitForRecorder(int timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReaderHeartbeat() != 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::fprintf(stderr, "gpu_scenario: pid %d: no recorder read the plugin region in %d s\n",
               getpid(), timeout_s);
  return false;
}

ncclComm_t JoinAndWarmUp(int n, const ncclUniqueId& id, int rank, cudaStream_t* stream) {
  ncclComm_t comm = nullptr;
  CHECK_OK(ncclCommInitRank(&comm, n, id, rank));
  CHECK_OK(cudaStreamCreate(stream));
  if (!WaitForRecorder(30)) std::exit(11);
  std::vector<float> warm(1, 1.0f);
  CHECK_OK(ncclAllReduce(warm.data(), warm.data(), 1, ncclFloat32, ncclSum, comm, *stream));
  CHECK_OK(cudaStreamSynchronize(*stream));
  return comm;
}

int OpsRank(int n, const ncclUniqueId& id, int rank) {
  cudaStream_t s = nullptr;
  ncclComm_t comm = JoinAndWarmUp(n, id, rank, &s);
  std::vector<float> a(1024, 1.0f), b(1024 * n);
  std::vector<int32_t> mine(256, rank), all(256 * n);
  std::vector<int64_t> out(100, rank), in(100, -1);
  int ops = 0;
  CHECK_OK(ncclAllReduce(a.data(), b.data(), 1024, ncclFloat32, ncclSum, comm, s));
  CHECK_OK(ncclAllReduce(a.data(), b.data(), 1024, ncclFloat32, ncclSum, comm, s));
  CHECK_OK(ncclAllGather(mine.data(), all.data(), 256, ncclInt32, comm, s));
  CHECK_OK(ncclBroadcast(a.data(), b.data(), 512, ncclFloat32, 0, comm, s));
  CHECK_OK(ncclReduce(a.data(), b.data(), 512, ncclFloat32, ncclSum, 1, comm, s));
  CHECK_OK(ncclReduceScatter(b.data(), a.data(), 256, ncclFloat32, ncclSum, comm, s));
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclSend(out.data(), 100, ncclInt64, (rank + 1) % n, comm, s));
  CHECK_OK(ncclRecv(in.data(), 100, ncclInt64, (rank + n - 1) % n, comm, s));
  CHECK_OK(ncclGroupEnd());
  ops += 8;
  CHECK_OK(cudaStreamSynchronize(s));
  if (in[0] != (rank + n - 1) % n) return 12;
  ncclComm_t child = nullptr;
  CHECK_OK(ncclCommSplit(comm, rank % 2, rank, &child, nullptr));
  int child_rank = -1, child_n = -1;
  CHECK_OK(ncclCommUserRank(child, &child_rank));
  CHECK_OK(ncclCommCount(child, &child_n));
  if (child_n < 2) return 13;
  CHECK_OK(ncclAllReduce(a.data(), b.data(), 64, ncclFloat32, ncclSum, child, s));
  CHECK_OK(ncclAllReduce(a.data(), b.data(), 64, ncclFloat32, ncclSum, child, s));
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclSend(out.data(), 10, ncclInt64, (child_rank + 1) % child_n, child, s));
  CHECK_OK(ncclRecv(in.data(), 10, ncclInt64, (child_rank + child_n - 1) % child_n, child, s));
  CHECK_OK(ncclGroupEnd());
  ops += 4;
  CHECK_OK(cudaStreamSynchronize(s));
  CHECK_OK(ncclCommDestroy(child));
  CHECK_OK(ncclCommDestroy(comm));
  CHECK_OK(cudaStreamDestroy(s));
  Line("rank%d_pid %d", rank, getpid());
  Line("rank%d_ops %d", rank, ops);
  return 0;
}

int HangRank(const ncclUniqueId& id, int rank) {
  cudaStream_t s = nullptr;
  ncclComm_t comm = JoinAndWarmUp(2, id, rank, &s);
  std::vector<float> a(256, 1.0f), b(256);
  CHECK_OK(ncclAllReduce(a.data(), b.data(), 256, ncclFloat32, ncclSum, comm, s));
  CHECK_OK(cudaStreamSynchronize(s));
  Line("rank%d_pid %d", rank, getpid());
  if (rank == 0) {
    // Rank 1 never joins these: the first starts and waits for it, the second waits behind.
    CHECK_OK(ncclAllReduce(a.data(), b.data(), 256, ncclFloat32, ncclSum, comm, s));
    CHECK_OK(ncclAllReduce(a.data(), b.data(), 256, ncclFloat32, ncclSum, comm, s));
    Line("hanging");
  }
  for (;;) pause();
}

// Forks the ranks; returns 0 when each exited 0 (else the first failing status).
int RunRanks(int n, bool hang) {
  ncclUniqueId id;
  CHECK_OK(ncclGetUniqueId(&id));
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(hang ? HangRank(id, r) : OpsRank(n, id, r));
    pids.push_back(pid);
  }
  int result = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) result = code;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "async", 1);
  if (std::getenv("NCCL_PROFILER_PLUGIN") == nullptr) {
    std::fprintf(stderr, "gpu_scenario: set NCCL_PROFILER_PLUGIN to the plugin's path\n");
    return 2;
  }
  if (argc == 3 && std::strcmp(argv[1], "ops") == 0 && std::atoi(argv[2]) >= 4) {
    return RunRanks(std::atoi(argv[2]), false);
  }
  if (argc == 2 && std::strcmp(argv[1], "hang") == 0) return RunRanks(2, true);
  std::fprintf(stderr, "usage: gpu_scenario ops N (N >= 4) | hang\n");
  return 2;
}
