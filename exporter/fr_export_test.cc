// Flight Recorder entries in the exported trace: a database of dumps alone used to give an
// empty trace with exit 0.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "exporter/exporter.h"
#include "exporter/test_input.h"
#include "exporter/trace_check.h"
#include "rscore/bundle.h"
#include "rscore/schema.h"

namespace rs::exporter {
namespace {

class FrExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    const std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  // A merged database built as rankscope-merge builds one of dumps: `sql` fills it.
  std::string MakeDb(const std::string& name, const std::string& sql) {
    const std::string path = dir_ + "/" + name;
    auto db = Db::Open(path, Db::Mode::kCreate);
    EXPECT_TRUE(db.ok());
    if (!db.ok()) return path;
    EXPECT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
    auto r = db->Exec(sql);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return path;
  }
  std::string dir_;
};

// Ranks 0 and 1 of a gloo job (no node recorded them) and one NCCL rank a node recorded.
constexpr const char* kDumps = R"sql(
INSERT INTO processes(node, pid, rank, comm) VALUES ('node0', 7, 2, 'python');
INSERT INTO fr_dumps(input_id, rank, node, pid, format, version, entries, clock, backend, timing,
                     first_record_id, last_record_id, ring)
  VALUES (1, 0, NULL, NULL, 'pickle', '2.10', 2, 'unaligned', 'gloo', 'none', 0, 1, 'complete'),
         (2, 1, NULL, NULL, 'json', '2.10', 1, 'unaligned', 'gloo', 'none', 0, 0, 'complete'),
         (3, 2, 'node0', 7, 'pickle', '2.10', 2, 'aligned', 'nccl', 'on', 40, 41, 'wrapped');
INSERT INTO process_groups(id, pg_name, pg_desc, ranks, size, match, members, ranks_seen)
  VALUES (1, '0', 'default_pg', '[0,1]', 2, 'fr_only', 'default_group', '[0,1]'),
         (2, '5', 'TENSOR_MODEL_PARALLEL_GROUP', '[2,3]', 2, 'fr_only', 'listed', '[2]');
INSERT INTO fr_entries(id, input_id, rank, node, pg, seq, is_p2p, op, profiling_name, state,
                       timestamp_ns, time_discovered_started_ns, time_discovered_completed_ns,
                       duration_ns, retired, record_id, count, datatype, input_sizes)
  VALUES (1, 1, 0, NULL, 1, 1, 0, 'ALL_REDUCE', 'gloo:all_reduce', 'enqueued', 1000, NULL, NULL,
          NULL, 1, 0, 16, 'float32', '[[16]]'),
         (2, 1, 0, NULL, 1, 2, 0, 'ALL_REDUCE', 'gloo:all_reduce', 'enqueued', 3000, NULL, NULL,
          NULL, 1, 1, 16, 'float32', '[[16]]'),
         (3, 2, 1, NULL, 1, 1, 0, 'ALL_REDUCE', 'gloo:all_reduce', 'enqueued', 1100, NULL, NULL,
          NULL, 1, 0, 16, 'float32', '[[16]]'),
         (4, 3, 2, 'node0', 2, 9, 0, 'ALL_REDUCE', 'nccl:all_reduce', 'completed', 2000, 2100,
          2600, 400, 1, 40, 64, 'bfloat16', '[[64]]'),
         (5, 3, 2, 'node0', 2, 10, 0, 'ALL_REDUCE', 'nccl:all_reduce', 'started', 2700, 2800,
          NULL, NULL, 0, 41, 64, 'bfloat16', '[[64]]');
)sql";

std::string TrackName(const testing::DecodedTrace& t, uint64_t uuid) {
  auto it = t.tracks.find(uuid);
  return it == t.tracks.end() ? "" : it->second.name();
}

