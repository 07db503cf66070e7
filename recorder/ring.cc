#include "recorder/ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "recorder/gpu_probe.h"
#include "recorder/log.h"
#include "recorder/recording_db.h"
#include "rscore/clock.h"
#include "rscore/event_id.h"
#include "rscore/path.h"
#include "rscore/schema.h"

namespace rec {
namespace {

using rs::DirOf;

struct SourceTable {
  std::string_view source, table;
};
constexpr SourceTable kSourceTables[] = {
    {"process", "process_events"}, {"tcp", "tcp_events"},   {"sched", "sched_events"},
    {"block", "block_events"},     {"nccl", "nccl_events"}, {"cuda", "cuda_events"},
    {"gpu", "gpu_ops"},
};

// Rows the database's pages hold (free pages left by deletes are reused, not counted).
rs::Result<uint64_t> UsedBytes(rs::Db& db) {
  auto pragma = [&](const char* name) -> rs::Result<int64_t> {
    ASSIGN_OR_RETURN(rs::Statement st, db.Prepare(std::string("PRAGMA ") + name));
    ASSIGN_OR_RETURN(bool row, st.Step());
    return row ? st.Int(0) : 0;
  };
  ASSIGN_OR_RETURN(int64_t pages, pragma("page_count"));
  ASSIGN_OR_RETURN(int64_t free_pages, pragma("freelist_count"));
  ASSIGN_OR_RETURN(int64_t page_size, pragma("page_size"));
  return static_cast<uint64_t>(std::max<int64_t>(0, pages - free_pages) * page_size);
}

std::string UtcStamp(int64_t ns) {
  time_t secs = static_cast<time_t>(ns / 1'000'000'000);
  tm t{};
  gmtime_r(&secs, &t);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &t);
  return buf;
}

}  // namespace

// mkdir -p, mode 0700 (cuts hold what ran on the node).
rs::Result<void> MakeDirs(const std::string& dir) {
  if (dir.empty()) return rs::Ok();
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return rs::Ok();
    return rs::Error(dir + ": not a directory");
  }
  RETURN_IF_ERROR(MakeDirs(DirOf(dir) == dir ? "" : DirOf(dir)));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return rs::Error(dir + ": cannot create the directory: " + std::strerror(errno));
  }
  return rs::Ok();
}

std::string_view EventTableOf(std::string_view source) {
  for (const SourceTable& s : kSourceTables) {
    if (s.source == source) return s.table;
  }
  return {};
}

void Ring::Checkpoint(int64_t wall_ns, uint32_t counter) {
  if (!marks_.empty() && marks_.back().counter == counter) {
    marks_.back().wall_ns = wall_ns;  // nothing written since: the mark moves on
    return;
  }
  marks_.push_back(Mark{wall_ns, counter});
}

rs::Result<void> Ring::DeleteUpTo(rs::Db& db, uint32_t counter, bool for_size) {
  if (counter <= deleted_up_to_) return rs::Ok();
  const int64_t last_id = rs::MakeEventId(id_key_, counter);
  for (std::string_view table : rs::kEventTables) {
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("DELETE FROM " + std::string(table) + " WHERE id <= ?"));
    st.Bind(1, last_id);
    RETURN_IF_ERROR(st.Run());
    const auto n = static_cast<uint64_t>(sqlite3_changes(db.raw()));
    aged_out_[std::string(table)] += n;
    (for_size ? size_dropped_total_ : aged_out_total_) += n;
  }
  deleted_up_to_ = counter;
  return rs::Ok();
}

