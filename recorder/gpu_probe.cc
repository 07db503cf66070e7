#include "recorder/gpu_probe.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "recorder/attach_log.h"
#include "recorder/library_attacher.h"
#include "recorder/log.h"
#include "recorder/options.h"
#include "recorder/process_table.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

// One operation of one communicator, as the plugin's slot and its ring record name it (the
// enqueue time too: sends and receives of graph replays all have seq 0).
bool SameOperation(const rs_gpu_op& a, const rs_gpu_op& b) {
  return a.nccl_comm_hash == b.nccl_comm_hash && a.func == b.func && a.seq == b.seq &&
         a.peer == b.peer && a.enqueue_ns == b.enqueue_ns && a.graph_call_seq == b.graph_call_seq;
}

// The header counters summed over regions, closed ones included (the drops keep their own).
constexpr uint64_t GpuRingCounters::*kSummedCounters[] = {
    &GpuRingCounters::ops_unrecorded, &GpuRingCounters::ops_copy_engine,
    &GpuRingCounters::graph_calls, &GpuRingCounters::graph_calls_unrecorded,
    &GpuRingCounters::graph_replay_ops, &GpuRingCounters::proxy_times_off};

}  // namespace
namespace {

// Whether `pid` (as this recorder sees pids) is the process whose own pid, in its namespace,
// is `own_pid` (the region header's pid): the last NSpid of /proc/PID/status.
bool IsPid(const std::string& proc_root, int pid, int own_pid) {
  std::ifstream in(proc_root + "/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    int innermost = -1;
    for (int v; fields >> v;) innermost = v;
    return innermost == own_pid;
  }
  return pid == own_pid;  // no NSpid line (Linux < 4.1): one namespace
}

bool Alive(const std::string& proc_root, int pid) {
  return access((proc_root + "/" + std::to_string(pid)).c_str(), F_OK) == 0;
}

}  // namespace

rs::Result<rs::Statement> PrepareGpuInsert(rs::Db& db) {
  return PrepareInsert(db, "gpu_ops",
                       "id, node, timestamp_ns, pid, tid, op, rank, nranks, nccl_comm_hash, seq,"
                       " nccl_seq, count, datatype, bytes, peer, root, algorithm, protocol,"
                       " channels, device_start_ns, device_end_ns, clock_error_ns,"
                       " net_bytes_sent, net_bytes_recv, state, user_tag, initial_sync_ns,"
                       " final_sync_ns, kernel_symmetric, graph_call_seq, graph_replay_seq,"
                       " proxy_steps, send_gpu_wait_ns, send_peer_wait_ns, send_net_ns,"
                       " recv_net_wait_ns, recv_gpu_wait_ns, net_step_max_ns, net_step_max_peer");
}

rs::Result<void> WriteGpuRow(rs::Statement& st, const GpuOpRow& row, const std::string& node,
                             int64_t id, int pid, const rs::MonoToWall* clock) {
  auto wall = [clock](int64_t mono) {
    return clock && !clock->empty() ? clock->Convert(mono) : mono;
  };
  auto wall_opt = [&wall](std::optional<int64_t> mono) {
    return mono ? std::optional<int64_t>(wall(*mono)) : std::nullopt;
  };
  st.Bind(1, id).Bind(2, node).Bind(3, wall(row.enqueue_mono_ns)).Bind(4, pid).Bind(5, row.tid);
  st.Bind(6, row.op).Bind(7, row.rank).Bind(8, row.nranks).Bind(9, row.nccl_comm_hash);
  st.Bind(10, row.seq).Bind(11, row.nccl_seq).Bind(12, row.count).Bind(13, row.datatype);
  st.Bind(14, row.bytes).Bind(15, row.peer).Bind(16, row.root).Bind(17, row.algorithm);
  st.Bind(18, row.protocol).Bind(19, row.channels).Bind(20, wall_opt(row.device_start_mono_ns));
  st.Bind(21, wall_opt(row.device_end_mono_ns)).Bind(22, row.clock_error_ns);
  st.Bind(23, row.net_bytes_sent).Bind(24, row.net_bytes_recv).Bind(25, row.state);
  st.Bind(26, row.user_tag).Bind(27, row.initial_sync_ns).Bind(28, row.final_sync_ns);
  st.Bind(29, row.kernel_symmetric).Bind(30, row.graph_call_seq).Bind(31, row.graph_replay_seq);
  st.Bind(32, row.proxy_steps).Bind(33, row.send_gpu_wait_ns).Bind(34, row.send_peer_wait_ns);
  st.Bind(35, row.send_net_ns).Bind(36, row.recv_net_wait_ns).Bind(37, row.recv_gpu_wait_ns);
  st.Bind(38, row.net_step_max_ns).Bind(39, row.net_step_max_peer);
  return st.Run();
}

