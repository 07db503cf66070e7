#include "transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ncclcpu {
namespace {

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void TuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool IsLocalAddress(uint32_t addr) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if (reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr == addr) found = true;
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

std::string Endpoint::ToString() const {
  char text[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = addr;
  inet_ntop(AF_INET, &a, text, sizeof(text));
  return std::string(text) + ":" + std::to_string(ntohs(port));
}

bool ParseEndpoint(const std::string& text, Endpoint* out) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return false;
  in_addr a{};
  if (inet_pton(AF_INET, text.substr(0, colon).c_str(), &a) != 1) return false;
  char* end = nullptr;
  long port = std::strtol(text.c_str() + colon + 1, &end, 10);
  if (*end != '\0' || port < 0 || port > 65535) return false;
  out->addr = a.s_addr;
  out->port = htons(static_cast<uint16_t>(port));
  return true;
}

uint32_t PickLocalAddress() {
  if (const char* id = std::getenv("NCCL_COMM_ID")) {
    Endpoint e;
    if (ParseEndpoint(id, &e)) return e.addr;
  }
  if (const char* master = std::getenv("MASTER_ADDR")) {
    in_addr a{};
    if (inet_pton(AF_INET, master, &a) == 1 && IsLocalAddress(a.s_addr)) return a.s_addr;
  }
  uint32_t chosen = htonl(INADDR_LOOPBACK);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return chosen;
  for (ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    if ((a->ifa_flags & IFF_UP) == 0 || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    chosen = reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr;
    break;
  }
  freeifaddrs(list);
  return chosen;
}

int Listen(uint32_t addr, uint16_t port, Endpoint* bound, std::string* error) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = Errno("socket");
    return -1;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = addr;
  sa.sin_port = htons(port);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || listen(fd, 256) != 0) {
    *error = Errno("bind/listen");
    close(fd);
    return -1;
  }
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  bound->addr = sa.sin_addr.s_addr;
  bound->port = sa.sin_port;
  return fd;
}

int Connect(const Endpoint& to, int timeout_ms, std::string* error) {
  int64_t deadline = NowMs() + timeout_ms;
  for (int attempt = 0;; ++attempt) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = Errno("socket");
      return -1;
    }
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = to.addr;
    sa.sin_port = to.port;
    if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      TuneSocket(fd);
      return fd;
    }
    int err = errno;
    close(fd);
    bool retry = err == ECONNREFUSED || err == ETIMEDOUT || err == ENETUNREACH ||
                 err == EHOSTUNREACH || err == EINTR;
    if (!retry || NowMs() >= deadline) {
      errno = err;
      *error = Errno(("connect to " + to.ToString()).c_str());
      return -1;
    }
    usleep(attempt < 20 ? 10000 : 100000);
  }
}

int Accept(int listen_fd, int timeout_ms, std::string* error) {
  pollfd p{listen_fd, POLLIN, 0};
  int n = 0;
  do {
    n = poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    *error = "timed out waiting for peers to connect";
    return -1;
  }
  int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) {
    *error = Errno("accept");
    return -1;
  }
  TuneSocket(fd);
  return fd;
}

Endpoint LocalEndpoint(int fd) {
  sockaddr_in sa{};
  socklen_t len = sizeof(sa);
  getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  return Endpoint{sa.sin_addr.s_addr, sa.sin_port};
}

bool SendAll(int fd, const void* buf, size_t len, std::string* error) {
  std::vector<Transfer> t{{fd, true, static_cast<char*>(const_cast<void*>(buf)), len, 0}};
  return RunTransfers(t, error);
}

bool RecvAll(int fd, void* buf, size_t len, std::string* error) {
  std::vector<Transfer> t{{fd, false, static_cast<char*>(buf), len, 0}};
  return RunTransfers(t, error);
}

bool RunTransfers(std::vector<Transfer>& transfers, std::string* error,
                  const std::function<void(size_t)>& on_done) {
  if (on_done) {
    for (size_t i = 0; i < transfers.size(); ++i) {
      if (transfers[i].done == transfers[i].len) on_done(i);
    }
  }
  std::vector<pollfd> fds;
  std::vector<size_t> active;  // index into transfers for each pollfd
  for (;;) {
    fds.clear();
    active.clear();
    // The first unfinished transfer of each (fd, direction) is the active one.
    for (size_t i = 0; i < transfers.size(); ++i) {
      Transfer& t = transfers[i];
      if (t.done == t.len) continue;
      bool blocked = false;
      for (size_t j : active) {
        if (transfers[j].fd == t.fd && transfers[j].send == t.send) blocked = true;
      }
      if (blocked) continue;
      active.push_back(i);
      fds.push_back(pollfd{t.fd, static_cast<short>(t.send ? POLLOUT : POLLIN), 0});
    }
    if (active.empty()) return true;
    int n = poll(fds.data(), fds.size(), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = Errno("poll");
      return false;
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Transfer& t = transfers[active[k]];
      ssize_t r = t.send ? send(t.fd, t.buf + t.done, t.len - t.done, MSG_DONTWAIT | MSG_NOSIGNAL)
                         : recv(t.fd, t.buf + t.done, t.len - t.done, MSG_DONTWAIT);
      if (r > 0) {
        t.done += static_cast<size_t>(r);
        if (t.done == t.len && on_done) on_done(active[k]);
      } else if (r == 0) {
        *error = "peer closed the connection";
        return false;
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        *error = Errno(t.send ? "send" : "recv");
        return false;
      }
    }
  }
}

}  // namespace ncclcpu
