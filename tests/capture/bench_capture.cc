// Added cost per probed NCCL call (uprobe at entry + uretprobe at return), measured in one
// run: the same loop of ncclAllReduce calls in a worker process (a) with no probes, (b) under
// rankscope's NCCL probe in this process (events decoded and written to SQLite by a consumer
// thread, as the recorder does), (c) under bpftrace attached to the same function, keeping
// per-thread entry time and a count + sum at return. The worker is a separate process, as a
// training job is: the recorder's own memory activity must not share its address space.
// Prints a table; numbers go to tests/bench/capture.md. Needs root.
//
//   bench_capture TESTBED_LIBNCCL [REAL_LIBNCCL] [calls]
#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "capture_session.h"
#include "recorder/nccl_probe.h"

namespace {

struct UniqueId {
  char internal[128];
};
using InitFn = int (*)(void**, int, UniqueId, int);
using AllReduceFn = int (*)(const void*, void*, size_t, int, int, void*, void*);

struct Target {
  std::string name, path;
  AllReduceFn all_reduce = nullptr;
  void* comm = nullptr;
};

bool Load(Target& t, bool init_comm) {
  void* h = dlopen(t.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    std::fprintf(stderr, "bench_capture: %s\n", dlerror());
    return false;
  }
  t.all_reduce = reinterpret_cast<AllReduceFn>(dlsym(h, "ncclAllReduce"));
  if (init_comm) {
    auto init = reinterpret_cast<InitFn>(dlsym(h, "ncclCommInitRank"));
    UniqueId id{};
    if (!init || init(&t.comm, 4, id, 3) != 0) return false;
  }
  return t.all_reduce != nullptr;
}

// Median over 3 runs of the mean cost of one call, in ns. Calls are timed in bursts of 2,000
// with a 5 ms untimed pause after each, in which the recorder drains its ring buffer: the
// number is what the calling thread pays, not the recorder's competition for this 2-CPU
// machine's other core (reported separately as rows and drops).
double TimeCalls(const Target& t, int calls) {
  constexpr int kBurst = 2000;
  float a[4] = {}, b[4] = {};
  std::vector<double> runs;
  for (int rep = 0; rep < 3; ++rep) {
    double ns = 0;
    for (int done = 0; done < calls; done += kBurst) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < kBurst; ++i) t.all_reduce(a, b, 1, 7, 0, t.comm, nullptr);
      auto t1 = std::chrono::steady_clock::now();
      ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    runs.push_back(ns / (calls / kBurst * kBurst));
  }
  std::sort(runs.begin(), runs.end());
  return runs[1];
}

// The calling process: loads the library, then times a loop for every byte it reads.
class Worker {
 public:
  Worker(Target& t, bool init_comm, int calls) {
    int cmd[2], res[2];
    if (pipe(cmd) != 0 || pipe(res) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(cmd[1]);
      close(res[0]);
      double ok = Load(t, init_comm) ? 1 : -1;
      (void)!write(res[1], &ok, sizeof(ok));
      char c;
      while (read(cmd[0], &c, 1) == 1) {
        double ns = TimeCalls(t, calls);
        (void)!write(res[1], &ns, sizeof(ns));
      }
      _exit(0);
    }
    close(cmd[0]);
    close(res[1]);
    cmd_ = cmd[1];
    res_ = res[0];
    double ok = 0;
    ok_ = read(res_, &ok, sizeof(ok)) == sizeof(ok) && ok > 0;
  }
  ~Worker() {
    close(cmd_);
    close(res_);
    if (pid_ > 0) waitpid(pid_, nullptr, 0);
  }
  bool ok() const { return ok_; }
  double Run() {
    double ns = -1;
    if (write(cmd_, "r", 1) != 1 || read(res_, &ns, sizeof(ns)) != sizeof(ns)) return -1;
    return ns;
  }

 private:
  pid_t pid_ = -1;
  int cmd_ = -1, res_ = -1;
  bool ok_ = false;
};

struct ProbeResult {
  double ns = 0;
  uint64_t events = 0, drops = 0;
};

ProbeResult WithRankscope(const Target& t, Worker& w) {
  rec::RecorderOptions opts;
  opts.nccl_libs = {t.path};
  capture_test::Session s(opts);
  (void)s.db().Exec("BEGIN");
  rec::NcclProbe probe;
  ProbeResult r;
  if (auto st = s.Start(probe); !st.ok()) {
    std::fprintf(stderr, "bench_capture: %s\n", st.error().message().c_str());
    return r;
  }
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    while (!stop.load()) {
      s.Tick(probe);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  r.ns = w.Run();
  stop = true;
  consumer.join();
  (void)s.Finish(probe);
  r.events = probe.events();
  r.drops = probe.drops();
  return r;
}

double WithBpftrace(const Target& t, Worker& w) {
  std::string prog = "uprobe:" + t.path +
                     ":ncclAllReduce { @start[tid] = nsecs; } uretprobe:" + t.path +
                     ":ncclAllReduce /@start[tid]/ { @calls = count(); " +
                     "@ns = sum(nsecs - @start[tid]); delete(@start[tid]); }";
  int out[2];
  if (pipe(out) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    execlp("bpftrace", "bpftrace", "-e", prog.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[512];
  while (text.find("Attaching") == std::string::npos) {
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // let it finish attaching
  double ns = w.Run();
  kill(pid, SIGINT);
  waitpid(pid, nullptr, 0);
  close(out[0]);
  return text.find("Attaching") == std::string::npos ? -1 : ns;
}

void Bench(Target& t, bool init_comm, int calls) {
  Worker w(t, init_comm, calls);
  if (!w.ok()) {
    std::fprintf(stderr, "bench_capture: cannot load %s\n", t.path.c_str());
    return;
  }
  double base = w.Run();
  ProbeResult rk = WithRankscope(t, w);
  double bt = WithBpftrace(t, w);
  std::printf("%-28s %10.0f %12.0f %12.0f %12.0f %12.0f %10llu %6llu\n", t.name.c_str(), base,
              rk.ns, rk.ns - base, bt, bt - base, static_cast<unsigned long long>(rk.events),
              static_cast<unsigned long long>(rk.drops));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || geteuid() != 0) {
    std::fprintf(stderr, "usage (root): bench_capture TESTBED_LIBNCCL [REAL_LIBNCCL] [calls]\n");
    return 2;
  }
  setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
  int calls = argc > 3 ? std::atoi(argv[3]) : 50000;
  std::printf("calls per run: %d (median of 3 runs; ns per ncclAllReduce call)\n", calls);
  std::printf("%-28s %10s %12s %12s %12s %12s %10s %6s\n", "library", "no probes", "rankscope",
              "added", "bpftrace", "added", "rows", "drops");
  Target testbed{"test bed (push %rbp entry)", argv[1]};
  Bench(testbed, true, calls);
  if (argc > 2 && std::strlen(argv[2]) > 0) {
    Target real{"real NCCL 2.28 (NULL comm)", argv[2]};
    Bench(real, false, calls / 5);  // slower per call: single-stepped entry
  }
  return 0;
}
