// How the exported trace lays out nodes, ranks and disk requests (natural order, lanes, one
// track per device), and how long text cells are cut.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/test_input.h"
#include "exporter/trace_check.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"

namespace rs::exporter {
namespace {

using testing::DecodePerfettoTrace;

class LayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  static ExportResult ExportOk(ExportOptions o) {
    auto r = Export(o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : ExportResult{};
  }
  static std::string ReadAll(const std::string& path) { return testing::ReadFile(path); }
  // Exports `path` to PATH.pftrace and decodes it; the decoder found no error in it.
  static testing::DecodedTrace ExportAndDecode(const std::string& path) {
    ExportOptions o;
    o.input = path;
    o.output = path + ".pftrace";
    ExportOk(o);
    auto t = DecodePerfettoTrace(o.output);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    if (!t.ok()) return {};
    for (const std::string& e : t->errors) ADD_FAILURE() << e;
    return std::move(t).value();
  }
  std::string dir_;
};

// Writes a merged db with the nodes, ranks and block requests of the ordering tests.
void WriteOrderingDb(const std::string& path, bool device_names) {
  auto db = Db::Open(path, Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(CreateSchema(*db, DbKind::kMerged).ok());
  // First appearance (and text order) differ from natural order: node10, node2, node1;
  // on node2, rank 10 before rank 9.
  ASSERT_TRUE(db->Exec(R"sql(
INSERT INTO processes(node, pid, comm, rank) VALUES
  ('node10', 50, 'trainer', 4), ('node2', 60, 'trainer', 10), ('node2', 61, 'trainer', 9),
  ('node1', 70, 'trainer', 0);
INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op, seq, comm_id_hash)
  VALUES (1, 'node10', 1000, 10, 50, 50, 'ALL_REDUCE', 0, 42),
         (2, 'node2', 1001, 10, 60, 60, 'ALL_REDUCE', 0, 42),
         (3, 'node2', 1002, 10, 61, 61, 'ALL_REDUCE', 0, 42),
         (4, 'node1', 1003, 10, 70, 70, 'ALL_REDUCE', 0, 42);
INSERT INTO block_events(id, node, timestamp_ns, duration_ns, dev, op, bytes) VALUES
  (10, 'node1', 1000, 100, '8:16', 'read', 4096),
  (11, 'node1', 1010, 30, '8:16', 'read', 4096),
  (12, 'node1', 1020, 100, '8:16', 'read', 4096),
  (13, 'node1', 1040, 10, '8:16', 'read', 4096),
  (14, 'node1', 1050, 5, '8:16', 'read', 4096),
  (15, 'node1', 1100, 10, '8:16', 'write', 4096),
  (16, 'node1', 1005, 10, '8:0', 'write', 4096),
  (17, 'node1', 1006, 10, '259:0', 'write', 4096),
  (18, 'node1', 1007, 10, '7:4', 'write', 4096);
)sql")
                  .ok());
  if (device_names) {
    ASSERT_TRUE(db->Exec("INSERT INTO block_devices(node, dev, name) VALUES ('node1', '8:16', "
                         "'sdb'), ('node1', '8:0', 'sda'), ('node1', '259:0', 'nvme0n1')")
                    .ok());
  }
}

// Nodes, and ranks within a node, in natural order in both formats, whatever order they first
// appear in: Perfetto orders siblings explicitly, Chrome JSON by sort index.
TEST_F(LayoutTest, NodesAndRanksInNaturalOrder) {
  const std::string path = dir_ + "/order.rsdb";
  WriteOrderingDb(path, true);
  const testing::DecodedTrace decoded = ExportAndDecode(path);
  const testing::DecodedTrace* t = &decoded;
  // Root tracks (the nodes) and the ranks under node2, by sibling rank.
  std::vector<std::pair<int32_t, std::string>> roots, ranks;
  uint64_t node2 = 0;
  for (const auto& [uuid, d] : t->tracks) {
    if (!d.has_parent_uuid()) {
      EXPECT_TRUE(d.has_sibling_order_rank()) << d.name();
      EXPECT_EQ(d.child_ordering(), perfetto::protos::TrackDescriptor::EXPLICIT) << d.name();
      roots.push_back({d.sibling_order_rank(), d.name()});
      if (d.name() == "node2") node2 = uuid;
    }
  }
  for (const auto& [uuid, d] : t->tracks) {
    if (d.parent_uuid() == node2 && d.has_process()) {
      EXPECT_TRUE(d.has_sibling_order_rank()) << d.name();
      ranks.push_back({d.sibling_order_rank(), d.name()});
    }
  }
  std::sort(roots.begin(), roots.end());
  std::sort(ranks.begin(), ranks.end());
  std::vector<std::string> root_names, rank_names;
  for (const auto& r : roots) root_names.push_back(r.second);
  for (const auto& r : ranks) rank_names.push_back(r.second);
  EXPECT_EQ(root_names, (std::vector<std::string>{"node1", "node2", "node10"}));
  EXPECT_EQ(rank_names,
            (std::vector<std::string>{"node2 / rank 9 (pid 61)", "node2 / rank 10 (pid 60)"}));

  // Chrome JSON: process_sort_index puts the same tracks in the same order.
  ExportOptions o;
  o.input = path;
  o.format = Format::kChromeJson;
  o.output = path + ".json";
  ExportOk(o);
  const std::string j = ReadAll(o.output);
  std::map<int64_t, int64_t> sort_of_pid;
  std::map<int64_t, std::string> name_of_pid;
  const std::string sort_key = "\"name\":\"process_sort_index\",\"pid\":";
  for (size_t p = j.find(sort_key); p != std::string::npos; p = j.find(sort_key, p + 1)) {
    const int64_t pid = std::stoll(j.substr(p + sort_key.size()));
    const size_t s = j.find("\"sort_index\":", p);
    sort_of_pid[pid] = std::stoll(j.substr(s + 13));
  }
  const std::string name_key = "\"name\":\"process_name\",\"pid\":";
  for (size_t p = j.find(name_key); p != std::string::npos; p = j.find(name_key, p + 1)) {
    const int64_t pid = std::stoll(j.substr(p + name_key.size()));
    const size_t s = j.find("\"args\":{\"name\":\"", p) + 16;
    name_of_pid[pid] = j.substr(s, j.find('"', s) - s);
  }
  std::vector<std::pair<int64_t, std::string>> json_order;
  for (const auto& [pid, name] : name_of_pid) json_order.push_back({sort_of_pid.at(pid), name});
  std::sort(json_order.begin(), json_order.end());
  std::vector<std::string> json_names;
  for (const auto& n : json_order) json_names.push_back(n.second);
  EXPECT_EQ(json_names, (std::vector<std::string>{
                            "node1", "node1 / rank 0 (pid 70)", "node2", "node2 / rank 9 (pid 61)",
                            "node2 / rank 10 (pid 60)", "node10", "node10 / rank 4 (pid 50)"}));
}

// Block requests of a device go on as few lanes as overlap allows (each on the lowest lane
// free at its start); the lanes are the device's tracks, named by its device name ("MAJ:MIN"
// without one) with one sibling merge key, so the UI shows one track per device; devices in
// natural order.
TEST_F(LayoutTest, DiskRequestsPackIntoLanesOfOneMergedTrackPerDevice) {
  for (bool names : {true, false}) {
    const std::string path = dir_ + (names ? "/disk-named.rsdb" : "/disk-unnamed.rsdb");
    WriteOrderingDb(path, names);
    if (!names) {
      // A bundle of an earlier recorder: no block_devices table at all.
      auto db = Db::Open(path, Db::Mode::kReadWrite);
      ASSERT_TRUE(db.ok());
      ASSERT_TRUE(db->Exec("DROP TABLE block_devices").ok());
    }
    const testing::DecodedTrace decoded = ExportAndDecode(path);
    const testing::DecodedTrace* t = &decoded;
    uint64_t node1 = 0;
    for (const auto& [uuid, d] : t->tracks) {
      if (d.name() == "node1") node1 = uuid;
    }
    ASSERT_NE(node1, 0u);
    // The devices under node1 (their first lanes), by sibling rank; every lane of a device
    // carries the device's merge key.
    std::vector<std::pair<int32_t, std::string>> disks;
    std::map<std::string, std::string> key_of;  // device track name -> merge key
    // Lanes of each device: (rank, uuid).
    std::map<std::string, std::vector<std::pair<int32_t, uint64_t>>> lanes_of;
    for (const auto& [uuid, d] : t->tracks) {
      if (d.parent_uuid() != node1 || d.name().rfind("node1 / disk ", 0) != 0) continue;
      EXPECT_EQ(d.sibling_merge_behavior(),
                perfetto::protos::TrackDescriptor::SIBLING_MERGE_BEHAVIOR_BY_SIBLING_MERGE_KEY);
      auto [known, fresh] = key_of.emplace(d.name(), d.sibling_merge_key());
      EXPECT_EQ(known->second, d.sibling_merge_key()) << d.name();
      lanes_of[d.name()].push_back({d.sibling_order_rank(), uuid});
    }
    std::set<std::string> keys;
    for (auto& [name, lanes] : lanes_of) {
      std::sort(lanes.begin(), lanes.end());
      disks.push_back({lanes.front().first, name});
      keys.insert(key_of[name]);
    }
    EXPECT_EQ(keys.size(), key_of.size());  // one key per device
    std::sort(disks.begin(), disks.end());
    std::vector<std::string> disk_names;
    for (const auto& d : disks) disk_names.push_back(d.second);
    if (names) {
      EXPECT_EQ(disk_names, (std::vector<std::string>{"node1 / disk 7:4", "node1 / disk nvme0n1",
                                                      "node1 / disk sda", "node1 / disk sdb"}));
    } else {
      EXPECT_EQ(disk_names, (std::vector<std::string>{"node1 / disk 7:4", "node1 / disk 8:0",
                                                      "node1 / disk 8:16", "node1 / disk 259:0"}));
    }
    const std::string busy = names ? "node1 / disk sdb" : "node1 / disk 8:16";
    ASSERT_TRUE(lanes_of.count(busy));
    // Lanes of the busy device, numbered by sibling rank.
    std::map<uint64_t, int32_t> lane_of;  // track uuid -> lane number
    const std::vector<std::pair<int32_t, uint64_t>>& lanes = lanes_of[busy];
    for (size_t k = 0; k < lanes.size(); ++k) {
      lane_of[lanes[k].second] = static_cast<int32_t>(k);
    }
    // Greedy packing, worked by hand: [1000,1100] lane 0, [1010,1040] lane 1, [1020,1120]
    // lane 2, [1040,1050] lane 1 (free at 1040), [1050,1055] lane 1, [1100,1110] lane 0.
    std::vector<std::pair<int64_t, int32_t>> got;
    for (const auto& e : t->events) {
      if (lane_of.count(e.track)) got.push_back({e.ts, lane_of[e.track]});
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::pair<int64_t, int32_t>>{
                       {1000, 0}, {1010, 1}, {1020, 2}, {1040, 1}, {1050, 1}, {1100, 0}}));
    EXPECT_EQ(lanes.size(), 3u);
    // No disk track anywhere holds overlapping requests.
    for (const auto& [uuid, d] : t->tracks) {
      EXPECT_EQ(d.name().find("overlap"), std::string::npos) << d.name();
    }
  }
}
TEST(TraceCell, LongTextIsCutAtACharacterWithItsLength) {
  EXPECT_EQ(TraceCell("abc", 3), "abc");
  const std::string exact(kMaxTraceCellBytes, 'a');
  EXPECT_EQ(TraceCell(exact.data(), exact.size()), exact);
  // A two-byte character straddling the limit is left out whole.
  std::string long_text(kMaxTraceCellBytes - 1, 'a');
  long_text += "\xc3\xa9";
  long_text += std::string(5000, 'b');
  const std::string cut = TraceCell(long_text.data(), long_text.size());
  EXPECT_EQ(cut, std::string(kMaxTraceCellBytes - 1, 'a') +
                     "...[truncated: " + std::to_string(long_text.size()) + " bytes]");
}

}  // namespace
}  // namespace rs::exporter
