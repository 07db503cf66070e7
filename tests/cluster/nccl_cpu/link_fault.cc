#include "link_fault.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ncclcpu {
namespace {

constexpr int64_t kRereadNs = 100'000'000;

int64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

int64_t ReadDelay(const char* path) {
  std::ifstream in(path);
  long long us = 0;
  if (!(in >> us) || us < 0 || us > 10'000'000) return 0;
  return us;
}

// A TCP socket whose peer is on another node: the two ends' IPv4 addresses differ.
bool CrossesNode(int fd) {
  sockaddr_in local{}, peer{};
  socklen_t a = sizeof(local), b = sizeof(peer);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &a) != 0 ||
      getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &b) != 0) {
    return false;
  }
  return local.sin_family == AF_INET && peer.sin_family == AF_INET &&
         local.sin_addr.s_addr != peer.sin_addr.s_addr;
}

}  // namespace

int64_t LinkDelayUs() {
  static const char* const path = std::getenv("RANKSCOPE_TESTLIB_LINK_DELAY_FILE");
  if (path == nullptr || *path == '\0') return 0;
  static std::atomic<int64_t> read_at{-kRereadNs};
  static std::atomic<int64_t> delay{0};
  const int64_t now = MonotonicNs();
  int64_t last = read_at.load(std::memory_order_relaxed);
  if (now - last >= kRereadNs &&
      read_at.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    delay.store(ReadDelay(path), std::memory_order_relaxed);
  }
  return delay.load(std::memory_order_relaxed);
}

void DelayOnDegradedLink(const std::vector<Transfer>& transfers) {
  const int64_t us = LinkDelayUs();
  if (us == 0) return;
  for (const Transfer& t : transfers) {
    if (t.send && CrossesNode(t.fd)) {
      std::this_thread::sleep_for(std::chrono::microseconds(us));
      return;
    }
  }
}

}  // namespace ncclcpu
