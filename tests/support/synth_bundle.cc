#include "synth_bundle.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <random>

#include "rscore/bundle.h"
#include "rscore/comm_hash.h"
#include "rscore/event_id.h"

namespace synth {
namespace {

constexpr int64_t kCount = 1 << 20;  // float32 elements per gradient AllReduce

struct NcclRow {
  int64_t ts, dur;  // recorded wall clock; dur < 0 = in flight
  int pid, rank, nranks;
  const char* op;
  int64_t seq, count, bytes;
  uint64_t comm_hash;
};
struct TcpRow {
  int64_t ts;
  std::string saddr, daddr;
  int sport, dport;
  int64_t seq;
};
struct SchedRow {
  int64_t ts, dur;
  const char* event;
  int pid, other_pid;
  const char* other_comm;
};
struct BlockRow {
  int64_t ts, dur, bytes;
  const char* op;
  int pid;
};

// Receives every generated row, tagged with its node.
struct Sink {
  std::function<void(int, const NcclRow&)> nccl;
  std::function<void(int, const TcpRow&)> tcp;
  std::function<void(int, const SchedRow&)> sched;
  std::function<void(int, const BlockRow&)> block;
  std::function<void(int, int64_t, const char*, int)> process;  // node, ts, event, pid
};

int Pid(int node, int local) { return 10000 + 100 * node + local; }

class Generator {
 public:
  explicit Generator(const ClusterSpec& s) : s_(s), rng_(s.seed) {
    unsigned char id[rs::kUniqueIdBytes];
    for (int i = 0; i < rs::kUniqueIdBytes; ++i) id[i] = static_cast<unsigned char>(rng_());
    comm_hash_ = rs::CommIdHash(id);
  }

  int64_t Recorded(int node, int64_t true_ns) const {
    int64_t off = node < static_cast<int>(s_.offset_ns.size()) ? s_.offset_ns[node] : 0;
    double ppm = node < static_cast<int>(s_.drift_ppm.size()) ? s_.drift_ppm[node] : 0;
    return true_ns + off + static_cast<int64_t>(std::llround(ppm * 1e-6 * (true_ns - s_.start_ns)));
  }

  int64_t U(int64_t hi) {
    return hi <= 0 ? 0 : static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi));
  }

