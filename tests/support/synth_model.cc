#include "synth_model.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "rscore/comm_hash.h"

namespace synth {
namespace {

constexpr int64_t kCount = 1 << 20;  // float32 elements per gradient AllReduce

// Stream handles of a rank's process (sync mode: one stream, as before).
int64_t CommStream(int pid) { return 0x7f100000 + 16 * int64_t{pid}; }
int64_t ComputeStream(int pid) { return CommStream(pid) + 8; }
constexpr int64_t kSyncStream = 0x7f0000;
constexpr int kHostToDevice = 1, kDeviceToHost = 2;

class Generator {
 public:
  explicit Generator(const ClusterSpec& s) : s_(s), rng_(s.seed) {
    unsigned char id[rs::kUniqueIdBytes];
    for (int i = 0; i < rs::kUniqueIdBytes; ++i) id[i] = static_cast<unsigned char>(rng_());
    comm_hash_ = rs::CommIdHash(id);
  }

  int64_t Recorded(int node, int64_t true_ns) const { return RecordedTime(s_, node, true_ns); }

  int64_t U(int64_t hi) {
    return hi <= 0 ? 0 : static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi));
  }

  // Returns the true end time of the run.
  int64_t Run(const Sink& sink) {
    const int R = s_.ranks_per_node, N = s_.nodes, W = N * R;
    int64_t t = s_.start_ns + 5'000'000;
    for (int n = 0; n < N; ++n)
      for (int l = 0; l < R; ++l)
        sink.process(n, Recorded(n, s_.start_ns + 1'000'000), "exec", Pid(n, l));
    // Communicator init: a rendezvous (everyone returns after the last one entered).
    std::vector<int64_t> arrive(W);
    Collective(sink, t, "COMM_INIT", -1, arrive, 0);
    t += 3'000'000;
    const int64_t end = s_.collectives == "async" ? RunAsync(sink, t) : RunSync(sink, t);
    if (s_.rdma || s_.fault == "ib") RdmaReadings(sink, end);
    return end;
  }

 private:
  bool FaultyKind() const { return s_.fault == "slow" || s_.fault == "cpu" || s_.fault == "io"; }
  bool IsFaultRank(int g) const {
    return g / s_.ranks_per_node == s_.fault_node && g % s_.ranks_per_node == s_.fault_local_rank;
  }

