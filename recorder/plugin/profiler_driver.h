// Calls a profiler plugin's table as NCCL does, for one communicator, without NCCL: the
// plugin's tests and its benchmark drive rankscope's plugin with it. The host side follows
// NCCL 2.28-2.31 (v5+: GroupApi, CollApi / P2pApi, KernelLaunch, Group, Coll / P2p; the
// activation mask read once per call, at its start) and NCCL 2.27's order for v4 (no API or
// launch events; the mask read when the call appends its task); the device side is what NCCL's
// proxy thread reports (KernelCh with device timestamps, v7's KernelPhase, ProxyOp / ProxyStep
// with the states NCCL's network proxy records). Events are made as v7 describes them and
// passed down to an older table through NCCL's adapters (rscore/nccl_profiler.h). Only events
// the call's mask asks for are started, and only events that got a handle are stopped, as in
// NCCL.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "rscore/nccl_profiler.h"
#include "rscore/nccl_profiler_adapters.h"

namespace rs_test {

class ProfilerDriver {
 public:
  // One communicator of the plugin, initialized through the v7, v6, v5 or v4 table.
  ProfilerDriver(const ncclProfiler_v7_t* v7, uint64_t hash, int nranks, int rank)
      : version_(7), v7_(v7), rank_(rank) {
    Use(v7);
    init_result_ = v7->init(&ctx_, hash, &mask_, "driver", 1, nranks, rank, nullptr);
  }
  ProfilerDriver(const ncclProfiler_v6_t* v6, uint64_t hash, int nranks, int rank)
      : version_(6), v6_(v6), rank_(rank) {
    Use(v6);
    init_result_ = v6->init(&ctx_, hash, &mask_, "driver", 1, nranks, rank, nullptr);
  }
  ProfilerDriver(const ncclProfiler_v5_t* v5, uint64_t hash, int nranks, int rank)
      : version_(5), v5_(v5), rank_(rank) {
    Use(v5);
    init_result_ = v5->init(&ctx_, hash, &mask_, "driver", 1, nranks, rank, nullptr);
  }
  ProfilerDriver(const ncclProfiler_v4_t* v4, uint64_t hash, int nranks, int rank)
      : version_(4), v4_(v4), rank_(rank) {
    Use(v4);
    init_result_ = v4->init(&ctx_, &mask_, "driver", hash, 1, nranks, rank, nullptr);
  }
  ~ProfilerDriver() { Finalize(); }
  ProfilerDriver(const ProfilerDriver&) = delete;
  ProfilerDriver& operator=(const ProfilerDriver&) = delete;

  int init_result() const { return init_result_; }
  int mask() const { return __atomic_load_n(&mask_, __ATOMIC_RELAXED); }
  // NCCL's mask variable: one per NCCL library, shared by its communicators.
  static int& NcclMask() {
    static int mask = 0;
    return mask;
  }
  void* context() const { return ctx_; }
  void Finalize() {
    if (ctx_ != nullptr) finalize_(ctx_);
    ctx_ = nullptr;
  }

  // One API call: what the task keeps until its launch.
  struct Call {
    bool p2p = false;
    const char* func = "";
    size_t count = 0;
    const char* datatype = "ncclFloat32";
    int root = 0;               // collectives; p2p: the peer
    int mask = 0;               // the activation mask NCCL read for it
    const char* algo = "RING";  // collectives: what NCCL chose at launch
    const char* proto = "SIMPLE";
    uint64_t user_tag = 0;   // v7: ncclCollConfig_t.userProfilerTag
    bool symmetric = false;  // v7: NCCL chose a symmetric-memory kernel
    bool graph = false;      // made while its stream was captured into a CUDA graph
    void* api = nullptr;
    void* group_api = nullptr;
  };
  // ncclGroupStart: the GroupApi event of the user's group (v5), its calls at depth 2.
  void GroupStart() {
    if (version_ < 5) return;
    ncclProfilerEventDescr_v7_t g = Descr(ncclProfileGroupApi);
    g.groupApi.groupDepth = 2;
    group_api_ = Start(g);
    Record(group_api_, ncclProfilerGroupStartApiStop, nullptr);
  }
  // ncclAllReduce & co. (v5: the API events); group_depth 2 inside GroupStart.
  Call Collective(const char* func, size_t count, const char* datatype = "ncclFloat32",
                  int root = 0, int group_depth = 1) {
    Call c;
    c.func = func;
    c.count = count;
    c.datatype = datatype;
    c.root = root;
    ApiCall(&c, ncclProfileCollApi, group_depth);
    return c;
  }
  Call PointToPoint(const char* func, size_t count, int peer, const char* datatype = "ncclInt8",
                    int group_depth = 1) {
    Call c;
    c.p2p = true;
    c.func = func;
    c.count = count;
    c.datatype = datatype;
    c.root = peer;
    ApiCall(&c, ncclProfileP2pApi, group_depth);
    return c;
  }

