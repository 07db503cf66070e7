#include "rendezvous.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

namespace trainer {
namespace {

std::string Where(const std::string& addr, int port) {
  return "rendezvous " + addr + ":" + std::to_string(port);
}

rs::Result<sockaddr_in> Resolve(const std::string& addr, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    return rs::Error("MASTER_ADDR='" + addr + "' is not an IPv4 address");
  }
  return sa;
}

}  // namespace

rs::Result<void> ServeUniqueId(const ncclUniqueId& id, const std::string& addr, int port,
                               int world_size, int timeout_s) {
  ASSIGN_OR_RETURN(sockaddr_in sa, Resolve(addr, port));
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      listen(fd, 1024) != 0) {
    std::string why = std::strerror(errno);
    if (fd >= 0) close(fd);
    return rs::Error(Where(addr, port) + ": cannot listen: " + why +
                     " (is MASTER_PORT in use by another job?)");
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (int served = 1; served < world_size;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) == 0) {
      close(fd);
      return rs::Error(Where(addr, port) + ": only " + std::to_string(served) + " of " +
                       std::to_string(world_size) + " ranks arrived within " +
                       std::to_string(timeout_s) + " s");
    }
    int c = accept4(fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) continue;
    if (send(c, &id, sizeof(id), MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(id))) ++served;
    close(c);
  }
  close(fd);
  return rs::Ok();
}

rs::Result<ncclUniqueId> FetchUniqueId(const std::string& addr, int port, int timeout_s) {
  ASSIGN_OR_RETURN(sockaddr_in sa, Resolve(addr, port));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  std::string last = "no attempt";
  while (std::chrono::steady_clock::now() < deadline) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      ncclUniqueId id;
      size_t got = 0;
      while (got < sizeof(id)) {
        ssize_t r = recv(fd, id.internal + got, sizeof(id) - got, 0);
        if (r <= 0) break;
        got += static_cast<size_t>(r);
      }
      close(fd);
      if (got == sizeof(id)) return id;
      last = "connection closed before the id arrived";
    } else {
      last = std::strerror(errno);
      if (fd >= 0) close(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rs::Error(Where(addr, port) + ": no unique id from rank 0 within " +
                   std::to_string(timeout_s) + " s (" + last + ")");
}

}  // namespace trainer
