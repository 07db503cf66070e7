#include "synth_bundle.h"

#include <cmath>
#include <memory>
#include <optional>

#include "rscore/bundle.h"
#include "rscore/comm_hash.h"
#include "rscore/event_id.h"
#include "synth_model.h"

namespace synth {
namespace {

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
  rs::Statement nccl, tcp, sched, block, proc, cuda, gpu, rdma;
};

}  // namespace

std::string NodeName(int k) { return "node" + std::to_string(k); }
std::string NodeAddress(int k) { return "10.77.0." + std::to_string(k + 1); }

int64_t RecordedTime(const ClusterSpec& spec, int node, int64_t true_ns) {
  int64_t off = node < static_cast<int>(spec.offset_ns.size()) ? spec.offset_ns[node] : 0;
  double ppm = node < static_cast<int>(spec.drift_ppm.size()) ? spec.drift_ppm[node] : 0;
  return true_ns + off + static_cast<int64_t>(std::llround(ppm * 1e-6 * (true_ns - spec.start_ns)));
}

RowCounts ExpectedRows(const ClusterSpec& spec) {
  RowCounts c;
  Sink sink{[&](int, const NcclRow&) { ++c.nccl; },
            [&](int, const TcpRow&) { ++c.tcp; },
            [&](int, const SchedRow&) { ++c.sched; },
            [&](int, const BlockRow&) { ++c.block; },
            [&](int, int64_t, const char*, int) { ++c.process; },
            [&](int, const CudaRow&) { ++c.cuda; },
            [&](int, const GpuRow&) { ++c.gpu; },
            [&](int, const RdmaRow&) { ++c.rdma; }};
  RunModel(spec, sink);
  return c;
}

rs::Result<std::vector<std::string>> WriteClusterBundles(const ClusterSpec& spec,
                                                         const std::string& dir) {
  std::vector<std::unique_ptr<NodeWriter>> ws;
  std::vector<std::string> paths;
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
    ASSIGN_OR_RETURN(
        nw->cuda,
        db.Prepare("INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid, tid, api,"
                   " library, bytes, stream, memcpy_kind, ret, state)"
                   " VALUES (?,?,?,?,?,?,?,'cudart',?,?,?,?,?)"));
    ASSIGN_OR_RETURN(
        nw->gpu,
        db.Prepare("INSERT INTO gpu_ops(id, node, timestamp_ns, pid, tid, op, rank, nranks,"
                   " comm_id_hash, seq, count, datatype, bytes, algorithm, protocol, channels,"
                   " device_start_ns, device_end_ns, clock_error_ns, state)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,'float32',?,'RING','SIMPLE',2,?,?,?,?)"));
    ASSIGN_OR_RETURN(
        nw->rdma,
        db.Prepare("INSERT INTO rdma_counters(id, node, timestamp_ns, device, port, counter, dir,"
                   " value, delta, since_ns) VALUES (?,?,?,'mlx5_0',1,?,?,?,?,?)"));
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
        .Bind(17, r.stream)
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
  sink.cuda = [&](int n, const CudaRow& r) {
    NodeWriter& w = *ws[n];
    rs::Statement& st = w.cuda;
    st.Bind(1, w.ids.Next())
        .Bind(2, w.node)
        .Bind(3, r.ts)
        .Bind(5, r.pid)
        .Bind(6, r.pid)
        .Bind(7, r.api)
        .Bind(12, r.dur < 0 ? "in_flight" : "complete");
    if (r.dur >= 0) st.Bind(4, r.dur).Bind(11, 0);
    if (r.bytes) st.Bind(8, r.bytes);
    if (r.stream) st.Bind(9, r.stream);
    if (r.memcpy_kind) st.Bind(10, r.memcpy_kind);
    keep(st.Run());
  };
  sink.gpu = [&](int n, const GpuRow& r) {
    NodeWriter& w = *ws[n];
    keep(w.gpu.Bind(1, w.ids.Next())
             .Bind(2, w.node)
             .Bind(3, r.ts)
             .Bind(4, r.pid)
             .Bind(5, r.pid)
             .Bind(6, r.op)
             .Bind(7, r.rank)
             .Bind(8, r.nranks)
             .Bind(9, r.comm_hash)
             .Bind(10, r.seq)
             .Bind(11, r.bytes / 4)
             .Bind(12, r.bytes)
             .Bind(13, r.start)
             .Bind(14, r.end)
             .Bind(15, r.clock_error)
             .Bind(16, r.state)
             .Run());
  };
  sink.rdma = [&](int n, const RdmaRow& r) {
    NodeWriter& w = *ws[n];
    keep(w.rdma.Bind(1, w.ids.Next())
             .Bind(2, w.node)
             .Bind(3, r.ts)
             .Bind(4, r.counter)
             .Bind(5, r.dir)
             .Bind(6, r.value)
             .Bind(7, r.delta)
             .Bind(8, r.since)
             .Run());
  };
  int64_t end = RunModel(spec, sink);
  RETURN_IF_ERROR(status);
  const int R = spec.ranks_per_node;
  for (int n = 0; n < spec.nodes; ++n) {
    NodeWriter& w = *ws[n];
    rs::Db& db = w.w->db();
    int64_t rec_start = RecordedTime(spec, n, spec.start_ns), rec_end = RecordedTime(spec, n, end);
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
                          .Bind(5, RecordedTime(spec, n, tt))
                          .Run());
      if (last) break;
    }
    RETURN_IF_ERROR(db.Exec("INSERT INTO interfaces VALUES ('" + w.node + "', 'eth0', 'ipv4', '" +
                            NodeAddress(n) + "', 24, 4026531840)"));
    RETURN_IF_ERROR(db.Exec("INSERT INTO block_devices VALUES ('" + w.node + "', '7:0', 'loop0')"));
    if (spec.rdma || spec.fault == "ib") {
      RETURN_IF_ERROR(db.Exec("INSERT INTO rdma_ports VALUES ('" + w.node +
                              "', 'mlx5_0', 1, 'InfiniBand', 'ib0', NULL, NULL, "
                              "'200 Gb/sec (4X HDR)', '4: ACTIVE')"));
    }
    for (int l = 0; l < R; ++l) {
      int g = n * R + l;
      RETURN_IF_ERROR(db.Exec(
          "INSERT INTO processes(node, pid, comm, exe, env_rank, env_local_rank, env_world_size,"
          " nccl_rank, nccl_nranks, rank, cuda_launch_blocking) VALUES ('" +
          w.node + "', " + std::to_string(10000 + 100 * n + l) +
          ", 'trainer', '/usr/bin/trainer', " + std::to_string(g) + ", " + std::to_string(l) +
          ", " + std::to_string(spec.nodes * R) + ", " + std::to_string(g) + ", " +
          std::to_string(spec.nodes * R) + ", " + std::to_string(g) + ", " +
          // the trainer's sync mode with its CUDA calls: CUDA_LAUNCH_BLOCKING=1
          (spec.collectives == "sync" && spec.cuda_calls ? "1" : "NULL") + ")"));
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
