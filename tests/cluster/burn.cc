// rankscope-burn: the test bed's competing workload for fault injection.
//   rankscope-burn cpu [SECONDS]            spin on the CPU (pin it with taskset)
//   rankscope-burn io FILE [MB] [SECONDS]   O_DIRECT writes of 4 MiB blocks over FILE
// Always bounded in time (default 600 s) so a killed harness never leaves it running forever.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

int Usage() {
  std::fputs("usage: rankscope-burn cpu [SECONDS] | rankscope-burn io FILE [MB] [SECONDS]\n",
             stderr);
  return 2;
}

int BurnCpu(double seconds) {
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  volatile uint64_t x = 1;
  while (Clock::now() < end) {
    for (int i = 0; i < 100000; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  }
  return 0;
}

int BurnIo(const char* path, long mb, double seconds) {
  int fd = open(path, O_WRONLY | O_CREAT | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::fprintf(stderr, "rankscope-burn: %s: %s\n", path, std::strerror(errno));
    return 1;
  }
  const size_t block = 4 << 20;
  void* buf = nullptr;
  if (posix_memalign(&buf, 4096, block) != 0) return 1;
  std::memset(buf, 0xab, block);
  auto end = Clock::now() + std::chrono::duration<double>(seconds);
  long i = 0;
  while (Clock::now() < end) {
    off_t off = static_cast<off_t>(i % std::max(1L, mb / 4)) * static_cast<off_t>(block);
    if (pwrite(fd, buf, block, off) != static_cast<ssize_t>(block)) {
      std::fprintf(stderr, "rankscope-burn: write %s: %s\n", path, std::strerror(errno));
      break;
    }
    ++i;
  }
  close(fd);
  unlink(path);
  std::free(buf);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return Usage();
  std::string mode = argv[1];
  if (mode == "cpu") return BurnCpu(argc > 2 ? std::atof(argv[2]) : 600);
  if (mode == "io" && argc > 2) {
    long mb = argc > 3 ? std::atol(argv[3]) : 64;
    return BurnIo(argv[2], mb > 0 ? mb : 64, argc > 4 ? std::atof(argv[4]) : 600);
  }
  return Usage();
}
