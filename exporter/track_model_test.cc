#include "exporter/track_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

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

// Under a rank's process: its GPU track first, named with node and rank; each thread followed
// by its scheduler track (whichever was used first); counters after the threads.
TEST(TrackModel, ARanksGpuTrackComesFirstAndEachThreadHasItsSchedulerNext) {
  TrackModel m(TwoNodes());
  const uint32_t sched2 = m.SchedTrack("node0", 1234, 1240);  // before its thread track
  const uint32_t main = m.Thread("node0", 1234, 1234);
  const uint32_t second = m.Thread("node0", 1234, 1240);
  const uint32_t sched1 = m.SchedTrack("node0", 1234, 1234);
  const uint32_t gpu = m.DeviceTrack("node0", 1234);
  const uint32_t counter =
      m.Counter(m.Process("node0", 1234), "run-queue latency", CounterUnit::kTimeNs);
  EXPECT_TRUE(m.track(m.Process("node0", 1234)).explicit_child_order);
  EXPECT_EQ(m.track(gpu).name, "node0 / rank 0 / GPU (NCCL kernels)");
  EXPECT_EQ(m.track(sched1).name, "trainer tid 1234 / scheduler");
  EXPECT_EQ(m.track(sched2).name, "trainer tid 1240 / scheduler");
  std::vector<uint32_t> order = {gpu, second, sched2, main, sched1, counter};
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return m.track(a).sort_index < m.track(b).sort_index; });
  // tid 1240 appeared first (its scheduler track), so it comes before the main thread.
  EXPECT_EQ(order, (std::vector<uint32_t>{gpu, second, sched2, main, sched1, counter}));
  EXPECT_EQ(m.track(gpu).sort_index, 0);
}

// A slice that crosses the end of the innermost open one is cut to nest (NestedEnd); one that
// nests or follows keeps its end.
TEST(TrackModel, NestedEndCutsASliceCrossingTheOpenOnesEnd) {
  TrackModel m(TwoNodes());
  const uint32_t s = m.SchedTrack("node0", 1234, 1234);
  EXPECT_EQ(m.NestedEnd(s, 0, 100), 100);  // nothing open
  EXPECT_EQ(m.Lane(s, 0, 100), s);
  EXPECT_EQ(m.NestedEnd(s, 10, 50), 50);     // nests
  EXPECT_EQ(m.NestedEnd(s, 90, 150), 100);   // crosses 100: cut there
  EXPECT_EQ(m.Lane(s, 90, 100), s);          // and then fits the track itself
  EXPECT_EQ(m.NestedEnd(s, 100, 150), 150);  // after both ended
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

TEST(TrackModel, DiskRequestsGoOnTheLowestFreeLaneOfOneMergedDeviceTrack) {
  TrackModel m(TwoNodes(), {"node0"}, {{{"node0", "8:0"}, "sda"}, {{"node0", "8:16"}, ""}});
  const uint32_t a = m.DiskLane("node0", "8:0", 0, 100);
  const uint32_t b = m.DiskLane("node0", "8:0", 10, 50);  // overlaps: never nested on a lane
  EXPECT_NE(a, b);
  EXPECT_EQ(m.DiskLane("node0", "8:0", 50, 60), b);       // lane 1 is free again at 50
  const uint32_t c = m.DiskLane("node0", "8:0", 55, 70);  // lanes 0 and 1 busy
  EXPECT_NE(c, a);
  EXPECT_NE(c, b);
  EXPECT_EQ(m.DiskLane("node0", "8:0", 100, 110), a);  // lowest free: lane 0, not lane 1
  // The lanes: siblings under the node, named for the device, one merge key (one track in
  // the UI), in lane order.
  for (uint32_t lane : {a, b, c}) {
    EXPECT_EQ(m.track(lane).name, "node0 / disk sda");
    EXPECT_EQ(m.track(lane).merge_key, "disk node0 8:0");
    EXPECT_EQ(m.track(lane).parent_uuid, m.track(m.Node("node0")).uuid);
  }
  EXPECT_LT(m.track(a).sort_index, m.track(b).sort_index);
  EXPECT_LT(m.track(b).sort_index, m.track(c).sort_index);
  // No name recorded: MAJ:MIN; another device, another key.
  const uint32_t other = m.DiskLane("node0", "8:16", 0, 10);
  EXPECT_EQ(m.track(other).name, "node0 / disk 8:16");
  EXPECT_EQ(m.track(other).merge_key, "disk node0 8:16");
  const uint32_t unknown = m.DiskLane("node0", "259:0", 0, 10);
  EXPECT_EQ(m.track(unknown).name, "node0 / disk 259:0");
  // Other tracks merge with nothing.
  for (const Track& t : m.tracks()) {
    if (t.name.find(" / disk ") == std::string::npos) {
      EXPECT_EQ(t.merge_key, "") << t.name;
    }
  }
}

TEST(TrackModel, NodesAndRanksSortNaturally) {
  ProcessMap p;
  p[{"node10", 1}] = ProcessInfo{0, "trainer"};
  p[{"node2", 1}] = ProcessInfo{10, "trainer"};
  p[{"node2", 2}] = ProcessInfo{9, "trainer"};
  p[{"node2", 3}] = ProcessInfo{std::nullopt, "python"};
  TrackModel m(p, {"node10", "node2", "node1"});
  // Created in another order than the natural one.
  const uint32_t n10 = m.Node("node10"), n2 = m.Node("node2"), n1 = m.Node("node1");
  EXPECT_LT(m.track(n1).sort_index, m.track(n2).sort_index);
  EXPECT_LT(m.track(n2).sort_index, m.track(n10).sort_index);
  const uint32_t r10 = m.Process("node2", 1), other = m.Process("node2", 3),
                 r9 = m.Process("node2", 2);
  EXPECT_LT(m.track(r9).sort_index, m.track(r10).sort_index);
  EXPECT_LT(m.track(r10).sort_index, m.track(other).sort_index);  // no rank: after the ranks
  // Chrome JSON sorts nodes and ranks together: a node's ranks follow it, before the next node.
  EXPECT_LT(m.track(n2).sort_index, m.track(r9).sort_index);
  EXPECT_LT(m.track(other).sort_index, m.track(n10).sort_index);
  EXPECT_TRUE(m.track(n2).explicit_child_order);
  // A node not known beforehand still sorts after the known ones.
  const uint32_t late = m.Node("node0");
  EXPECT_GT(m.track(late).sort_index, m.track(m.Process("node10", 1)).sort_index);
}

}  // namespace
}  // namespace rs::exporter
