#include "enqueue.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "collectives.h"
#include "proxy_trace.h"
#include "reduce.h"

namespace ncclcpu {
namespace {

// ncclGroupDepth and the tasks of the calling thread's open group.
thread_local int tls_group_depth = 0;
thread_local std::vector<Task> tls_tasks;

bool IsP2p(Func f) { return f == kSend || f == kRecv; }

// One launch: the tasks of one communicator in one group, run in order by the device.
struct Plan {
  ncclComm* comm = nullptr;
  std::vector<Task> tasks;
  uint64_t ticket = 0;
  bool async = true;
  // The device waits until the host has given the profiler the plan's Group/Coll/P2p events
  // (NCCL reports them after the launch, but before its proxy can see the work).
  std::mutex mu;
  std::condition_variable cv;
  bool ready = false;
  ncclResult_t result = ncclSuccess;
  // A replay of a plan captured into a CUDA graph: its events come from the graph's host node
  // when the stream reaches it, with the captured calls' API events.
  bool replay = false;
  // Its events are reported on the device, in launch order (a replay's; and any plan's while
  // replays are pending: NCCL then runs every plan's host task on its host stream, behind the
  // graphs' host nodes, enqueue.cc: persistentRefs), with the mask its calls read.
  bool report_on_device = false;
  int report_mask = 0;
};

size_t TaskBytes(const Task& t) { return t.count * TypeSize(t.datatype); }

ncclResult_t RunColl(const Task& t) {
  ncclComm* c = t.comm;
  switch (t.func) {
    case kAllReduce:
      return AllReduce(c, t.send, t.recv, t.count, t.datatype, t.op);
    case kAllGather:
      return AllGather(c, t.send, t.recv, t.count, t.datatype);
    case kReduceScatter:
      return ReduceScatter(c, t.send, t.recv, t.count, t.datatype, t.op);
    case kBroadcast:
      return Broadcast(c, t.send, t.recv, t.count, t.datatype, t.root);
    case kReduce:
      return ReduceToRoot(c, t.send, t.recv, t.count, t.datatype, t.op, t.root);
    default:
      return Fail(c, ncclInternalError, "not a collective");
  }
}

void* StartKernelCh(const Task& t, uint64_t at) {
  if (t.event == nullptr || (t.mask & ncclProfileKernelCh) == 0) return nullptr;
  return StartKernelChEvent(t.comm, t.event, at);
}

// One collective as its kernel runs it: (a symmetric kernel's opening barrier,) the ring, (its
// closing barrier); the channel's phases and its stop (none where it failed in async mode: that
// kernel would never finish).
ncclResult_t RunKernel(const Task& t, bool async) {
  ncclComm* c = t.comm;
  const bool symmetric = SymmetricKernels();
  const uint64_t begin = cudacpuGlobaltimer();
  void* channel = StartKernelCh(t, begin);
  ncclResult_t r = symmetric ? Barrier(c, "opening barrier") : ncclSuccess;
  if (r != ncclSuccess && async) return r;
  const uint64_t open = cudacpuGlobaltimer();
  if (r == ncclSuccess) {
    std::vector<ProxyPlan> steps = PlanCollSteps(c, t.func, TaskBytes(t), t.root);
    for (ProxyPlan& s : steps) {
      s.task = t.event;
      s.mask = t.mask;
    }
    ProxyTrace trace(c, std::move(steps));
    r = RunColl(t);
  }
  if (r != ncclSuccess && async) return r;
  const uint64_t close = cudacpuGlobaltimer();
  if (r == ncclSuccess && symmetric) {
    r = Barrier(c, "closing barrier");
    if (r != ncclSuccess && async) return r;
  }
  const uint64_t end = symmetric ? cudacpuGlobaltimer() : close;
  if (t.mask & ncclProfileKernelPhase) {  // none of zero length, as NCCL
    KernelPhaseEvent(c, channel, ncclProfilerKernelPhaseInitialSync, begin,
                     symmetric ? open : begin);
    KernelPhaseEvent(c, channel, ncclProfilerKernelPhaseCompute, symmetric ? open : begin, close);
    KernelPhaseEvent(c, channel, ncclProfilerKernelPhaseFinalSync, close, end);
  }
  StopKernelChEvent(channel, end);
  return r;
}

// What the device does with a plan: collectives in order, then the point-to-point tasks
// together. Each task's channel reports the device's clock at its start and stop; a failed
// task in async mode reports no stop (its kernel would never finish).
ncclResult_t Execute(Plan& p) {
  ncclComm* c = p.comm;
  for (Task& t : p.tasks) {
    if (IsP2p(t.func)) continue;
    if (ncclResult_t r = RunKernel(t, p.async); r != ncclSuccess) return r;
  }
  std::vector<P2pOp> ops;
  std::vector<ProxyPlan> steps;
  std::vector<void*> channels;
  for (Task& t : p.tasks) {
    if (!IsP2p(t.func)) continue;
    ops.push_back(P2pOp{c, t.func == kSend, t.recv, TaskBytes(t), t.root});
    channels.push_back(StartKernelCh(t, cudacpuGlobaltimer()));
    if (!c->no_peers && c->nranks > 1 && t.root != c->rank) {
      ProxyPlan s;
      s.task = t.event;
      s.mask = t.mask;
      s.peer = t.root;
      s.send = t.func == kSend;
      s.n_steps = 1;
      s.chunk_bytes = TaskBytes(t);
      steps.push_back(s);
    }
  }
  if (ops.empty()) return ncclSuccess;
  ncclResult_t r;
  {
    ProxyTrace trace(c, std::move(steps));
    r = RunP2p(ops);
  }
  if (r != ncclSuccess && p.async) return r;
  uint64_t stop = cudacpuGlobaltimer();
  for (void* ch : channels) StopKernelChEvent(ch, stop);
  return r;
}

void ReportPlan(Plan& p, int mask);

// Runs a plan on the device (async: a stream's worker) or on the calling thread (sync).
void RunPlan(Plan* p) {
  ncclComm* c = p->comm;
  {
    std::unique_lock<std::mutex> lock(p->mu);
    p->cv.wait(lock, [&] { return p->ready; });
  }
  {
    std::unique_lock<std::mutex> lock(c->mu);
    c->cv.wait(lock, [&] { return c->exec_next >= p->ticket || c->aborted.load(); });
  }
  if (p->report_on_device) {  // one plan at a time, in launch order (its ticket's)
    ReportPlan(*p, p->report_mask);
    if (p->replay) c->replays_pending.fetch_sub(1);
  }
  ncclResult_t r = WorkError(c);  // a later non-blocking launch pending is no error of this plan
  if (!c->aborted.load() && r == ncclSuccess) {
    r = Execute(*p);
    if (r != ncclSuccess && p->async) {
      SetAsyncError(c, r);
      // A kernel whose peer is gone spins until the communicator is aborted.
      std::unique_lock<std::mutex> lock(c->mu);
      c->cv.wait(lock, [&] { return c->aborted.load(); });
    }
  }
  p->result = r;
  if (p->async) delete p;
  FinishWork(c);
}

void RunPlanOnDevice(void* arg) { RunPlan(static_cast<Plan*>(arg)); }

// NCCL's hostStreamPlanTask: the Group event, then each task's Coll/P2p event (a collective's
// sequence number per communicator and function counts every launch, profiled or not). For a
// replay of a captured plan (NCCL's persistent plan) it runs from the graph's host node, which
// NCCL adds only for a plan with proxy work (enqueue.cc, hostStreamPlanCallback: here, peers
// over the network, or KernelCh in the capture's mask, which always adds proxy operations),
// and the sequence number counts it only where the capture's mask had KernelCh (profiler.cc,
// ncclProfilerStartTaskEvents).
void ReportPlan(Plan& p, int mask) {
  ncclComm* c = p.comm;
  const bool loaded = ProfilerLoaded();
  if (p.replay && (mask & ncclProfileKernelCh) == 0 && (c->nranks < 2 || c->no_peers)) return;
  void* group = loaded && (mask & kGroupMask) ? StartGroupEvent(c) : nullptr;
  for (Task& t : p.tasks) {
    if (IsP2p(t.func)) continue;
    if (loaded && (t.mask & kCollTaskMask)) {
      CollArgs a{t.func, c->seq_number[t.func], t.send, t.recv, t.count, t.root, t.datatype, t.api,
                 group};
      a.symmetric = SymmetricKernels();
      if (t.func == kAllGather || t.func == kBroadcast) {  // NCCL moves these as bytes
        a.count = t.count * TypeSize(t.datatype);
        a.datatype = ncclInt8;
      }
      if (t.func != kReduce && t.func != kBroadcast) a.root = 0;
      t.event = StartCollEvent(c, a);
    }
    if (!p.replay || (loaded && (t.mask & ncclProfileKernelCh))) ++c->seq_number[t.func];
  }
  for (Task& t : p.tasks) {
    if (!IsP2p(t.func) || !loaded || (t.mask & kP2pTaskMask) == 0) continue;
    t.event = StartP2pEvent(c, P2pArgs{t.func, t.recv, t.count, t.root, t.datatype, t.api, group});
  }
  for (Task& t : p.tasks) StopEvent(t.event);  // "enqueued"; the handle stays the parent
  StopEvent(group);
}

// The activation mask and GroupApi event of a plan: its first task's that has a mask.
void PlanMask(const std::vector<Task>& tasks, int* mask, void** group_api) {
  for (const Task& t : tasks) {
    if (t.mask != 0) {
      *mask = t.mask;
      *group_api = t.group_api;
      return;
    }
  }
}

// NCCL's persistent plan: a plan launched while its stream is captured into a CUDA graph. The
// capture records the launch and runs nothing; every launch of the graph launches a copy.
struct CapturedPlan {
  ncclComm* comm = nullptr;  // must outlive the graph, as NCCL requires
  std::vector<Task> tasks;
  int mask = 0;
};

void LaunchReplay(void* arg, cudaStream_t stream) {
  const auto* cp = static_cast<const CapturedPlan*>(arg);
  ncclComm* c = cp->comm;
  auto* p = new Plan;
  p->comm = c;
  p->tasks = cp->tasks;
  p->replay = p->report_on_device = true;
  p->report_mask = cp->mask;
  p->ready = true;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    p->ticket = c->next_ticket++;
  }
  Retain(c);
  c->replays_pending.fetch_add(1);
  if (cudacpuEnqueue(stream, c->cuda_dev, RunPlanOnDevice, p) == 0) {
    c->replays_pending.fetch_sub(1);
    SetAsyncError(c, ncclUnhandledCudaError);
    delete p;
    FinishWork(c);
  }
}

void ReleaseCaptured(void* arg) { delete static_cast<CapturedPlan*>(arg); }

ncclResult_t CapturePlan(ncclComm* c, std::vector<Task> tasks, cudaStream_t launch) {
  auto* cp = new CapturedPlan;
  cp->comm = c;
  cp->tasks = std::move(tasks);
  void* group_api = nullptr;
  PlanMask(cp->tasks, &cp->mask, &group_api);
  // v5+: "the event start indicates that the kernel launch operation has been recorded, not
  // launched" (NCCL's profiler README); no Group or task events until a replay.
  StopEvent(ProfilerLoaded() && (cp->mask & ncclProfileKernelLaunch)
                ? StartKernelLaunchEvent(c, group_api, launch)
                : nullptr);
  if (cudacpuCaptureNode(launch, c->cuda_dev, LaunchReplay, cp, ReleaseCaptured) == 0) {
    delete cp;
    return Fail(c, ncclUnhandledCudaError, "capturing the launch into the CUDA graph failed");
  }
  return ncclSuccess;
}

ncclResult_t Launch(ncclComm* c, std::vector<Task> tasks) {
  if (ncclResult_t e = WorkError(c); e != ncclSuccess) return e;
  const bool async = AsyncMode();
  // NCCL keeps the group's distinct streams newest first and launches on the first of them:
  // the last distinct stream the tasks named. The others wait for it and it for them.
  std::vector<cudaStream_t> streams;
  for (const Task& t : tasks) {
    if (std::find(streams.begin(), streams.end(), t.stream) == streams.end()) {
      streams.push_back(t.stream);
    }
  }
  const cudaStream_t launch = streams.back();
  streams.pop_back();
  const std::vector<cudaStream_t>& others = streams;
  if (async) {
    for (const Task& t : tasks) {
      if (!cudacpuStreamValid(t.stream, c->cuda_dev)) {
        return Fail(c, ncclUnhandledCudaError,
                    "invalid CUDA stream " + std::to_string(reinterpret_cast<uintptr_t>(t.stream)) +
                        " for device " + std::to_string(c->cuda_dev));
      }
    }
  }
  if (async && cudacpuStreamCapturing(launch, c->cuda_dev)) {
    return CapturePlan(c, std::move(tasks), launch);
  }
  auto* p = new Plan;
  p->comm = c;
  p->tasks = std::move(tasks);
  p->async = async;
  int mask = 0;
  void* group_api = nullptr;
  PlanMask(p->tasks, &mask, &group_api);
  void* kernel_launch = ProfilerLoaded() && (mask & ncclProfileKernelLaunch)
                            ? StartKernelLaunchEvent(c, group_api, launch)
                            : nullptr;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    p->ticket = c->next_ticket++;
  }
  Retain(c);
  uint64_t ticket = 0;
  if (async) {
    // The launch stream waits for every other stream of the group's tasks, and they for it.
    for (cudaStream_t o : others) cudacpuStreamWaitStream(launch, o, c->cuda_dev);
    ticket = cudacpuEnqueue(launch, c->cuda_dev, RunPlanOnDevice, p);
    if (ticket == 0) {  // the stream went away since it was checked: the plan never runs
      SetAsyncError(c, ncclUnhandledCudaError);
      StopEvent(kernel_launch);
      delete p;
      FinishWork(c);  // later plans see the error and skip
      return Fail(c, ncclUnhandledCudaError, "launching on the CUDA stream failed");
    }
    for (cudaStream_t o : others) cudacpuStreamWaitStream(o, launch, c->cuda_dev);
  }
  StopEvent(kernel_launch);
  if (async && c->replays_pending.load() > 0) {
    p->report_on_device = true;
    p->report_mask = mask;
  } else {
    ReportPlan(*p, mask);
  }
  {
    std::lock_guard<std::mutex> lock(p->mu);
    p->ready = true;
    p->cv.notify_all();
  }
  if (async) {
    if (cudacpuLaunchBlocking()) cudacpuWaitTicket(launch, c->cuda_dev, ticket);
    return ncclSuccess;
  }
  RunPlan(p);
  ncclResult_t r = p->result;
  delete p;
  return r;
}

}  // namespace

