#include "exporter/timeline.h"

#include <algorithm>
#include <climits>

#include "rscore/comm_hash.h"

namespace rs::exporter {
namespace {

constexpr int64_t kRateWindowNs = 1'000'000'000;

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  return h;
}

// The id of the flow from a host call to its operation's device slice: both rows name the
// operation by node, pid, communicator, seq and op (and peer: SEND / RECV count seq per peer).
uint64_t EnqueueFlowId(std::string_view node, int64_t pid, int64_t comm_id_hash, int64_t seq,
                       std::string_view op, int64_t peer) {
  uint64_t h = SplitMix64(Fnv1a(node) ^ 0x656e7175657565ULL);  // "enqueue"
  for (uint64_t v : {static_cast<uint64_t>(pid), static_cast<uint64_t>(comm_id_hash),
                     static_cast<uint64_t>(seq), Fnv1a(op), static_cast<uint64_t>(peer)}) {
    h = SplitMix64(h ^ v);
  }
  return h | 1;
}

int64_t PeerKey(std::string_view op, const Row& row, int col) {
  return (op == "SEND" || op == "RECV") && !row.IsNull(col) ? row.Int(col) : -1;
}

}  // namespace

Result<void> Timeline::Run(RowPipeline& rows) {
  while (true) {
    ASSIGN_OR_RETURN(const Row* row, rows.Next());
    if (row == nullptr) break;
    RETURN_IF_ERROR(OnRow(*row));
  }
  return FlushUntil(INT64_MAX);
}

void Timeline::AddMarks(std::vector<VerdictMark> marks) {
  for (VerdictMark& m : marks) {
    if (m.ts > summary_.last_ts || (m.end < 0 && m.ts < summary_.first_ts)) continue;
    if (m.end >= 0) {
      if (m.end < summary_.first_ts) continue;
      m.ts = std::max(m.ts, summary_.first_ts);
      m.end = std::min(m.end, summary_.last_ts);
    }
    pending_.push(Pending{m.ts, 3, static_cast<int64_t>(marks_.size()), 0});
    marks_.push_back(std::move(m));
  }
}

Result<void> Timeline::EmitMark(const VerdictMark& m) {
  Reset("verdict");
  name_ = m.name;
  for (const auto& [key, value] : m.text_args) ArgString(key, value);
  for (const auto& [key, value] : m.int_args) ArgInt(key, value);
  ++stats_.marks;
  const uint32_t track = tracks_.Verdict();
  return m.end >= 0 ? Slice(track, m.ts, m.end) : Instant(track, m.ts);
}

Result<void> Timeline::OnRow(const Row& row) {
  const Table table = row.table();
  RETURN_IF_ERROR(FlushUntil(row.Int(col::kTs)));
  ++stats_.rows[static_cast<int>(table)];
  switch (table) {
    case Table::kNccl:
      return Nccl(row);
    case Table::kCuda:
      return Cuda(row);
    case Table::kTcp:
      return Tcp(row);
    case Table::kSched:
      return Sched(row);
    case Table::kBlock:
      return Block(row);
    case Table::kProcess:
      return Process(row);
    case Table::kGpu:
      return Gpu(row);
    case Table::kFr:
      return Fr(row);
  }
  return Ok();
}

Result<void> Timeline::Declare() {
  for (uint32_t idx : tracks_.TakeNew()) RETURN_IF_ERROR(sink_.DeclareTrack(tracks_.track(idx)));
  return Ok();
}

Result<void> Timeline::FlushUntil(int64_t ts) {
  while (!pending_.empty() && pending_.top().ts <= ts) {
    Pending p = pending_.top();
    pending_.pop();
    if (p.kind == 3) {
      RETURN_IF_ERROR(EmitMark(marks_[static_cast<size_t>(p.order)]));
      continue;
    }
    if (p.kind == 2) {
      auto it = device_pending_.find(p.order);
      DeviceOp op = std::move(it->second);
      device_pending_.erase(it);
      RETURN_IF_ERROR(EmitDevice(std::move(op)));
      continue;
    }
    if (p.kind == 0) {
      TraceEvent end;
      end.type = EventType::kSliceEnd;
      end.ts = p.ts;
      end.track = p.track;
      RETURN_IF_ERROR(sink_.Emit(end));
      continue;
    }
    if (auto it = runq_active_.find(p.track); it != runq_active_.end()) {
      if (--it->second == 0) RETURN_IF_ERROR(CounterSample(p.track, p.ts, 0));
    } else {
      RETURN_IF_ERROR(UpdateRate(p.track, p.ts));
    }
  }
  return Ok();
}

