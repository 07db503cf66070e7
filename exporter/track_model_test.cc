#include "track_model.h"

#include <gtest/gtest.h>

#include <set>

namespace rs::exporter {
namespace {

ProcessMap TwoNodes() {
  ProcessMap m;
  m[{"node0", 1234}] = ProcessInfo{0, "trainer"};
  m[{"node1", 1234}] = ProcessInfo{5, "trainer"};  // same pid on another node
  return m;
}

TEST(TrackModel, SamePidOnTwoNodesGetsDistinctSyntheticIds) {
  TrackModel m(TwoNodes());
  uint32_t a = m.Thread("node0", 1234, 1234);
  uint32_t b = m.Thread("node1", 1234, 1234);
  uint32_t a2 = m.Thread("node0", 1234, 1240);
  EXPECT_NE(m.track(a).pid, m.track(b).pid);
  EXPECT_EQ(m.track(a).pid, m.track(a).tid);  // main thread: tid == pid
  EXPECT_EQ(m.track(a2).pid, m.track(a).pid);
  EXPECT_NE(m.track(a2).tid, m.track(a).tid);
  EXPECT_EQ(m.Thread("node0", 1234, 1234), a);
  uint32_t p = m.Process("node1", 1234);
  EXPECT_EQ(m.track(p).name, "node1 / rank 5 (pid 1234)");
  EXPECT_EQ(m.track(b).parent_uuid, m.track(p).uuid);
  EXPECT_EQ(m.track(p).parent_uuid, m.track(m.Node("node1")).uuid);
  std::set<uint64_t> uuids;
  for (const Track& t : m.tracks()) uuids.insert(t.uuid);
  EXPECT_EQ(uuids.size(), m.tracks().size());
  EXPECT_EQ(uuids.count(0), 0u);
}

TEST(TrackModel, NewTracksComeParentsFirst) {
  TrackModel m(TwoNodes());
  m.Thread("node1", 1234, 1235);
  std::vector<uint32_t> fresh = m.TakeNew();
  ASSERT_EQ(fresh.size(), 3u);
  EXPECT_EQ(m.track(fresh[0]).kind, TrackKind::kNode);
  EXPECT_EQ(m.track(fresh[1]).kind, TrackKind::kProcess);
  EXPECT_EQ(m.track(fresh[2]).kind, TrackKind::kThread);
  EXPECT_TRUE(m.TakeNew().empty());
}

TEST(TrackModel, UnknownProcessNamedByPid) {
  TrackModel m(TwoNodes());
  uint32_t p = m.Process("node0", 99);
  EXPECT_EQ(m.track(p).name, "node0 / process (pid 99)");
}

TEST(TrackModel, LanesKeepSlicesNested) {
  TrackModel m(TwoNodes());
  uint32_t disk = m.NodeChild("node0", "disk 7:0");
  EXPECT_EQ(m.Lane(disk, 0, 100), disk);
  EXPECT_EQ(m.Lane(disk, 10, 50), disk);   // nested inside [0,100]
  EXPECT_EQ(m.Lane(disk, 50, 60), disk);   // after [10,50], inside [0,100]
  uint32_t lane1 = m.Lane(disk, 90, 150);  // crosses the end of [0,100]
  EXPECT_NE(lane1, disk);
  EXPECT_EQ(m.track(lane1).name, "node0 / disk 7:0 (overlap 1)");
  EXPECT_EQ(m.track(lane1).parent_uuid, m.track(disk).parent_uuid);
  EXPECT_EQ(m.Lane(disk, 100, 120), disk);  // [0,100] ended: the first lane is free again
  EXPECT_EQ(m.Lane(disk, 140, 160), disk);
  // Lane 0 holds [140,160], lane 1 [90,150]: [145,170] fits neither.
  uint32_t lane2 = m.Lane(disk, 145, 170);
  EXPECT_NE(lane2, disk);
  EXPECT_NE(lane2, lane1);
  EXPECT_EQ(m.Lane(disk, 150, 155), disk);  // nests in [140,160]
  EXPECT_EQ(m.Lane(disk, 160, 165), disk);  // zero gap after [140,160]
}

TEST(TrackModel, EqualSpansNestAndZeroLengthSlicesFit) {
  TrackModel m(TwoNodes());
  uint32_t t = m.Thread("node0", 1234, 1234);
  EXPECT_EQ(m.Lane(t, 10, 20), t);
  EXPECT_EQ(m.Lane(t, 10, 20), t);  // same span: nests
  EXPECT_EQ(m.Lane(t, 20, 20), t);  // zero length at the shared end
  EXPECT_EQ(m.Lane(t, 20, 30), t);
}

}  // namespace
}  // namespace rs::exporter