rs::Result<int64_t> FillGpuCommIdHash(rs::Db& db, const std::string& node) {
  // One pass over nccl_events into a small map, then one UPDATE joined with it.
  RETURN_IF_ERROR(db.Exec(
      "DROP TABLE IF EXISTS temp.gpu_comm_map;"
      " CREATE TEMP TABLE gpu_comm_map(pid INTEGER, nccl_comm_hash INTEGER, comm_id_hash INTEGER,"
      " PRIMARY KEY (pid, nccl_comm_hash)) WITHOUT ROWID"));
  ASSIGN_OR_RETURN(rs::Statement fill,
                   db.Prepare("INSERT INTO temp.gpu_comm_map"
                              " SELECT pid, nccl_comm_hash, MIN(comm_id_hash) FROM nccl_events"
                              " WHERE node = ?1 AND nccl_comm_hash IS NOT NULL"
                              " AND comm_id_hash IS NOT NULL GROUP BY pid, nccl_comm_hash"
                              " HAVING COUNT(DISTINCT comm_id_hash) = 1"));
  RETURN_IF_ERROR(fill.Bind(1, node).Run());
  ASSIGN_OR_RETURN(
      rs::Statement update,
      db.Prepare("UPDATE gpu_ops SET comm_id_hash = m.comm_id_hash"
                 " FROM temp.gpu_comm_map AS m WHERE gpu_ops.node = ?1"
                 " AND m.pid = gpu_ops.pid AND m.nccl_comm_hash = gpu_ops.nccl_comm_hash"));
  RETURN_IF_ERROR(update.Bind(1, node).Run());
  ASSIGN_OR_RETURN(int64_t changed, db.QueryInt("SELECT changes()"));
  RETURN_IF_ERROR(db.Exec("DROP TABLE temp.gpu_comm_map"));
  return changed;
}

GpuProbe::GpuProbe() = default;
GpuProbe::~GpuProbe() { beat_.Stop(); }  // before the regions it beats go

rs::Result<void> GpuProbe::Start(RecorderContext& ctx) {
  enabled_ = !ctx.options || ctx.options->gpu;
  started_ = true;
  start_ns_ = rs::MonotonicNowNs();
  if (!enabled_) return rs::Ok();
  if (!ctx.library_maps) own_maps_ = std::make_unique<ProcLibraryMaps>(ctx.proc_root);
  ASSIGN_OR_RETURN(insert_, PrepareGpuInsert(*ctx.db));
  Read(ctx);  // regions of processes already running: heartbeat at once
  return rs::Ok();
}

void GpuProbe::Tick(RecorderContext& ctx) {
  if (!enabled_ || finished_) return;
  // Its thread starts with the loop, not in Start: the recorder returns to the node's mount
  // namespace after every probe started, and setns(CLONE_NEWNS) refuses a process with threads.
  beat_.Start();
  Read(ctx);
}

bool GpuProbe::Selected(RecorderContext& ctx, int pid) const {
  if (ctx.options && !ctx.options->pids.empty()) {
    // --pid: the chosen processes (and those the NCCL / CUDA probes traced within them).
    if (ctx.processes) return ctx.processes->IsTraced(pid);
    for (int p : ctx.options->pids) {
      if (p == pid) return true;
    }
    return false;
  }
  if (ctx.scope_netns != 0) return ReadNetnsInode(ctx.proc_root, pid) == ctx.scope_netns;
  return true;
}