rs::Result<void> Ring::Trim(rs::Db& db, int64_t now_wall_ns) {
  // Marks whose rows were all written before the window began.
  while (marks_.size() > 1 && marks_.front().wall_ns < now_wall_ns - window_ns_) {
    RETURN_IF_ERROR(DeleteUpTo(db, marks_.front().counter, /*for_size=*/false));
    held_since_ns_ = marks_.front().wall_ns;
    marks_.pop_front();
  }
  // Then the oldest, while the rows take more than the cap.
  ASSIGN_OR_RETURN(uint64_t used, UsedBytes(db));
  while (used > max_bytes_ && marks_.size() > 1) {
    RETURN_IF_ERROR(DeleteUpTo(db, marks_.front().counter, /*for_size=*/true));
    held_since_ns_ = marks_.front().wall_ns;
    marks_.pop_front();
    ASSIGN_OR_RETURN(used, UsedBytes(db));
  }
  return rs::Ok();
}

uint64_t Ring::aged_out(std::string_view table) const {
  auto it = aged_out_.find(table);
  return it == aged_out_.end() ? 0 : it->second;
}

uint64_t Ring::aged_out_total() const { return aged_out_total_; }
uint64_t Ring::size_dropped_total() const { return size_dropped_total_; }

bool SlowdownWatch::Feed(int64_t now_ns, uint64_t ops) {
  if (window_start_ns_ == 0) {
    window_start_ns_ = now_ns;
    ops_at_window_start_ = ops;
    return false;
  }
  if (now_ns - window_start_ns_ < kWindowNs) return false;
  const uint64_t window = ops - ops_at_window_start_;
  window_start_ns_ = now_ns;
  ops_at_window_start_ = ops;
  bool fire = false;
  if (windows_.size() >= kMinHistory) {
    std::vector<uint64_t> sorted(windows_.begin(), windows_.end());
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    median_ = sorted[sorted.size() / 2];
    last_ = window;
    const bool slow = median_ > 0 && static_cast<double>(window) < fraction_ * median_;
    fire = slow && armed_;
    armed_ = !slow;
    // A slow window does not lower the median it is judged by.
    if (slow) return fire;
  }
  windows_.push_back(window);
  if (windows_.size() > kHistory) windows_.pop_front();
  return fire;
}

std::string CutPath(const std::string& cut_dir, const CutInfo& info) {
  const std::string id =
      info.cut_id.empty() ? UtcStamp(info.cut_ns) + "-" + info.reason : info.cut_id;
  return cut_dir + "/" + id + "/" + info.node + ".rsb";
}

namespace {

constexpr const char* kRequestFile = "request";

std::optional<CutRequest> ReadCutRequest(const std::string& cut_dir, const std::string& id) {
  std::ifstream in(cut_dir + "/" + id + "/" + kRequestFile);
  if (!in) return std::nullopt;
  CutRequest r;
  r.cut_id = id;
  for (std::string line; std::getline(in, line);) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "node") r.node = value;
    if (key == "reason") r.reason = value;
    if (key == "cut_ns") r.cut_ns = std::strtoll(value.c_str(), nullptr, 10);
  }
  if (r.node.empty() || r.cut_ns <= 0) return std::nullopt;  // not (yet) a whole request
  return r;
}

std::vector<CutRequest> AllCutRequests(const std::string& cut_dir) {
  std::vector<CutRequest> all;
  DIR* d = opendir(cut_dir.c_str());
  if (!d) return all;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    if (auto r = ReadCutRequest(cut_dir, e->d_name)) all.push_back(*r);
  }
  closedir(d);
  std::sort(all.begin(), all.end(),
            [](const CutRequest& a, const CutRequest& b) { return a.cut_ns < b.cut_ns; });
  return all;
}

}  // namespace