Result<void> Timeline::Slice(uint32_t logical, int64_t ts, int64_t end) {
  // A negative duration is corrupt data; show it as zero-length rather than break order.
  end = std::max(end, ts);
  return SliceOn(tracks_.Lane(logical, ts, end), ts, end);
}

Result<void> Timeline::SliceOn(uint32_t track, int64_t ts, int64_t end) {
  RETURN_IF_ERROR(Declare());
  ev_.type = EventType::kSliceBegin;
  ev_.ts = ts;
  ev_.end_ts = end;
  ev_.track = track;
  ev_.name = name_;
  RETURN_IF_ERROR(sink_.Emit(ev_));
  pending_.push(Pending{end, 0, -(begin_order_++), track});
  ++stats_.slices;
  stats_.flow_events += static_cast<int64_t>(ev_.flows.size());
  return Ok();
}

Result<void> Timeline::Instant(uint32_t track, int64_t ts) {
  RETURN_IF_ERROR(Declare());
  ev_.type = EventType::kInstant;
  ev_.ts = ts;
  ev_.end_ts = ts;
  ev_.track = track;
  ev_.name = name_;
  ++stats_.instants;
  stats_.flow_events += static_cast<int64_t>(ev_.flows.size());
  return sink_.Emit(ev_);
}

Result<void> Timeline::CounterSample(uint32_t track, int64_t ts, int64_t value) {
  RETURN_IF_ERROR(Declare());
  TraceEvent c;
  c.type = EventType::kCounter;
  c.ts = ts;
  c.track = track;
  c.counter_value = value;
  ++stats_.counter_samples;
  return sink_.Emit(c);
}

void Timeline::Reset(std::string_view category) {
  ev_.args.clear();
  ev_.category = category;
  ev_.flows.clear();
}

void Timeline::ArgInt(std::string_view name, int64_t v) {
  Annotation& a = ev_.args.emplace_back();
  a.name = name;
  a.kind = Annotation::Kind::kInt;
  a.i = v;
}

void Timeline::ArgOptInt(std::string_view name, const Row& row, int col) {
  if (!row.IsNull(col)) ArgInt(name, row.Int(col));
}

void Timeline::ArgString(std::string_view name, std::string v) {
  Annotation& a = ev_.args.emplace_back();
  a.name = name;
  a.kind = Annotation::Kind::kString;
  a.s = std::move(v);
}

void Timeline::ArgBool(std::string_view name, bool v) {
  Annotation& a = ev_.args.emplace_back();
  a.name = name;
  a.kind = Annotation::Kind::kBool;
  a.b = v;
}

