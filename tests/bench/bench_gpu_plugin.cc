// Benchmark (run by hand): what rankscope's NCCL profiler plugin costs per operation. It calls
// the ncclProfiler_v5 table as NCCL 2.28 does for one collective (or, with API 7, the v7 table
// as NCCL 2.31 does):
//   host:   GroupApi start, CollApi start/stop, KernelLaunch start, Group start, Coll start/stop
//   device: KernelCh start, (v7: its three KernelPhase events, each start, KernelPhaseStop and
//           stop,) its KernelChStop state and stop; one ProxyOp with two ProxySteps (each with
//           NCCL's three send states) -- only when the mask asks for them
// without a reader (the base mask: NCCL sends only the host events, the plugin counts) and
// with one (its heartbeat fresh: every event, a record written per operation), and prints
// nanoseconds per operation, with the cost of one clock_gettime for scale.
//
//   bench_gpu_plugin [operations per round, default 1000000] [rounds, default 5] [API 5 or 7]
// (one API per run: the plugin's masks take the version of a process's first init).
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "recorder/gpu_ring_reader.h"
#include "rscore/nccl_profiler.h"

extern "C" ncclProfiler_v5_t ncclProfiler_v5;
extern "C" ncclProfiler_v7_t ncclProfiler_v7;

namespace {

int64_t Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

template <typename D>
D Descr(uint64_t type, void* parent) {
  D d;
  std::memset(&d, 0, sizeof(d));
  d.type = type;
  d.parentObj = parent;
  return d;
}

// A plugin that does nothing but hand out handles: what the calls and descriptors cost alone.
int NullInit(void** ctx, uint64_t, int*, const char*, int, int, int, ncclDebugLogger_t) {
  *ctx = reinterpret_cast<void*>(1);
  return 0;
}
template <typename D>
int NullStart(void*, void** handle, D*) {
  *handle = reinterpret_cast<void*>(1);
  return 0;
}
int NullStop(void*) { return 0; }
int NullRecord(void*, ncclProfilerEventState_v5_t, ncclProfilerEventStateArgs_v5_t*) { return 0; }
int NullFinalize(void*) { return 0; }
template <typename Table>
const Table kNullPlugin = {"null", NullInit, NullStart, NullStop, NullRecord, NullFinalize};

// Table: ncclProfiler_v5_t or ncclProfiler_v7_t; D its descriptor type.
template <typename Table, typename D>
struct Bench {
  explicit Bench(const Table& plugin) : p(plugin) {}
  static constexpr bool kV7 = std::is_same_v<D, ncclProfilerEventDescr_v7_t>;
  const Table& p;
  void* ctx = nullptr;
  int mask = 0;
  uint64_t nccl_seq = 0;

