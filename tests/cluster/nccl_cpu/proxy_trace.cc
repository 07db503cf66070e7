#include "proxy_trace.h"

#include <algorithm>

namespace ncclcpu {
namespace {

thread_local ProxyTrace* tls_trace = nullptr;

constexpr int kProxyOpMask = ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin;
constexpr int kProxyStepMask = ncclProfileProxyStep | ncclProfileNetPlugin;

int Mod(int a, int n) { return ((a % n) + n) % n; }

void Add(std::vector<ProxyPlan>& plan, int peer, bool send, int steps, size_t chunk) {
  for (ProxyPlan& p : plan) {
    if (p.peer == peer && p.send == send) {
      p.n_steps += steps;
      p.chunk_bytes = std::max(p.chunk_bytes, chunk);
      return;
    }
  }
  ProxyPlan p;
  p.peer = peer;
  p.send = send;
  p.n_steps = steps;
  p.chunk_bytes = chunk;
  plan.push_back(p);
}

}  // namespace

std::vector<ProxyPlan> PlanCollSteps(const ncclComm* comm, Func func, size_t bytes, int root) {
  std::vector<ProxyPlan> plan;
  const int n = comm->nranks;
  const int r = comm->rank;
  if (comm->no_peers || n == 1) return plan;
  const int next = Mod(r + 1, n), prev = Mod(r - 1, n);
  const size_t chunk = (bytes + n - 1) / n;
  switch (func) {
    case kAllReduce:  // reduce-scatter then all-gather around the ring
      Add(plan, next, true, 2 * (n - 1), chunk);
      Add(plan, prev, false, 2 * (n - 1), chunk);
      break;
    case kAllGather:  // bytes: one rank's share
      Add(plan, next, true, n - 1, bytes);
      Add(plan, prev, false, n - 1, bytes);
      break;
    case kReduceScatter:  // bytes: one rank's share
      Add(plan, next, true, n - 1, bytes);
      Add(plan, prev, false, n - 1, bytes);
      break;
    case kBroadcast: {  // a chain from the root
      int d = Mod(r - root, n);
      if (d > 0) Add(plan, prev, false, 1, bytes);
      if (d < n - 1) Add(plan, next, true, 1, bytes);
      break;
    }
    case kReduce:  // ring reduce-scatter, then every chunk to the root
      Add(plan, next, true, n - 1, chunk);
      Add(plan, prev, false, n - 1, chunk);
      if (r == root) {
        for (int i = 0; i < n; ++i) {
          if (i != root) Add(plan, i, false, 1, chunk);
        }
      } else {
        Add(plan, root, true, 1, chunk);
      }
      break;
    default:
      break;
  }
  return plan;
}

ProxyTrace::ProxyTrace(ncclComm* comm, std::vector<ProxyPlan> plan)
    : comm_(comm), previous_(tls_trace) {
  for (ProxyPlan& p : plan) {
    Op op;
    op.plan = p;
    if (p.task != nullptr && (p.mask & kProxyOpMask) != 0) {
      op.handle = StartProxyOpEvent(comm, p.task, p.peer, p.n_steps,
                                    static_cast<int>(p.chunk_bytes), p.send);
    }
    ops_.push_back(op);
  }
  tls_trace = this;
}

ProxyTrace::~ProxyTrace() {
  for (Step& s : steps_) StopEvent(s.handle);  // a failed exchange's unfinished steps
  for (Op& op : ops_) StopEvent(op.handle);
  tls_trace = previous_;
}

ProxyTrace* ProxyTrace::Current() { return tls_trace; }

void ProxyTrace::Posted(const std::vector<Transfer>& transfers) {
  for (Step& s : steps_) StopEvent(s.handle);
  steps_.assign(transfers.size(), Step{});
  for (size_t i = 0; i < transfers.size(); ++i) {
    const Transfer& t = transfers[i];
    int peer = -1;
    for (int p = 0; p < comm_->nranks; ++p) {
      if (comm_->fds[p] == t.fd) peer = p;
    }
    Op* op = nullptr;
    for (Op& o : ops_) {  // the first entry of that direction with steps left
      if (o.plan.peer == peer && o.plan.send == t.send && o.next_step < o.plan.n_steps) {
        op = &o;
        break;
      }
    }
    Step& s = steps_[i];
    s.send = t.send;
    s.bytes = t.len;
    if (op == nullptr || op->handle == nullptr || (op->plan.mask & kProxyStepMask) == 0) continue;
    s.handle = StartProxyStepEvent(comm_, op->handle, op->next_step++);
    if (t.send) {
      RecordProxyStepEventState(s.handle, ncclProfilerProxyStepSendGPUWait, t.len);
      RecordProxyStepEventState(s.handle, ncclProfilerProxyStepSendPeerWait_v4, t.len);
      RecordProxyStepEventState(s.handle, ncclProfilerProxyStepSendWait, t.len);
    } else {
      RecordProxyStepEventState(s.handle, ncclProfilerProxyStepRecvWait, t.len);
    }
  }
}

void ProxyTrace::Done(size_t index) {
  if (index >= steps_.size() || steps_[index].handle == nullptr) return;
  Step& s = steps_[index];
  if (!s.send) {
    RecordProxyStepEventState(s.handle, ncclProfilerProxyStepRecvFlushWait, s.bytes);
    RecordProxyStepEventState(s.handle, ncclProfilerProxyStepRecvGPUWait, s.bytes);
  }
  StopEvent(s.handle);
  s.handle = nullptr;
}

}  // namespace ncclcpu