Result<void> Timeline::Nccl(const Row& row) {
  namespace c = col::nccl;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs), pid = row.Int(col::kPid);
  uint32_t logical = tracks_.Thread(node, pid, row.Int(col::kTid));
  const bool open = row.IsNull(col::kDur);
  const int64_t end = open ? std::max(summary_.last_ts, ts) : ts + row.Int(col::kDur);
  Reset("nccl");
  name_ = row.Text(col::kName);
  ArgString("op", name_);
  ArgOptInt("rank", row, c::kRank);
  ArgOptInt("nranks", row, c::kNranks);
  if (!row.IsNull(c::kCommIdHash)) {  // as the report and the query views spell it
    ArgString("comm_id_hex", rs::HashHex(static_cast<uint64_t>(row.Int(c::kCommIdHash))));
  }
  ArgOptInt("seq", row, c::kSeq);
  ArgOptInt("count", row, c::kCount);
  if (!row.IsNull(c::kDatatype)) ArgString("datatype", row.Text(c::kDatatype));
  if (!row.IsNull(c::kReduceOp)) ArgString("reduce_op", row.Text(c::kReduceOp));
  ArgOptInt("bytes", row, c::kBytes);
  ArgOptInt("peer", row, c::kPeer);
  ArgOptInt("root", row, c::kRoot);
  ArgOptInt("ret", row, c::kRet);
  if (open || row.Text(c::kState) == "in_flight") {
    ArgBool("in_flight", true);
    ++stats_.in_flight;
  }
  const bool keyed = !row.IsNull(c::kSeq) && !row.IsNull(c::kCommIdHash);
  if (!summary_.gpu_processes.empty() && summary_.gpu_processes.count({node, pid})) {
    // The operation is drawn on the GPU track: the call links to it there.
    if (keyed && RunsOnDevice(name_)) {
      const uint64_t id = EnqueueFlowId(node, pid, row.Int(c::kCommIdHash), row.Int(c::kSeq), name_,
                                        PeerKey(name_, row, c::kPeer));
      host_calls_.insert(id);
      ev_.flows.push_back({FlowKind::kEnqueue, FlowRole::kStart, id});
    }
  } else if (keyed && IsLinkedCollective(name_)) {
    CollectiveFlow({static_cast<uint64_t>(row.Int(c::kCommIdHash)), row.Int(c::kSeq)});
  }
  return Slice(logical, ts, end);
}

void Timeline::CollectiveFlow(std::pair<uint64_t, int64_t> key) {
  auto size = summary_.collective_size.find(key);
  if (size == summary_.collective_size.end() || size->second < 2) return;
  int seen = flow_seen_[key]++;
  const FlowRole role = seen == 0                  ? FlowRole::kStart
                        : seen + 1 >= size->second ? FlowRole::kEnd
                                                   : FlowRole::kStep;
  if (role == FlowRole::kEnd) flow_seen_.erase(key);
  // One id per collective, never 0.
  ev_.flows.push_back({FlowKind::kCollective, role,
                       SplitMix64(key.first ^ SplitMix64(static_cast<uint64_t>(key.second))) | 1});
}

Result<void> Timeline::Cuda(const Row& row) {
  namespace c = col::cuda;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs);
  uint32_t logical = tracks_.Thread(node, row.Int(col::kPid), row.Int(col::kTid));
  const bool open = row.IsNull(col::kDur);
  const int64_t end = open ? std::max(summary_.last_ts, ts) : ts + row.Int(col::kDur);
  Reset("cuda");
  name_ = row.Text(col::kName);
  ArgOptInt("bytes", row, c::kBytes);
  ArgOptInt("stream", row, c::kStream);
  ArgOptInt("ret", row, c::kRet);
  if (open || row.Text(c::kState) == "in_flight") {
    ArgBool("in_flight", true);
    ++stats_.in_flight;
  }
  return Slice(logical, ts, end);
}

Result<void> Timeline::Tcp(const Row& row) {
  namespace c = col::tcp;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs);
  uint32_t track = tracks_.NodeChild(node, "network");
  uint32_t counter = tracks_.Counter(tracks_.Node(node), "retransmits/s", CounterUnit::kCount);
  Reset("tcp");
  // An attempt the kernel could not send (err != 0; it tries again later) is shown but not
  // counted in the rate.
  const bool sent = row.IsNull(c::kErr) || row.Int(c::kErr) == 0;
  name_ = sent ? "retransmit" : "retransmit not sent";
  ArgString("conn", row.Text(c::kSaddr) + ":" + std::to_string(row.Int(c::kSport)) + " -> " +
                        row.Text(c::kDaddr) + ":" + std::to_string(row.Int(c::kDport)));
  ArgOptInt("seq", row, c::kSeq);
  ArgOptInt("segments", row, c::kSegments);
  if (!row.IsNull(c::kState)) ArgString("state", row.Text(c::kState));
  if (!row.IsNull(c::kCaState)) ArgString("ca_state", row.Text(c::kCaState));
  ArgOptInt("err", row, c::kErr);
  ArgOptInt("pid", row, col::kPid);
  RETURN_IF_ERROR(Instant(track, ts));
  if (!sent) return Ok();
  RateWindow& w = rate_[counter];
  int64_t segments = row.IsNull(c::kSegments) ? 1 : row.Int(c::kSegments);
  w.hits.emplace_back(ts, segments);
  w.sum += segments;
  RETURN_IF_ERROR(UpdateRate(counter, ts));
  pending_.push(Pending{ts + kRateWindowNs, 1, begin_order_++, counter});
  return Ok();
}