  // Returns the true end time of the run.
  int64_t Run(const Sink& sink) {
    const int R = s_.ranks_per_node, N = s_.nodes, W = N * R;
    const bool faulty_kind = s_.fault == "slow" || s_.fault == "cpu" || s_.fault == "io";
    int64_t t = s_.start_ns + 5'000'000;
    for (int n = 0; n < N; ++n)
      for (int l = 0; l < R; ++l)
        sink.process(n, Recorded(n, s_.start_ns + 1'000'000), "exec", Pid(n, l));
    // Communicator init: a rendezvous (everyone returns after the last one entered).
    std::vector<int64_t> arrive(W), seq_of(W, 0);
    Collective(sink, t, "COMM_INIT", -1, arrive, 0);
    t += 3'000'000;
    int64_t seq = 0;
    for (int step = 0; step < s_.steps; ++step) {
      // Data loading: block reads on every node; the io fault makes the fault node's slow.
      for (int n = 0; n < N; ++n) {
        for (int l = 0; l < R; ++l) {
          bool hit = s_.fault == "io" && n == s_.fault_node;
          int64_t lat = hit ? 3'000'000 + U(4'000'000) : 80'000 + U(40'000);
          sink.block(n, BlockRow{Recorded(n, t + U(500'000)), lat, 1 << 20, hit ? "write" : "read",
                                 Pid(n, l)});
        }
      }
      for (int g = 0; g < W; ++g) {
        int n = g / R, l = g % R;
        bool is_fault_rank = n == s_.fault_node && l == s_.fault_local_rank;
        arrive[g] =
            t + s_.step_compute_ns + U(s_.jitter_ns) +
            (faulty_kind && is_fault_rank ? s_.fault_delay_ns + U(s_.fault_delay_ns / 4) : 0);
        if (s_.fault == "cpu" && is_fault_rank) {
          for (int k = 0; k < 4; ++k) {
            sink.sched(n, SchedRow{Recorded(n, t + k * 4'000'000), s_.fault_delay_ns / 4,
                                   "runq_latency", Pid(n, l), 31337, "burner"});
          }
        } else if (step % 5 == 0) {
          sink.sched(n, SchedRow{Recorded(n, t + 1'000'000), 15'000 + U(10'000), "runq_latency",
                                 Pid(n, l), 1, "kworker/0:1"});
        }
        for (int k = 0; k < s_.extra_sched_per_step; ++k) {
          sink.sched(
              n, SchedRow{Recorded(n, t + k * 1000), 5'000, "off_cpu", Pid(n, l), 0, "swapper/0"});
        }
      }
      if (s_.fault == "hang" && step == s_.hang_step) {
        int hung = s_.fault_node * R + s_.fault_local_rank;
        for (int g = 0; g < W; ++g) {
          if (g == hung) continue;
          int n = g / R;
          sink.nccl(n, NcclRow{Recorded(n, arrive[g]), -1, Pid(n, g % R), g, W, "ALL_REDUCE", seq,
                               kCount, 4 * kCount, comm_hash_});
        }
        return arrive[0] + 2'000'000'000;
      }
      int64_t transfer = s_.transfer_ns * (s_.fault == "loss" ? 5 : 1);
      int64_t end = Collective(sink, t, "ALL_REDUCE", seq++, arrive, transfer);
      if (s_.fault == "loss") {
        int k = s_.fault_node;
        for (int peer : {(k + N - 1) % N, (k + 1) % N}) {
          if (peer == k) continue;
          for (int i = 0; i < 2; ++i) {
            sink.tcp(peer,
                     TcpRow{Recorded(peer, end - transfer + U(transfer)), NodeAddress(peer),
                            NodeAddress(k), 40000 + peer, 29500, int64_t(rng_() % 4000000000u)});
          }
        }
        sink.tcp(k,
                 TcpRow{Recorded(k, end - transfer + U(transfer)), NodeAddress(k),
                        NodeAddress((k + 1) % N), 40000 + k, 29500, int64_t(rng_() % 4000000000u)});
      }
      t = end + 100'000;
      if (step % 10 == 9) {
        for (int g = 0; g < W; ++g) arrive[g] = t + U(s_.jitter_ns);
        t = Collective(sink, t, "ALL_GATHER", seq++, arrive, s_.transfer_ns / 2) + 100'000;
      }
    }
    return t + 10'000'000;
  }

 private:
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
      int n = g / R;
      int64_t exit = end + U(s_.exit_jitter_ns);
      int64_t count = init ? 0 : kCount;
      sink.nccl(n, NcclRow{Recorded(n, arrive[g]), exit - arrive[g], Pid(n, g % R), g, W, op,
                           init ? -1 : seq, count, init ? 0 : 4 * count, comm_hash_});
    }
    return end;
  }

  const ClusterSpec& s_;
  std::mt19937_64 rng_;
  uint64_t comm_hash_ = 0;
};

std::string Hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

struct NodeWriter {
  std::optional<rs::BundleWriter> w;
  rs::EventIdAllocator ids{1};
  std::string node;
  rs::Statement nccl, tcp, sched, block, proc;
};

}  // namespace

std::string NodeName(int k) { return "node" + std::to_string(k); }
std::string NodeAddress(int k) { return "10.77.0." + std::to_string(k + 1); }

RowCounts ExpectedRows(const ClusterSpec& spec) {
  RowCounts c;
  Sink sink{[&](int, const NcclRow&) { ++c.nccl; }, [&](int, const TcpRow&) { ++c.tcp; },
            [&](int, const SchedRow&) { ++c.sched; }, [&](int, const BlockRow&) { ++c.block; },
            [&](int, int64_t, const char*, int) { ++c.process; }};
  Generator(spec).Run(sink);
  return c;
}

