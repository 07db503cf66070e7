#include "merger/inputs.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>
#include <utility>

#include "merger/flight_recorder.h"
#include "rscore/event_id.h"
#include "rscore/identity.h"
#include "rscore/schema.h"
#include "rscore/text_escape.h"
#include "rscore/time_arg.h"

namespace rs::merge {
namespace {

constexpr int64_t kMaxKey = 0x7fffffff;

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The range of recording keys (event id >> 32) used by the input's event ids; nullopt when it
// has no events.
rs::Result<std::optional<std::pair<int64_t, int64_t>>> KeyRange(rs::Db& db) {
  std::optional<std::pair<int64_t, int64_t>> range;
  for (std::string_view t : rs::kEventTables) {
    // A table that came with a later recorder (gpu_ops) is absent from older bundles.
    ASSIGN_OR_RETURN(bool present, rs::HasTable(db, t));
    if (!present) continue;
    // Two subqueries: SQLite answers a lone MIN or MAX of the rowid from the b-tree's ends,
    // but scans the whole table for MIN and MAX in one SELECT.
    ASSIGN_OR_RETURN(rs::Statement st,
                     db.Prepare("SELECT (SELECT MIN(id) FROM " + std::string(t) +
                                "), (SELECT MAX(id) FROM " + std::string(t) + ")"));
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row || st.IsNull(0)) continue;
    int64_t lo = st.Int(0) >> 32, hi = st.Int(1) >> 32;
    if (!range) range = std::make_pair(lo, hi);
    range->first = std::min(range->first, lo);
    range->second = std::max(range->second, hi);
  }
  return range;
}

rs::Result<FileStamp> Stamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return rs::Error(path + ": " + std::strerror(errno));
  return FileStamp{static_cast<int64_t>(st.st_size),
                   static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
                   static_cast<int64_t>(st.st_ino)};
}

// A summary (rankscope-analyze summarize): a bundle reduced to what the report reads.
bool IsSummary(const rs::BundleInfo& info) { return info.metadata.count("summary_version") > 0; }

// What validating one file learns; `error` set when the file is unusable.
struct Probe {
  std::optional<std::string> error;
  rs::ErrorKind error_kind = rs::ErrorKind::kOther;
  rs::BundleInfo info;
  FileStamp stamp;
  std::optional<std::pair<int64_t, int64_t>> keys;
  int64_t maxerror_ns = -1;
  RendezvousCollector rendezvous;
  std::vector<std::pair<std::string, int64_t>> table_rows;
  std::shared_ptr<rs::OpenedDb> image;
};

rs::Result<std::vector<std::pair<std::string, int64_t>>> TableRows(rs::Db& db) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT"
                              " LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"));
  std::vector<std::pair<std::string, int64_t>> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.emplace_back(st.Text(0), 0);
  }
  for (auto& [name, rows] : out) {
    ASSIGN_OR_RETURN(rows, db.QueryInt("SELECT COUNT(*) FROM " + rs::QuoteIdentifier(name)));
  }
  return out;
}

void ProbeFile(const std::string& file, Probe& p) {
  auto stamp = Stamp(file);
  auto opened = rs::OpenRankscopeFile(file, true);
  if (!opened.ok() || !stamp.ok()) {
    const rs::Error& e = opened.ok() ? stamp.error() : opened.error();
    std::string msg = e.message();
    if (msg.rfind(file + ": ", 0) == 0) msg = msg.substr(file.size() + 2);
    p.error = msg;
    p.error_kind = e.kind();
    return;
  }
  p.stamp = stamp.value();
  p.info = opened->info();
  if (p.info.db_kind != "bundle") return;  // reported by the planner
  auto keys = KeyRange(opened->db());
  if (!keys.ok()) {
    p.error = "cannot read event ids: " + keys.error().message();
    return;
  }
  p.keys = keys.value();
  auto rows = TableRows(opened->db());
  if (!rows.ok()) {
    p.error = "cannot count rows: " + rows.error().message();
    return;
  }
  p.table_rows = std::move(rows).value();
  auto maxerr = NodeMaxErrorNs(opened->db());
  auto rz = p.rendezvous.AddNode(opened->db(), 0);
  if (!maxerr.ok() || !rz.ok()) {
    p.error = "cannot read clock evidence: " +
              (maxerr.ok() ? rz.error().message() : maxerr.error().message());
    return;
  }
  p.maxerror_ns = maxerr.value();
  // Keep the image for copying, without an open connection (and its page cache) per input.
  opened->db() = rs::Db();
  p.image = std::make_shared<rs::OpenedDb>(std::move(opened).value());
}

// A cut's window (metadata cut_window_start_ns, cut_window_end_ns), else the recording's span.
std::pair<int64_t, int64_t> Window(const rs::BundleInfo& info) {
  auto ns = [&](const char* key, int64_t otherwise) {
    auto it = info.metadata.find(key);
    if (it == info.metadata.end()) return otherwise;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(it->second.c_str(), &end, 10);
    return errno == 0 && end != it->second.c_str() && *end == '\0' ? static_cast<int64_t>(v)
                                                                   : otherwise;
  };
  return {ns("cut_window_start_ns", info.start_ns), ns("cut_window_end_ns", info.end_ns)};
}