TEST_F(FrExportTest, DumpEntriesBecomeSlicesAndInstantsPerRankAndGroup) {
  const std::string db = MakeDb("dumps.rsdb", kDumps);
  ExportOptions o;
  o.input = db;
  o.output = dir_ + "/dumps.pftrace";
  auto r = Export(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->summary.rows, 5);
  EXPECT_EQ(r->stats.fr_slices, 1);    // the one completion PyTorch discovered
  EXPECT_EQ(r->stats.fr_instants, 4);  // gloo entries, and the NCCL entry still running
  auto t = testing::DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok()) << t.error().message();
  for (const std::string& e : t->errors) ADD_FAILURE() << e;
  ASSERT_EQ(t->events.size(), 5u);
  int gloo = 0;
  for (const testing::DecodedEvent& e : t->events) {
    const std::string track = TrackName(*t, e.track);
    const uint64_t parent = t->tracks.at(e.track).parent_uuid();
    if (e.name == "gloo:all_reduce") {
      ++gloo;
      EXPECT_TRUE(e.instant);
      EXPECT_EQ(track, "Flight Recorder pg 0 (default_pg)");
      const std::string rank = TrackName(*t, parent);
      EXPECT_TRUE(rank == "rank 0 (Flight Recorder dump)" ||
                  rank == "rank 1 (Flight Recorder dump)")
          << rank;
      EXPECT_EQ(e.strings.at("state"), "enqueued");
      EXPECT_EQ(e.strings.at("backend"), "gloo");
      EXPECT_EQ(e.strings.at("timing"), "none");
      EXPECT_EQ(e.ints.at("retired"), 1);
    } else if (e.ts == 2000) {
      EXPECT_FALSE(e.instant);
      EXPECT_EQ(e.end, 2600);  // to the discovered completion
      EXPECT_EQ(e.ints.at("seq"), 9);
      EXPECT_EQ(e.ints.at("device_ns"), 400);
      EXPECT_EQ(e.strings.at("input_sizes"), "[[64]]");
      EXPECT_EQ(track, "Flight Recorder pg 5 (TENSOR_MODEL_PARALLEL_GROUP)");
      // Under the recorded process of rank 2.
      EXPECT_EQ(TrackName(*t, parent), "node0 / rank 2 (pid 7)");
    } else {
      EXPECT_EQ(e.ts, 2700);
      EXPECT_TRUE(e.instant);
      EXPECT_EQ(e.strings.at("state"), "started");
      EXPECT_EQ(e.ints.at("discovered_started_ns"), 2800);
    }
  }
  EXPECT_EQ(gloo, 3);

  o.format = Format::kChromeJson;
  o.output = dir_ + "/dumps.json";
  auto j = Export(o);
  ASSERT_TRUE(j.ok()) << j.error().message();
  EXPECT_EQ(j->stats.fr_slices + j->stats.fr_instants, 5);
}

// Dumps without a single entry and nothing else: refused, nothing written (was an empty trace,
// exit 0).
TEST_F(FrExportTest, DumpsWithoutEntriesAreRefusedNotAnEmptyTrace) {
  const std::string db = MakeDb("empty-dumps.rsdb", R"sql(
INSERT INTO fr_dumps(input_id, rank, format, version, entries, clock)
  VALUES (1, 0, 'pickle', '2.10', 0, 'unaligned'), (2, 1, 'pickle', '2.10', 0, 'unaligned');
)sql");
  for (Format f : {Format::kPerfetto, Format::kChromeJson}) {
    ExportOptions o;
    o.input = db;
    o.format = f;
    o.output = dir_ + (f == Format::kPerfetto ? "/e.pftrace" : "/e.json");
    auto r = Export(o);
    ASSERT_FALSE(r.ok());
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("empty-dumps.rsdb: nothing to export: its 2 Flight Recorder dump(s) hold "
                     "no entries"),
              std::string::npos)
        << m;
    EXPECT_NE(access(o.output.c_str(), F_OK), 0) << "output left behind";
  }
}

// A database merged before fr_dumps had backend and timing still exports its entries.
TEST_F(FrExportTest, DatabaseWithoutTheNewerDumpColumnsExports) {
  const std::string db = MakeDb("older.rsdb", std::string(kDumps) + R"sql(
ALTER TABLE fr_dumps DROP COLUMN backend;
ALTER TABLE fr_dumps DROP COLUMN timing;
)sql");
  ExportOptions o;
  o.input = db;
  o.output = dir_ + "/older.pftrace";
  auto r = Export(o);
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(r->stats.fr_slices + r->stats.fr_instants, 5);
  auto t = testing::DecodePerfettoTrace(o.output);
  ASSERT_TRUE(t.ok());
  for (const testing::DecodedEvent& e : t->events) EXPECT_EQ(e.strings.count("backend"), 0u);
}

}  // namespace
}  // namespace rs::exporter
