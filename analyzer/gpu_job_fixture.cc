#include "analyzer/gpu_job_fixture.h"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "rscore/schema.h"
#include "rscore/sqlite.h"

namespace rs::analyzer::testing {
namespace {

constexpr int64_t kStart = 1'760'000'000'000'000'000;
constexpr int64_t kComm = 0x5eed'1234'abcd'0001;
constexpr int64_t kCount = 1 << 20;
constexpr int64_t kStackWaiting = 7001;  // stacks.id of the blocked ranks' loss copy
constexpr int64_t kStackHung = 7002;     // ... of the hung rank's last call

std::string Address(int node) { return "10.88.0." + std::to_string(node + 1); }

class Writer {
 public:
  Writer(const GpuJob& job, rs::Db& db) : job_(job), db_(db), rng_(job.seed) {
    for (int g = 0; g < Ranks(); ++g) error_share_.push_back(U(101));
  }

  rs::Result<void> Prepare() {
    ASSIGN_OR_RETURN(nccl_, db_.Prepare("INSERT INTO nccl_events(node, timestamp_ns, duration_ns,"
                                        " pid, tid, op, rank, nranks, comm_id_hash, seq, count,"
                                        " datatype, bytes, stream, state, stack_id)"
                                        " VALUES (?,?,?,?,?,'ALL_REDUCE',?,?,?,?,?,'float32',?,?,"
                                        " 'complete',?)"));
    if (job_.gpu_ops_table) {
      ASSIGN_OR_RETURN(gpu_, db_.Prepare("INSERT INTO gpu_ops(node, timestamp_ns, pid, tid, op,"
                                         " rank, nranks, comm_id_hash, seq, count, datatype, bytes,"
                                         " device_start_ns, device_end_ns, clock_error_ns, state,"
                                         " initial_sync_ns, kernel_symmetric, user_tag,"
                                         " graph_call_seq, graph_replay_seq)"
                                         " VALUES (?,?,?,?,'ALL_REDUCE',?,?,?,?,?,'float32',?,?,?,"
                                         "?,?,?,?,?,?,?)"));
    }
    ASSIGN_OR_RETURN(cuda_, db_.Prepare("INSERT INTO cuda_events(node, timestamp_ns, duration_ns,"
                                        " pid, tid, api, library, stream, state, stack_id)"
                                        " VALUES (?,?,?,?,?,?,'cudart',?,?,?)"));
    ASSIGN_OR_RETURN(sched_, db_.Prepare("INSERT INTO sched_events(node, timestamp_ns,"
                                         " duration_ns, event, pid, tid, other_pid, other_comm)"
                                         " VALUES (?,?,?,'runq_latency',?,?,?,?)"));
    ASSIGN_OR_RETURN(tcp_, db_.Prepare("INSERT INTO tcp_events(node, timestamp_ns, event, family,"
                                       " saddr, daddr, sport, dport, seq, segments, ca_state, err)"
                                       " VALUES (?,?,'tcp_retransmit_skb','ipv4',?,?,?,29500,?,1,"
                                       "'Loss',0)"));
    return rs::Ok();
  }

