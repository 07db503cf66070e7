// The profiler's view of the network work of one kernel: a ProxyOp event per channel and
// peer direction (this library has one channel), a ProxyStep event per transfer, with the
// states NCCL's network proxy records (send: GPU wait, peer wait, on the network; receive:
// network wait, flush, GPU wait) and each step's size. The collective algorithms report their
// transfers through the trace of the calling thread (see Exchange in collectives.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "comm.h"
#include "profiler.h"
#include "transport.h"

namespace ncclcpu {

// One peer direction of a task: its parent event and how many steps it will make.
struct ProxyPlan {
  void* task = nullptr;  // the Coll/P2p event handle
  int mask = 0;
  int peer = 0;
  bool send = false;
  int n_steps = 0;
  size_t chunk_bytes = 0;
};

// The steps a collective makes with each peer (ring algorithms of collectives.cc).
std::vector<ProxyPlan> PlanCollSteps(const ncclComm* comm, Func func, size_t bytes, int root);

class ProxyTrace {
 public:
  // Starts a ProxyOp event for each entry whose mask asks for proxy events, and makes this
  // the calling thread's trace until End.
  ProxyTrace(ncclComm* comm, std::vector<ProxyPlan> plan);
  ~ProxyTrace();
  ProxyTrace(const ProxyTrace&) = delete;
  ProxyTrace& operator=(const ProxyTrace&) = delete;
  // The thread's trace, or null.
  static ProxyTrace* Current();
  // Transfers about to run (ProxyStep start and the posting states), and one of them done.
  void Posted(const std::vector<Transfer>& transfers);
  void Done(size_t index);

 private:
  struct Op {
    ProxyPlan plan;
    void* handle = nullptr;
    int next_step = 0;
  };
  struct Step {
    void* handle = nullptr;
    bool send = false;
    size_t bytes = 0;
  };
  ncclComm* comm_;
  std::vector<Op> ops_;
  std::vector<Step> steps_;  // of the transfers last posted
  ProxyTrace* previous_;
};

}  // namespace ncclcpu