Result<void> Timeline::UpdateRate(uint32_t counter, int64_t now) {
  RateWindow& w = rate_[counter];
  while (!w.hits.empty() && w.hits.front().first <= now - kRateWindowNs) {
    w.sum -= w.hits.front().second;
    w.hits.pop_front();
  }
  if (w.sum == w.last_emitted) return Ok();
  w.last_emitted = w.sum;
  return CounterSample(counter, now, w.sum);
}

Result<void> Timeline::Sched(const Row& row) {
  namespace c = col::sched;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs), pid = row.Int(col::kPid), dur = row.Int(col::kDur);
  uint32_t logical = tracks_.SchedTrack(node, pid, row.Int(col::kTid));
  Reset("sched");
  name_ = row.Text(col::kName);
  if (!row.IsNull(c::kOtherComm)) ArgString("other_comm", row.Text(c::kOtherComm));
  ArgOptInt("other_pid", row, c::kOtherPid);
  ArgOptInt("cpu", row, c::kCpu);
  // A thread is off its CPU or waiting in one span at a time: where the recorded spans of one
  // thread overlap (their ends come from different events, microseconds apart), the later one
  // is cut to nest, its lost time kept as an argument, instead of a lane of its own.
  const int64_t want = ts + std::max<int64_t>(dur, 0);
  const int64_t end = tracks_.NestedEnd(logical, ts, want);
  if (end < want) {
    ArgInt("cut_ns", want - end);
    ++stats_.sched_cut;
  }
  RETURN_IF_ERROR(Slice(logical, ts, end));
  if (name_ != "runq_latency") return Ok();
  uint32_t counter =
      tracks_.Counter(tracks_.Process(node, pid), "run-queue latency", CounterUnit::kTimeNs);
  ++runq_active_[counter];
  RETURN_IF_ERROR(CounterSample(counter, ts, dur));
  pending_.push(Pending{ts + std::max<int64_t>(dur, 0), 1, begin_order_++, counter});
  return Ok();
}

Result<void> Timeline::Block(const Row& row) {
  namespace c = col::block;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs);
  const bool open = row.IsNull(col::kDur);
  // A negative duration is corrupt data: a zero-length request.
  const int64_t end =
      open ? std::max(summary_.last_ts, ts) : ts + std::max<int64_t>(row.Int(col::kDur), 0);
  Reset("block");
  name_ = "block " + row.Text(col::kName);
  ArgOptInt("bytes", row, c::kBytes);
  if (!row.IsNull(c::kRwbs)) ArgString("rwbs", row.Text(c::kRwbs));
  ArgOptInt("pid", row, col::kPid);
  if (!row.IsNull(c::kComm)) ArgString("comm", row.Text(c::kComm));
  if (open) {
    ArgBool("in_flight", true);
    ++stats_.in_flight;
  }
  return SliceOn(tracks_.DiskLane(node, row.Text(c::kDev), ts, end), ts, end);
}

Result<void> Timeline::Process(const Row& row) {
  namespace c = col::process;
  const std::string node = row.Text(col::kNode);
  uint32_t track = tracks_.NodeChild(node, "processes");
  Reset("process");
  name_ = row.Text(col::kName);
  ArgOptInt("pid", row, col::kPid);
  ArgOptInt("ppid", row, c::kPpid);
  if (!row.IsNull(c::kComm)) ArgString("comm", row.Text(c::kComm));
  if (!row.IsNull(c::kFilename)) ArgString("filename", row.Text(c::kFilename));
  ArgOptInt("exit_code", row, c::kExitCode);
  return Instant(track, row.Int(col::kTs));
}

