// Added cost per probed NCCL call (uprobe at entry + uretprobe at return), measured in one
// run: the same loop of ncclAllReduce calls in a worker process (a) with no probes, (b) under
// rankscope's NCCL probe in this process (events decoded and written to SQLite by a consumer
// thread, as the recorder does), (c) under bpftrace attached to the same function, keeping
// per-thread entry time and a count + sum at return, and (d) under bpftrace printing one
// record per call with the fields rankscope records, and (e) under bpftrace with empty
// programs at entry and return: the uprobe + uretprobe mechanism alone, which every
// uprobe-based tool pays, and (f) bpftrace with an empty program at entry and no return probe
// (the entry breakpoint alone: what a call costs that no tool records). Separately, with
// kernel.bpf_stats_enabled, the kernel's own count of the time rankscope's two programs run per
// call. The worker is a separate process, as a training job is: the recorder's own memory activity
// must not share its address space. Prints a table, and the cost of a system call on this machine
// (what every kernel entry costs: the mechanism's floor moves with it); numbers go to
// tests/bench/capture.md. Needs root. With --bpf-time, only the kernel's run time of rankscope's
// two programs, over five runs (what changes to bpf/nccl.bpf.c are measured with).
//
//   bench_capture [--bpf-time] TESTBED_LIBNCCL [REAL_LIBNCCL] [calls]
#include <bpf/bpf.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "capture_session.h"
#include "recorder/nccl_probe.h"
#include "rscore/schema.h"

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

// Cost of one call in ns: the median and the minimum over bursts of 2,000 calls, each burst
// followed by a 20 ms untimed pause in which the recorder drains its ring buffer. The number
// is what the calling thread pays, not the recorder's competition for this 2-CPU machine's
// other core (reported separately as rows and drops). On a loaded machine the minimum is the
// least disturbed burst.
struct Timing {
  double median = 0, min = 0;
};
Timing TimeCalls(const Target& t, int calls) {
  constexpr int kBurst = 2000;
  float a[4] = {}, b[4] = {};
  std::vector<double> bursts;
  for (int done = 0; done < calls; done += kBurst) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kBurst; ++i) t.all_reduce(a, b, 1, 7, 0, t.comm, nullptr);
    auto t1 = std::chrono::steady_clock::now();
    bursts.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kBurst);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::sort(bursts.begin(), bursts.end());
  return {bursts[bursts.size() / 2], bursts[0]};
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
        Timing ns = TimeCalls(t, calls);
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
  Timing Run() {
    Timing ns{-1, -1};
    if (write(cmd_, "r", 1) != 1 || read(res_, &ns, sizeof(ns)) != sizeof(ns)) return {-1, -1};
    return ns;
  }

 private:
  pid_t pid_ = -1;
  int cmd_ = -1, res_ = -1;
  bool ok_ = false;
};

struct ProbeResult {
  Timing ns;
  uint64_t events = 0, drops = 0;
};

// The kernel's run time per run of the loaded programs named `entry` and `ret` (needs
// kernel.bpf_stats_enabled while they ran).
struct BpfTime {
  double entry_ns = -1, return_ns = -1;
};
BpfTime ReadBpfTime(const char* entry, const char* ret) {
  BpfTime t;
  for (__u32 id = 0; bpf_prog_get_next_id(id, &id) == 0;) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    bpf_prog_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.run_cnt > 0) {
      double per_run = static_cast<double>(info.run_time_ns) / static_cast<double>(info.run_cnt);
      if (std::strcmp(info.name, entry) == 0) t.entry_ns = per_run;
      if (std::strcmp(info.name, ret) == 0) t.return_ns = per_run;
    }
    close(fd);
  }
  return t;
}

bool SetBpfStats(bool on) {
  int fd = open("/proc/sys/kernel/bpf_stats_enabled", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, on ? "1" : "0", 1) == 1;
  close(fd);
  return ok;
}