void GpuProbe::Discover(RecorderContext& ctx, int64_t now_ms) {
  ProcLibraryMaps& maps = ctx.library_maps ? *ctx.library_maps : *own_maps_;
  if (ctx.options && !ctx.options->pids.empty()) {
    // Only the selected processes' maps, at the rescans' pace.
    if (now_ms >= next_pid_scan_ms_) {
      next_pid_scan_ms_ = now_ms + kLibraryRescanMs;
      std::vector<int> pids = ctx.processes ? ctx.processes->TracedPids() : ctx.options->pids;
      for (int pid : pids) {
        if (!pid_region_.count(pid)) (void)maps.Get(pid, now_ms);
      }
    }
  } else if (maps.listed_at_ms() < 0 || now_ms - maps.listed_at_ms() > 2 * kLibraryRescanMs) {
    // No NCCL / CUDA rescan read /proc lately (those probes are not running): read it here.
    for (int pid : maps.Pids(now_ms)) (void)maps.Get(pid, now_ms);
  }
  const std::vector<int> ring_pids = maps.GpuRingPids();
  // What was decided about processes that no longer map a region (exited, exec'd) goes; a
  // failure still within its grace is logged now.
  const std::set<int> current(ring_pids.begin(), ring_pids.end());
  for (auto it = failures_.begin(); it != failures_.end();) {
    if (current.count(it->first)) {
      ++it;
      continue;
    }
    LogFailure(ctx, it->first, it->second);
    it = failures_.erase(it);
  }
  std::erase_if(retry_at_ms_, [&](const auto& e) { return !current.count(e.first); });
  std::erase_if(given_up_, [&](int pid) { return !current.count(pid); });
  for (int pid : ring_pids) {
    if (pid_region_.count(pid) || given_up_.count(pid)) continue;
    if (auto it = retry_at_ms_.find(pid); it != retry_at_ms_.end() && now_ms < it->second) continue;
    if (!Selected(ctx, pid)) {
      retry_at_ms_[pid] = INT64_MAX;  // out of the selection for good (until it execs)
      continue;
    }
    Consider(ctx, pid, now_ms);
  }
}

void GpuProbe::Consider(RecorderContext& ctx, int pid, int64_t now_ms) {
  // The recorder maps every region it reads: its own descriptors of them are no process's
  // region (and, of another user's region, would be refused as of the wrong owner).
  std::set<int> own_fds;
  if (pid == getpid()) {
    for (const auto& [key, r] : regions_) own_fds.insert(r->reader.fd());
  }
  auto found = FindGpuRing(ctx.proc_root, pid, own_fds);
  if (!found.ok()) return Failed(ctx, pid, now_ms, found.error().message());
  if (!found->has_value()) {
    // Its maps showed the region (or did until it exited): look again at the rescans' pace.
    retry_at_ms_[pid] = now_ms + kLibraryRescanMs;
    return;
  }
  // Opened (and its owner checked against this process) before it is known whether another
  // process's region is the same: a region read for one process is refused for another
  // user's process that holds it too.
  std::optional<GpuRegionFault> fault;
  auto reader = GpuRingReader::Open((*found)->path, &fault);
  if (!reader.ok()) return Failed(ctx, pid, now_ms, reader.error().message(), fault);
  const Key key{reader->dev(), reader->ino()};
  if (auto it = regions_.find(key); it != regions_.end()) {
    Region& r = *it->second;  // a forked child (or its parent) of a process already read
    r.pids.insert(pid);
    pid_region_[pid] = key;
    if (!r.creator && IsPid(ctx.proc_root, pid, r.reader.view().creator_pid())) {
      r.pid = pid;
      r.creator = true;
      r.api_written = false;
    }
    return;
  }
  auto region = std::make_unique<Region>(std::move(reader).value());
  const GpuRingCounters& c = region->reader.view().counters();
  region->pid = pid;
  region->creator = IsPid(ctx.proc_root, pid, region->reader.view().creator_pid());
  region->pids.insert(pid);
  region->slots_full_at_open = c.drops_slots_full;
  region->late_event_at_open = c.drops_late_event;
  auto [at, added] = regions_.emplace(key, std::move(region));
  if (added) beat_.Add(at->second.get(), &at->second->reader, rs::MonotonicNowNs());
  pid_region_[pid] = key;
  failures_.erase(pid);
  retry_at_ms_.erase(pid);
  ++regions_read_;
  if (ctx.attach_log) ctx.attach_log->Record("gpu", "pid " + std::to_string(pid), "", true);
}

