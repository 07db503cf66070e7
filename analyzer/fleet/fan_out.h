// Asking every node at once: one thread per node up to --parallel, each node with its own
// client and its own time limit, so that the whole takes about as long as the slowest node
// (not the sum of them). A node still busy past its limit is stopped (its connection shut), so
// a stalled node cannot hold the others' results back.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "analyzer/fleet/node_client.h"
#include "analyzer/fleet/node_list.h"
#include "rscore/result.h"

namespace rs::fleet {

struct FanOutOptions {
  int parallel = 64;                                 // nodes asked at once
  int64_t timeout_ns = int64_t{30} * 1'000'000'000;  // per node
  // The limit is per request (NodeClient per_request): for downloads; no watchdog then.
  bool per_request = false;
};

// `work(i, client)` for every node i; its result per node, in the nodes' order.
std::vector<rs::Result<void>> ForEachNode(
    const std::vector<NodeAddress>& nodes, const ClientAuth& auth, const FanOutOptions& options,
    const std::function<rs::Result<void>(size_t, NodeClient&)>& work);

}  // namespace rs::fleet
