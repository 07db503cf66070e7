#include "flight_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace trainer {
namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A pickle writer for the values a dump holds (protocol 2 opcodes).
class Pickler {
 public:
  Pickler() { out_ += "\x80\x02"; }
  Pickler& Str(const std::string& s) {
    out_ += 'X';
    Le32(static_cast<uint32_t>(s.size()));
    out_ += s;
    return *this;
  }
  Pickler& Int(int64_t v) {
    if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';
      Le32(static_cast<uint32_t>(static_cast<int32_t>(v)));
    } else {
      out_ += '\x8a';  // LONG1, 8 bytes little-endian two's complement
      out_ += '\x08';
      for (int i = 0; i < 8; ++i)
        out_ += static_cast<char>((static_cast<uint64_t>(v) >> (8 * i)) & 0xff);
    }
    return *this;
  }
  Pickler& Float(double d) {  // BINFLOAT: big-endian IEEE double
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    out_ += 'G';
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
    return *this;
  }
  Pickler& Bool(bool b) {
    out_ += b ? '\x88' : '\x89';
    return *this;
  }
  Pickler& None() {
    out_ += 'N';
    return *this;
  }
  Pickler& BeginDict() {
    out_ += "}(";  // EMPTY_DICT, MARK ... SETITEMS
    return *this;
  }
  Pickler& EndDict() {
    out_ += 'u';
    return *this;
  }
  Pickler& BeginList() {
    out_ += "](";  // EMPTY_LIST, MARK ... APPENDS
    return *this;
  }
  Pickler& EndList() {
    out_ += 'e';
    return *this;
  }
  Pickler& BeginTuple() {
    out_ += '(';
    return *this;
  }
  Pickler& EndTuple() {
    out_ += 't';
    return *this;
  }
  std::string Finish() { return out_ + '.'; }

 private:
  void Le32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  std::string out_;
};

}  // namespace

FlightRecorder::FlightRecorder(std::string dir, int rank, int world_size, int timeout_ms)
    : dir_(std::move(dir)), rank_(rank), world_size_(world_size), timeout_ms_(timeout_ms) {
  last_progress_ns_ = WallNs();
  thread_ = std::thread([this] { Run(); });
}

FlightRecorder::~FlightRecorder() {
  stop_ = true;
  thread_.join();
  for (Entry& e : entries_) {
    if (e.start) cudaEventDestroy(e.start);
    if (e.end) cudaEventDestroy(e.end);
  }
}

void FlightRecorder::Begin(const char* name, int64_t count, const char* dtype,
                           cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry e;
  e.seq = entries_.empty() ? 1 : entries_.back().seq + 1;  // PyTorch counts from 1
  e.name = name;
  e.dtype = dtype;
  e.count = count;
  e.created_ns = WallNs();
  cudaEventCreateWithFlags(&e.start, cudaEventDisableTiming);
  cudaEventCreateWithFlags(&e.end, cudaEventDisableTiming);
  cudaEventRecord(e.start, stream);
  entries_.push_back(e);
  last_progress_ns_ = e.created_ns;
}

void FlightRecorder::End(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!entries_.empty()) cudaEventRecord(entries_.back().end, stream);
}

void FlightRecorder::Poll() {
  const int64_t now = WallNs();
  for (Entry& e : entries_) {
    if (e.completed_ns) continue;
    if (!e.started_ns && cudaEventQuery(e.start) == cudaSuccess) e.started_ns = now;
    if (e.started_ns && cudaEventQuery(e.end) == cudaSuccess) {
      e.completed_ns = now;
      last_progress_ns_ = now;
      cudaEventDestroy(e.start);
      cudaEventDestroy(e.end);
      e.start = e.end = nullptr;
    }
  }
}

std::string FlightRecorder::Pickle() const {
  Pickler p;
  const std::string ranks = [&] {
    std::string s = "[";
    for (int r = 0; r < world_size_; ++r) s += (r ? ", " : "") + std::to_string(r);
    return s + "]";
  }();
  int64_t enqueued = 0, started = 0, completed = 0;
  for (const Entry& e : entries_) {
    enqueued = e.seq;
    if (e.started_ns) started = e.seq;
    if (e.completed_ns) completed = e.seq;
  }
  p.BeginDict().Str("version").Str("2.10").Str("comm_lib_version").Str("test bed");
  p.Str("pg_config").BeginDict().Str("0").BeginDict();
  p.Str("name").Str("0").Str("desc").Str("default_pg").Str("ranks").Str(ranks);
  p.EndDict().EndDict();
  p.Str("pg_status").BeginDict().Str("0").BeginDict();
  p.Str("last_enqueued_collective").Int(enqueued).Str("last_started_collective").Int(started);
  p.Str("last_completed_collective").Int(completed).EndDict().EndDict();
  p.Str("entries").BeginList();
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    p.BeginDict();
    p.Str("frames").BeginList();
    p.BeginDict().Str("name").Str("all_reduce").Str("filename");
    p.Str("torch/distributed/distributed_c10d.py").Str("line").Int(2696).EndDict();
    p.BeginDict().Str("name").Str("train_step").Str("filename").Str("rankscope-trainer");
    p.Str("line").Int(1).EndDict();
    p.EndList();
    p.Str("record_id").Int(static_cast<int64_t>(i)).Str("pg_id").Int(0);
    p.Str("process_group").BeginTuple().Str("0").Str("default_pg").EndTuple();
    p.Str("thread_name").Str("pt_main_thread").Str("thread_id").Str(std::to_string(getpid()));
    p.Str("collective_seq_id").Int(e.seq).Str("p2p_seq_id").Int(0).Str("op_id").Int(e.seq);
    p.Str("profiling_name").Str(e.name).Str("time_created_ns").Int(e.created_ns);
    p.Str("input_sizes").BeginList().BeginList().Int(e.count).EndList().EndList();
    p.Str("input_dtypes").BeginList().Str(e.dtype).EndList();
    p.Str("output_sizes").BeginList().BeginList().Int(e.count).EndList().EndList();
    p.Str("output_dtypes").BeginList().Str(e.dtype).EndList();
    p.Str("state").Str(e.completed_ns ? "completed" : e.started_ns ? "started" : "scheduled");
    p.Str("time_discovered_started_ns");
    e.started_ns ? p.Int(e.started_ns) : p.None();
    p.Str("time_discovered_completed_ns");
    e.completed_ns ? p.Int(e.completed_ns) : p.None();
    p.Str("retired").Bool(e.completed_ns != 0).Str("timeout_ms").Int(600000);
    p.Str("is_p2p").Bool(false);
    p.EndDict();
  }
  p.EndList().EndDict();
  return p.Finish();
}

void FlightRecorder::Run() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::string dump;
    {
      std::lock_guard<std::mutex> lock(mu_);
      Poll();
      if (entries_.empty() || WallNs() - last_progress_ns_ < int64_t{timeout_ms_} * 1'000'000) {
        continue;
      }
      dump = Pickle();
    }
    const std::string path = dir_ + "/nccl_trace_rank_" + std::to_string(rank_);
    const std::string tmp = path + ".tmp";
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    bool ok = fd >= 0 && write(fd, dump.data(), dump.size()) == static_cast<ssize_t>(dump.size());
    if (fd >= 0) close(fd);
    ok = ok && rename(tmp.c_str(), path.c_str()) == 0;
    std::fprintf(stderr, "rank %d: Flight Recorder dump %s %s\n", rank_, path.c_str(),
                 ok ? "written" : "FAILED");
    return;  // once, as PyTorch dumps once per timeout
  }
}

}  // namespace trainer