void GpuProbe::Failed(RecorderContext& ctx, int pid, int64_t now_ms, const std::string& error,
                      std::optional<GpuRegionFault> fault) {
  Failure& f = failures_[pid];
  if (f.first_ms == 0) f.first_ms = now_ms;
  f.error = error;
  f.fault = fault;
  // A region of the wrong owner, or not a sealed memfd, stays one: refused at once. Others
  // are retried (the plugin may still be writing its header).
  const bool final = fault == GpuRegionFault::kOwner || fault == GpuRegionFault::kNotSealed;
  if (!final && now_ms - f.first_ms < kOpenGraceMs) {
    retry_at_ms_[pid] = now_ms;  // the next tick
    return;
  }
  LogFailure(ctx, pid, f);
  failures_.erase(pid);
}

void GpuProbe::LogFailure(RecorderContext& ctx, int pid, const Failure& f) {
  given_up_.insert(pid);
  if (f.fault) ++dropped_[static_cast<size_t>(*f.fault)];
  if (ctx.attach_log) {
    ctx.attach_log->Record("gpu", "pid " + std::to_string(pid), "", false, f.error);
  }
}

void GpuProbe::Write(RecorderContext& ctx, const Region& r, const rs_gpu_op& op) {
  // A record of a startup window read from its beginning: kept only if the operation was
  // still going when the recording started.
  if (r.reader.from_start() &&
      std::max({op.enqueue_ns, op.device_start_ns, op.device_end_ns}) < start_ns_) {
    ++before_start_;
    return;
  }
  std::optional<GpuOpRow> row = DecodeGpuOp(op);
  if (!row) {
    ++closed_.undecodable;
    return;
  }
  if (row->device_time_backwards) ++device_times_backwards_;
  if (row->proxy_times_partial) ++proxy_times_partial_;
  const int64_t id = ctx.ids ? ctx.ids->Next() : static_cast<int64_t>(events_ + 1);
  auto written = WriteGpuRow(insert_, *row, ctx.node, id, r.pid, ctx.clock);
  if (written.ok() || ctx.writes_failed) {  // the event loop counts what failed
    ++events_;
    return;
  }
  ++write_errors_;
  if (first_error_.empty()) {
    first_error_ = written.error().message();
    Log("gpu: cannot write a row: %s", first_error_.c_str());
  }
}

std::vector<rs_gpu_op> GpuProbe::Drain(RecorderContext& ctx, Region& r) {
  std::vector<rs_gpu_op> read = r.reader.Read();
  for (const rs_gpu_op& op : read) Write(ctx, r, op);
  const int32_t api = r.reader.view().counters().api_version;
  if (!r.api_written && api > 0 && ctx.processes) {
    // A process with a region is traced (it may have exited meanwhile: not an error).
    r.api_written = ctx.processes->SetNcclProfilerApi(r.pid, api).ok();
  }
  return read;
}

