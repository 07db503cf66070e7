// TCP transport of the CPU collective library: listening, connecting, and a progress engine
// that moves several sends and receives at once (so a ring step or a group of p2p calls never
// deadlocks on full socket buffers).
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ncclcpu {

// An IPv4 endpoint, stored in network byte order.
struct Endpoint {
  uint32_t addr = 0;  // network order
  uint16_t port = 0;  // network order
  std::string ToString() const;
};

// One transfer: `len` bytes to or from `fd`. Transfers on the same (fd, direction) run in
// the order given; different ones progress concurrently.
struct Transfer {
  int fd = -1;
  bool send = false;
  char* buf = nullptr;
  size_t len = 0;
  size_t done = 0;
};

// Runs until every transfer completed (true) or a socket failed (false, *error says why).
// on_done(i), when given, is called as transfer i completes.
bool RunTransfers(std::vector<Transfer>& transfers, std::string* error,
                  const std::function<void(size_t)>& on_done = nullptr);
bool SendAll(int fd, const void* buf, size_t len, std::string* error);
bool RecvAll(int fd, void* buf, size_t len, std::string* error);

// Listens on addr (network order; 0 = any) and port (host order; 0 = ephemeral).
int Listen(uint32_t addr, uint16_t port, Endpoint* bound, std::string* error);
// Connects, retrying refused connections until timeout_ms passed.
int Connect(const Endpoint& to, int timeout_ms, std::string* error);
// Accepts one connection, waiting at most timeout_ms (-1 = forever).
int Accept(int listen_fd, int timeout_ms, std::string* error);
// The local address of a connected socket.
Endpoint LocalEndpoint(int fd);
// The address ranks of this host should be reached at: NCCL_COMM_ID's host when set, else
// MASTER_ADDR when it is a local IPv4 address, else the first non-loopback IPv4 address of an
// interface that is up, else 127.0.0.1.
uint32_t PickLocalAddress();
// Parses "a.b.c.d:port".
bool ParseEndpoint(const std::string& text, Endpoint* out);

}  // namespace ncclcpu