  // One collective, every event the mask NCCL read at the call's start asks for.
  void Operation() {
    const int call_mask = __atomic_load_n(&mask, __ATOMIC_RELAXED);
    void* group_api = nullptr;
    D d = Descr<D>(ncclProfileGroupApi, nullptr);
    d.groupApi.groupDepth = 1;
    p.startEvent(ctx, &group_api, &d);
    void* coll_api = nullptr;
    d = Descr<D>(ncclProfileCollApi, group_api);
    d.collApi.func = "AllReduce";
    d.collApi.count = 1 << 20;
    d.collApi.datatype = "ncclFloat32";
    p.startEvent(ctx, &coll_api, &d);
    if (coll_api) p.stopEvent(coll_api);
    void* launch = nullptr;
    d = Descr<D>(ncclProfileKernelLaunch, group_api);
    p.startEvent(ctx, &launch, &d);
    if (launch) p.stopEvent(launch);
    void* group = nullptr;
    d = Descr<D>(ncclProfileGroup, nullptr);
    p.startEvent(ctx, &group, &d);
    void* task = nullptr;
    d = Descr<D>(ncclProfileColl, coll_api);
    d.coll.seqNumber = nccl_seq++;
    d.coll.func = "AllReduce";
    d.coll.count = 1 << 20;
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 1;
    d.coll.algo = "RING";
    d.coll.proto = "SIMPLE";
    d.coll.parentGroup = group;
    p.startEvent(ctx, &task, &d);
    if (task) p.stopEvent(task);
    if (group) p.stopEvent(group);
    if (group_api) p.stopEvent(group_api);
    if (task == nullptr || !(call_mask & ncclProfileKernelCh)) return;
    // The device, as NCCL's proxy thread reports it.
    void* ch = nullptr;
    d = Descr<D>(ncclProfileKernelCh, task);
    d.kernelCh.pTimer = static_cast<uint64_t>(Now()) + 1000;
    p.startEvent(ctx, &ch, &d);
    if constexpr (kV7) {  // NCCL 2.31: the channel's phases just before its stop
      uint64_t at = d.kernelCh.pTimer;
      for (uint8_t phase = 0; phase < 3 && ch; ++phase) {
        void* h = nullptr;
        d = Descr<D>(ncclProfileKernelPhase, ch);
        d.kernelPhase.phaseId = phase;
        d.kernelPhase.pTimer = at;
        p.startEvent(ctx, &h, &d);
        ncclProfilerEventStateArgs_v7_t a;
        std::memset(&a, 0, sizeof(a));
        a.kernelCh.pTimer = at += 300;
        if (h) {
          p.recordEventState(h, ncclProfilerKernelPhaseStop, &a);
          p.stopEvent(h);
        }
      }
    }
    void* op = nullptr;
    d = Descr<D>(ncclProfileProxyOp, task);
    d.proxyOp.pid = pid;
    d.proxyOp.peer = 1;
    d.proxyOp.nSteps = 2;
    d.proxyOp.isSend = 1;
    p.startEvent(ctx, &op, &d);
    for (int s = 0; s < 2; ++s) {
      void* step = nullptr;
      d = Descr<D>(ncclProfileProxyStep, op);
      d.proxyStep.step = s;
      p.startEvent(ctx, &step, &d);
      ncclProfilerEventStateArgs_v5_t a;
      std::memset(&a, 0, sizeof(a));
      a.proxyStep.transSize = 1 << 19;
      for (ncclProfilerEventState_t st :
           {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendPeerWait_v4,
            ncclProfilerProxyStepSendWait}) {
        if (step) p.recordEventState(step, st, &a);
      }
      if (step) p.stopEvent(step);
    }
    if (op) p.stopEvent(op);
    ncclProfilerEventStateArgs_v5_t a;
    std::memset(&a, 0, sizeof(a));
    a.kernelCh.pTimer = static_cast<uint64_t>(Now()) + 1000;
    if (ch) {
      p.recordEventState(ch, ncclProfilerKernelChStop, &a);
      p.stopEvent(ch);
    }
  }
  pid_t pid = 0;
};

// min / median of the rounds
void Print(const char* what, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::printf("%-36s %8.1f %8.1f\n", what, v.front(), v[v.size() / 2]);
}

template <typename Table, typename D>
int Run(const Table& plugin, long n, int rounds) {
  Bench<Table, D> b(plugin);
  b.pid = getpid();
  // The same calls to a plugin that does nothing, with NCCL's mask without and with the
  // device events.
  Bench<Table, D> null_base(kNullPlugin<Table>), null_full(kNullPlugin<Table>);
  null_base.mask = ncclProfileColl | ncclProfileP2p | ncclProfileCollApi | ncclProfileP2pApi |
                   ncclProfileKernelLaunch;
  null_full.mask = null_base.mask | ncclProfileKernelCh | ncclProfileProxyOp |
                   ncclProfileProxyStep | (Bench<Table, D>::kV7 ? ncclProfileKernelPhase : 0);
  if (b.p.init(&b.ctx, 0xbe9c, &b.mask, "bench", 1, 8, 0, nullptr) != 0) {
    std::fprintf(stderr, "the plugin's init failed\n");
    return 1;
  }
  auto where = rs::rec::FindGpuRing("/proc", getpid());
  if (!where.ok() || !where.value()) {
    std::fprintf(stderr, "no region in /proc/self/fd\n");
    return 1;
  }
  auto reader = rs::rec::GpuRingReader::Open(where.value()->path);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.error().message().c_str());
    return 1;
  }

  std::vector<double> clock_ns, base_ns, full_ns, null_base_ns, null_full_ns, read_ns;
  for (int r = 0; r < rounds; ++r) {
    int64_t t0 = Now();
    for (long i = 0; i < n; ++i) null_base.Operation();
    null_base_ns.push_back(static_cast<double>(Now() - t0) / n);
    t0 = Now();
    for (long i = 0; i < n; ++i) null_full.Operation();
    null_full_ns.push_back(static_cast<double>(Now() - t0) / n);

    t0 = Now();
    int64_t sink = 0;
    for (long i = 0; i < n; ++i) sink += Now();
    clock_ns.push_back(static_cast<double>(Now() - t0) / n);
    if (sink == 42) std::puts("");

    reader->Heartbeat(1);  // a reader long gone: the next call switches the mask back to base
    b.Operation();
    t0 = Now();
    for (long i = 0; i < n; ++i) b.Operation();
    base_ns.push_back(static_cast<double>(Now() - t0) / n);

    reader->Heartbeat(Now());
    b.Operation();  // switches the mask to device events
    const uint64_t head = reader->header().head;
    t0 = Now();
    for (long i = 0; i < n; ++i) {
      if (i % 65536 == 0) reader->Heartbeat(Now());
      b.Operation();
    }
    full_ns.push_back(static_cast<double>(Now() - t0) / n);
    if (reader->header().head - head != static_cast<uint64_t>(n)) {
      std::fprintf(stderr, "expected %ld records, the ring got %llu\n", n,
                   static_cast<unsigned long long>(reader->header().head - head));
      return 1;
    }
    // The recorder's side: a read with nothing new, i.e. what it checks of the region
    // (header unchanged, counters neither back nor past their bound) at every tick.
    (void)reader->Read();
    size_t got = 0;
    t0 = Now();
    for (long i = 0; i < n; ++i) got += reader->Read().size();
    read_ns.push_back(static_cast<double>(Now() - t0) / n);
    if (got != 0 || reader->view().corrupt()) {
      std::fprintf(stderr, "a read with nothing new read %zu records (%s)\n", got,
                   reader->view().corruption().c_str());
      return 1;
    }
  }
  std::printf(
      "profiler API v%d, %ld operations per round, %d rounds; ns per operation:\n"
      "%-36s %8s %8s\n",
      Bench<Table, D>::kV7 ? 7 : 5, n, rounds, "", "min", "median");
  Print("clock_gettime(CLOCK_MONOTONIC)", clock_ns);
  Print("a plugin doing nothing, base mask", null_base_ns);
  Print("a plugin doing nothing, full mask", null_full_ns);
  Print("rankscope, no reader (base mask)", base_ns);
  Print("rankscope, reader (full mask)", full_ns);
  Print("recorder: a read, nothing new", read_ns);
  const rs_gpu_ring_header& h = reader->header();
  std::printf("plugin counters: ops %llu, unrecorded %llu, slots full %llu, late %llu\n",
              static_cast<unsigned long long>(h.ops),
              static_cast<unsigned long long>(h.ops_unrecorded),
              static_cast<unsigned long long>(h.drops_slots_full),
              static_cast<unsigned long long>(h.drops_late_event));
  b.p.finalize(b.ctx);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1000000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  const int api = argc > 3 ? std::atoi(argv[3]) : 5;
  if (n <= 0 || rounds <= 0 || (api != 5 && api != 7)) {
    std::fprintf(stderr, "usage: %s [operations per round] [rounds] [API: 5 or 7]\n", argv[0]);
    return 2;
  }
  // No startup window (gpu_ring.h): "no reader" must mean the base mask from the first round.
  setenv("RANKSCOPE_PLUGIN_STARTUP_MS", "0", 1);
  return api == 7 ? Run<ncclProfiler_v7_t, ncclProfilerEventDescr_v7_t>(ncclProfiler_v7, n, rounds)
                  : Run<ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t>(ncclProfiler_v5, n, rounds);
}