void GpuProbe::ReadAll(RecorderContext& ctx, int64_t now_ms) {
  const int64_t now_ns = rs::MonotonicNowNs();
  std::vector<Key> corrupt;
  for (auto& [key, r] : regions_) {
    r->reader.Heartbeat(now_ns);
    Drain(ctx, *r);
    if (r->reader.view().corrupt()) corrupt.push_back(key);
  }
  for (const Key& key : corrupt) Drop(key);
  if (now_ms < next_liveness_ms_) return;
  next_liveness_ms_ = now_ms + kLibraryRescanMs;
  std::vector<Key> gone;
  for (auto& [key, r] : regions_) {
    for (auto it = r->pids.begin(); it != r->pids.end();) {
      if (Alive(ctx.proc_root, *it)) {
        ++it;
        continue;
      }
      pid_region_.erase(*it);
      it = r->pids.erase(it);
    }
    if (r->pids.empty()) gone.push_back(key);
  }
  for (const Key& key : gone) Close(ctx, key);
}

std::optional<int64_t> GpuProbe::OldestInFlightNs() const {
  std::optional<int64_t> oldest;
  for (const auto& [key, r] : regions_) {
    const std::vector<rs_gpu_op> ops = r->reader.InFlight();
    if (!ops.empty() && (!oldest || ops.front().enqueue_ns < *oldest)) {
      oldest = ops.front().enqueue_ns;
    }
  }
  return oldest;
}

// As Close does for a region, without closing it: the ring's records are rows of their own;
// the operations in the slots that are not among them are the cut's in-flight rows. One
// that completes between the two reads is in neither: its row comes with the next read.
Probe::CutRows GpuProbe::WriteInFlightForCut(RecorderContext& ctx) {
  if (finished_ || !ctx.ids) return {};
  std::vector<std::pair<Region*, std::vector<rs_gpu_op>>> pending;
  std::vector<Key> corrupt;
  for (auto& [key, r] : regions_) {
    std::vector<rs_gpu_op> in_flight = r->reader.InFlight();
    const std::vector<rs_gpu_op> last = Drain(ctx, *r);
    if (r->reader.view().corrupt()) {  // its slots were read from a region no longer trusted
      corrupt.push_back(key);
      continue;
    }
    std::erase_if(in_flight, [&](const rs_gpu_op& op) {
      return std::any_of(last.begin(), last.end(),
                         [&](const rs_gpu_op& done) { return SameOperation(op, done); });
    });
    pending.emplace_back(r.get(), std::move(in_flight));
  }
  CutRows cut;
  cut.first_id = rs::MakeEventId(ctx.ids->key(), ctx.ids->count() + 1);
  const uint64_t before = events_;
  for (const auto& [region, ops] : pending) {
    for (const rs_gpu_op& op : ops) Write(ctx, *region, op);
  }
  cut.last_id = rs::MakeEventId(ctx.ids->key(), ctx.ids->count());
  cut.rows = events_ - before;
  for (const Key& key : corrupt) Drop(key);
  return cut;
}

// Its processes are gone (or recording ends): the last records, then the operations still in
// its slots, with the state they reached.
void GpuProbe::Close(RecorderContext& ctx, const Key& key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  Region& r = *it->second;
  // The slots first, then the ring: an operation that completes in between leaves its slot
  // after the snapshot and reaches the ring before the last read, so it is in one of the two
  // (in both: its ring record wins). The other order could miss it in both.
  std::vector<rs_gpu_op> in_flight = r.reader.InFlight();
  const std::vector<rs_gpu_op> last = Drain(ctx, r);
  if (r.reader.view().corrupt()) return Drop(key);  // its slots are not trusted either
  for (const rs_gpu_op& op : in_flight) {
    bool written = false;
    for (const rs_gpu_op& done : last) written = written || SameOperation(op, done);
    if (written) continue;
    Write(ctx, r, op);
    ++in_flight_;
  }
  Forget(it);
}

// The region changed in a way its plugin never changes it (GpuRingView): nothing more is read
// from it, its rows so far stay (read while it was intact), it is counted and logged once.
void GpuProbe::Drop(const Key& key) {
  auto it = regions_.find(key);
  if (it == regions_.end()) return;
  const Region& r = *it->second;
  ++dropped_[static_cast<size_t>(GpuRegionFault::kChanged)];
  Log("gpu: pid %d: %s; its region is no longer read (counted in gpu_regions_dropped_%s)", r.pid,
      r.reader.view().corruption().c_str(), GpuRegionFaultName(GpuRegionFault::kChanged));
  // Not opened again while its processes hold it (a header put back would be trusted anew).
  given_up_.insert(r.pids.begin(), r.pids.end());
  Forget(it);
}