rs::Result<std::vector<std::string>> WriteClusterBundles(const ClusterSpec& spec,
                                                         const std::string& dir) {
  std::vector<std::unique_ptr<NodeWriter>> ws;
  std::vector<std::string> paths;
  Generator gen(spec);
  for (int n = 0; n < spec.nodes; ++n) {
    auto nw = std::make_unique<NodeWriter>();
    std::string path = dir + "/" + NodeName(n) + ".rsb";
    ASSIGN_OR_RETURN(rs::BundleWriter bw, rs::BundleWriter::Create(path, 3));
    nw->w.emplace(std::move(bw));
    nw->node = NodeName(n);
    std::string rid = Hex(rs::SplitMix64(spec.seed * 1000 + n)) + Hex(rs::SplitMix64(n + 7));
    nw->ids = rs::EventIdAllocator(rs::RecordingKey(rid));
    rs::Db& db = nw->w->db();
    RETURN_IF_ERROR(db.Exec("BEGIN"));
    RETURN_IF_ERROR(nw->w->SetMetadata("recording_id", rid));
    RETURN_IF_ERROR(nw->w->SetMetadata("node", nw->node));
    RETURN_IF_ERROR(nw->w->SetMetadata("node_source", "flag"));
    RETURN_IF_ERROR(nw->w->SetMetadata("host", nw->node));
    RETURN_IF_ERROR(nw->w->SetMetadata("kernel", "synthetic"));
    RETURN_IF_ERROR(nw->w->SetMetadata("recorder_version", "synthetic"));
    ASSIGN_OR_RETURN(
        nw->nccl,
        db.Prepare(
            "INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op, rank, "
            "nranks,"
            " comm_id_hash, comm, seq, count, datatype, reduce_op, bytes, stream, ret, state)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"));
    ASSIGN_OR_RETURN(
        nw->tcp,
        db.Prepare(
            "INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr, sport, "
            "dport,"
            " seq, segments, state, netns, ca_state, err) VALUES (?,?,?,'tcp_retransmit_skb',"
            "'ipv4',?,?,?,?,?,1,'ESTABLISHED',4026531840,'Recovery',0)"));
    ASSIGN_OR_RETURN(
        nw->sched,
        db.Prepare(
            "INSERT INTO sched_events(id, node, timestamp_ns, duration_ns, event, pid, tid, cpu,"
            " other_pid, other_tid, other_comm) VALUES (?,?,?,?,?,?,?,0,?,?,?)"));
    ASSIGN_OR_RETURN(
        nw->block,
        db.Prepare(
            "INSERT INTO block_events(id, node, timestamp_ns, duration_ns, dev, op, rwbs, sector,"
            " bytes, pid, comm) VALUES (?,?,?,?,'7:0',?,?,0,?,?,'trainer')"));
    ASSIGN_OR_RETURN(
        nw->proc,
        db.Prepare(
            "INSERT INTO process_events(id, node, timestamp_ns, event, pid, ppid, comm, filename)"
            " VALUES (?,?,?,?,?,1,'trainer','/usr/bin/trainer')"));
    ws.push_back(std::move(nw));
    paths.push_back(path);
  }
  rs::Result<void> status = rs::Ok();
  auto keep = [&](rs::Result<void> r) {
    if (status.ok() && !r.ok()) status = r;
  };
  Sink sink;
  sink.nccl = [&](int n, const NcclRow& r) {
    NodeWriter& w = *ws[n];
    rs::Statement& st = w.nccl;
    st.Bind(1, w.ids.Next())
        .Bind(2, w.node)
        .Bind(3, r.ts)
        .Bind(5, r.pid)
        .Bind(6, r.pid)
        .Bind(7, r.op)
        .Bind(8, r.rank)
        .Bind(9, r.nranks)
        .Bind(10, r.comm_hash)
        .Bind(11, int64_t{0x55550000} + r.pid)
        .Bind(13, r.count)
        .Bind(14, "float32")
        .Bind(15, "sum")
        .Bind(16, r.bytes)
        .Bind(17, int64_t{0x7f0000})
        .Bind(18, 0)
        .Bind(19, r.dur < 0 ? "in_flight" : "complete");
    if (r.dur >= 0) st.Bind(4, r.dur);
    if (r.seq >= 0) st.Bind(12, r.seq);
    keep(st.Run());
  };
  sink.tcp = [&](int n, const TcpRow& r) {
    NodeWriter& w = *ws[n];
    keep(w.tcp.Bind(1, w.ids.Next())
             .Bind(2, w.node)
             .Bind(3, r.ts)
             .Bind(4, r.saddr)
             .Bind(5, r.daddr)
             .Bind(6, r.sport)
             .Bind(7, r.dport)
             .Bind(8, r.seq)
             .Run());
  };
  sink.sched = [&](int n, const SchedRow& r) {
    NodeWriter& w = *ws[n];
    keep(w.sched.Bind(1, w.ids.Next())
             .Bind(2, w.node)
             .Bind(3, r.ts)
             .Bind(4, r.dur)
             .Bind(5, r.event)
             .Bind(6, r.pid)
             .Bind(7, r.pid)
             .Bind(8, r.other_pid)
             .Bind(9, r.other_pid)
             .Bind(10, r.other_comm)
             .Run());
  };
  sink.block = [&](int n, const BlockRow& r) {
    NodeWriter& w = *ws[n];
    keep(w.block.Bind(1, w.ids.Next())
             .Bind(2, w.node)
             .Bind(3, r.ts)
             .Bind(4, r.dur)
             .Bind(5, r.op)
             .Bind(6, std::string(r.op) == "read" ? "R" : "W")
             .Bind(7, r.bytes)
             .Bind(8, r.pid)
             .Run());
  };
  sink.process = [&](int n, int64_t ts, const char* ev, int pid) {
    NodeWriter& w = *ws[n];
    keep(w.proc.Bind(1, w.ids.Next()).Bind(2, w.node).Bind(3, ts).Bind(4, ev).Bind(5, pid).Run());
  };
  int64_t end = gen.Run(sink);
  RETURN_IF_ERROR(status);
  const int R = spec.ranks_per_node;
  for (int n = 0; n < spec.nodes; ++n) {
    NodeWriter& w = *ws[n];
    rs::Db& db = w.w->db();
    int64_t rec_start = gen.Recorded(n, spec.start_ns), rec_end = gen.Recorded(n, end);
    RETURN_IF_ERROR(w.w->SetMetadata("start_ns", std::to_string(rec_start)));
    RETURN_IF_ERROR(w.w->SetMetadata("end_ns", std::to_string(rec_end)));
    ASSIGN_OR_RETURN(
        rs::Statement ref,
        db.Prepare("INSERT INTO clock_refs(node, seq, kind, mono_ns, realtime_ns, read_span_ns, "
                   "maxerror_us,"
                   " esterror_us, clock_state) VALUES (?,?,?,?,?,400,16000,500,'TIME_OK')"));
    int seq = 0;
    for (int64_t t = spec.start_ns;; t += spec.clock_ref_interval_ns) {
      bool last = t >= end;
      int64_t tt = last ? end : t;
      const char* kind = seq == 0 ? "start" : last ? "end" : "periodic";
      RETURN_IF_ERROR(ref.Bind(1, w.node)
                          .Bind(2, seq++)
                          .Bind(3, kind)
                          .Bind(4, tt - spec.start_ns + 1'000'000'000)
                          .Bind(5, gen.Recorded(n, tt))
                          .Run());
      if (last) break;
    }
    RETURN_IF_ERROR(db.Exec("INSERT INTO interfaces VALUES ('" + w.node + "', 'eth0', 'ipv4', '" +
                            NodeAddress(n) + "', 24, 4026531840)"));
    for (int l = 0; l < R; ++l) {
      int g = n * R + l;
      RETURN_IF_ERROR(db.Exec(
          "INSERT INTO processes(node, pid, comm, exe, env_rank, env_local_rank, env_world_size,"
          " nccl_rank, nccl_nranks, rank) VALUES ('" +
          w.node + "', " + std::to_string(10000 + 100 * n + l) +
          ", 'trainer', '/usr/bin/trainer', " + std::to_string(g) + ", " + std::to_string(l) +
          ", " + std::to_string(spec.nodes * R) + ", " + std::to_string(g) + ", " +
          std::to_string(spec.nodes * R) + ", " + std::to_string(g) + ")"));
    }
    for (const char* src : {"tcp", "sched", "block", "process", "nccl", "cuda"}) {
      RETURN_IF_ERROR(db.Exec("INSERT INTO sources(node, source, method, events, drops) VALUES ('" +
                              w.node + "', '" + src + "', 'synthetic', 0, 0)"));
    }
    RETURN_IF_ERROR(db.Exec("COMMIT"));
    RETURN_IF_ERROR(w.w->Finalize());
  }
  return paths;
}

}  // namespace synth
