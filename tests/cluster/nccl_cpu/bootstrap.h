// Bootstrap of the CPU collective library. The 128-byte ncclUniqueId carries the root's
// IPv4 endpoint, a nonce and random filler (so each id hashes differently). The process that
// creates an id runs a root thread on that endpoint; every rank connects to it with its own
// listening endpoint, receives the table of all ranks, and the ranks then build a full TCP
// mesh (rank r connects to every lower rank and accepts every higher one).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm.h"
#include "nccl.h"
#include "transport.h"

namespace ncclcpu {

struct IdFields {
  uint32_t addr = 0;  // network order
  uint16_t port = 0;  // network order
  uint64_t nonce = 0;
};

// Creates an id whose root listens on addr (network order) and port (host order, 0 =
// ephemeral), and starts the root thread.
ncclResult_t CreateUniqueId(uint32_t addr, uint16_t port, ncclUniqueId* id, std::string* error);
bool DecodeUniqueId(const ncclUniqueId& id, IdFields* out);
// How many distinct hosts (IPv4 addresses) the ranks' endpoints are on: NCCL's nNodes.
int CountHosts(const std::vector<Endpoint>& endpoints);
// Joins the communicator named by id as `rank` of `nranks`; fills comm->fds and n_nodes.
ncclResult_t JoinMesh(ncclComm* comm, const ncclUniqueId& id, std::string* error);

}  // namespace ncclcpu