  // cudaStreamBeginCapture / EndCapture: the calls between are captured (graphCaptured).
  void BeginCapture() { capturing_ = true; }
  void EndCapture() { capturing_ = false; }
  // The launch of captured calls: NCCL records the kernel launch into the graph (KernelLaunch,
  // v5) and runs nothing; the graph's host node will start the tasks' events at each replay.
  void CaptureLaunch(const std::vector<Call>& calls) {
    if (calls.empty() || version_ < 5) return;
    if (calls.front().mask & ncclProfileKernelLaunch) {
      ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelLaunch);
      d.parentObj = calls.front().group_api;
      Stop(Start(d));
    }
    Stop(calls.front().group_api);
  }
  // A launched task and the mask it carries.
  struct Task {
    void* handle = nullptr;
    int mask = 0;
  };
  // The group's launch: KernelLaunch (v5), the Group event, each task's Coll / P2p event,
  // stopped at once ("enqueued") unless the caller stops them itself; then the GroupApi
  // event's stop.
  std::vector<Task> Launch(const std::vector<Call>& calls, uint8_t channels = 1,
                           bool stop_tasks = true) {
    return RunTasks(calls, channels, stop_tasks, false);
  }
  // One replay of a graph holding the captured calls: the graph's host node runs NCCL's
  // hostStreamPlanTask (enqueue.cc): the Group event and each task's Coll / P2p event, whose
  // parent is the captured call's API event; a collective's seqNumber advances where the
  // capture's mask had KernelCh (profiler.cc, ncclProfilerStartTaskEvents).
  std::vector<Task> Replay(const std::vector<Call>& calls, uint8_t channels = 1) {
    return RunTasks(calls, channels, true, true);
  }