  // Data loading: block reads on every node; the io fault makes the fault node's slow.
  void BlockReads(const Sink& sink, int64_t t) {
    for (int n = 0; n < s_.nodes; ++n) {
      for (int l = 0; l < s_.ranks_per_node; ++l) {
        bool hit = s_.fault == "io" && n == s_.fault_node;
        int64_t lat = hit ? 3'000'000 + U(4'000'000) : 80'000 + U(40'000);
        sink.block(n, BlockRow{Recorded(n, t + U(500'000)), lat, 1 << 20, hit ? "write" : "read",
                               Pid(n, l)});
      }
    }
  }

  // Rank g's scheduler rows of a step starting at t.
  void SchedRows(const Sink& sink, int step, int g, int64_t t) {
    const int n = g / s_.ranks_per_node, l = g % s_.ranks_per_node;
    if (s_.fault == "cpu" && IsFaultRank(g)) {
      for (int k = 0; k < 4; ++k) {
        sink.sched(n, SchedRow{Recorded(n, t + k * 4'000'000), s_.fault_delay_ns / 4,
                               "runq_latency", Pid(n, l), 31337, "burner"});
      }
    } else if (step % 5 == 0) {
      sink.sched(n, SchedRow{Recorded(n, t + 1'000'000), 15'000 + U(10'000), "runq_latency",
                             Pid(n, l), 1, "kworker/0:1"});
    }
    for (int k = 0; k < s_.extra_sched_per_step; ++k) {
      sink.sched(n,
                 SchedRow{Recorded(n, t + k * 1000), 5'000, "off_cpu", Pid(n, l), 0, "swapper/0"});
    }
    for (int k = 0; k < s_.launches_per_step; ++k) {
      const int64_t at = t + (k + 1) * s_.step_compute_ns / (s_.launches_per_step + 1);
      sink.cuda(n, CudaRow{Recorded(n, at), 4'000, Pid(n, l), "cudaLaunchKernel", 7, 0, 0});
    }
  }

  // How much longer the data of step `step` takes to move: loss, every step; ib, the second
  // quarter of the steps (its link flapping), whose transfers are kept for the port counters.
  int64_t TransferFactor(int step) const {
    if (s_.fault == "loss") return 5;
    return s_.fault == "ib" && IbBad(step) ? 5 : 1;
  }
  bool IbBad(int step) const { return step >= s_.steps / 4 && step < s_.steps / 2; }
  void NoteTransfer(int step, int64_t end, int64_t transfer) {
    if (s_.fault == "ib" && IbBad(step)) ib_bad_.emplace_back(end - transfer, end);
  }

  // Every node's port read every rdma_reading_ns from the start to `end`: a row per counter at
  // the first and last reading and where its value changed (as the recorder writes them).
  void RdmaReadings(const Sink& sink, int64_t end) {
    if (!sink.rdma) return;
    struct Counter {
      const char* name;
      const char* dir;
      int64_t value;
    };
    for (int n = 0; n < s_.nodes; ++n) {
      std::vector<Counter> counters = {{"port_xmit_data", "counters", 1'000'000},
                                       {"port_xmit_wait", "counters", 500},
                                       {"symbol_error", "counters", 0},
                                       {"link_error_recovery", "counters", 0}};
      int64_t before = -1;
      bool recovered = false;
      for (int64_t t = s_.start_ns + 2'000'000;; t += s_.rdma_reading_ns) {
        const bool last = t >= end;
        if (last) t = end;
        const bool bad = s_.fault == "ib" && n == s_.fault_node &&
                         std::any_of(ib_bad_.begin(), ib_bad_.end(), [&](const auto& w) {
                           return w.first < t && w.second > before;
                         });
        for (Counter& c : counters) {
          const int64_t old = c.value;
          const std::string name = c.name;
          if (before >= 0) {
            if (name == "port_xmit_data") c.value += 250'000 + U(10'000);
            if (name == "port_xmit_wait") c.value += U(3) == 0 ? U(40) : 0;
            if (name == "symbol_error" && bad) c.value += 50 + U(200);
            if (name == "link_error_recovery" && bad && !recovered) c.value += 1, recovered = true;
          }
          if (before >= 0 && c.value == old && !last) continue;
          RdmaRow r{Recorded(n, t), std::nullopt, c.name, c.dir, c.value, std::nullopt};
          if (before >= 0) {
            r.since = Recorded(n, before);
            r.delta = c.value - old;
          }
          sink.rdma(n, r);
        }
        before = t;
        if (last) break;
      }
    }
  }

  // The loss fault: retransmits on the fault node's links during a transfer ending at `end`.
  void LossRetransmits(const Sink& sink, int64_t end, int64_t transfer) {
    const int k = s_.fault_node, N = s_.nodes;
    for (int peer : {(k + N - 1) % N, (k + 1) % N}) {
      if (peer == k) continue;
      for (int i = 0; i < 2; ++i) {
        sink.tcp(peer, TcpRow{Recorded(peer, end - transfer + U(transfer)), NodeAddress(peer),
                              NodeAddress(k), 40000 + peer, 29500, int64_t(rng_() % 4000000000u)});
      }
    }
    sink.tcp(k, TcpRow{Recorded(k, end - transfer + U(transfer)), NodeAddress(k),
                       NodeAddress((k + 1) % N), 40000 + k, 29500, int64_t(rng_() % 4000000000u)});
  }

  int64_t RunSync(const Sink& sink, int64_t t) {
    const int R = s_.ranks_per_node, W = s_.nodes * R;
    std::vector<int64_t> arrive(W);
    int64_t seq = 0;
    for (int step = 0; step < s_.steps; ++step) {
      BlockReads(sink, t);
      for (int g = 0; g < W; ++g) {
        arrive[g] =
            t + s_.step_compute_ns + U(s_.jitter_ns) +
            (FaultyKind() && IsFaultRank(g) ? s_.fault_delay_ns + U(s_.fault_delay_ns / 4) : 0);
        SchedRows(sink, step, g, t);
      }
      if (s_.fault == "hang" && step == s_.hang_step) {
        int hung = s_.fault_node * R + s_.fault_local_rank;
        for (int g = 0; g < W; ++g) {
          if (g == hung) continue;
          int n = g / R;
          sink.nccl(n, NcclRow{Recorded(n, arrive[g]), -1, Pid(n, g % R), g, W, "ALL_REDUCE", seq,
                               kCount, 4 * kCount, comm_hash_, kSyncStream});
        }
        return arrive[0] + 2'000'000'000;
      }
      int64_t transfer = s_.transfer_ns * TransferFactor(step);
      int64_t end = Collective(sink, t, "ALL_REDUCE", seq++, arrive, transfer);
      if (s_.fault == "loss") LossRetransmits(sink, end, transfer);
      NoteTransfer(step, end, transfer);
      t = end + 100'000;
      if (step % 10 == 9) {
        for (int g = 0; g < W; ++g) arrive[g] = t + U(s_.jitter_ns);
        t = Collective(sink, t, "ALL_GATHER", seq++, arrive, s_.transfer_ns / 2) + 100'000;
      }
    }
    return t + 10'000'000;
  }

  // Emits one blocking collective; returns its true end time.
  int64_t Collective(const Sink& sink, int64_t t, const char* op, int64_t seq,
                     std::vector<int64_t>& arrive, int64_t transfer) {
    const int R = s_.ranks_per_node, W = s_.nodes * R;
    bool init = seq < 0;
    if (init) {
      for (int g = 0; g < W; ++g) arrive[g] = t + U(1'000'000);
    }
    int64_t last = *std::max_element(arrive.begin(), arrive.end());
    int64_t end = last + (init ? 500'000 : transfer);
    for (int g = 0; g < W; ++g) {
      int n = g / R, pid = Pid(n, g % R);
      int64_t exit = end + U(s_.exit_jitter_ns);
      int64_t count = init ? 0 : kCount;
      sink.nccl(n, NcclRow{Recorded(n, arrive[g]), exit - arrive[g], pid, g, W, op, init ? -1 : seq,
                           count, init ? 0 : 4 * count, comm_hash_, kSyncStream});
      if (s_.cuda_calls && !init) {
        // CUDA_LAUNCH_BLOCKING: the step's kernel launch returns when the kernel is done, just
        // before the call; the loss copy follows it.
        const int64_t kernel = s_.step_compute_ns / 2;
        sink.cuda(n, CudaRow{Recorded(n, arrive[g] - kernel - 3'000), kernel, pid,
                             "cudaLaunchKernel", kSyncStream, 0, 0});
        const int64_t copy = exit + 2'000 + U(8'000);
        sink.cuda(n, CudaRow{Recorded(n, copy), 10'000 + U(10'000), pid, "cudaMemcpy", 0,
                             kDeviceToHost, 4});
      }
    }
    return end;
  }

  // One rank's device and host state across async steps (true times).
  struct AsyncRank {
    int64_t host = 0;          // the host is ready for the next step
    int64_t compute_free = 0;  // the compute stream's last work ends
    int64_t comm_free = 0;     // the communication stream's last work ends
  };

  // An enqueued collective of every rank: `enqueue[g]` its call's entry (true), `ready[g]` when
  // its inputs are ready on the device. Emits the calls and the device rows; returns each
  // rank's device end (all -1: hung, nobody finished).
  std::vector<int64_t> EnqueuedCollective(const Sink& sink, const char* op, int64_t seq,
                                          const std::vector<int64_t>& enqueue,
                                          const std::vector<int64_t>& ready, int64_t transfer,
                                          std::vector<AsyncRank>& ranks, int hung = -1) {
    const int R = s_.ranks_per_node, W = s_.nodes * R;
    std::vector<int64_t> start(W), end(W, -1);
    int64_t last = 0;
    for (int g = 0; g < W; ++g) {
      if (g == hung) continue;
      const int n = g / R, pid = Pid(n, g % R);
      const int64_t dur = 4'000 + U(s_.enqueue_ns - 4'000);
      sink.nccl(n, NcclRow{Recorded(n, enqueue[g]), dur, pid, g, W, op, seq, kCount, 4 * kCount,
                           comm_hash_, CommStream(pid)});
      // The kernel starts once the call launched it, the inputs are ready and the stream is free.
      start[g] = std::max({enqueue[g] + dur + 3'000 + U(5'000), ready[g], ranks[g].comm_free});
      last = std::max(last, start[g]);
    }
    for (int g = 0; g < W; ++g) {
      if (g == hung) continue;
      if (hung < 0) end[g] = last + transfer + U(5'000);  // every rank's last channel stops
      const int n = g / R, pid = Pid(n, g % R);
      if (hung < 0) ranks[g].comm_free = end[g];
      if (!s_.gpu_ops) continue;
      GpuRow row{
          Recorded(n, enqueue[g]),           pid, g, W, op, seq, 4 * kCount, comm_hash_, {}, {}, {},
          hung < 0 ? "completed" : "started"};
      const int64_t err = s_.gpu_clock_error_ns;
      auto converted = [&](int64_t truth) {
        return Recorded(n, truth + U(std::max<int64_t>(err, 0)));
      };
      row.start = converted(start[g]);
      if (hung < 0) row.end = converted(end[g]);
      if (err >= 0) row.clock_error = err;
      sink.gpu(n, row);
    }
    return end;
  }

  int64_t RunAsync(const Sink& sink, int64_t t) {
    const int R = s_.ranks_per_node, W = s_.nodes * R;
    const int64_t device_ns = s_.step_compute_ns;    // forward + backward on the device
    const int64_t host_ns = s_.step_compute_ns / 4;  // data loading and preprocessing
    std::vector<AsyncRank> ranks(W);
    for (AsyncRank& r : ranks) r.host = r.compute_free = r.comm_free = t;
    int64_t seq = 0;
    for (int step = 0; step < s_.steps; ++step) {
      const int64_t step_t = std::min_element(ranks.begin(), ranks.end(), [](auto& a, auto& b) {
                               return a.host < b.host;
                             })->host;
      BlockReads(sink, step_t);
      // Host: preprocessing, then the step's issue; the device runs forward and backward.
      std::vector<int64_t> issue(W), backward_start(W);
      for (int g = 0; g < W; ++g) {
        const int n = g / R, pid = Pid(n, g % R);
        SchedRows(sink, step, g, ranks[g].host);
        const bool late = (s_.fault == "cpu" || s_.fault == "io") && IsFaultRank(g);
        issue[g] = ranks[g].host + host_ns + U(s_.jitter_ns) +
                   (late ? s_.fault_delay_ns + U(s_.fault_delay_ns / 4) : 0);
        int64_t h = issue[g];
        sink.cuda(n, CudaRow{Recorded(n, h), 3'000, pid, "cudaMemcpyAsync", ComputeStream(pid),
                             kHostToDevice, 1 << 16});
        for (int k = 0; k < 3; ++k) {
          h += 5'000 + U(3'000);
          sink.cuda(
              n, CudaRow{Recorded(n, h), 4'000, pid, "cudaLaunchKernel", ComputeStream(pid), 0, 0});
        }
        const int64_t slow = s_.fault == "slow" && IsFaultRank(g) ? s_.fault_delay_ns : 0;
        const int64_t forward = (device_ns + slow) / 3 + U(s_.jitter_ns / 4);
        backward_start[g] = std::max(issue[g] + 8'000, ranks[g].compute_free) + forward;
        issue[g] = h;
      }
      // Backward produces the buckets last to first; each one's AllReduce is enqueued on the
      // communication stream right after its kernel was launched.
      std::vector<int64_t> enqueue(W), ready(W), device_end(W);
      std::vector<int64_t> backward_done = backward_start;
      const int hung =
          s_.fault == "hang" && step == s_.hang_step ? s_.fault_node * R + s_.fault_local_rank : -1;
      for (int b = s_.buckets - 1; b >= 0; --b) {
        for (int g = 0; g < W; ++g) {
          const int n = g / R, pid = Pid(n, g % R);
          const int64_t slow = s_.fault == "slow" && IsFaultRank(g) ? s_.fault_delay_ns : 0;
          issue[g] += 6'000 + U(4'000);
          sink.cuda(n, CudaRow{Recorded(n, issue[g]), 4'000, pid, "cudaLaunchKernel",
                               ComputeStream(pid), 0, 0});
          issue[g] += 6'000 + U(2'000);
          sink.cuda(n, CudaRow{Recorded(n, issue[g]), 2'000, pid, "cudaStreamWaitEvent",
                               CommStream(pid), 0, 0});
          issue[g] += 3'000 + U(2'000);
          enqueue[g] = issue[g];
          backward_done[g] += (2 * (device_ns + slow) / 3) / s_.buckets + U(s_.jitter_ns / 8);
          ready[g] = backward_done[g];
        }
        if (hung >= 0) {
          EnqueuedCollective(sink, "ALL_REDUCE", seq, enqueue, ready, s_.transfer_ns, ranks, hung);
          for (int g = 0; g < W; ++g) {
            if (g == hung) continue;
            const int n = g / R;
            sink.cuda(n, CudaRow{Recorded(n, issue[g] + 20'000), -1, Pid(n, g % R), "cudaMemcpy", 0,
                                 kDeviceToHost, 4});
          }
          return enqueue[0] + 2'000'000'000;
        }
        const int64_t transfer = s_.transfer_ns * TransferFactor(step) / s_.buckets;
        device_end = EnqueuedCollective(sink, "ALL_REDUCE", seq++, enqueue, ready, transfer, ranks);
        const int64_t last_end = *std::max_element(device_end.begin(), device_end.end());
        if (s_.fault == "loss") LossRetransmits(sink, last_end, transfer);
        NoteTransfer(step, last_end, transfer);
        for (int g = 0; g < W; ++g) issue[g] += 4'000 + U(s_.enqueue_ns);
      }
      if (step % 10 == 9) {
        for (int g = 0; g < W; ++g) {
          issue[g] += 5'000 + U(5'000);
          enqueue[g] = issue[g];
          ready[g] = issue[g];
        }
        EnqueuedCollective(sink, "ALL_GATHER", seq++, enqueue, ready, s_.transfer_ns / 4, ranks);
        for (int g = 0; g < W; ++g) issue[g] += 4'000 + U(s_.enqueue_ns);
      }
      // The optimizer after the reductions, the gradients copied back, then the host blocks in
      // the loss copy until the compute stream is done.
      for (int g = 0; g < W; ++g) {
        const int n = g / R, pid = Pid(n, g % R);
        issue[g] += 5'000;
        sink.cuda(n, CudaRow{Recorded(n, issue[g]), 2'000, pid, "cudaStreamWaitEvent",
                             ComputeStream(pid), 0, 0});
        issue[g] += 5'000;
        sink.cuda(n, CudaRow{Recorded(n, issue[g]), 4'000, pid, "cudaLaunchKernel",
                             ComputeStream(pid), 0, 0});
        issue[g] += 6'000;
        sink.cuda(n, CudaRow{Recorded(n, issue[g]), 3'000, pid, "cudaMemcpyAsync",
                             ComputeStream(pid), kDeviceToHost, 4 * kCount});
        const int64_t optimizer = device_ns / 50 + U(2'000);
        const int64_t done =
            std::max(backward_done[g], ranks[g].comm_free) + optimizer + 150'000 + U(2'000);
        ranks[g].compute_free = done;
        const int64_t entry = issue[g] + 5'000;
        const int64_t exit = std::max(entry, done) + 8'000 + U(s_.wake_jitter_ns);
        sink.cuda(
            n, CudaRow{Recorded(n, entry), exit - entry, pid, "cudaMemcpy", 0, kDeviceToHost, 4});
        ranks[g].host = exit + 20'000 + U(30'000);
      }
    }
    int64_t end = 0;
    for (const AsyncRank& r : ranks) end = std::max(end, r.host);
    return end + 10'000'000;
  }

  const ClusterSpec& s_;
  std::mt19937_64 rng_;
  std::vector<std::pair<int64_t, int64_t>> ib_bad_;  // ib: the slowed transfers (true times)
  uint64_t comm_hash_ = 0;
};

}  // namespace

int Pid(int node, int local) { return 10000 + 100 * node + local; }

int64_t RunModel(const ClusterSpec& spec, const Sink& sink) { return Generator(spec).Run(sink); }

}  // namespace synth