bool SymmetricKernels() {
  const char* kernels = std::getenv("RANKSCOPE_TESTLIB_KERNELS");
  return kernels != nullptr && std::strcmp(kernels, "symmetric") == 0;
}

bool AsyncMode() {
  const char* mode = std::getenv("RANKSCOPE_TESTLIB_COLLECTIVES");
  return mode == nullptr || std::strcmp(mode, "sync") != 0;
}

ncclResult_t EnqueueTask(const Task& task) {
  ncclComm* c = task.comm;
  if (ncclResult_t r = EnsureReady(c); r != ncclSuccess) return r;
  ApiState& api = Api();
  if (api.profiler_group_depth > 0) ++api.profiler_group_depth;  // the implicit group
  ++tls_group_depth;
  // NCCL checks for a graph capture first (ncclEnqueueCheck) and tells the API events.
  const bool captured = AsyncMode() && cudacpuStreamCapturing(task.stream, c->cuda_dev) != 0;
  StartGroupApiEvent(c, tls_group_depth, captured);
  RecordGroupApiEventState(ncclProfilerGroupStartApiStop);
  CollApiArgs args{task.func, task.count, task.datatype, task.root, task.stream};
  args.graph_captured = captured;
  Task t = task;
  if (IsP2p(task.func)) {
    StartP2pApiEvent(c, args);
    t.api = api.p2p_api;
  } else {
    args.root = task.func == kReduce || task.func == kBroadcast ? task.root : 0;
    StartCollApiEvent(c, args);
    t.api = api.coll_api;
  }
  t.mask = api.mask;
  t.group_api = api.group_api;
  tls_tasks.push_back(t);
  if (IsP2p(task.func)) {
    StopP2pApiEvent();
  } else {
    StopCollApiEvent();
  }
  return GroupEnd();
}