rs::Result<CutRequest> PostCutRequest(const std::string& cut_dir, const std::string& node,
                                      int64_t cut_ns, const std::string& reason, int64_t join_ns) {
  for (const CutRequest& r : AllCutRequests(cut_dir)) {
    if (std::llabs(r.cut_ns - cut_ns) <= join_ns) return r;
  }
  CutRequest req{UtcStamp(cut_ns) + "-" + reason + "-" + node, node, reason, cut_ns};
  const std::string dir = cut_dir + "/" + req.cut_id;
  RETURN_IF_ERROR(MakeDirs(dir));
  // Written whole under a hidden name, then renamed: a watcher never reads half a request.
  const std::string tmp = dir + "/." + kRequestFile + "." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << "node=" << node << "\ncut_ns=" << cut_ns << "\nreason=" << reason << "\n";
    if (!out.flush()) return rs::Error(tmp + ": cannot write: " + std::strerror(errno));
  }
  if (rename(tmp.c_str(), (dir + "/" + kRequestFile).c_str()) != 0) {
    unlink(tmp.c_str());
    return rs::Error(dir + "/" + kRequestFile + ": " + std::strerror(errno));
  }
  return req;
}

std::vector<CutRequest> PendingCutRequests(const std::string& cut_dir, const std::string& node,
                                           int64_t since_ns) {
  std::vector<CutRequest> pending;
  for (CutRequest& r : AllCutRequests(cut_dir)) {
    if (r.cut_ns < since_ns) continue;
    if (access((cut_dir + "/" + r.cut_id + "/" + node + ".rsb").c_str(), F_OK) == 0) continue;
    pending.push_back(std::move(r));
  }
  return pending;
}

