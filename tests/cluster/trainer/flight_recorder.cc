#include "flight_recorder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <tuple>

#include "trainer_options.h"

namespace trainer {
namespace {

int64_t WallNs() {  // c10::getTime(): the system clock
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ranks_str(): "[0, 1, 2]".
std::string RanksText(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

fr::Value Shapes(const std::vector<std::vector<int64_t>>& shapes) {
  fr::Value list = fr::Value::List();
  for (const auto& shape : shapes) {
    fr::Value dims = fr::Value::List();
    for (int64_t d : shape) dims.items.push_back(fr::Value::Int(d));
    list.items.push_back(std::move(dims));
  }
  return list;
}

fr::Value Names(const std::vector<std::string>& names) {
  fr::Value list = fr::Value::List();
  for (const std::string& n : names) list.items.push_back(fr::Value::Str(n));
  return list;
}

}  // namespace

FlightRecorder::FlightRecorder(Options options) : o_(std::move(options)) {
  std::ostringstream tid;  // c10::str(std::this_thread::get_id()), as the entries state it
  tid << std::this_thread::get_id();
  thread_id_ = tid.str();
  ring_.reserve(static_cast<size_t>(std::min(o_.buffer_size, 1 << 16)));
  if (!o_.pipe_stem.empty()) {
    pipe_path_ = o_.pipe_stem + std::to_string(o_.rank) + ".pipe";
    unlink(pipe_path_.c_str());
    if (mkfifo(pipe_path_.c_str(), 0600) == 0) {
      pipe_fd_ = open(pipe_path_.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    }
    if (pipe_fd_ < 0) {
      std::fprintf(stderr, "rank %d: Flight Recorder: cannot make the dump pipe %s: %s\n", o_.rank,
                   pipe_path_.c_str(), std::strerror(errno));
    }
  }
  thread_ = std::thread([this] { Run(); });
}

FlightRecorder::~FlightRecorder() {
  stop_ = true;
  thread_.join();
  for (Entry& e : ring_) Release(e);
  if (pipe_fd_ >= 0) close(pipe_fd_);
  if (!pipe_path_.empty()) unlink(pipe_path_.c_str());
}

std::unique_ptr<FlightRecorder> FlightRecorderFor(const TrainerOptions& o) {
  if (o.fr_dump_dir.empty()) return nullptr;
  FlightRecorder::Options fo;
  fo.dir = o.fr_dump_dir;
  fo.json_dir = o.fr_json_dir;
  fo.rank = o.env.rank;
  fo.timeout_ms = o.fr_timeout_ms;
  fo.timing = o.fr_timing;
  fo.buffer_size = o.fr_buffer_size;
  fo.pipe_stem = o.fr_pipe_stem;
  return std::make_unique<FlightRecorder>(fo);
}

void FlightRecorder::AddGroup(const FrGroup& group) {
  std::lock_guard<std::mutex> lock(mu_);
  groups_.push_back(group);
}

void FlightRecorder::Release(Entry& e) {
  if (e.start) cudaEventDestroy(e.start);
  if (e.end) cudaEventDestroy(e.end);
  e.start = e.end = nullptr;
}

int64_t FlightRecorder::Begin(const FrOp& op, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  e.record_id = next_id_++;
  e.op = op;
  if (op.group != nullptr) e.group = *op.group;
  e.op.group = nullptr;
  e.created_ns = WallNs();
  e.work = stream != nullptr;
  if (e.work) {
    const unsigned flags = o_.timing ? cudaEventDefault : cudaEventDisableTiming;
    if (o_.timing) {
      cudaEventCreateWithFlags(&e.start, flags);
      cudaEventRecord(e.start, stream);
    }
    cudaEventCreateWithFlags(&e.end, flags);  // recorded by End, after the operation
  }
  // pg_status lists a group from its first recorded operation on (recordWithResetEnabled adds
  // it to all_pg_status_ there), and its last enqueued Work's sequence number.
  Status* st = nullptr;
  for (auto& [pg, s] : status_) {
    if (pg == e.group.pg_id) st = &s;
  }
  if (st == nullptr) st = &status_.emplace_back(e.group.pg_id, Status{}).second;
  if (e.work) st->enqueued = op.is_p2p ? op.p2p_seq_id : op.collective_seq_id;
  last_created_ns_ = e.created_ns;
  if (ring_.size() < static_cast<size_t>(o_.buffer_size)) {
    ring_.push_back(std::move(e));
  } else {
    Release(ring_[next_]);
    ring_[next_] = std::move(e);
    next_ = (next_ + 1) % ring_.size();
  }
  return next_id_ - 1;
}

FlightRecorder::Entry* FlightRecorder::Find(int64_t record_id) {
  for (Entry& e : ring_) {
    if (e.record_id == record_id) return &e;
  }
  return nullptr;
}

void FlightRecorder::End(int64_t record_id, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = Find(record_id);
  if (e != nullptr && e->end != nullptr) {
    cudaEventRecord(e->end, stream);
    e->end_recorded = true;
  }
}

void FlightRecorder::Poll(int64_t now) {
  for (Entry& e : ring_) {
    if (!e.work || !e.end_recorded || e.completed_ns) continue;
    const int64_t seq = e.op.is_p2p ? e.op.p2p_seq_id : e.op.collective_seq_id;
    Status* st = nullptr;
    for (auto& [pg, s] : status_) {
      if (pg == e.group.pg_id) st = &s;
    }
    if (e.start != nullptr && !e.start_reached && cudaEventQuery(e.start) == cudaSuccess) {
      e.start_reached = true;
      if (st != nullptr) st->started = seq;
    }
    if (cudaEventQuery(e.end) == cudaSuccess) {
      e.completed_ns = now;
      if (e.start != nullptr && !e.started_ns) e.started_ns = now;
      if (st != nullptr) st->completed = seq;
      // retire_id(): retired, with the duration the two events give when timing is on.
      e.retired = true;
      float ms = 0;
      if (e.start != nullptr && cudaEventElapsedTime(&ms, e.start, e.end) == cudaSuccess) {
        e.duration_ms = ms;
      }
      Release(e);
    }
  }
}

bool FlightRecorder::TimedOut(int64_t now) const {
  const int64_t timeout = int64_t{o_.timeout_ms} * 1'000'000;
  if (ring_.empty()) return false;
  if (now - last_created_ns_ >= timeout) return true;  // issued nothing for the timeout
  for (const Entry& e : ring_) {
    if (e.work && e.end_recorded && !e.completed_ns && now - e.created_ns >= timeout) return true;
  }
  return false;
}

std::vector<const FlightRecorder::Entry*> FlightRecorder::InOrder() const {
  std::vector<const Entry*> out;
  for (size_t i = 0; i < ring_.size(); ++i) out.push_back(&ring_[(next_ + i) % ring_.size()]);
  return out;
}

fr::Value FlightRecorder::DumpValue(bool json) {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t now = WallNs();
  Poll(now);  // dump_entries() queries the events once more
  using fr::Value;
  Value d = Value::Dict();
  // pg_config: a std::map keyed by (name, desc); pg_status: by pg_id (std::map<size_t, ...>).
  std::vector<const FrGroup*> groups;
  for (const FrGroup& g : groups_) groups.push_back(&g);
  std::sort(groups.begin(), groups.end(), [](const FrGroup* a, const FrGroup* b) {
    return std::tie(a->name, a->desc) < std::tie(b->name, b->desc);
  });
  Value config = Value::Dict();
  for (const FrGroup* g : groups) {
    config.Set(g->name, Value::Dict()
                            .Set("name", Value::Str(g->name))
                            .Set("desc", Value::Str(g->desc))
                            .Set("ranks", Value::Str(RanksText(g->ranks))));
  }
  std::vector<std::pair<int64_t, Status>> status = status_;
  std::sort(status.begin(), status.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Value pg_status = Value::Dict();
  for (const auto& [pg, st] : status) {
    // getPgStatusJson() writes the numbers as strings.
    auto num = [json](int64_t v) { return json ? Value::Str(std::to_string(v)) : Value::Int(v); };
    pg_status.Set(std::to_string(pg), Value::Dict()
                                          .Set("last_enqueued_collective", num(st.enqueued))
                                          .Set("last_started_collective", num(st.started))
                                          .Set("last_completed_collective", num(st.completed)));
  }
  // dump_dict(): version, pg_config, comm_lib_version, pg_status, entries; dump_json() the same
  // keys (sorted on output) with entries only when there are some.
  d.Set("version", Value::Str("2.10"));
  d.Set("pg_config", std::move(config));
  d.Set("comm_lib_version", Value::Str("2.28.9"));
  d.Set("pg_status", std::move(pg_status));
  Value entries = Value::List();
  for (const Entry* e : InOrder()) {
    Value x = Value::Dict();
    if (!json) {  // stack traces: pickle only
      Value frames = Value::List();
      for (const FrFrame& f : e->op.frames) {
        frames.items.push_back(Value::Dict()
                                   .Set("name", Value::Str(f.name))
                                   .Set("filename", Value::Str(f.file))
                                   .Set("line", Value::Int(f.line)));
      }
      x.Set("frames", std::move(frames));
    }
    x.Set("record_id", Value::Int(e->record_id));
    x.Set("pg_id", Value::Int(e->group.pg_id));
    x.Set("process_group", Value::Tuple({Value::Str(e->group.name), Value::Str(e->group.desc)}));
    x.Set("thread_name", Value::Str("pt_main_thread"));
    x.Set("thread_id", Value::Str(thread_id_));
    x.Set("collective_seq_id", Value::Int(e->op.collective_seq_id));
    x.Set("p2p_seq_id", Value::Int(e->op.p2p_seq_id));
    x.Set("op_id", Value::Int(e->op.op_id));
    x.Set("profiling_name", Value::Str(e->op.profiling_name));
    x.Set("time_created_ns", Value::Int(e->created_ns));
    if (e->duration_ms) x.Set("duration_ms", Value::Double(*e->duration_ms));
    x.Set("input_sizes", Shapes(e->op.input_sizes));
    x.Set("input_dtypes", Names(e->op.input_dtypes));
    x.Set("output_sizes", Shapes(e->op.output_sizes));
    x.Set("output_dtypes", Names(e->op.output_dtypes));
    // A Work in flight is stamped started with the dump's moment (update_state on a copy).
    const int64_t started = e->started_ns.value_or(e->start_reached ? now : 0);  // 0: none
    x.Set("state", Value::Str(e->completed_ns ? "completed"
                              : started > 0   ? "started"
                                              : "scheduled"));
    // A time not discovered: None in the pickle, 0 in JSON.
    auto when = [json](const std::optional<int64_t>& t) {
      return t ? Value::Int(*t) : json ? Value::Int(0) : Value::None();
    };
    x.Set("time_discovered_started_ns",
          when(started > 0 ? std::optional<int64_t>(started) : std::nullopt));
    x.Set("time_discovered_completed_ns", when(e->completed_ns));
    x.Set("retired", Value::Bool(e->retired));
    x.Set("timeout_ms", Value::Int(o_.op_timeout_ms));
    x.Set("is_p2p", Value::Bool(e->op.is_p2p));
    entries.items.push_back(std::move(x));
  }
  if (!json || !entries.items.empty()) d.Set("entries", std::move(entries));
  return d;
}

bool FlightRecorder::WriteFile(const std::string& path, const std::string& data) const {
  const std::string tmp = path + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
  if (fd >= 0) close(fd);
  ok = ok && rename(tmp.c_str(), path.c_str()) == 0;
  std::fprintf(stderr, "rank %d: Flight Recorder dump %s %s\n", o_.rank, path.c_str(),
               ok ? "written" : "FAILED");
  return ok;
}

void FlightRecorder::WriteDumps(const char* why) {
  if (dumped_.exchange(true)) return;  // once, as PyTorch dumps once
  Write(why);
}

void FlightRecorder::Write(const char* why) {
  std::fprintf(stderr, "rank %d: Flight Recorder: %s\n", o_.rank, why);
  const std::string name = "nccl_trace_rank_" + std::to_string(o_.rank);
  if (!o_.json_dir.empty()) {
    WriteFile(o_.json_dir + "/" + name + ".json", fr::Json(DumpValue(true)));
  }
  WriteFile(o_.dir + "/" + name, fr::Pickle(DumpValue(false)));
}

void FlightRecorder::DumpNow(const char* why) { WriteDumps(why); }

bool FlightRecorder::DumpRequested() {
  if (pipe_fd_ < 0) return false;
  char buf[256];
  bool any = false;
  ssize_t n;
  while ((n = read(pipe_fd_, buf, sizeof buf)) > 0) any = true;  // one dump per burst
  return any;
}

void FlightRecorder::Run() {
  while (!stop_ && !dumped_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    bool timed_out = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t now = WallNs();
      Poll(now);
      timed_out = TimedOut(now);
    }
    if (timed_out) {
      WriteDumps("no progress for the timeout: writing the dump");
    } else if (DumpRequested()) {
      Write("a dump was asked for through the pipe: writing it, the job runs on");
    }
  }
}

}  // namespace trainer