// A non-blocking group's launch (NCCL's group.cc, ncclGroupEndInternal: a thread runs
// groupLaunchNonBlocking, every communicator of the group reads ncclInProgress until it is
// done, and the call returns ncclInProgress): the plans are launched, and their Group and task
// events reported, on that thread. Blocking and non-blocking communicators in one group are
// refused, as NCCL refuses them.
ncclResult_t LaunchNonBlocking(std::vector<std::pair<ncclComm*, std::vector<Task>>> plans) {
  for (auto& [c, tasks] : plans) {
    {
      std::lock_guard<std::mutex> lock(c->mu);
      ++c->launching;
    }
    Retain(c);
    int expected = ncclSuccess;
    c->async_error.compare_exchange_strong(expected, ncclInProgress);
  }
  std::thread([plans = std::move(plans)]() mutable {
    for (auto& [c, tasks] : plans) {
      ncclResult_t r = Launch(c, std::move(tasks));
      int expected = ncclInProgress;
      c->async_error.compare_exchange_strong(expected, r);
      {
        std::lock_guard<std::mutex> lock(c->mu);
        --c->launching;
        c->cv.notify_all();
      }
      Release(c);
    }
  }).detach();
  return ncclInProgress;
}

ncclResult_t GroupStart() {
  ++tls_group_depth;
  return ncclSuccess;
}

