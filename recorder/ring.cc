#include "recorder/ring.h"

#include <unistd.h>

#include <algorithm>

#include "recorder/gpu_probe.h"
#include "recorder/log.h"
#include "recorder/recording_db.h"
#include "rscore/clock.h"
#include "rscore/event_id.h"
#include "rscore/path.h"
#include "rscore/schema.h"

namespace rs::rec {
namespace {

using rs::DirOf;

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

}  // namespace

std::string_view EventTableOf(std::string_view source) {
  for (const rs::EventTable& e : rs::kEventTables) {
    if (e.source == source) return e.name;
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

bool PostedCutLimit::Allow(int64_t now_ns) {
  while (!cuts_ns_.empty() && cuts_ns_.front() <= now_ns - kWindowNs) cuts_ns_.pop_front();
  if (cuts_ns_.size() >= kMaxCuts) return false;
  cuts_ns_.push_back(now_ns);
  return true;
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
  for (const rs::EventTable& e : rs::kEventTables) {
    st.Bind(1, std::string(e.source) + "_ring_aged_out")
        .Bind(2, std::to_string(ring.aged_out(e.name)));
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
}

rs::Result<std::string> WriteCut(rs::Db& live, const std::string& cut_dir, const CutInfo& info,
                                 const Ring& ring, const rs::ClockRef& end) {
  std::string out = CutPath(cut_dir, info);
  RETURN_IF_ERROR(CutIdDir(cut_dir, rs::BaseOf(DirOf(out))));
  const std::string copy_path =
      DirOf(out) + "/." + info.node + ".cut-" + std::to_string(getpid()) + ".db";
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
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"end_ns", std::to_string(end.realtime_ns)},
          {"stop_reason", "cut"}}) {
      meta.Bind(1, k).Bind(2, v);
      RETURN_IF_ERROR(meta.Run());
    }
    ASSIGN_OR_RETURN(rs::Statement seq,
                     copy.Prepare("SELECT IFNULL(MAX(seq), -1) + 1 FROM clock_refs"));
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

}  // namespace rs::rec