  // Returns the end of the recording.
  rs::Result<int64_t> Run() {
    const int W = Ranks();
    std::vector<int64_t> host(W), device_free(W, kStart), comm_free(W, kStart);
    for (int g = 0; g < W; ++g) host[g] = kStart + U(job_.jitter_ns);
    int64_t seq = 0;
    for (int step = 0; step < job_.steps; ++step) {
      step_ = step;
      const bool fault = step >= job_.steps / 3;
      if (step == job_.hang_step && job_.hang_rank >= 0) return Hang(host, device_free, seq);
      std::vector<int64_t> issue(W), device_start(W);
      for (int g = 0; g < W; ++g) {
        int64_t late = fault && g == job_.host_late_rank ? job_.delay_ns + U(job_.delay_ns / 4) : 0;
        issue[g] = host[g] + job_.host_ns + U(job_.jitter_ns) + late;
        RETURN_IF_ERROR(HostRows(g, step, host[g], late));
        RETURN_IF_ERROR(Cuda(g, issue[g] - 20'000, 4'000, "cudaLaunchKernel"));
        device_start[g] = std::max(issue[g], device_free[g]);
      }
      std::vector<int64_t> end(W), call_exit(issue);
      for (int b = 0; b < job_.buckets; ++b) {
        std::vector<int64_t> enqueue(W), start(W);
        int64_t last = 0;
        for (int g = 0; g < W; ++g) {
          int64_t slow = fault && g == job_.device_late_rank ? job_.delay_ns : 0;
          int64_t ready = device_start[g] + (job_.device_ns + slow) * (b + 1) / job_.buckets +
                          U(job_.jitter_ns / 4);
          enqueue[g] =
              job_.blocking ? std::max(ready, call_exit[g]) + 10'000 : issue[g] + (b + 1) * 15'000;
          start[g] = std::max({enqueue[g] + 5'000, ready, comm_free[g]});
          last = std::max(last, start[g]);
        }
        bool lossy = fault && job_.lossy_node >= 0;
        int64_t transfer = job_.transfer_ns * (lossy ? 3 : 1);
        for (int g = 0; g < W; ++g) {
          end[g] = last + transfer + U(5'000);
          comm_free[g] = end[g];
          int64_t call =
              job_.blocking ? end[g] + 10'000 + U(20'000) - enqueue[g] : 8'000 + U(4'000);
          call_exit[g] = enqueue[g] + call;
          RETURN_IF_ERROR(Call(g, seq, enqueue[g], call));
          RETURN_IF_ERROR(
              Device(g, seq, enqueue[g], start[g], end[g], "completed", last - start[g]));
        }
        if (lossy) RETURN_IF_ERROR(Repairs(last, transfer));
        ++seq;
      }
      for (int g = 0; g < W; ++g) {
        // The loss copy: returns once the optimizer after the reductions is done.
        device_free[g] = end[g] + 150'000;
        int64_t entry =
            job_.blocking ? call_exit[g] + 10'000 : issue[g] + (job_.buckets + 1) * 15'000;
        int64_t exit = std::max(entry, device_free[g]) + 10'000 + U(20'000);
        RETURN_IF_ERROR(Cuda(g, entry, exit - entry, "cudaMemcpy"));
        host[g] = exit + 30'000 + U(20'000);
      }
    }
    return *std::max_element(host.begin(), host.end()) + 10'000'000;
  }

 private:
  int Ranks() const { return job_.nodes * job_.ranks_per_node; }
  int Node(int g) const { return g / job_.ranks_per_node; }
  int64_t U(int64_t n) {
    return n > 0 ? static_cast<int64_t>(rng_() % static_cast<uint64_t>(n)) : 0;
  }