// Its counts as of its last intact read join those of the closed regions.
void GpuProbe::Forget(std::map<Key, std::unique_ptr<Region>>::iterator it) {
  const Region& r = *it->second;
  const GpuRingCounters& c = r.reader.view().counters();
  closed_.overrun += r.reader.overruns();
  closed_.slots_full += c.drops_slots_full - r.slots_full_at_open;
  closed_.late_event += c.drops_late_event - r.late_event_at_open;
  for (uint64_t GpuRingCounters::*f : kSummedCounters) closed_counters_.*f += c.*f;
  for (int pid : r.pids) pid_region_.erase(pid);
  beat_.Remove(it->second.get());
  regions_.erase(it);
}

void GpuProbe::Read(RecorderContext& ctx) {
  const int64_t now_ms = rs::MonotonicNowNs() / 1'000'000;
  beat_.LoopAlive(now_ms * 1'000'000);
  Discover(ctx, now_ms);
  ReadAll(ctx, now_ms);
}

void GpuProbe::OnProcessTraced(RecorderContext& /*ctx*/, int pid) {
  retry_at_ms_.erase(pid);  // --pid: newly within the selection
}

void GpuProbe::OnProcessExec(RecorderContext& ctx, const ProcessExec& exec) {
  if (!enabled_ || finished_) return;
  const int pid = exec.pid;
  // The new image may load the plugin again (a new region); the old one is no longer its.
  retry_at_ms_.erase(pid);
  given_up_.erase(pid);
  failures_.erase(pid);
  auto it = pid_region_.find(pid);
  if (it == pid_region_.end()) return;
  const Key key = it->second;
  pid_region_.erase(it);
  auto r = regions_.find(key);
  if (r == regions_.end()) return;
  r->second->pids.erase(pid);
  if (r->second->pids.empty()) Close(ctx, key);
}

GpuProbe::Drops GpuProbe::drop_counts() const {
  Drops d = closed_;
  for (const auto& [key, r] : regions_) {
    const GpuRingCounters& c = r->reader.view().counters();
    d.overrun += r->reader.overruns();
    d.slots_full += c.drops_slots_full - r->slots_full_at_open;
    d.late_event += c.drops_late_event - r->late_event_at_open;
  }
  return d;
}

// Operations lost, and each region refused or dropped as one (how many operations it held is
// not known, or not to be believed).
uint64_t GpuProbe::drops() const {
  const Drops d = drop_counts();
  return d.overrun + d.slots_full + d.late_event + d.undecodable + regions_dropped();
}

uint64_t GpuProbe::regions_dropped() const {
  uint64_t n = 0;
  for (uint64_t k : dropped_) n += k;
  return n;
}

uint64_t GpuProbe::ops_unrecorded() const {
  return Total(&GpuRingCounters::ops_unrecorded) + before_start_;
}

uint64_t GpuProbe::Total(uint64_t GpuRingCounters::*counter) const {
  uint64_t n = closed_counters_.*counter;
  for (const auto& [key, r] : regions_) n += r->reader.view().counters().*counter;
  return n;
}

std::string GpuProbe::note() const {
  if (!enabled_) return "--no-gpu";
  if (const uint64_t dropped = regions_dropped(); dropped > 0) {
    return std::to_string(dropped) +
           " profiler plugin region(s) refused or dropped (metadata gpu_regions_dropped_*)";
  }
  if (device_times_backwards_ > 0) {
    return std::to_string(device_times_backwards_) +
           " operation(s) whose device times ran backwards: those times are NULL in gpu_ops "
           "(metadata gpu_device_times_backwards)";
  }
  if (const uint64_t ce = Total(&GpuRingCounters::ops_copy_engine); ce > 0) {
    return std::to_string(ce) +
           " collective(s) ran on the copy engines: counted, not in gpu_ops (NCCL's profiler API "
           "gives them no device time; metadata gpu_ops_copy_engine)";
  }
  if (regions_read_ == 0) {
    return "no process loaded rankscope's NCCL profiler plugin"
           " (NCCL_PROFILER_PLUGIN=libnccl-profiler-rankscope.so)";
  }
  return "";
}