rs::Result<void> WriteCutMetadata(rs::Db& db, const CutInfo& info, const Ring& ring) {
  const int64_t window_start = ring.held_since_ns().value_or(info.recording_start_ns);
  const std::pair<std::string, std::string> meta[] = {
      {"cut_reason", info.reason},
      {"cut_ns", std::to_string(info.cut_ns)},
      {"cut_window_start_ns", std::to_string(window_start)},
      {"cut_window_end_ns", std::to_string(info.cut_ns)},
      {"cut_id", info.cut_id},
      {"cut_requested_by", info.requested_by},
      {"cut_requested_ns", info.requested_ns ? std::to_string(info.requested_ns) : ""},
      {"writing_stopped_ns",
       info.writing_stopped_ns ? std::to_string(info.writing_stopped_ns) : ""},
      {"writing_stopped_reason", info.writing_stopped_reason},
      {"ring_window_ns", std::to_string(ring.window_ns())},
      {"ring_size_bytes", std::to_string(ring.max_bytes())},
      {"ring_aged_out", std::to_string(ring.aged_out_total())},
      {"ring_size_dropped", std::to_string(ring.size_dropped_total())},
  };
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  for (const auto& [k, v] : meta) {
    if (v.empty()) continue;
    st.Bind(1, k).Bind(2, v);
    RETURN_IF_ERROR(st.Run());
  }
  for (const SourceTable& s : kSourceTables) {
    st.Bind(1, std::string(s.source) + "_ring_aged_out")
        .Bind(2, std::to_string(ring.aged_out(s.table)));
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
}

rs::Result<std::string> WriteCut(rs::Db& live, const std::string& cut_dir, const CutInfo& info,
                                 const Ring& ring, const rs::ClockRef& end) {
  std::string out = CutPath(cut_dir, info);
  RETURN_IF_ERROR(MakeDirs(DirOf(out)));
  const std::string copy_path = DirOf(out) + "/." + info.node + ".cut-" +
                                std::to_string(getpid()) + ".db";
  unlink(copy_path.c_str());
  {
    ASSIGN_OR_RETURN(rs::Statement vacuum, live.Prepare("VACUUM INTO ?"));
    vacuum.Bind(1, copy_path);
    if (auto r = vacuum.Run(); !r.ok()) {
      unlink(copy_path.c_str());
      return r.error().Wrap("cut: copying the ring to " + copy_path);
    }
  }
  auto finish_copy = [&]() -> rs::Result<void> {
    ASSIGN_OR_RETURN(rs::Db copy, rs::Db::Open(copy_path, rs::Db::Mode::kReadWrite));
    ASSIGN_OR_RETURN(rs::Transaction tx, rs::Transaction::Begin(copy));
    RETURN_IF_ERROR(WriteCutMetadata(copy, info, ring));
    // As at the end of a recording: the device's operations join their collectives.
    RETURN_IF_ERROR(FillGpuCommIdHash(copy, info.node));
    ASSIGN_OR_RETURN(rs::Statement meta,
                     copy.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
    for (const auto& [k, v] : {std::pair<std::string, std::string>{"end_ns", std::to_string(end.realtime_ns)},
                               {"stop_reason", "cut"}}) {
      meta.Bind(1, k).Bind(2, v);
      RETURN_IF_ERROR(meta.Run());
    }
    ASSIGN_OR_RETURN(rs::Statement seq, copy.Prepare("SELECT IFNULL(MAX(seq), -1) + 1 FROM clock_refs"));
    ASSIGN_OR_RETURN(bool row, seq.Step());
    const int64_t next_seq = row ? seq.Int(0) : 0;
    seq = rs::Statement();
    ASSIGN_OR_RETURN(rs::Statement ref, PrepareClockRefInsert(copy));
    RETURN_IF_ERROR(WriteClockRef(ref, info.node, next_seq, end));
    ref = rs::Statement();
    meta = rs::Statement();
    return tx.Commit();
  };
  if (auto r = finish_copy(); !r.ok()) {
    unlink(copy_path.c_str());
    return r.error().Wrap("cut: " + copy_path);
  }
  return BundleFromDatabase(copy_path, out);
}

std::vector<std::string> RotateCuts(const std::string& cut_dir, const std::string& node,
                                    uint64_t max_bytes) {
  std::vector<std::string> removed;
  if (max_bytes == 0) return removed;
  std::vector<std::pair<std::string, uint64_t>> cuts;  // (cut id, bytes), oldest first
  uint64_t total = 0;
  DIR* d = opendir(cut_dir.c_str());
  if (!d) return removed;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    struct stat st {};
    if (stat((cut_dir + "/" + e->d_name + "/" + node + ".rsb").c_str(), &st) != 0) continue;
    cuts.emplace_back(e->d_name, static_cast<uint64_t>(st.st_size));
    total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  std::sort(cuts.begin(), cuts.end());
  for (size_t i = 0; i + 1 < cuts.size() && total > max_bytes; ++i) {
    const std::string dir = cut_dir + "/" + cuts[i].first;
    if (unlink((dir + "/" + node + ".rsb").c_str()) != 0) continue;
    total -= cuts[i].second;
    removed.push_back(dir + "/" + node + ".rsb");
    // The directory goes with its last bundle (and the request that made it).
    bool bundles_left = false;
    if (DIR* cd = opendir(dir.c_str())) {
      while (dirent* e = readdir(cd)) {
        const std::string name = e->d_name;
        bundles_left |= name.size() > 4 && name.compare(name.size() - 4, 4, ".rsb") == 0;
      }
      closedir(cd);
    }
    if (!bundles_left) {
      unlink((dir + "/request").c_str());
      rmdir(dir.c_str());
    }
  }
  return removed;
}

std::vector<std::string> RemoveStaleCutFiles(const std::string& cut_dir, const std::string& node) {
  std::vector<std::string> removed;
  const std::string copy_prefix = "." + node + ".cut-";
  const std::string partial = node + ".rsb.partial";
  std::vector<std::string> cuts;
  if (DIR* d = opendir(cut_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') cuts.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(cuts.begin(), cuts.end());
  for (const std::string& cut : cuts) {
    const std::string dir = cut_dir + "/" + cut;
    std::vector<std::string> stale;
    DIR* cd = opendir(dir.c_str());
    if (cd == nullptr) continue;  // a file, or gone
    while (dirent* e = readdir(cd)) {
      const std::string name = e->d_name;
      if (name == partial) {
        stale.push_back(name);
        continue;
      }
      if (name.compare(0, copy_prefix.size(), copy_prefix) != 0) continue;
      // PID.db, PID.db-journal, PID.db-wal, PID.db-shm
      const size_t digits = name.find_first_not_of("0123456789", copy_prefix.size());
      const std::string suffix = digits == std::string::npos ? "" : name.substr(digits);
      if (digits == copy_prefix.size() || digits - copy_prefix.size() > 9 ||
          (suffix != ".db" && suffix != ".db-journal" && suffix != ".db-wal" &&
           suffix != ".db-shm")) {
        continue;
      }
      const pid_t pid = static_cast<pid_t>(std::strtol(
          name.substr(copy_prefix.size(), digits - copy_prefix.size()).c_str(), nullptr, 10));
      if (pid != getpid() && !ProcessAlive(pid)) stale.push_back(name);
    }
    closedir(cd);
    std::sort(stale.begin(), stale.end());
    for (const std::string& name : stale) {
      if (unlink((dir + "/" + name).c_str()) == 0) removed.push_back(dir + "/" + name);
    }
  }
  return removed;
}

std::string PidFilePath(const std::string& ring_dir) { return ring_dir + "/recorder.pid"; }
std::string CutLogPath(const std::string& ring_dir) { return ring_dir + "/cuts.log"; }

rs::Result<void> ClaimRingDir(const std::string& ring_dir) {
  RETURN_IF_ERROR(MakeDirs(ring_dir));
  const std::string path = PidFilePath(ring_dir);
  std::ifstream in(path);
  pid_t other = 0;
  if (in >> other && other > 0 && other != getpid() && (kill(other, 0) == 0 || errno == EPERM)) {
    return rs::Error(ring_dir + ": recorder " + std::to_string(other) +
                     " records into this ring directory (" + path +
                     "); stop it or give another --ring-dir");
  }
  std::ofstream out(path, std::ios::trunc);
  out << getpid() << "\n";
  if (!out.flush()) return rs::Error(path + ": cannot write: " + std::strerror(errno));
  return rs::Ok();
}

void ReleaseRingDir(const std::string& ring_dir) { unlink(PidFilePath(ring_dir).c_str()); }

void AppendCutLog(const std::string& ring_dir, const std::string& line) {
  std::ofstream out(CutLogPath(ring_dir), std::ios::app);
  out << line << "\n";
  // `rankscope-record cut` waits for this line: without it, it says it timed out.
  if (!out.flush()) {
    Log("%s: cannot append the cut's line: %s", CutLogPath(ring_dir).c_str(),
        std::strerror(errno));
  }
}

rs::Result<std::string> RequestCut(const std::string& ring_dir, int64_t timeout_ns) {
  const std::string pid_path = PidFilePath(ring_dir);
  std::ifstream in(pid_path);
  pid_t pid = 0;
  if (!(in >> pid) || pid <= 0) {
    return rs::Error(pid_path + ": no recorder pid (is `rankscope-record --ring` running with "
                                "this --ring-dir?)");
  }
  struct stat st {};
  const off_t log_size = stat(CutLogPath(ring_dir).c_str(), &st) == 0 ? st.st_size : 0;
  if (kill(pid, SIGUSR1) != 0) {
    return rs::Error("recorder " + std::to_string(pid) + " (from " + pid_path +
                     "): " + std::strerror(errno));
  }
  const int64_t deadline = rs::MonotonicNowNs() + timeout_ns;
  while (rs::MonotonicNowNs() < deadline) {
    if (stat(CutLogPath(ring_dir).c_str(), &st) == 0 && st.st_size > log_size) {
      std::ifstream log(CutLogPath(ring_dir));
      log.seekg(log_size);
      std::string line;
      if (std::getline(log, line) && !line.empty()) {
        if (line.rfind("error: ", 0) == 0) return rs::Error("recorder " + std::to_string(pid) + ": " + line.substr(7));
        return line;
      }
    }
    if (kill(pid, 0) != 0 && errno == ESRCH) {
      return rs::Error("recorder " + std::to_string(pid) + " exited before writing the cut");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return rs::Error("no cut written by recorder " + std::to_string(pid) + " within --timeout");
}

}  // namespace rec
