#include "recorder/sched_probe.h"

#include <bpf/bpf.h>

#include <cstdio>
#include <cstring>

#include "bpf/sched.skel.h"
#include "recorder/log.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

std::string CommOf(const char (&comm)[RS_COMM_LEN]) {
  return std::string(comm, strnlen(comm, RS_COMM_LEN));
}

}  // namespace

const char SchedEventWriter::kInsertSql[] =
    "INSERT INTO sched_events(id, node, timestamp_ns, duration_ns, event, pid, tid, cpu, "
    "other_pid, other_tid, other_comm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

rs::Result<void> SchedEventWriter::Write(std::span<const uint8_t> data) {
  ASSIGN_OR_RETURN(const rs_sched_event e, ReadEvent<rs_sched_event>(data, "sched"));
  const char* event = e.kind == RS_SCHED_OFF_CPU ? "off_cpu"
                      : e.kind == RS_SCHED_RUNQ  ? "runq_latency"
                                                 : nullptr;
  if (event == nullptr) return rs::Error("sched: unknown event kind " + std::to_string(e.kind));
  rs::Statement& st = BeginRow(e.ts_ns);
  st.Bind(4, static_cast<int64_t>(e.duration_ns)).Bind(5, event);
  st.Bind(6, static_cast<int64_t>(e.pid)).Bind(7, static_cast<int64_t>(e.tid));
  st.Bind(8, static_cast<int64_t>(e.cpu));
  st.Bind(9, NullIfZero(e.other_pid)).Bind(10, NullIfZero(e.other_tid));
  const std::string comm = CommOf(e.other_comm);
  st.Bind(11, NullIfEmpty(comm));
  return st.Run();
}

rs::Result<SchedSummaryWriter> SchedSummaryWriter::Create(rs::Db& db, std::string node) {
  SchedSummaryWriter w;
  ASSIGN_OR_RETURN(w.insert_,
                   db.Prepare("INSERT INTO sched_summary(node, timestamp_ns, interval_ns, cpu, "
                              "switches, runq_count, runq_total_ns, runq_max_ns) VALUES "
                              "(?, ?, ?, ?, ?, ?, ?, ?)"));
  w.node_ = std::move(node);
  return w;
}

rs::Result<int> SchedSummaryWriter::Write(int64_t wall_ns, int64_t interval_ns,
                                          const std::vector<SchedCpuSample>& prev,
                                          const std::vector<SchedCpuSample>& now) {
  if (prev.empty()) return 0;
  if (prev.size() != now.size()) return rs::Error("sched: CPU count changed between readings");
  int rows = 0;
  for (size_t cpu = 0; cpu < now.size(); ++cpu) {
    const SchedCpuSample& a = prev[cpu];
    const SchedCpuSample& b = now[cpu];
    if (b.switches < a.switches || b.runq_count < a.runq_count) {
      return rs::Error("sched: per-CPU counters went backwards on CPU " + std::to_string(cpu));
    }
    insert_.Bind(1, node_).Bind(2, wall_ns).Bind(3, interval_ns).Bind(4, static_cast<int64_t>(cpu));
    insert_.Bind(5, static_cast<int64_t>(b.switches - a.switches));
    insert_.Bind(6, static_cast<int64_t>(b.runq_count - a.runq_count));
    insert_.Bind(7, static_cast<int64_t>(b.runq_total_ns - a.runq_total_ns));
    insert_.Bind(8, static_cast<int64_t>(b.runq_max_ns));
    RETURN_IF_ERROR(insert_.Run());
    ++rows;
  }
  return rows;
}

rs::Result<void> SchedProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  ASSIGN_OR_RETURN(writer_, SchedEventWriter::Create(ctx));
  ASSIGN_OR_RETURN(summary_, SchedSummaryWriter::Create(*ctx.db, ctx.node));
  SkeletonOps<sched_bpf> ops{&sched_bpf__open, &sched_bpf__load, &sched_bpf__destroy};
  ASSIGN_OR_RETURN(sched_bpf * skel, Load<sched_bpf>(ops, ctx, [](sched_bpf* s) {
                     s->rodata->min_interval_ns = kMinIntervalNs;
                   }));
  traced_fd_ = bpf_map__fd(skel->maps.traced);
  cpu_stats_fd_ = bpf_map__fd(skel->maps.cpu_stats);
  runq_max_fd_ = bpf_map__fd(skel->maps.runq_max);
  RETURN_IF_ERROR(AttachAndPoll(ctx, skel->maps.sched_rb));
  ASSIGN_OR_RETURN(last_, ReadCpuStats());
  last_mono_ns_ = rs::MonotonicNowNs();
  return rs::Ok();
}

void SchedProbe::OnProcessTraced(RecorderContext& /*ctx*/, int pid) {
  if (traced_fd_ < 0) return;
  uint32_t key = static_cast<uint32_t>(pid);
  uint8_t one = 1;
  if (bpf_map_update_elem(traced_fd_, &key, &one, BPF_ANY) != 0) {
    Log("sched: cannot trace pid %d: %s", pid, std::strerror(errno));
  }
}

rs::Result<std::vector<SchedCpuSample>> SchedProbe::ReadCpuStats() {
  int ncpu = libbpf_num_possible_cpus();
  if (ncpu <= 0) return rs::Error("sched: cannot count the possible CPUs");
  std::vector<rs_sched_cpu_stats> stats(static_cast<size_t>(ncpu));
  std::vector<uint64_t> maxes(static_cast<size_t>(ncpu));
  std::vector<uint64_t> zeros(static_cast<size_t>(ncpu));
  uint32_t key = 0;
  if (bpf_map_lookup_elem(cpu_stats_fd_, &key, stats.data()) != 0 ||
      bpf_map_lookup_elem(runq_max_fd_, &key, maxes.data()) != 0) {
    return rs::Error(std::string("sched: cannot read the per-CPU counters: ") +
                     std::strerror(errno));
  }
  // The max is per interval: reset it (a wait ending between the read and the reset is
  // missed by the max, never by the counts).
  bpf_map_update_elem(runq_max_fd_, &key, zeros.data(), BPF_ANY);
  std::vector<SchedCpuSample> out(static_cast<size_t>(ncpu));
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = {stats[i].switches, stats[i].runq_count, stats[i].runq_total_ns, maxes[i]};
  }
  return out;
}

rs::Result<void> SchedProbe::Summarize(RecorderContext& ctx) {
  ASSIGN_OR_RETURN(std::vector<SchedCpuSample> now, ReadCpuStats());
  int64_t mono = rs::MonotonicNowNs();
  RETURN_IF_ERROR(summary_.Write(ctx.clock->Convert(mono), mono - last_mono_ns_, last_, now));
  last_ = std::move(now);
  last_mono_ns_ = mono;
  return rs::Ok();
}

void SchedProbe::Tick(RecorderContext& ctx) {
  if (cpu_stats_fd_ < 0 || rs::MonotonicNowNs() - last_mono_ns_ < kSummaryPeriodNs) return;
  auto r = Summarize(ctx);
  if (!r.ok() && !summary_error_logged_) {
    summary_error_logged_ = true;
    Log("%s", r.error().message().c_str());
  }
}

rs::Result<void> SchedProbe::Finish(RecorderContext& ctx) {
  RETURN_IF_ERROR(FinishKernel(ctx));
  if (cpu_stats_fd_ >= 0 && !last_.empty()) RETURN_IF_ERROR(Summarize(ctx));
  return rs::Ok();
}

}  // namespace rs::rec
