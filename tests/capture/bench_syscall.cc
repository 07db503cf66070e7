// Cost of a system call while the recorder runs. The recorder's library-load report is a
// tracepoint on syscalls/sys_enter_mmap; while any syscall tracepoint is enabled, every task
// takes the kernel's traced system-call path on every system call, not only on mmap. This
// program measures what a plain system call (getppid) and an anonymous mmap + munmap (which
// also runs the report program, to its first test) cost, in rounds; it prints the best and
// the median round. bench_syscall.sh runs it with and without the recorder.
//
//   bench_syscall [ROUNDS] [CALLS_PER_ROUND]
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <typename F>
std::vector<double> Rounds(int rounds, long calls, F&& call) {
  std::vector<double> ns;
  for (int r = 0; r < rounds; r++) {
    auto t0 = Clock::now();
    for (long i = 0; i < calls; i++) call();
    std::chrono::duration<double, std::nano> d = Clock::now() - t0;
    ns.push_back(d.count() / static_cast<double>(calls));
  }
  std::sort(ns.begin(), ns.end());
  return ns;
}

void Print(const char* what, const std::vector<double>& ns) {
  std::printf("%-14s best %7.1f  median %7.1f  ns per call\n", what, ns.front(), ns[ns.size() / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 15;
  long calls = argc > 2 ? std::atol(argv[2]) : 200000;
  if (rounds <= 0 || calls <= 0) {
    std::fprintf(stderr, "usage: bench_syscall [ROUNDS>0] [CALLS_PER_ROUND>0]\n");
    return 2;
  }
  Print("getppid", Rounds(rounds, calls, [] { syscall(SYS_getppid); }));
  Print("mmap+munmap", Rounds(rounds, calls / 4, [] {
          void* p = mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          if (p == MAP_FAILED) std::abort();
          munmap(p, 4096);
        }));
  return 0;
}