// Two files of one recording hold the same rows (a bundle copied twice, or collected twice):
// the same span and window, the same rows in every table.
bool SameContent(const Input& a, const Input& b) {
  return a.info.start_ns == b.info.start_ns && a.info.end_ns == b.info.end_ns &&
         Window(a.info) == Window(b.info) && a.table_rows == b.table_rows;
}

// Why a second, different file of a merged recording is skipped: a merged database holds one
// window per recording. Two cuts of one ring (another window, or a recovered bundle beside the
// finished one) are not merged together: where their windows do not meet, the node would seem
// to do nothing in between, the very thing a hang analysis looks for; where they overlap,
// their rows are one allocator's and the later cut's counts and metadata would contradict the
// earlier's. Merged once, from the first file given, and said loudly (exit 3).
std::string OtherPartOfRecording(const Input& first, const Input& other) {
  auto window = [](const rs::BundleInfo& info) {
    const auto [from, to] = Window(info);
    return rs::FormatUtc(from) + " to " + rs::FormatUtc(to);
  };
  const bool cuts = other.info.metadata.count("cut_ns") || first.info.metadata.count("cut_ns");
  return std::string(cuts ? "another cut of the same ring"
                          : "another, different file of the same") +
         " recording (id " + other.info.recording_id + ", node " + other.info.node + ") as input " +
         std::to_string(first.input_id) + " (" + first.file + "): it holds " + window(other.info) +
         ", input " + std::to_string(first.input_id) + " holds " + window(first.info) +
         "; a merged database holds one window per recording, this one is input " +
         std::to_string(first.input_id) +
         "'s (the first given). Merge this file without the other to analyse its window";
}

// Validates every file, on as many threads as there are cores (decompression and the SQLite
// integrity check dominate the cost and are independent per file).
std::vector<Probe> ProbeAll(const std::vector<std::string>& files) {
  std::vector<Probe> out(files.size());
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) ProbeFile(files[i], out[i]);
  };
  unsigned n = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(),
                                               static_cast<unsigned>(files.size())));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  return out;
}

}  // namespace

rs::Result<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (const std::string& a : args) {
    struct stat st {};
    if (stat(a.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      DIR* d = opendir(a.c_str());
      if (!d) return rs::Error(a + ": cannot read directory: " + std::strerror(errno));
      std::vector<std::string> found;
      while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        const std::string path = a + (EndsWith(a, "/") ? "" : "/") + name;
        if (EndsWith(name, ".rsb") || EndsWith(name, ".rss")) {  // bundles and summaries
          found.push_back(path);
        } else if (name[0] != '.' && fr::RankFromFileName(name) &&
                   fr::SniffFile(path) != fr::Sniff::kNotDump) {
          found.push_back(path);  // a Flight Recorder dump (nccl_trace_rank_N)
        }
      }
      closedir(d);
      if (found.empty()) {
        return rs::Error(a +
                         ": directory holds no .rsb bundles, no .rss summaries and no Flight "
                         "Recorder dumps (nccl_trace_rank_N); give bundle files or the "
                         "directory they were copied to");
      }
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
    } else {
      out.push_back(a);  // missing files are reported (and skipped) by PlanInputs
    }
  }
  return out;
}