ProbeResult WithRankscope(const Target& t, Worker& w, BpfTime* bpf_time = nullptr) {
  rs::rec::RecorderOptions opts;
  opts.nccl_libs = {t.path};
  capture_test::Session s(opts);
  (void)s.db().Exec("BEGIN");
  rs::rec::NcclProbe probe;
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
  if (bpf_time && !SetBpfStats(true)) bpf_time = nullptr;
  r.ns = w.Run();
  if (bpf_time) {
    *bpf_time = ReadBpfTime("nccl_entry", "nccl_return");
    SetBpfStats(false);
  }
  stop = true;
  consumer.join();
  (void)s.Finish(probe);
  r.events = probe.events();
  r.drops = probe.drops();
  return r;
}

struct BpftraceResult {
  Timing ns{-1, -1};
  uint64_t lines = 0, lost = 0;  // per-call records printed; events bpftrace reported lost
};

// bpftrace on the same function, four programs:
//  - empty: nothing at entry and return (the mechanism's cost);
//  - entry only: nothing at entry, no return probe (what the entry breakpoint costs alone);
//  - map-only: entry time per thread at entry, a count and a sum at return (no per-call
//    output: less than rankscope does);
//  - records: what rankscope records, one output record per call with the same fields (pid,
//    tid, entry time, duration, count, datatype, op, comm, stream from [sp+8], return value),
//    the arguments kept per thread from entry to return.
// Its output is read (and counted) by a thread here, as a user would pipe it to a file.
enum class Bt { kEmpty, kEntryOnly, kMaps, kRecords };
BpftraceResult WithBpftrace(const Target& t, Worker& w, Bt what) {
  const std::string at = "uprobe:" + t.path + ":ncclAllReduce";
  const std::string ret = "uretprobe:" + t.path + ":ncclAllReduce";
  std::string prog;
  if (what == Bt::kEmpty) {
    prog = at + " { } " + ret + " { }";
  } else if (what == Bt::kEntryOnly) {
    prog = at + " { }";
  } else if (what == Bt::kMaps) {
    prog = at + " { @start[tid] = nsecs; } " + ret + " /@start[tid]/ { @calls = count(); " +
           "@ns = sum(nsecs - @start[tid]); delete(@start[tid]); }";
  } else {
    prog = at + " { @start[tid] = nsecs; @count[tid] = arg2; @dtype[tid] = arg3; " +
           "@op[tid] = arg4; @comm[tid] = arg5; @stream[tid] = *(uint64 *)(reg(\"sp\") + 8); } " +
           ret + " /@start[tid]/ { printf(\"R %d %d %lu %lu %lu %d %d %lx %lx %d\\n\", pid, tid, " +
           "@start[tid], nsecs - @start[tid], @count[tid], @dtype[tid], @op[tid], @comm[tid], " +
           "@stream[tid], retval); delete(@start[tid]); delete(@count[tid]); " +
           "delete(@dtype[tid]); delete(@op[tid]); delete(@comm[tid]); delete(@stream[tid]); }";
  }
  BpftraceResult r;
  int out[2];
  if (pipe(out) != 0) return r;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(out[1], 2);
    execlp("bpftrace", "bpftrace", "-e", prog.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string text;
  char buf[65536];
  while (text.find("Attaching") == std::string::npos) {
    ssize_t n = read(out[0], buf, sizeof(buf));
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  const bool attached = text.find("Attaching") != std::string::npos;
  // Reads bpftrace's output until it exits: counts records and 'Lost N events' notes.
  std::thread reader([&] {
    std::string pending;
    for (;;) {
      ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = pending.find('\n', start)) != std::string::npos) {
        std::string_view line(pending.data() + start, nl - start);
        if (line.rfind("R ", 0) == 0) ++r.lines;
        if (size_t p = line.find("Lost "); p != std::string_view::npos) {
          r.lost += std::strtoull(std::string(line.substr(p + 5)).c_str(), nullptr, 10);
        }
        start = nl + 1;
      }
      pending.erase(0, start);
    }
  });
  if (attached) {
    std::this_thread::sleep_for(std::chrono::seconds(3));  // let it finish attaching
    r.ns = w.Run();
    std::this_thread::sleep_for(std::chrono::seconds(1));  // let it print what is pending
  }
  kill(pid, SIGINT);
  waitpid(pid, nullptr, 0);
  reader.join();
  close(out[0]);
  if (!attached) r.ns = {-1, -1};
  return r;
}