void Timeline::GpuArgs(const Row& row) {
  namespace c = col::gpu;
  ArgString("op", row.Text(col::kName));
  ArgOptInt("rank", row, c::kRank);
  ArgOptInt("nranks", row, c::kNranks);
  if (!row.IsNull(c::kCommIdHash)) {  // as the report and the query views spell it
    ArgString("comm_id_hex", rs::HashHex(static_cast<uint64_t>(row.Int(c::kCommIdHash))));
  }
  ArgOptInt("seq", row, c::kSeq);
  ArgOptInt("count", row, c::kCount);
  if (!row.IsNull(c::kDatatype)) ArgString("datatype", row.Text(c::kDatatype));
  ArgOptInt("bytes", row, c::kBytes);
  ArgOptInt("peer", row, c::kPeer);
  ArgOptInt("root", row, c::kRoot);
  if (!row.IsNull(c::kAlgorithm)) ArgString("algorithm", row.Text(c::kAlgorithm));
  if (!row.IsNull(c::kProtocol)) ArgString("protocol", row.Text(c::kProtocol));
  ArgOptInt("channels", row, c::kChannels);
  ArgOptInt("net_bytes_sent", row, c::kNetBytesSent);
  ArgOptInt("net_bytes_recv", row, c::kNetBytesRecv);
  ArgString("state", row.Text(c::kState));
  ArgOptInt("clock_error_ns", row, c::kClockError);
  // Profiler API v7: the call's user tag, its kernel's longest sync phases, the kernel kind.
  ArgOptInt("user_tag", row, c::kUserTag);
  ArgOptInt("initial_sync_ns", row, c::kInitialSync);
  ArgOptInt("final_sync_ns", row, c::kFinalSync);
  if (!row.IsNull(c::kKernelSymmetric)) ArgBool("kernel_symmetric", row.Int(c::kKernelSymmetric));
  // From the enqueue to the device start (negative: the device time converted to the host
  // clock came out before the enqueue; the slice then starts at the enqueue).
  if (!row.IsNull(c::kDeviceStart))
    ArgInt("queued_ns", row.Int(c::kDeviceStart) - row.Int(col::kTs));
}

Result<void> Timeline::Gpu(const Row& row) {
  namespace c = col::gpu;
  const std::string node = row.Text(col::kNode);
  const int64_t ts = row.Int(col::kTs), pid = row.Int(col::kPid);
  const std::string& op = row.Text(col::kName);
  const bool started = !row.IsNull(c::kDeviceStart);
  const bool keyed = !row.IsNull(c::kCommIdHash) && !row.IsNull(c::kSeq);
  // The host call that enqueued it came before in the stream (a call enters before it
  // enqueues; ncclGroupEnd enqueues the calls of its group).
  uint64_t flow = 0;
  bool host_call = false;
  if (keyed) {
    flow = EnqueueFlowId(node, pid, row.Int(c::kCommIdHash), row.Int(c::kSeq), op,
                         PeerKey(op, row, c::kPeer));
    host_call = host_calls_.erase(flow) > 0;
  }
  if (!host_call || !started) {
    // Marks the enqueue on the enqueuing thread: no host call to start the flow from, or an
    // operation the GPU never started (the GPU track shows only what the device ran).
    Reset("gpu");
    name_ = op + (started ? " enqueued" : " not started on GPU");
    GpuArgs(row);
    if (started) {
      if (!keyed) flow = SplitMix64(static_cast<uint64_t>(row.Int(col::kId)) ^ 0x677075ULL) | 1;
      ev_.flows.push_back({FlowKind::kEnqueue, FlowRole::kStart, flow});
    }
    const int64_t tid = row.IsNull(col::kTid) ? pid : row.Int(col::kTid);
    RETURN_IF_ERROR(Instant(tracks_.Thread(node, pid, tid), ts));
  }
  if (!started) return Ok();
  DeviceOp d;
  d.node = node;
  d.pid = pid;
  // A tagged call (ncclCollConfig_t.userProfilerTag: a step or phase the caller set) says so
  // on its slice, so that steps read at a glance.
  d.name = row.IsNull(c::kUserTag) ? op : op + " tag " + std::to_string(row.Int(c::kUserTag));
  d.start = std::max(row.Int(c::kDeviceStart), ts);
  d.open = row.IsNull(c::kDeviceEnd);
  d.end = d.open ? std::max(summary_.last_ts, d.start) : row.Int(c::kDeviceEnd);
  d.enqueue_flow = flow;
  d.linked = keyed && IsLinkedCollective(op);
  d.key = {static_cast<uint64_t>(row.Int(c::kCommIdHash)), row.Int(c::kSeq)};
  Reset("gpu");
  GpuArgs(row);
  if (d.open) ArgBool("in_flight", true);
  d.args = std::move(ev_.args);
  ev_.args.clear();
  pending_.push(Pending{d.start, 2, device_order_, 0});
  device_pending_.emplace(device_order_++, std::move(d));
  return Ok();
}