std::vector<Input> PlanInputs(const std::vector<std::string>& files, std::ostream& log) {
  std::vector<Input> inputs;
  std::map<std::string, int> by_recording;             // recording id -> input id
  std::map<std::string, int> node_uses;                // original node name -> times merged
  std::vector<std::pair<int64_t, int64_t>> used_keys;  // key ranges taken by merged inputs
  std::vector<int> key_owner;
  std::vector<Probe> probes = ProbeAll(files);
  // A node's raw bundle holds all its summary holds and more: given both, the raw one is
  // merged, wherever it stands on the command line.
  std::map<std::string, std::string> raw_files;  // recording id -> a raw bundle of it
  for (size_t f = 0; f < files.size(); ++f) {
    const rs::BundleInfo& info = probes[f].info;
    if (!probes[f].error && info.db_kind == "bundle" && !IsSummary(info)) {
      raw_files.emplace(info.recording_id, files[f]);
    }
  }
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string& file = files[f];
    Input in;
    in.input_id = static_cast<int>(inputs.size()) + 1;
    in.file = file;
    auto skip = [&](const std::string& why) {
      in.status = "skipped";
      in.reason = why;
      log << "rankscope-merge: skipping " << rs::EscapeText(file) << ": " << rs::EscapeText(why)
          << "\n";
    };
    Probe& probe = probes[f];
    if (probe.error && probe.error_kind == rs::ErrorKind::kNoSpace) {
      // No room to decompress: the merge stops with it (every later input would fail alike),
      // so it is not said to be skipped.
      in.status = "skipped";
      in.reason = *probe.error;
      in.reason_kind = probe.error_kind;
      inputs.push_back(std::move(in));
      continue;
    }
    if (probe.error) {
      skip(*probe.error);
      inputs.push_back(std::move(in));
      continue;
    }
    in.info = std::move(probe.info);
    in.stamp = probe.stamp;
    in.maxerror_ns = probe.maxerror_ns;
    in.rendezvous = std::move(probe.rendezvous);
    in.table_rows = std::move(probe.table_rows);
    const rs::BundleInfo& info = in.info;
    if (info.db_kind != "bundle") {
      skip("is a merged database, not a node bundle; merge the original .rsb bundles");
      inputs.push_back(std::move(in));
      continue;
    }
    if (auto raw = raw_files.find(info.recording_id); IsSummary(info) && raw != raw_files.end()) {
      in.status = "duplicate";  // its input id and node are the raw one's (set below)
      in.recording_id = info.recording_id;
      in.original_node = info.node;
      in.reason = "a summary of the recording in " + raw->second + ", merged instead";
      log << "rankscope-merge: " << rs::EscapeText(file) << ": " << rs::EscapeText(in.reason)
          << "\n";
      inputs.push_back(std::move(in));
      continue;
    }
    in.recording_id = info.recording_id;
    in.original_node = info.node;
    // The node name keeps the one rule of every tool: opening the bundle checked it.
    if (auto it = by_recording.find(info.recording_id); it != by_recording.end()) {
      const Input& first = inputs[it->second - 1];
      if (!SameContent(first, in)) {
        skip(OtherPartOfRecording(first, in));
        inputs.push_back(std::move(in));
        continue;
      }
      in.status = "duplicate";
      in.reason = "same recording (id " + info.recording_id + ") as input " +
                  std::to_string(it->second) + " (" + first.file + "); merged once";
      in.node = first.node;
      in.duplicate_of = it->second;
      log << "rankscope-merge: " << rs::EscapeText(file) << ": " << rs::EscapeText(in.reason)
          << "\n";
      inputs.push_back(std::move(in));
      continue;
    }
    std::vector<std::string> notes;
    int uses = ++node_uses[info.node];
    in.node = uses == 1 ? info.node : info.node + "#" + std::to_string(uses);
    if (uses > 1) {
      notes.push_back("node name '" + info.node + "' already used by another recording; kept as '" +
                      in.node + "'");
    }
    if (probe.keys) {
      auto [lo, hi] = *probe.keys;
      auto clash = [&](int64_t a, int64_t b) -> int {
        for (size_t i = 0; i < used_keys.size(); ++i) {
          if (a <= used_keys[i].second && used_keys[i].first <= b) return key_owner[i];
        }
        return 0;
      };
      if (int owner = clash(lo, hi)) {
        int64_t width = hi - lo;
        int64_t cand = rs::RecordingKey(info.recording_id + "#" + std::to_string(in.input_id));
        for (int tries = 0;
             tries < 1'000'000 && (cand + width > kMaxKey || clash(cand, cand + width)); ++tries) {
          cand = cand + width + 1 > kMaxKey ? 1 : cand + width + 1;
        }
        if (clash(cand, cand + width) || cand + width > kMaxKey) {
          skip("event ids collide with input " + std::to_string(owner) +
               " and no free id range is left to move them to");
          inputs.push_back(std::move(in));
          continue;
        }
        in.id_shift = (cand - lo) * (int64_t{1} << 32);
        notes.push_back("event ids (recording key " + std::to_string(lo) +
                        ") collided with input " + std::to_string(owner) +
                        "; remapped to recording key " + std::to_string(cand));
        lo = cand;
        hi = cand + width;
      }
      used_keys.emplace_back(lo, hi);
      key_owner.push_back(in.input_id);
      in.first_key = lo;
    }
    in.status = "merged";
    in.image = std::move(probe.image);
    for (const std::string& n : notes) {
      in.reason += (in.reason.empty() ? "" : "; ") + n;
      log << "rankscope-merge: " << rs::EscapeText(file) << ": " << rs::EscapeText(n) << "\n";
    }
    by_recording[info.recording_id] = in.input_id;
    inputs.push_back(std::move(in));
  }
  for (Input& in : inputs) {  // summaries left for their raw bundle, wherever it stood
    auto raw = by_recording.find(in.recording_id);
    if (in.status != "duplicate" || in.duplicate_of != 0) continue;
    if (raw == by_recording.end()) {  // the raw bundle failed its checks after probing
      in.status = "skipped";
      in.reason += "; but that bundle was skipped: merge this summary alone";
      log << "rankscope-merge: skipping " << rs::EscapeText(in.file) << ": "
          << rs::EscapeText(in.reason) << "\n";
      continue;
    }
    in.duplicate_of = raw->second;
    in.node = inputs[raw->second - 1].node;
  }
  return inputs;
}

rs::Result<std::string> ReopenInput(const Input& in) {
  auto stamp = Stamp(in.file);
  if (!stamp.ok() || !(stamp.value() == in.stamp)) {
    return rs::Error(in.file + ": the file changed while merging; run the merge again");
  }
  if (!in.image) return rs::Error(in.file + ": no validated copy of this input is left");
  return in.image->sqlite_path();
}

}  // namespace rs::merge