void Bench(Target& t, bool init_comm, int calls) {
  Worker w(t, init_comm, calls);
  if (!w.ok()) {
    std::fprintf(stderr, "bench_capture: cannot load %s\n", t.path.c_str());
    return;
  }
  Timing base = w.Run();
  ProbeResult rk = WithRankscope(t, w);
  BpftraceResult be = WithBpftrace(t, w, Bt::kEmpty);
  BpftraceResult bm = WithBpftrace(t, w, Bt::kMaps);
  BpftraceResult br = WithBpftrace(t, w, Bt::kRecords);
  BpftraceResult bo = WithBpftrace(t, w, Bt::kEntryOnly);
  BpfTime bpf;
  (void)WithRankscope(t, w, &bpf);
  auto row = [&](const char* burst, double Timing::*f) {
    const double b = base.*f;
    std::printf("%-28s %-6s %9.0f %8.0f %10.0f %8.0f %10.0f %8.0f %10.0f %8.0f %7.2f %7.2f\n",
                t.name.c_str(), burst, b, be.ns.*f - b, rk.ns.*f, rk.ns.*f - b, bm.ns.*f,
                bm.ns.*f - b, br.ns.*f, br.ns.*f - b, (rk.ns.*f - b) / (br.ns.*f - b),
                (be.ns.*f - b) / (br.ns.*f - b));
  };
  row("median", &Timing::median);
  row("min", &Timing::min);
  std::printf(
      "%-28s rankscope rows %llu, drops %llu; bpftrace records %llu, lost %llu; BPF run "
      "time per call (bpf_stats): entry %.0f ns, return %.0f ns\n",
      "", static_cast<unsigned long long>(rk.events), static_cast<unsigned long long>(rk.drops),
      static_cast<unsigned long long>(br.lines), static_cast<unsigned long long>(br.lost),
      bpf.entry_ns, bpf.return_ns);
  std::printf(
      "%-28s entry breakpoint alone (bpftrace, empty entry program, no return probe): "
      "%.0f ns added (median), %.0f (min)\n",
      "", bo.ns.median - base.median, bo.ns.min - base.min);
}

// The programs' own run time alone, five runs (kernel.bpf_stats_enabled during each run).
void BenchBpfTime(Target& t, bool init_comm, int calls) {
  Worker w(t, init_comm, calls);
  if (!w.ok()) {
    std::fprintf(stderr, "bench_capture: cannot load %s\n", t.path.c_str());
    return;
  }
  for (int run = 1; run <= 5; ++run) {
    BpfTime bpf;
    ProbeResult rk = WithRankscope(t, w, &bpf);
    std::printf("%-28s run %d: entry %.0f ns, return %.0f ns (rows %llu, drops %llu)\n",
                t.name.c_str(), run, bpf.entry_ns, bpf.return_ns,
                static_cast<unsigned long long>(rk.events),
                static_cast<unsigned long long>(rk.drops));
  }
}

// What one system call costs here (getppid, median of 20 rounds of 10,000): every uprobe
// hit enters the kernel twice (the breakpoint, then the return trampoline's uretprobe call),
// so the mechanism's floor scales with this.
double SyscallNs() {
  std::vector<double> rounds;
  for (int r = 0; r < 20; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 10000; ++i) syscall(SYS_getppid);
    auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / 10000);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

