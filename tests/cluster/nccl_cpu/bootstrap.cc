#include "bootstrap.h"

#include <arpa/inet.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "transport.h"

namespace ncclcpu {
namespace {

constexpr uint32_t kIdMagic = 0x52534e43;  // "RSNC"
constexpr uint32_t kHelloMagic = 0x52534831;
constexpr int kVersion = 1;

// Wire records (both ends are this library on the same architecture).
struct RootHello {
  uint32_t magic;
  uint32_t rank;
  uint32_t nranks;
  uint32_t addr;
  uint64_t nonce;
  uint16_t port;
  uint16_t pad[3];
};
struct PeerHello {
  uint32_t magic;
  uint32_t rank;
  uint64_t nonce;
};

int TimeoutMs() {
  const char* s = std::getenv("RANKSCOPE_TESTLIB_TIMEOUT_S");
  int seconds = s != nullptr ? std::atoi(s) : 0;
  return (seconds > 0 ? seconds : 300) * 1000;
}

void CloseAll(std::vector<int>& fds) {
  for (int& fd : fds) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

// Serves one communicator's bootstrap: collects every rank's endpoint, sends the table.
void RootThread(int listen_fd, uint64_t nonce) {
  std::string error;
  std::vector<int> conns;
  std::vector<Endpoint> table;
  uint32_t nranks = 0;
  while (nranks == 0 || conns.size() < nranks) {
    int fd = Accept(listen_fd, TimeoutMs(), &error);
    if (fd < 0) break;
    RootHello h{};
    if (!RecvAll(fd, &h, sizeof(h), &error) || h.magic != kHelloMagic || h.nonce != nonce ||
        h.nranks == 0 || h.rank >= h.nranks || (nranks != 0 && h.nranks != nranks)) {
      close(fd);  // a stray or inconsistent client; ignore it
      continue;
    }
    if (nranks == 0) {
      nranks = h.nranks;
      table.assign(nranks, Endpoint{});
      conns.reserve(nranks);
    }
    if (table[h.rank].port != 0) {  // duplicate rank: nobody can proceed
      close(fd);
      break;
    }
    table[h.rank] = Endpoint{h.addr, h.port};
    conns.push_back(fd);
  }
  if (nranks != 0 && conns.size() == nranks) {
    for (int fd : conns) SendAll(fd, table.data(), sizeof(Endpoint) * nranks, &error);
  }
  CloseAll(conns);
  close(listen_fd);
}

}  // namespace

ncclResult_t CreateUniqueId(uint32_t addr, uint16_t port, ncclUniqueId* id, std::string* error) {
  Endpoint bound;
  int fd = Listen(addr, port, &bound, error);
  if (fd < 0) return ncclSystemError;
  std::memset(id, 0, sizeof(*id));
  // Random filler first, then the fields.
  if (getrandom(id->internal, sizeof(id->internal), 0) != sizeof(id->internal)) {
    for (size_t i = 0; i < sizeof(id->internal); ++i) id->internal[i] = static_cast<char>(rand());
  }
  IdFields f{bound.addr, bound.port, 0};
  std::memcpy(&f.nonce, id->internal + 16, sizeof(f.nonce));
  uint32_t magic = kIdMagic;
  uint16_t version = kVersion;
  std::memcpy(id->internal + 0, &magic, 4);
  std::memcpy(id->internal + 4, &version, 2);
  std::memcpy(id->internal + 6, &f.port, 2);
  std::memcpy(id->internal + 8, &f.addr, 4);
  std::thread(RootThread, fd, f.nonce).detach();
  return ncclSuccess;
}

bool DecodeUniqueId(const ncclUniqueId& id, IdFields* out) {
  uint32_t magic = 0;
  uint16_t version = 0;
  std::memcpy(&magic, id.internal + 0, 4);
  std::memcpy(&version, id.internal + 4, 2);
  if (magic != kIdMagic || version != kVersion) return false;
  std::memcpy(&out->port, id.internal + 6, 2);
  std::memcpy(&out->addr, id.internal + 8, 4);
  std::memcpy(&out->nonce, id.internal + 16, 8);
  return true;
}

int CountHosts(const std::vector<Endpoint>& endpoints) {
  std::vector<uint32_t> seen;
  for (const Endpoint& e : endpoints) {
    if (std::find(seen.begin(), seen.end(), e.addr) == seen.end()) seen.push_back(e.addr);
  }
  return static_cast<int>(seen.size());
}

ncclResult_t JoinMesh(ncclComm* comm, const ncclUniqueId& id, std::string* error) {
  IdFields f;
  if (!DecodeUniqueId(id, &f)) {
    *error = "the ncclUniqueId was not made by ncclGetUniqueId of this library";
    return ncclInvalidArgument;
  }
  comm->nonce = f.nonce;
  int timeout = TimeoutMs();
  int root = Connect(Endpoint{f.addr, f.port}, timeout, error);
  if (root < 0) return ncclSystemError;
  // Listen on the address the root sees us at: peers on other hosts reach us there.
  Endpoint me;
  int listen_fd = Listen(LocalEndpoint(root).addr, 0, &me, error);
  if (listen_fd < 0) {
    close(root);
    return ncclSystemError;
  }
  RootHello h{kHelloMagic,
              static_cast<uint32_t>(comm->rank),
              static_cast<uint32_t>(comm->nranks),
              me.addr,
              f.nonce,
              me.port,
              {0, 0, 0}};
  std::vector<Endpoint> table(comm->nranks);
  bool ok = SendAll(root, &h, sizeof(h), error) &&
            RecvAll(root, table.data(), sizeof(Endpoint) * table.size(), error);
  close(root);
  if (!ok) {
    close(listen_fd);
    *error = "bootstrap with root " + Endpoint{f.addr, f.port}.ToString() +
             " failed (duplicate rank or inconsistent nranks?): " + *error;
    return ncclSystemError;
  }
  comm->n_nodes = CountHosts(table);
  comm->fds.assign(comm->nranks, -1);
  for (int peer = 0; peer < comm->rank && ok; ++peer) {
    int fd = Connect(table[peer], timeout, error);
    PeerHello ph{kHelloMagic, static_cast<uint32_t>(comm->rank), f.nonce};
    ok = fd >= 0 && SendAll(fd, &ph, sizeof(ph), error);
    comm->fds[peer] = fd;
  }
  for (int n = comm->rank + 1; n < comm->nranks && ok; ++n) {
    int fd = Accept(listen_fd, timeout, error);
    PeerHello ph{};
    ok = fd >= 0 && RecvAll(fd, &ph, sizeof(ph), error) && ph.magic == kHelloMagic &&
         ph.nonce == f.nonce && static_cast<int>(ph.rank) > comm->rank &&
         static_cast<int>(ph.rank) < comm->nranks && comm->fds[ph.rank] < 0;
    if (fd >= 0 && !ok && error->empty()) *error = "bad hello from a peer";
    if (ok) {
      comm->fds[ph.rank] = fd;
    } else if (fd >= 0) {
      close(fd);
    }
  }
  close(listen_fd);
  if (!ok) {
    CloseAll(comm->fds);
    *error = "connecting the mesh failed: " + *error;
    return ncclSystemError;
  }
  return ncclSuccess;
}

}  // namespace ncclcpu