 private:
  std::vector<Task> RunTasks(const std::vector<Call>& calls, uint8_t channels, bool stop_tasks,
                             bool replay) {
    std::vector<Task> tasks;
    if (calls.empty()) return tasks;
    const int mask = calls.front().mask;
    void* launch = nullptr;
    if (!replay && version_ >= 5 && (mask & ncclProfileKernelLaunch)) {
      ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelLaunch);
      d.parentObj = calls.front().group_api;
      launch = Start(d);
    }
    Stop(launch);
    void* group = Start(Descr(ncclProfileGroup));
    for (const Call& c : calls) {
      Task t;
      t.mask = c.mask;
      if (c.mask & (c.p2p ? ncclProfileP2p : ncclProfileColl)) {
        ncclProfilerEventDescr_v7_t d = Descr(c.p2p ? ncclProfileP2p : ncclProfileColl);
        d.parentObj = c.api;
        d.rank = rank_;
        if (c.p2p) {
          d.p2p.func = c.func;
          d.p2p.count = c.count;
          d.p2p.datatype = c.datatype;
          d.p2p.peer = c.root;
          d.p2p.nChannels = channels;
          d.p2p.parentGroup = group;
          d.p2p.userTag = c.user_tag;
        } else {
          d.coll.seqNumber = nccl_seq_[Func(c.func)]++;
          d.coll.func = c.func;
          d.coll.count = c.count;
          d.coll.root = c.root;
          d.coll.datatype = c.datatype;
          d.coll.nChannels = channels;
          d.coll.nWarps = 16;
          d.coll.algo = c.algo;
          d.coll.proto = c.proto;
          d.coll.parentGroup = group;
          d.coll.userTag = c.user_tag;
          d.coll.isSymColl = c.symmetric;
        }
        t.handle = Start(d);
      } else if (!c.p2p && (!replay || (c.mask & ncclProfileKernelCh))) {
        ++nccl_seq_[Func(c.func)];
      }
      tasks.push_back(t);
    }
    if (stop_tasks) {
      for (const Task& t : tasks) Stop(t.handle);
    }
    Stop(group);
    if (!replay) Stop(calls.front().group_api);
    return tasks;
  }

 public:
  // ---- the device, as NCCL's proxy thread reports it ----
  void* KernelChStart(const Task& t, uint64_t ptimer) {
    if (t.handle == nullptr || !(t.mask & ncclProfileKernelCh)) return nullptr;
    ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelCh);
    d.parentObj = t.handle;
    d.kernelCh.pTimer = ptimer;
    return Start(d);
  }
  void KernelChStop(void* channel, uint64_t ptimer) {
    if (channel == nullptr) return;
    ncclProfilerEventStateArgs_v5_t a;
    std::memset(&a, 0, sizeof(a));
    a.kernelCh.pTimer = ptimer;
    Record(channel, ncclProfilerKernelChStop, &a);
    Stop(channel);
  }
  // v7: one phase of a channel (NCCL 2.31 reports them just before the channel's stop).
  void KernelPhase(void* channel, uint8_t phase, uint64_t start, uint64_t stop) {
    if (channel == nullptr || !(mask() & ncclProfileKernelPhase)) return;
    ncclProfilerEventDescr_v7_t d = Descr(ncclProfileKernelPhase);
    d.parentObj = channel;
    d.kernelPhase.phaseId = phase;
    d.kernelPhase.pTimer = start;
    void* h = Start(d);
    if (h == nullptr) return;
    ncclProfilerEventStateArgs_v7_t a;
    std::memset(&a, 0, sizeof(a));
    a.kernelCh.pTimer = stop;
    Record(h, ncclProfilerKernelPhaseStop, &a);
    Stop(h);
  }
  // v6+: a collective NCCL runs on the copy engines instead of a kernel (ncclLaunchCeColl).
  void CopyEngineCollective(const Call& c) {
    if (!(c.mask & ncclProfileCeColl)) return;
    ncclProfilerEventDescr_v7_t d = Descr(ncclProfileCeColl);
    d.parentObj = c.api;
    d.rank = rank_;
    d.ceColl.func = c.func;
    d.ceColl.count = c.count;
    d.ceColl.datatype = c.datatype;
    d.ceColl.syncStrategy = "UC";
    d.ceColl.userTag = c.user_tag;
    Stop(Start(d));
  }
  void* ProxyOpStart(const Task& t, int peer, bool send, int steps, pid_t pid = getpid()) {
    if (t.handle == nullptr || !(t.mask & (ncclProfileProxyOp | ncclProfileProxyStep))) {
      return nullptr;
    }
    ncclProfilerEventDescr_v7_t d = Descr(ncclProfileProxyOp);
    d.parentObj = t.handle;
    d.rank = rank_;
    d.proxyOp.pid = pid;
    d.proxyOp.peer = peer;
    d.proxyOp.nSteps = steps;
    d.proxyOp.chunkSize = 1 << 20;
    d.proxyOp.isSend = send ? 1 : 0;
    return Start(d);
  }
  void* ProxyStepStart(void* op, int step) {
    if (op == nullptr) return nullptr;
    ncclProfilerEventDescr_v7_t d = Descr(ncclProfileProxyStep);
    d.parentObj = op;
    d.rank = rank_;
    d.proxyStep.step = step;
    return Start(d);
  }
  // Every state NCCL's network proxy records for a step of this direction, each with the
  // step's size (as NCCL passes its current transSize).
  void ProxyStepStates(void* step, bool send, size_t bytes) {
    const ncclProfilerEventState_t send_states[] = {ncclProfilerProxyStepSendGPUWait,
                                                    ncclProfilerProxyStepSendPeerWait_v4,
                                                    ncclProfilerProxyStepSendWait};
    const ncclProfilerEventState_t recv_states[] = {ncclProfilerProxyStepRecvWait,
                                                    ncclProfilerProxyStepRecvFlushWait,
                                                    ncclProfilerProxyStepRecvGPUWait};
    for (ncclProfilerEventState_t s : send ? send_states : recv_states) {
      ncclProfilerEventStateArgs_v5_t a;
      std::memset(&a, 0, sizeof(a));
      a.proxyStep.transSize = bytes;
      Record(step, s, &a);
    }
  }
  void ProxyStep(void* op, int step, bool send, size_t bytes) {
    void* s = ProxyStepStart(op, step);
    if (s == nullptr) return;
    ProxyStepStates(s, send, bytes);
    Stop(s);
  }

  // ---- the table's calls ----
  // Through NCCL's adapters down to the table in use (null: the version has no such event).
  void* Start(const ncclProfilerEventDescr_v7_t& d) {
    void* h = reinterpret_cast<void*>(0xdead);  // the plugin must set it
    ncclProfilerEventDescr_v7_t copy = d;
    ncclProfilerEventDescr_v6_t o6;
    ncclProfilerEventDescr_v5_t o5;
    ncclProfilerEventDescr_v4_t o4;
    if (v7_ != nullptr) {
      v7_->startEvent(ctx_, &h, &copy);
    } else if (!rs::NcclProfilerDescrV6(d, &o6)) {
      return nullptr;
    } else if (v6_ != nullptr) {
      v6_->startEvent(ctx_, &h, &o6);
    } else if (!rs::NcclProfilerDescrV5(o6, &o5)) {
      return nullptr;
    } else if (v5_ != nullptr) {
      v5_->startEvent(ctx_, &h, &o5);
    } else if (rs::NcclProfilerDescrV4(o5, &o4)) {
      v4_->startEvent(ctx_, &h, &o4);
    } else {
      return nullptr;  // v4 has no API events
    }
    return h;
  }
  void Stop(void* h) {
    if (h != nullptr) stop_(h);
  }
  void Record(void* h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v5_t* a) {
    if (h == nullptr) return;
    if (version_ < 7 && s == ncclProfilerKernelPhaseStop) return;  // as NCCL's adapters
    record_(h, s, a);
  }

 private:
  static ncclProfilerEventDescr_v7_t Descr(uint64_t type) {
    ncclProfilerEventDescr_v7_t d;
    std::memset(&d, 0, sizeof(d));
    d.type = type;
    return d;
  }
  static int Func(const char* name) {
    const char* names[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};
    for (int i = 0; i < 5; ++i) {
      if (std::strcmp(names[i], name) == 0) return i;
    }
    return 5;
  }
  template <typename Table>
  void Use(const Table* t) {
    stop_ = t->stopEvent;
    record_ = t->recordEventState;
    finalize_ = t->finalize;
  }
  void ApiCall(Call* c, uint64_t type, int group_depth) {
    c->mask = mask();  // NCCL reads the mask once per call
    c->graph = capturing_;
    if (version_ < 5) return;
    if (group_depth == 1) {
      ncclProfilerEventDescr_v7_t g = Descr(ncclProfileGroupApi);
      g.groupApi.groupDepth = 1;
      group_api_ = Start(g);
      Record(group_api_, ncclProfilerGroupStartApiStop, nullptr);
    }
    c->group_api = group_api_;
    const int api_mask = type == ncclProfileCollApi
                             ? (ncclProfileCollApi | ncclProfileColl | ncclProfileProxyOp |
                                ncclProfileProxyStep | ncclProfileKernelCh)
                             : (ncclProfileP2pApi | ncclProfileP2p | ncclProfileProxyOp |
                                ncclProfileProxyStep | ncclProfileKernelCh);
    if (c->mask & api_mask) {
      ncclProfilerEventDescr_v7_t d = Descr(type);
      d.parentObj = group_api_;
      if (type == ncclProfileCollApi) {
        d.collApi.func = c->func;
        d.collApi.count = c->count;
        d.collApi.datatype = c->datatype;
        d.collApi.root = c->root;
        d.collApi.userTag = c->user_tag;
        d.collApi.graphCaptured = capturing_;
      } else {
        d.p2pApi.func = c->func;
        d.p2pApi.count = c->count;
        d.p2pApi.datatype = c->datatype;
        d.p2pApi.userTag = c->user_tag;
        d.p2pApi.graphCaptured = capturing_;
      }
      c->api = Start(d);
      Stop(c->api);
    }
    if (group_depth == 1) Record(group_api_, ncclProfilerGroupEndApiStart, nullptr);
  }

  int version_ = 0;
  const ncclProfiler_v7_t* v7_ = nullptr;
  const ncclProfiler_v6_t* v6_ = nullptr;
  const ncclProfiler_v5_t* v5_ = nullptr;
  const ncclProfiler_v4_t* v4_ = nullptr;
  int (*stop_)(void*) = nullptr;
  int (*record_)(void*, ncclProfilerEventState_t, ncclProfilerEventStateArgs_v5_t*) = nullptr;
  int (*finalize_)(void*) = nullptr;
  int rank_ = 0;
  void* ctx_ = nullptr;
  int& mask_ = NcclMask();
  int init_result_ = -1;
  void* group_api_ = nullptr;
  bool capturing_ = false;
  uint64_t nccl_seq_[6] = {};
};

}  // namespace rs_test