// The recorder's side: events decoded and written as rows (one transaction, as the loop's
// batches), without the kernel: how many NCCL events per second one core turns into rows.
double ConsumerEventsPerSecond(int n) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  if (!db.ok() || !rs::CreateSchema(*db, rs::DbKind::kBundle).ok()) return -1;
  auto st = rs::rec::PrepareNcclInsert(*db);
  if (!st.ok()) return -1;
  rs::rec::NcclDecoder decoder;
  nccl_event e;
  std::memset(&e, 0, sizeof(e));
  e.abi = CALL_ABI_VERSION;
  e.pid = e.tid = 1234;
  e.fn = NCCL_FN_COMM_INIT_RANK;
  e.cookie = NCCL_FN_COMM_INIT_RANK | NCCL_READ_UNIQUE_ID | NCCL_OUT_ARG0;
  e.regs.arg[1] = 4;
  e.regs.arg[2] = 3;
  e.n_out = 1;
  e.out[0] = 0xc0;
  e.exit_ns = 1;
  (void)decoder.Decode(e);
  e.fn = NCCL_FN_ALL_REDUCE;
  e.cookie = NCCL_FN_ALL_REDUCE;
  e.regs.arg[2] = 1000;
  e.regs.arg[3] = 7;
  e.regs.arg[5] = 0xc0;
  (void)db->Exec("BEGIN");
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    e.entry_ns = 1000 + i * 10ull;
    e.exit_ns = e.entry_ns + 5;
    auto row = decoder.Decode(e);
    if (!row ||
        !rs::rec::WriteNcclRow(*st, *row, "node", i + 1, static_cast<int64_t>(e.entry_ns), 42)
             .ok()) {
      return -1;
    }
  }
  auto t1 = std::chrono::steady_clock::now();
  (void)db->Exec("COMMIT");
  return n / std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const bool bpf_time_only = argc > 1 && std::strcmp(argv[1], "--bpf-time") == 0;
  if (bpf_time_only) {
    --argc;
    ++argv;
  }
  if (argc < 2 || geteuid() != 0) {
    std::fprintf(stderr,
                 "usage (root): bench_capture [--bpf-time] TESTBED_LIBNCCL [REAL_LIBNCCL] "
                 "[calls]\n");
    return 2;
  }
  setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "sync", 1);  // each call does its (local) work
  int calls = argc > 3 ? std::atoi(argv[3]) : 150000;
  if (bpf_time_only) {
    Target testbed{"test bed (push %rbp entry)", argv[1]};
    BenchBpfTime(testbed, true, calls);
    if (argc > 2 && std::strlen(argv[2]) > 0) {
      Target real{"real NCCL 2.28 (NULL comm)", argv[2]};
      BenchBpfTime(real, false, calls / 5);
    }
    return 0;
  }
  std::printf("system call (getppid): %.0f ns\n", SyscallNs());
  std::printf("calls per run: %d in bursts of 2000; ns per ncclAllReduce call\n", calls);
  std::printf("%-28s %-6s %9s %8s %10s %8s %10s %8s %10s %8s %7s %7s\n", "library", "burst",
              "no probes", "bt empty", "rankscope", "added", "bt maps", "added", "bt records",
              "added", "rs/bt", "floor/bt");
  std::printf(
      "(bt empty: added cost of empty programs; rs/bt and floor/bt: rankscope's and the "
      "empty programs' added cost over bpftrace records' added cost)\n");
  std::printf("decode + SQLite insert of NCCL events (no kernel): %.0f events/s\n",
              ConsumerEventsPerSecond(300000));
  Target testbed{"test bed (push %rbp entry)", argv[1]};
  Bench(testbed, true, calls);
  if (argc > 2 && std::strlen(argv[2]) > 0) {
    Target real{"real NCCL 2.28 (NULL comm)", argv[2]};
    Bench(real, false, calls / 5);  // slower per call: single-stepped entry
  }
  return 0;
}
