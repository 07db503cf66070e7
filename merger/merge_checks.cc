#include "merger/merge_checks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <utility>

#include "rscore/bundle.h"

namespace rs::merge::testing {

int64_t Int(rs::Db& db, const std::string& sql) {
  auto v = db.QueryInt(sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
  return v.ok() ? v.value() : -1;
}

Merged RunMerge(const TempDir& dir, std::vector<std::string> inputs, MergeOptions opt) {
  opt.inputs = std::move(inputs);
  opt.out_path = dir.File("merged.rsdb");
  opt.force = true;  // a test may merge into the same file again
  std::ostringstream log;
  auto r = Merge(opt, log);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message()) << "\n" << log.str();
  return Merged{r.ok() ? r.value() : MergeResult{}, opt.out_path, log.str()};
}

void ExpectCountsReconcile(rs::Db& db) {
  EXPECT_EQ(Int(db, "SELECT COUNT(*) FROM merge_counts WHERE rows_in != rows_out + rows_skipped"),
            0);
  for (const char* t :
       {"nccl_events", "tcp_events", "sched_events", "block_events", "process_events",
        "cuda_events", "gpu_ops", "clock_refs", "processes", "stacks"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(Int(db, std::string("SELECT COUNT(*) FROM ") + t),
              Int(db, std::string("SELECT COALESCE(SUM(rows_out), 0) FROM merge_counts WHERE "
                                  "table_name = '") +
                          t + "'"));
  }
}

void ExpectAlignmentApplied(rs::Db& db) {
  for (const char* t : {"nccl_events", "sched_events", "block_events", "process_events",
                        "cuda_events", "gpu_ops"}) {
    SCOPED_TRACE(t);
    EXPECT_EQ(Int(db, std::string("SELECT COUNT(*) FROM ") + t +
                          " e JOIN clock_alignment a USING (node) WHERE e.timestamp_ns != "
                          "e.local_timestamp_ns - a.offset_ns - CAST(ROUND(a.drift_ppm * 1e-6 * "
                          "(e.local_timestamp_ns - a.anchor_ns)) AS INTEGER)"),
              0);
    EXPECT_EQ(
        Int(db, std::string("SELECT COUNT(*) FROM ") + t + " WHERE local_timestamp_ns IS NULL"), 0);
  }
}

NodeAlignment StoredAlignment(rs::Db& db, const std::string& node) {
  NodeAlignment a;
  auto st = db.Prepare(
      "SELECT offset_ns, drift_ppm, anchor_ns, error_bound_ns, method FROM clock_alignment"
      " WHERE node = ?");
  EXPECT_TRUE(st.ok());
  if (!st.ok()) return a;
  st->Bind(1, node);
  auto row = st->Step();
  EXPECT_TRUE(row.ok() && *row) << "no clock_alignment row for " << node;
  if (!row.ok() || !*row) return a;
  a.node = node;
  a.offset_ns = st->Int(0);
  a.drift_ppm = st->Double(1);
  a.anchor_ns = st->Int(2);
  a.error_bound_ns = st->Int(3);
  a.method = st->Text(4);
  return a;
}

int64_t ExpectGpuOpsAligned(rs::Db& db, const std::vector<std::string>& bundles) {
  int64_t compared = 0;
  for (const std::string& path : bundles) {
    auto in = rs::OpenRankscopeFile(path);
    EXPECT_TRUE(in.ok()) << path;
    if (!in.ok()) continue;
    auto node = in->db().QueryText("SELECT value FROM metadata WHERE key = 'node'");
    EXPECT_TRUE(node.ok() && node->has_value());
    const NodeAlignment al = StoredAlignment(db, node->value_or(""));
    auto rows = in->db().Prepare(
        "SELECT id, timestamp_ns, device_start_ns, device_end_ns FROM gpu_ops ORDER BY id");
    EXPECT_TRUE(rows.ok());
    auto out = db.Prepare(
        "SELECT timestamp_ns, device_start_ns, device_end_ns, local_timestamp_ns FROM gpu_ops"
        " WHERE id = ? AND node = ?");
    EXPECT_TRUE(out.ok());
    while (rows.ok() && out.ok() && rows->Step().value()) {
      SCOPED_TRACE("gpu_ops id " + std::to_string(rows->Int(0)) + " of " + path);
      out->Reset();
      out->Bind(1, rows->Int(0)).Bind(2, node->value_or(""));
      if (!out->Step().value()) {
        ADD_FAILURE() << "row missing from the merged db";
        continue;
      }
      EXPECT_EQ(out->Int(0), al.Apply(rows->Int(1)));
      EXPECT_EQ(out->Int(3), rows->Int(1));
      for (int c : {2, 3}) {
        EXPECT_EQ(out->IsNull(c - 1), rows->IsNull(c));
        if (!rows->IsNull(c)) {
          EXPECT_EQ(out->Int(c - 1), al.Apply(rows->Int(c)));
        }
      }
      ++compared;
    }
  }
  return compared;
}

std::vector<std::string> Contents(rs::Db& db) {
  std::vector<std::string> out;
  auto tables = db.Prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name");
  EXPECT_TRUE(tables.ok());
  while (tables->Step().value()) {
    std::string t = tables->Text(0);
    auto rows = db.Prepare("SELECT * FROM \"" + t + "\"");
    EXPECT_TRUE(rows.ok());
    while (rows->Step().value()) {
      std::string r = t + ":";
      for (int c = 0; c < rows->ColumnCount(); ++c) {
        r += rows->IsNull(c) ? "|NULL" : "|" + rows->Text(c);
      }
      out.push_back(r);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rs::merge::testing