rs::Result<void> GpuProbe::Finish(RecorderContext& ctx) {
  if (finished_ || !started_) return rs::Ok();
  finished_ = true;
  if (!enabled_) return rs::Ok();
  beat_.Stop();  // the plugins go back to counting once the last beat is 2 s old
  std::vector<Key> keys;
  for (const auto& [key, r] : regions_) keys.push_back(key);
  for (const Key& key : keys) Close(ctx, key);
  for (const auto& [pid, f] : failures_) LogFailure(ctx, pid, f);
  failures_.clear();
  if (!ctx.db) return rs::Ok();
  auto filled = FillGpuCommIdHash(*ctx.db, ctx.node);
  ASSIGN_OR_RETURN(rs::Statement st,
                   ctx.db->Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  const Drops d = drop_counts();
  const std::pair<const char*, uint64_t> counts[] = {
      {"gpu_drops_overrun", d.overrun},
      {"gpu_drops_slots_full", d.slots_full},
      {"gpu_drops_late_event", d.late_event},
      {"gpu_drops_undecodable", d.undecodable},
      // Not drops: operations launched while no recorder read (before recording started, or
      // before this recorder found the region after the plugin's startup window), and those
      // of a startup window that ended before the recording started.
      {"gpu_ops_unrecorded", ops_unrecorded()},
      {"gpu_in_flight", in_flight_},
      // Collectives NCCL ran on the copy engines (profiler API v6+): no device time, no row.
      {"gpu_ops_copy_engine", Total(&GpuRingCounters::ops_copy_engine)},
      // CUDA graphs: calls captured, of them captured without the device events (their
      // replays unrecorded, and the replay numbers of this node's processes may be behind
      // those of other nodes), operations of replays recorded or not.
      {"gpu_graph_calls", Total(&GpuRingCounters::graph_calls)},
      {"gpu_graph_calls_unrecorded", Total(&GpuRingCounters::graph_calls_unrecorded)},
      {"gpu_graph_replay_ops", Total(&GpuRingCounters::graph_replay_ops)},
      // Operations whose device times ran backwards: those times are NULL in gpu_ops.
      {"gpu_device_times_backwards", device_times_backwards_},
      // Operations some of whose proxy steps went untimed (more steps in flight than the
      // plugin's timing entries): their proxy sums in gpu_ops are lower bounds.
      {"gpu_proxy_times_partial", proxy_times_partial_},
      // Processes whose plugin timed no proxy step (RANKSCOPE_PLUGIN_PROXY_TIMES=0).
      {"gpu_regions_proxy_times_off", Total(&GpuRingCounters::proxy_times_off)},
      {"gpu_regions", regions_read_},
      {"gpu_ring_version", RS_GPU_RING_VERSION},
  };
  for (const auto& [key, n] : counts) {
    RETURN_IF_ERROR(st.Bind(1, key).Bind(2, std::to_string(n)).Run());
  }
  // Regions not read, by reason (GpuRegionFault): refused when found, or dropped while read.
  for (GpuRegionFault fault : kGpuRegionFaults) {
    RETURN_IF_ERROR(st.Bind(1, std::string("gpu_regions_dropped_") + GpuRegionFaultName(fault))
                        .Bind(2, std::to_string(dropped_[static_cast<size_t>(fault)]))
                        .Run());
  }
  if (!filled.ok()) return filled.error().Wrap("gpu: filling comm_id_hash");
  if (!first_error_.empty()) return rs::Error("gpu: " + first_error_);
  return rs::Ok();
}

std::unique_ptr<Probe> MakeGpuProbe(const RecorderOptions& /*opts*/) {
  return std::make_unique<GpuProbe>();
}

}  // namespace rs::rec