Result<void> Timeline::EmitDevice(DeviceOp op) {
  Reset("gpu");
  name_ = std::move(op.name);
  ev_.args = std::move(op.args);
  if (op.enqueue_flow != 0)
    ev_.flows.push_back({FlowKind::kEnqueue, FlowRole::kEnd, op.enqueue_flow});
  if (op.linked) CollectiveFlow(op.key);
  if (op.open) ++stats_.in_flight;
  ++stats_.device_slices;
  return Slice(tracks_.DeviceTrack(op.node, op.pid), op.start, op.end);
}

Result<void> Timeline::Fr(const Row& row) {
  namespace c = col::fr;
  const int64_t ts = row.Int(col::kTs), rank = row.Int(col::kTid);
  const bool recorded = !row.IsNull(col::kNode) && !row.IsNull(col::kPid);
  std::string label = "pg " + (row.IsNull(c::kPgName) ? "?" : row.Text(c::kPgName));
  if (!row.IsNull(c::kPgDesc) && !row.Text(c::kPgDesc).empty()) {
    label += " (" + row.Text(c::kPgDesc) + ")";
  }
  const uint32_t logical =
      tracks_.FlightRecorder(recorded ? row.Text(col::kNode) : "",
                             recorded ? row.Int(col::kPid) : 0, rank, row.Int(c::kPg), label);
  Reset("flight_recorder");
  name_ = row.Text(c::kProfilingName).empty() ? row.Text(col::kName) : row.Text(c::kProfilingName);
  ArgString("op", row.Text(col::kName));
  ArgInt("rank", rank);
  if (!row.IsNull(c::kPgName)) ArgString("pg", row.Text(c::kPgName));
  ArgInt(row.Int(c::kIsP2p) ? "p2p_seq" : "seq", row.Int(c::kSeq));
  ArgString("state", row.Text(c::kState));
  ArgOptInt("src", row, c::kSrc);
  ArgOptInt("dst", row, c::kDst);
  ArgOptInt("count", row, c::kCount);
  if (!row.IsNull(c::kDatatype)) ArgString("datatype", row.Text(c::kDatatype));
  if (!row.IsNull(c::kInputSizes)) ArgString("input_sizes", row.Text(c::kInputSizes));
  ArgOptInt("discovered_started_ns", row, c::kStarted);
  ArgOptInt("discovered_completed_ns", row, c::kCompleted);
  if (!row.IsNull(c::kRetired)) ArgBool("retired", row.Int(c::kRetired) != 0);
  ArgOptInt("device_ns", row, c::kDeviceNs);
  if (!row.IsNull(c::kBackend)) ArgString("backend", row.Text(c::kBackend));
  if (!row.IsNull(c::kTiming)) ArgString("timing", row.Text(c::kTiming));
  if (row.IsNull(c::kCompleted)) {
    // Only its creation is known: when (or whether) it ran is not (gloo never says; NCCL says
    // 'started' only with timing on).
    ++stats_.fr_instants;
    return Instant(logical, ts);
  }
  ++stats_.fr_slices;
  return Slice(logical, ts, ts + row.Int(col::kDur));
}

}  // namespace rs::exporter