  // The host's data loading and preprocessing from `t`: run-queue waits where it is starved.
  rs::Result<void> HostRows(int g, int step, int64_t t, int64_t late) {
    const std::string node = JobNode(Node(g));
    const int64_t pid = JobPid(job_, g);
    if (late > 0) {
      // The competitor holds its CPU for 90% of the delay.
      for (int k = 0; k < 4; ++k) {
        sched_.Bind(1, node).Bind(2, t + k * (late / 4)).Bind(3, late * 9 / 40).Bind(4, pid);
        sched_.Bind(5, pid).Bind(6, 4242).Bind(7, "burner");
        RETURN_IF_ERROR(sched_.Run());
      }
    } else if (step % 5 == 0) {
      sched_.Bind(1, node).Bind(2, t + 500'000).Bind(3, 15'000 + U(10'000)).Bind(4, pid);
      sched_.Bind(5, pid).Bind(6, 17).Bind(7, "kworker/0:1");
      RETURN_IF_ERROR(sched_.Run());
    }
    return rs::Ok();
  }

  bool Replay() const { return job_.graph_replays && step_ > 0; }

  rs::Result<void> Call(int g, int64_t seq, int64_t ts, int64_t dur) {
    if (Replay()) return rs::Ok();  // the graph runs without an NCCL call
    const int64_t pid = JobPid(job_, g);
    nccl_.Bind(1, JobNode(Node(g))).Bind(2, ts).Bind(3, dur).Bind(4, pid).Bind(5, pid);
    nccl_.Bind(6, g).Bind(7, Ranks()).Bind(8, kComm).Bind(9, seq).Bind(10, kCount);
    nccl_.Bind(11, 4 * kCount).Bind(12, 0x200 + pid).BindNull(13);
    return nccl_.Run();
  }

  rs::Result<void> Device(int g, int64_t seq, int64_t enqueue, std::optional<int64_t> start,
                          std::optional<int64_t> end, const char* state,
                          std::optional<int64_t> barrier_wait = std::nullopt) {
    if (!job_.gpu_ops || !job_.gpu_ops_table) return rs::Ok();
    const int64_t pid = JobPid(job_, g);
    if (step_ < job_.device_from_step) return rs::Ok();
    if (job_.graph_replays && step_ == 0) return rs::Ok();  // a capture runs nothing
    // A device time reads late by its rank's share of clock_error_ns after its conversion.
    const int64_t late = std::max<int64_t>(0, job_.clock_error_ns) * error_share_[g] / 100;
    if (start) *start += late;
    if (end) *end += late;
    std::optional<int64_t> bound;
    if (job_.clock_error_ns >= 0) bound = job_.clock_error_ns;
    gpu_.Bind(1, JobNode(Node(g))).Bind(2, enqueue).Bind(3, pid).Bind(4, pid).Bind(5, g);
    gpu_.Bind(6, Ranks()).Bind(7, kComm).Bind(9, kCount).Bind(10, 4 * kCount);
    if (Replay()) {  // seq counts every step's collectives; step 0's were the captured calls
      gpu_.BindNull(8).Bind(18, seq % job_.buckets).Bind(19, seq - job_.buckets + 1);
    } else {
      gpu_.Bind(8, seq).BindNull(18).BindNull(19);
    }
    gpu_.Bind(11, start).Bind(12, end).Bind(13, bound).Bind(14, state);
    const bool timed = job_.symmetric_kernels && barrier_wait;
    gpu_.Bind(15, timed ? std::optional<int64_t>(*barrier_wait + U(2'000)) : std::nullopt);
    gpu_.Bind(16, job_.symmetric_kernels ? std::optional<int64_t>(1) : std::nullopt);
    gpu_.Bind(17, job_.tag_steps ? std::optional<int64_t>(step_ + 1) : std::nullopt);
    return gpu_.Run();
  }

  rs::Result<void> Cuda(int g, int64_t ts, int64_t dur, const char* api,
                        std::optional<int64_t> stack = std::nullopt) {
    const int64_t pid = JobPid(job_, g);
    cuda_.Bind(1, JobNode(Node(g))).Bind(2, ts);
    if (dur >= 0) {
      cuda_.Bind(3, dur);
    } else {
      cuda_.BindNull(3);
    }
    cuda_.Bind(4, pid).Bind(5, pid).Bind(6, api).Bind(7, 0x100 + pid);
    cuda_.Bind(8, dur >= 0 ? "complete" : "in_flight").Bind(9, stack);
    return cuda_.Run();
  }

  // Inbound loss on the lossy node while a collective's data moves: two repairs from each of
  // two peers towards it, one of its own.
  rs::Result<void> Repairs(int64_t last_start, int64_t transfer) {
    const int k = job_.lossy_node, a = (k + 1) % job_.nodes, b = (k + 2) % job_.nodes;
    for (auto [from, to] : {std::pair{a, k}, {a, k}, {b, k}, {b, k}, {k, a}}) {
      tcp_.Bind(1, JobNode(from)).Bind(2, last_start + U(transfer)).Bind(3, Address(from));
      tcp_.Bind(4, Address(to)).Bind(5, 40000 + from).Bind(6, static_cast<int64_t>(U(1 << 30)));
      RETURN_IF_ERROR(tcp_.Run());
    }
    return rs::Ok();
  }

  // The hang step: the others enqueue every bucket's collective; the first one starts on
  // their devices and waits for the hung rank, the rest stay queued behind it; their hosts
  // block in the loss copy. The recording ends hang_recorded_ns later.
  rs::Result<int64_t> Hang(const std::vector<int64_t>& host, const std::vector<int64_t>& device,
                           int64_t seq) {
    const int W = Ranks();
    int64_t latest = 0;
    for (int g = 0; g < W; ++g) {
      int64_t issue = host[g] + job_.host_ns + U(job_.jitter_ns);
      RETURN_IF_ERROR(Cuda(g, issue - 20'000, 4'000, "cudaLaunchKernel"));
      if (g == job_.hang_rank) {
        if (job_.hang_enqueues) {
          // Its device is stuck in the step's earlier work: the collective stays queued.
          RETURN_IF_ERROR(Call(g, seq, issue + 15'000, 9'000));
          RETURN_IF_ERROR(Device(g, seq, issue + 15'000, std::nullopt, std::nullopt, "enqueued"));
          RETURN_IF_ERROR(Cuda(g, issue + 40'000, -1, "cudaStreamSynchronize", kStackHung));
        } else {
          // Its host never gets to the step's collectives (stuck in its own code).
          RETURN_IF_ERROR(Cuda(g, issue - 10'000, 3'000, "cudaMemcpyAsync", kStackHung));
        }
        latest = std::max(latest, issue);
        continue;
      }
      int64_t start = std::max(issue, device[g]) + job_.device_ns / job_.buckets;
      for (int b = 0; b < job_.buckets; ++b) {
        int64_t enqueue = issue + (b + 1) * 15'000;
        RETURN_IF_ERROR(Call(g, seq + b, enqueue, 8'000 + U(4'000)));
        if (b == 0) {
          RETURN_IF_ERROR(Device(g, seq + b, enqueue, start, std::nullopt, "started"));
        } else {
          RETURN_IF_ERROR(Device(g, seq + b, enqueue, std::nullopt, std::nullopt, "enqueued"));
        }
      }
      int64_t entry = issue + (job_.buckets + 1) * 15'000;
      RETURN_IF_ERROR(Cuda(g, entry, -1, "cudaMemcpy", kStackWaiting));
      latest = std::max(latest, entry);
    }
    return latest + job_.hang_recorded_ns;
  }

  const GpuJob& job_;
  rs::Db& db_;
  std::mt19937_64 rng_;
  std::vector<int64_t> error_share_;  // per rank, percent of clock_error_ns
  int step_ = 0;
  rs::Statement nccl_, gpu_, cuda_, sched_, tcp_;
};

}  // namespace

std::string JobNode(int node) { return "node" + std::to_string(node); }

int64_t JobPid(const GpuJob& job, int rank) {
  return 1000 + 100 * (rank / job.ranks_per_node) + rank % job.ranks_per_node;
}

rs::Result<std::string> WriteGpuJob(const GpuJob& job, const std::string& dir) {
  std::string path = dir + "/job.rsdb";
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(path, rs::Db::Mode::kCreate));
  RETURN_IF_ERROR(rs::CreateSchema(db, rs::DbKind::kMerged));
  if (!job.gpu_ops_table) {
    RETURN_IF_ERROR(
        db.Exec("DROP TABLE gpu_ops; ALTER TABLE clock_alignment DROP COLUMN evidence"));
  }
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  for (int n = 0; n < job.nodes; ++n) {
    const std::string node = JobNode(n);
    RETURN_IF_ERROR(
        db.Exec("INSERT INTO interfaces(node, ifname, family, address, prefix_len)"
                " VALUES ('" +
                node + "', 'eth0', 'ipv4', '" + Address(n) + "', 24)"));
    RETURN_IF_ERROR(db.Exec(
        "INSERT INTO clock_alignment(node, offset_ns, error_bound_ns, method, rendezvous_count" +
        std::string(job.gpu_ops_table ? ", evidence" : "") + ") VALUES ('" + node + "', 0, " +
        std::to_string(job.error_bound_ns) + ", '" + (n == 0 ? "reference" : "rendezvous") +
        "', 40" + (job.gpu_ops_table ? ", 'device 40, comm_init 1'" : "") + ")"));
    for (int l = 0; l < job.ranks_per_node; ++l) {
      int rank = n * job.ranks_per_node + l;
      RETURN_IF_ERROR(db.Exec(
          "INSERT INTO processes(node, pid, comm, nccl_rank, nccl_nranks, rank" +
          std::string(job.gpu_ops_table ? ", nccl_profiler_api" : "") + ") VALUES ('" + node +
          "', " + std::to_string(JobPid(job, rank)) + ", 'trainer', " + std::to_string(rank) +
          ", " + std::to_string(job.nodes * job.ranks_per_node) + ", " + std::to_string(rank) +
          (job.gpu_ops_table ? job.gpu_ops ? ", 5" : ", NULL" : "") + ")"));
    }
  }
  RETURN_IF_ERROR(db.Exec(
      "INSERT INTO stacks(id, frames) VALUES (" + std::to_string(kStackWaiting) +
      ", 'cudaMemcpy+0x0 (libcudart.so.13@ab12+0x5100)\ntrain_step+0x9c (trainer@cd34+0x2210)\n"
      "main+0x41 (trainer@cd34+0x1010)'), (" +
      std::to_string(kStackHung) +
      ", 'load_batch+0x3a (trainer@cd34+0x3300)\ntrain_step+0x18 (trainer@cd34+0x2190)\n"
      "main+0x41 (trainer@cd34+0x1010)')"));
  Writer w(job, db);
  RETURN_IF_ERROR(w.Prepare());
  ASSIGN_OR_RETURN(int64_t end, w.Run());
  RETURN_IF_ERROR(db.Exec("INSERT INTO metadata VALUES ('start_ns', '" + std::to_string(kStart) +
                          "'), ('end_ns', '" + std::to_string(end) + "')"));
  if (job.graph_behind_node >= 0) {
    RETURN_IF_ERROR(db.Exec("INSERT INTO metadata VALUES ('node." + JobNode(job.graph_behind_node) +
                            ".gpu_graph_calls_unrecorded', '1')"));
  }
  if (job.skewed_node >= 0) {
    const std::string shift = " + " + std::to_string(job.skew_ns),
                      where = " WHERE node = '" + JobNode(job.skewed_node) + "'";
    for (const char* t : {"nccl_events", "cuda_events", "sched_events", "tcp_events"}) {
      RETURN_IF_ERROR(
          db.Exec(std::string("UPDATE ") + t + " SET timestamp_ns = timestamp_ns" + shift + where));
    }
    if (job.gpu_ops_table) {
      RETURN_IF_ERROR(db.Exec("UPDATE gpu_ops SET timestamp_ns = timestamp_ns" + shift +
                              ", device_start_ns = device_start_ns" + shift +
                              ", device_end_ns = device_end_ns" + shift + where));
    }
  }
  RETURN_IF_ERROR(db.Exec("COMMIT"));
  if (job.gpu_ops_table) {
    RETURN_IF_ERROR(rs::CreateIndexes(db));
  } else {
    RETURN_IF_ERROR(
        db.Exec("CREATE INDEX nccl_events_ts ON nccl_events(timestamp_ns);"
                "CREATE INDEX nccl_events_coll ON nccl_events(comm_id_hash, seq);"
                "CREATE INDEX cuda_events_ts ON cuda_events(timestamp_ns)"));
  }
  return path;
}

}  // namespace rs::analyzer::testing