ncclResult_t GroupEnd() {
  if (tls_group_depth == 0) return Fail(nullptr, ncclInvalidUsage, "GroupEnd without GroupStart");
  ApiState& api = Api();
  if (api.profiler_group_depth > 0) --api.profiler_group_depth;
  if (api.profiler_group_depth == 0) RecordGroupApiEventState(ncclProfilerGroupEndApiStart);
  ncclResult_t result = ncclSuccess;
  if (--tls_group_depth == 0) {
    std::vector<Task> tasks;
    tasks.swap(tls_tasks);
    // One plan per communicator, in the order the communicators first appear.
    std::vector<ncclComm*> comms;
    for (const Task& t : tasks) {
      bool seen = false;
      for (ncclComm* c : comms) seen = seen || c == t.comm;
      if (!seen) comms.push_back(t.comm);
    }
    std::vector<std::pair<ncclComm*, std::vector<Task>>> plans;
    size_t nonblocking = 0;
    for (ncclComm* c : comms) {
      std::vector<Task> mine;
      for (const Task& t : tasks) {
        if (t.comm == c) mine.push_back(t);
      }
      plans.emplace_back(c, std::move(mine));
      nonblocking += c->nonblocking ? 1 : 0;
    }
    if (nonblocking > 0 && nonblocking < plans.size()) {
      result = Fail(nullptr, ncclInvalidUsage,
                    "Blocking and nonblocking communicators are not allowed in the same group.");
    } else if (nonblocking > 0) {
      result = LaunchNonBlocking(std::move(plans));
    } else {
      for (auto& [c, mine] : plans) {
        ncclResult_t r = Launch(c, std::move(mine));
        if (result == ncclSuccess) result = r;
      }
    }
  }
  StopGroupApiEvent();
  return result;
}

}  // namespace ncclcpu
