#include "analyzer/hang_activity.h"

#include <algorithm>
#include <map>
#include <utility>

namespace rs::analyzer {
namespace {

// Frames shown per stack: the innermost ones say where it waits.
constexpr size_t kStackFrames = 8;
// CUDA calls in flight listed per rank.
constexpr size_t kCudaInFlight = 3;

rs::Result<std::string> StackFrames(rs::Db& db, std::optional<int64_t> id) {
  if (!id) return std::string();
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT frames FROM stacks WHERE id = ?"));
  st.Bind(1, *id);
  ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::string();
  std::string frames = st.Text(0), out;
  size_t lines = 0, at = 0;
  while (at < frames.size() && lines < kStackFrames) {
    size_t nl = frames.find('\n', at);
    if (nl == std::string::npos) nl = frames.size();
    out += (lines ? "\n" : "") + frames.substr(at, nl - at);
    ++lines;
    at = nl + 1;
  }
  return out;
}

}  // namespace

bool IsBlockingCudaCall(const std::string& api) {
  if (api.find("Synchronize") != std::string::npos) return true;  // stream, event, device, ctx
  bool copy = api.rfind("cudaMemcpy", 0) == 0 || api.rfind("cuMemcpy", 0) == 0 ||
              api.rfind("cudaMemset", 0) == 0 || api.rfind("cuMemset", 0) == 0;
  return copy && api.find("Async") == std::string::npos;
}

rs::Result<std::vector<std::vector<CudaWait>>> LoadCudaInFlight(rs::Db& db,
                                                                const CollectiveData& data) {
  std::vector<std::vector<CudaWait>> out(data.participants.size());
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT node, pid, api, timestamp_ns, stack_id FROM cuda_events"
                              " WHERE duration_ns IS NULL OR state = 'in_flight'"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    auto it = data.participant_index.find({st.Text(0), st.Int(1)});
    if (it == data.participant_index.end()) continue;
    CudaWait w;
    w.api = st.Text(2);
    w.ts = st.Int(3);
    w.stack_id = st.OptInt(4);
    w.blocking = IsBlockingCudaCall(w.api);
    out[it->second].push_back(std::move(w));
  }
  for (auto& waits : out) {
    std::sort(waits.begin(), waits.end(),
              [](const CudaWait& a, const CudaWait& b) { return a.ts > b.ts; });
  }
  return out;
}

rs::Result<void> DescribeActivity(rs::Db& db, const Participant& who,
                                  const std::vector<CudaWait>& in_flight, RankProgress& progress) {
  std::vector<Activity>& doing = progress.doing;
  for (size_t i = 0; i < in_flight.size() && i < kCudaInFlight; ++i) {
    Activity a;
    a.kind = "cuda";
    a.what = in_flight[i].api;
    a.timestamp_ns = in_flight[i].ts;
    a.state = "in_flight";
    ASSIGN_OR_RETURN(a.stack, StackFrames(db, in_flight[i].stack_id));
    doing.push_back(std::move(a));
  }
  if (in_flight.empty()) {
    // Walks the timestamp index backwards: the rank's latest rows come first.
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT api, timestamp_ns, duration_ns, stack_id FROM cuda_events"
                                " WHERE node = ? AND pid = ? ORDER BY timestamp_ns DESC LIMIT 1"));
    st.Bind(1, who.node).Bind(2, who.pid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      Activity a;
      a.kind = "cuda";
      a.what = st.Text(0);
      a.timestamp_ns = st.Int(1);
      a.duration_ns = st.OptInt(2);
      a.state = a.duration_ns ? "complete" : "in_flight";
      ASSIGN_OR_RETURN(a.stack, StackFrames(db, st.OptInt(3)));
      doing.push_back(std::move(a));
    }
  }
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT op, seq, timestamp_ns, duration_ns, state, stack_id"
                                " FROM nccl_events WHERE node = ? AND pid = ?"
                                " ORDER BY timestamp_ns DESC LIMIT 1"));
    st.Bind(1, who.node).Bind(2, who.pid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      Activity a;
      a.kind = "nccl";
      a.what = st.Text(0);
      a.seq = st.OptInt(1);
      a.timestamp_ns = st.Int(2);
      a.duration_ns = st.OptInt(3);
      a.state = !a.duration_ns || st.Text(4) == "in_flight" ? "in_flight" : "complete";
      if (a.state == "in_flight") a.duration_ns.reset();
      ASSIGN_OR_RETURN(a.stack, StackFrames(db, st.OptInt(5)));
      doing.push_back(std::move(a));
    }
  }
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT op, seq, timestamp_ns, duration_ns, stack_id"
                                " FROM nccl_events WHERE node = ? AND pid = ?"
                                " AND duration_ns IS NOT NULL AND state = 'complete'"
                                " ORDER BY timestamp_ns DESC LIMIT 1"));
    st.Bind(1, who.node).Bind(2, who.pid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      Activity a;
      a.kind = "nccl";
      a.what = st.Text(0);
      a.seq = st.OptInt(1);
      a.timestamp_ns = st.Int(2);
      a.duration_ns = st.OptInt(3);
      a.state = "complete";
      ASSIGN_OR_RETURN(a.stack, StackFrames(db, st.OptInt(4)));
      progress.last_completed_call = std::move(a);
    }
  }
  {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT timestamp_ns, exit_code FROM process_events"
                                " WHERE node = ? AND pid = ? AND event = 'exit'"
                                " ORDER BY timestamp_ns DESC LIMIT 1"));
    st.Bind(1, who.node).Bind(2, who.pid);
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) {
      Activity a;
      a.kind = "exit";
      a.what = "exit";
      a.timestamp_ns = st.Int(0);
      a.state = "exited";
      a.exit_code = st.OptInt(1);
      doing.push_back(std::move(a));
    }
  }
  return rs::Ok();
}

}  // namespace rs::analyzer
