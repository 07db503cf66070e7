// The trainer's rendezvous: rank 0 creates the ncclUniqueId and serves it over TCP at
// MASTER_ADDR:MASTER_PORT to every other rank (what torch.distributed's TCPStore does).
#pragma once

#include <string>

#include "nccl.h"
#include "rscore/result.h"

namespace trainer {

// Rank 0: serves `id` to world_size - 1 clients, then returns.
rs::Result<void> ServeUniqueId(const ncclUniqueId& id, const std::string& addr, int port,
                               int world_size, int timeout_s);
// Other ranks: connects (retrying until timeout_s) and receives the id.
rs::Result<ncclUniqueId> FetchUniqueId(const std::string& addr, int port, int timeout_s);

}  // namespace trainer
