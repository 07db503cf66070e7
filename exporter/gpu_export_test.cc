// Exports inputs with gpu_ops (rankscope's NCCL profiler plugin) and checks the GPU tracks,
// their slices and annotations, the host -> device flows and the collective flows on device
// time, against the small hand-made db of test_input.h and a synthetic cluster; and that an
// input without gpu_ops exports as before.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exporter/exporter.h"
#include "exporter/test_input.h"
#include "exporter/trace_check.h"
#include "exporter/track_model.h"
#include "rscore/bundle.h"
#include "rscore/comm_hash.h"
#include "rscore/schema.h"

namespace rs::exporter {
namespace {

using testing::DecodedEvent;
using testing::DecodedTrace;
using testing::DecodePerfettoTrace;

// "node / rank N / GPU (NCCL kernels)", and its "(overlap N)" lanes.
bool IsDeviceTrack(const std::string& name) {
  return name.find(" / " + std::string(kDeviceTrackName)) != std::string::npos;
}

bool OnDeviceTrack(const DecodedTrace& t, const DecodedEvent& e) {
  return IsDeviceTrack(t.tracks.at(e.track).name());
}

bool IsEnqueueInstant(const DecodedEvent& e) {
  auto ends = [&](const std::string& s) {
    return e.name.size() > s.size() && e.name.compare(e.name.size() - s.size(), s.size(), s) == 0;
  };
  return e.instant && (ends(" enqueued") || ends(" not started on GPU"));
}

// The process track (node / rank R (pid P)) an event's track is under.
std::string ProcessOf(const DecodedTrace& t, const DecodedEvent& e) {
  uint64_t uuid = e.track;
  while (t.tracks.count(uuid) && !t.tracks.at(uuid).has_process()) {
    uuid = t.tracks.at(uuid).parent_uuid();
  }
  return t.tracks.count(uuid) ? t.tracks.at(uuid).name() : "";
}

std::vector<uint64_t> Intersect(std::vector<uint64_t> a, std::vector<uint64_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  std::vector<uint64_t> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

class GpuExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(testing::MakeTempDir());
    ASSERT_FALSE(dir_->empty());
    auto small = testing::WriteSmallGpuDb(*dir_ + "/small.rsdb", true);
    ASSERT_TRUE(small.ok()) << small.error().message();
  }
  static void TearDownTestSuite() {
    std::string cmd = "rm -rf '" + *dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
    delete dir_;
  }

  static ExportResult ExportOk(ExportOptions o) {
    o.force = true;  // a test may export into the same file again
    auto r = Export(o);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? std::move(r).value() : ExportResult{};
  }

  static DecodedTrace ExportAndDecode(ExportOptions o, ExportResult* result = nullptr) {
    o.format = Format::kPerfetto;
    ExportResult r = ExportOk(o);
    if (result) *result = r;
    auto t = DecodePerfettoTrace(o.output);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message());
    if (!t.ok()) return {};
    for (const std::string& e : t->errors) ADD_FAILURE() << e;
    return std::move(t).value();
  }

  // The one event on a GPU track (device) or elsewhere named `name` starting at `ts`.
  static const DecodedEvent* Find(const DecodedTrace& t, bool device, const std::string& name,
                                  int64_t ts) {
    const DecodedEvent* found = nullptr;
    for (const DecodedEvent& e : t.events) {
      if (OnDeviceTrack(t, e) != device || e.name != name || e.ts != ts) continue;
      EXPECT_EQ(found, nullptr) << "two events " << name << " at " << ts;
      found = &e;
    }
    return found;
  }

  static std::string* dir_;
};
std::string* GpuExportTest::dir_ = nullptr;

TEST_F(GpuExportTest, DeviceTrackPerRankWithTheDeviceSpans) {
  ExportOptions o;
  o.input = *dir_ + "/small.rsdb";
  o.output = *dir_ + "/small.pftrace";
  ExportResult r;
  DecodedTrace t = ExportAndDecode(o, &r);
  EXPECT_EQ(r.summary.last_ts, 5200);
  EXPECT_EQ(r.stats.device_slices, 5);

  // One GPU track under each rank with gpu_ops, beside its threads; none under rank 2.
  std::map<std::string, int> device_tracks;  // process name -> GPU tracks under it
  for (const auto& [uuid, d] : t.tracks) {
    if (!IsDeviceTrack(d.name())) continue;
    ASSERT_TRUE(t.tracks.count(d.parent_uuid()));
    const auto& parent = t.tracks.at(d.parent_uuid());
    EXPECT_TRUE(parent.has_process()) << parent.name();
    EXPECT_FALSE(d.has_thread());
    // Named with its node and rank ("a / rank 0 (pid 10)" -> "a / rank 0 / GPU ..."), and
    // first under its process.
    EXPECT_EQ(d.name(), parent.name().substr(0, parent.name().find(" (pid")) + " / " +
                            std::string(kDeviceTrackName));
    EXPECT_EQ(d.sibling_order_rank(), 0);
    for (const auto& [u, other] : t.tracks) {
      if (other.parent_uuid() == d.parent_uuid() && u != uuid) {
        EXPECT_GT(other.sibling_order_rank(), 0) << other.name();
      }
    }
    ++device_tracks[parent.name()];
  }
  EXPECT_EQ(device_tracks,
            (std::map<std::string, int>{{"a / rank 0 (pid 10)", 1}, {"a / rank 1 (pid 11)", 1}}));

  // The device slices: what ran on the GPU, per rank.
  std::multiset<std::tuple<std::string, std::string, int64_t, int64_t>> have,
      want = {
          {"a / rank 0 (pid 10)", "ALL_REDUCE", 1500, 3000},
          {"a / rank 1 (pid 11)", "ALL_REDUCE", 1300, 3000},
          {"a / rank 0 (pid 10)", "ALL_REDUCE", 4100, 5200},  // still running: to the trace end
          {"a / rank 0 (pid 10)", "SEND", 5100, 5200},
          {"a / rank 1 (pid 11)", "RECV", 5002, 5200},  // device start 4990 shown at the enqueue
      };
  for (const DecodedEvent& e : t.events) {
    if (OnDeviceTrack(t, e)) {
      EXPECT_FALSE(e.instant) << e.name << " at " << e.ts;
      have.insert({ProcessOf(t, e), e.name, e.ts, e.end});
    }
  }
  EXPECT_EQ(have, want);

  const DecodedEvent* ar = Find(t, true, "ALL_REDUCE", 1500);
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(ar->ints, (std::map<std::string, int64_t>{{"rank", 0},
                                                      {"nranks", 3},
                                                      {"seq", 7},
                                                      {"count", 1024},
                                                      {"bytes", 4096},
                                                      {"channels", 4},
                                                      {"net_bytes_sent", 100},
                                                      {"net_bytes_recv", 200},
                                                      {"clock_error_ns", 50},
                                                      {"queued_ns", 490}}));
  EXPECT_EQ(ar->strings, (std::map<std::string, std::string>{{"op", "ALL_REDUCE"},
                                                             {"comm_id_hex", "0x000000000000002a"},
                                                             {"datatype", "float32"},
                                                             {"algorithm", "RING"},
                                                             {"protocol", "LL"},
                                                             {"state", "completed"}}));
  const DecodedEvent* running = Find(t, true, "ALL_REDUCE", 4100);
  ASSERT_NE(running, nullptr);
  EXPECT_EQ(running->ints.at("in_flight"), 1);
  EXPECT_EQ(running->strings.at("state"), "started");
  EXPECT_EQ(running->ints.count("clock_error_ns"), 0u);  // NULL: unbounded
  EXPECT_EQ(ar->ints.count("in_flight"), 0u);
  const DecodedEvent* recv = Find(t, true, "RECV", 5002);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->ints.at("queued_ns"), -12);
  EXPECT_EQ(recv->ints.at("peer"), 0);
  EXPECT_EQ(r.stats.in_flight, 2);  // rank 2's host call of seq 8 and rank 0's device run

  // The operation the GPU never started is an instant where it was enqueued, not a slice.
  std::vector<std::string> instants;
  for (const DecodedEvent& e : t.events) {
    if (!IsEnqueueInstant(e)) continue;
    instants.push_back(e.name + " @" + std::to_string(e.ts) + " on " + t.tracks.at(e.track).name() +
                       " / " + ProcessOf(t, e));
  }
  EXPECT_EQ(instants, (std::vector<std::string>{
                          "ALL_REDUCE not started on GPU @4005 on trainer tid 12 / a / rank 1 "
                          "(pid 11)",
                          "SEND enqueued @5000 on trainer tid 10 / a / rank 0 (pid 10)"}));
  const DecodedEvent* queued = Find(t, false, "ALL_REDUCE not started on GPU", 4005);
  ASSERT_NE(queued, nullptr);
  EXPECT_EQ(queued->strings.at("state"), "enqueued");
  EXPECT_TRUE(queued->flows.empty() && queued->terminating_flows.empty());
}

// Profiler API v7: a tagged call's slice carries its tag in its name (steps at a glance) and
// its kernel's sync phases as arguments.
TEST_F(GpuExportTest, UserTagNamesTheSliceAndPhasesAreArguments) {
  const std::string db = *dir_ + "/tagged.rsdb";
  auto made = testing::WriteSmallGpuDb(db, true);
  ASSERT_TRUE(made.ok()) << made.error().message();
  {
    auto open = rs::Db::Open(db, rs::Db::Mode::kReadWrite);
    ASSERT_TRUE(open.ok());
    ASSERT_TRUE(open->Exec("UPDATE gpu_ops SET user_tag = 12, initial_sync_ns = 400, "
                           "final_sync_ns = 0, kernel_symmetric = 1 WHERE pid = 10 AND seq = 7")
                    .ok());
  }
  ExportOptions o;
  o.input = db;
  o.output = *dir_ + "/tagged.pftrace";
  DecodedTrace t = ExportAndDecode(o);
  const DecodedEvent* tagged = Find(t, true, "ALL_REDUCE tag 12", 1500);
  ASSERT_NE(tagged, nullptr);
  EXPECT_EQ(tagged->ints.at("user_tag"), 12);
  EXPECT_EQ(tagged->ints.at("initial_sync_ns"), 400);
  EXPECT_EQ(tagged->ints.at("final_sync_ns"), 0);
  EXPECT_EQ(tagged->ints.at("kernel_symmetric"), 1);
  const DecodedEvent* plain = Find(t, true, "ALL_REDUCE", 1300);  // rank 1's, untagged
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->ints.count("user_tag"), 0u);
  EXPECT_EQ(plain->ints.count("kernel_symmetric"), 0u);
}

TEST_F(GpuExportTest, FlowsFromTheHostEnqueueToTheDeviceSlice) {
  ExportOptions o;
  o.input = *dir_ + "/small.rsdb";
  o.output = *dir_ + "/flows.pftrace";
  DecodedTrace t = ExportAndDecode(o);
  // (host call or enqueue instant, device slice) pairs: the host side begins a flow that
  // the device slice ends, and no other event carries that id.
  struct Pair {
    bool host_instant;
    std::string host_name;
    int64_t host_ts;
    std::string device_name;
    int64_t device_ts;
  };
  const std::vector<Pair> pairs = {
      {false, "ALL_REDUCE", 1000, "ALL_REDUCE", 1500},
      {false, "ALL_REDUCE", 1100, "ALL_REDUCE", 1300},
      {false, "ALL_REDUCE", 4000, "ALL_REDUCE", 4100},  // rank 0's (rank 1's also starts 4000)
      {false, "RECV", 5000, "RECV", 5002},
      {true, "SEND enqueued", 5000, "SEND", 5100},  // no call row: from the enqueue instant
  };
  std::set<uint64_t> enqueue_ids;
  for (const Pair& p : pairs) {
    const DecodedEvent* dev = Find(t, true, p.device_name, p.device_ts);
    ASSERT_NE(dev, nullptr) << p.device_name << " " << p.device_ts;
    const DecodedEvent* host = nullptr;
    for (const DecodedEvent& e : t.events) {
      if (!OnDeviceTrack(t, e) && e.instant == p.host_instant && e.name == p.host_name &&
          e.ts == p.host_ts && ProcessOf(t, e) == ProcessOf(t, *dev)) {
        host = &e;
      }
    }
    ASSERT_NE(host, nullptr) << p.host_name << " " << p.host_ts;
    std::vector<uint64_t> common = Intersect(host->flows, dev->terminating_flows);
    ASSERT_EQ(common.size(), 1u) << p.host_name << " " << p.host_ts << " -> " << p.device_ts;
    enqueue_ids.insert(common[0]);
    EXPECT_TRUE(host->terminating_flows.empty());
  }
  EXPECT_EQ(enqueue_ids.size(), pairs.size());
  for (uint64_t id : enqueue_ids) {
    int uses = 0;
    for (const DecodedEvent& e : t.events) {
      uses += std::count(e.flows.begin(), e.flows.end(), id) +
              std::count(e.terminating_flows.begin(), e.terminating_flows.end(), id);
    }
    EXPECT_EQ(uses, 2) << id;
  }
  // Rank 1's call of seq 8 (never started on the GPU) begins a flow nothing ends: no arrow.
  for (const DecodedEvent& e : t.events) {
    if (e.name != "ALL_REDUCE" || e.ts != 4000 || ProcessOf(t, e) != "a / rank 1 (pid 11)") {
      continue;
    }
    ASSERT_EQ(e.flows.size(), 1u);
    for (const DecodedEvent& other : t.events) {
      EXPECT_EQ(
          std::count(other.terminating_flows.begin(), other.terminating_flows.end(), e.flows[0]),
          0);
    }
  }
}

// The flow of a collective goes through the device slices of ranks with gpu_ops (in the order
// their GPUs started it) and the host calls of ranks without: the last to arrive ends it.
TEST_F(GpuExportTest, CollectiveFlowOnDeviceTime) {
  ExportOptions o;
  o.input = *dir_ + "/small.rsdb";
  o.output = *dir_ + "/coll.pftrace";
  DecodedTrace t = ExportAndDecode(o);
  // Every flow: the events it passes through, "host|gpu PROCESS @ts [end]", in order.
  std::map<uint64_t, std::vector<std::string>> chains;
  std::map<uint64_t, std::set<std::string>> processes;
  for (const DecodedEvent& e : t.events) {
    const std::string where =
        (OnDeviceTrack(t, e) ? "gpu " : "host ") + ProcessOf(t, e) + " @" + std::to_string(e.ts);
    for (uint64_t id : e.flows) chains[id].push_back(where);
    for (uint64_t id : e.terminating_flows) chains[id].push_back(where + " end");
    for (uint64_t id : e.flows) processes[id].insert(ProcessOf(t, e));
    for (uint64_t id : e.terminating_flows) processes[id].insert(ProcessOf(t, e));
  }
  std::set<std::vector<std::string>> across_ranks;
  for (const auto& [id, chain] : chains) {
    if (processes[id].size() > 1) across_ranks.insert(chain);
  }
  // Host order was rank 0 (1000), rank 2 (1050), rank 1 (1100); on the GPUs rank 1 (1300)
  // came before rank 0 (1500). The host calls of ranks 0 and 1 are not in it.
  EXPECT_EQ(across_ranks,
            (std::set<std::vector<std::string>>{
                {"host b / rank 2 (pid 20) @1050", "gpu a / rank 1 (pid 11) @1300",
                 "gpu a / rank 0 (pid 10) @1500 end"},
                {"host b / rank 2 (pid 20) @4050", "gpu a / rank 0 (pid 10) @4100 end"},
            }));
}

TEST_F(GpuExportTest, WindowAndNodeFilterApplyToDeviceSlices) {
  ExportOptions o;
  o.input = *dir_ + "/small.rsdb";
  o.output = *dir_ + "/window.pftrace";
  // Operations belong to the window by their enqueue: 1010 and 1110 are in, 4005.. are not.
  // Rank 0's call (1000) is not, so its enqueue instant begins the flow to the device.
  o.from = TimePoint{false, 1005};
  o.to = TimePoint{false, 4002};
  DecodedTrace t = ExportAndDecode(o);
  std::vector<std::pair<int64_t, int64_t>> device;
  for (const DecodedEvent& e : t.events) {
    if (OnDeviceTrack(t, e)) device.push_back({e.ts, e.end});
  }
  std::sort(device.begin(), device.end());
  EXPECT_EQ(device, (std::vector<std::pair<int64_t, int64_t>>{{1300, 3000}, {1500, 3000}}));
  const DecodedEvent* enq = Find(t, false, "ALL_REDUCE enqueued", 1010);
  ASSERT_NE(enq, nullptr);
  const DecodedEvent* dev = Find(t, true, "ALL_REDUCE", 1500);
  ASSERT_NE(dev, nullptr);
  EXPECT_EQ(Intersect(enq->flows, dev->terminating_flows).size(), 1u);
  // seq 7 still links rank 2's call and both device slices.
  int collective_ends = 0;
  for (const DecodedEvent& e : t.events) {
    if (!OnDeviceTrack(t, e)) continue;
    collective_ends += static_cast<int>(e.terminating_flows.size()) - 1;  // less the enqueue
  }
  EXPECT_EQ(collective_ends, 1);

  o.from.reset();
  o.to.reset();
  o.nodes = {"b"};
  o.output = *dir_ + "/node_b.pftrace";
  DecodedTrace b = ExportAndDecode(o);
  for (const auto& [uuid, d] : b.tracks) EXPECT_FALSE(IsDeviceTrack(d.name())) << d.name();
  for (const DecodedEvent& e : b.events) {
    EXPECT_TRUE(e.flows.empty() && e.terminating_flows.empty()) << e.name;  // rank 2 alone
  }
}

// An input of an earlier recorder (no gpu_ops table) and one with an empty gpu_ops table give
// the same bytes, drawn as before gpu_ops existed: the collective's flow on the host calls.
TEST_F(GpuExportTest, WithoutGpuOpsTheTraceIsUnchanged) {
  for (const char* sub : {"/old", "/empty"}) ASSERT_EQ(mkdir((*dir_ + sub).c_str(), 0700), 0);
  const std::string old_db = *dir_ + "/old/calls.rsdb", empty_db = *dir_ + "/empty/calls.rsdb";
  ASSERT_TRUE(testing::WriteSmallGpuDb(old_db, false).ok());
  ASSERT_TRUE(testing::WriteSmallGpuDb(empty_db, true).ok());
  {
    auto db = Db::Open(empty_db, Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(db->Exec("DELETE FROM gpu_ops").ok());
  }
  {
    auto db = Db::Open(old_db, Db::Mode::kReadOnly);
    ASSERT_TRUE(db.ok());
    EXPECT_FALSE(*HasGpuOps(*db));
  }
  for (Format f : {Format::kPerfetto, Format::kChromeJson}) {
    ExportOptions o;
    o.format = f;
    o.input = old_db;
    o.output = *dir_ + "/old/out";
    ExportResult a = ExportOk(o);
    o.input = empty_db;
    o.output = *dir_ + "/empty/out";
    ExportOk(o);
    std::string x = testing::ReadFile(*dir_ + "/old/out"),
                y = testing::ReadFile(*dir_ + "/empty/out");
    EXPECT_GT(x.size(), 500u);
    EXPECT_TRUE(x == y) << "format " << static_cast<int>(f);
    EXPECT_EQ(a.stats.device_slices, 0);
    EXPECT_EQ(a.summary.rows, 7);
    EXPECT_EQ(a.stats.slices, 7);
  }
  ExportOptions o;
  o.input = old_db;
  o.output = *dir_ + "/old/trace.pftrace";
  DecodedTrace t = ExportAndDecode(o);
  for (const auto& [uuid, d] : t.tracks) EXPECT_FALSE(IsDeviceTrack(d.name())) << d.name();
  std::map<uint64_t, std::vector<int64_t>> chains;  // collective flow -> host call starts
  for (const DecodedEvent& e : t.events) {
    EXPECT_FALSE(e.instant);
    for (uint64_t id : e.flows) chains[id].push_back(e.ts);
    for (uint64_t id : e.terminating_flows) chains[id].push_back(-e.ts);
  }
  std::set<std::vector<int64_t>> have;
  for (const auto& [id, c] : chains) have.insert(c);
  EXPECT_EQ(have, (std::set<std::vector<int64_t>>{{1000, 1050, -1100}, {4000, 4000, -4050}}));
}

TEST_F(GpuExportTest, ChromeJsonShowsTheDeviceSlicesAndFlowsBetweenSlices) {
  ExportOptions o;
  o.input = *dir_ + "/small.rsdb";
  o.output = *dir_ + "/small.json";
  o.format = Format::kChromeJson;
  ExportResult r = ExportOk(o);
  const std::string j = testing::ReadFile(o.output);
  auto count = [&](const std::string& needle) {
    int64_t n = 0;
    for (size_t p = j.find(needle); p != std::string::npos; p = j.find(needle, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("{\"ph\":\"X\""), r.stats.slices);
  EXPECT_EQ(count("\"cat\":\"gpu\",\"args\""), 5 + 2);  // device slices, enqueue instants
  EXPECT_EQ(count("\"name\":\"thread_name\""), 5);      // 3 threads, 2 GPU tracks
  EXPECT_EQ(count("\"args\":{\"name\":\"a / rank 0 / GPU (NCCL kernels)\"}"), 1);
  EXPECT_EQ(count("\"args\":{\"name\":\"a / rank 1 / GPU (NCCL kernels)\"}"), 1);
  // Host -> device flows between two slices (4); not from the SEND's enqueue instant (the
  // format binds flow events to slices) nor from the call never started on the GPU.
  EXPECT_EQ(count("{\"ph\":\"s\",\"name\":\"enqueue\""), 4);
  EXPECT_EQ(count("{\"ph\":\"f\",\"name\":\"enqueue\""), 4);
  // Collective flows: seq 7 through three slices, seq 8 through two.
  EXPECT_EQ(count("{\"ph\":\"s\",\"name\":\"collective\""), 2);
  EXPECT_EQ(count("{\"ph\":\"t\",\"name\":\"collective\""), 1);
  EXPECT_EQ(count("{\"ph\":\"f\",\"name\":\"collective\""), 2);
}

// A synthetic cluster with gpu_ops made from its calls: every device slice, enqueue instant
// and flow against the db.
TEST_F(GpuExportTest, SyntheticClusterMatchesTheDb) {
  synth::ClusterSpec spec;
  spec.nodes = 3;
  spec.ranks_per_node = 2;
  spec.steps = 30;
  spec.fault = "hang";
  spec.hang_step = 22;
  spec.offset_ns = {0, 3'000'000, -2'000'000};
  ASSERT_EQ(mkdir((*dir_ + "/synth").c_str(), 0700), 0);
  const std::string db_path = *dir_ + "/synth.rsdb";
  ASSERT_TRUE(testing::WriteInputs(spec, *dir_ + "/synth", db_path).ok());
  testing::GpuOpsSpec gpu;
  gpu.no_plugin_rank = 5;
  gpu.unstarted_rank = 0;
  gpu.hostless_rank = 2;
  ASSERT_TRUE(testing::AddGpuOps(db_path, gpu).ok());
  ExportOptions o;
  o.input = db_path;
  o.output = *dir_ + "/synth.pftrace";
  ExportResult r;
  DecodedTrace t = ExportAndDecode(o, &r);
  o.output = *dir_ + "/synth2.pftrace";
  ExportOk(o);
  EXPECT_TRUE(testing::ReadFile(*dir_ + "/synth.pftrace") ==
              testing::ReadFile(*dir_ + "/synth2.pftrace"));

  auto opened = OpenRankscopeFile(db_path);
  ASSERT_TRUE(opened.ok());
  Db& db = opened->db();
  auto rows = [&](const std::string& sql) {
    std::multiset<std::tuple<int64_t, int64_t, int64_t, int64_t>> out;
    auto st = db.Prepare(sql);
    EXPECT_TRUE(st.ok()) << sql;
    while (st.ok() && st->Step().value())
      out.insert({st->Int(0), st->Int(1), st->Int(2), st->Int(3)});
    return out;
  };
  const std::string host_call =
      "EXISTS (SELECT 1 FROM nccl_events n WHERE n.node = g.node AND n.pid = g.pid AND"
      " n.comm_id_hash = g.comm_id_hash AND n.seq = g.seq AND n.op = g.op AND"
      " n.timestamp_ns <= g.timestamp_ns)";
  // Device slices: (rank, seq, start, end).
  auto want_device =
      rows("SELECT rank, seq, MAX(device_start_ns, timestamp_ns), COALESCE(device_end_ns, " +
           std::to_string(r.summary.last_ts) + ") FROM gpu_ops WHERE device_start_ns IS NOT NULL");
  // Enqueue instants: (rank, seq, ts, started).
  auto want_instants = rows(
      "SELECT rank, seq, timestamp_ns, device_start_ns IS NOT NULL FROM gpu_ops g"
      " WHERE device_start_ns IS NULL OR NOT " +
      host_call);
  decltype(want_device) have_device, have_instants;
  for (const DecodedEvent& e : t.events) {
    if (OnDeviceTrack(t, e)) {
      have_device.insert({e.ints.at("rank"), e.ints.at("seq"), e.ts, e.end});
      EXPECT_EQ(ProcessOf(t, e).find("rank " + std::to_string(e.ints.at("rank")) + " "),
                ProcessOf(t, e).find(" / ") + 3);
    }
    if (IsEnqueueInstant(e)) {
      have_instants.insert({e.ints.at("rank"), e.ints.at("seq"), e.ts, e.flows.size()});
    }
  }
  EXPECT_GT(want_device.size(), 100u);
  EXPECT_EQ(have_device, want_device);
  EXPECT_EQ(want_instants.size(), 6u);  // rank 2's 5 calls removed, rank 0's unstarted one
  EXPECT_EQ(have_instants, want_instants);
  EXPECT_EQ(r.stats.device_slices, static_cast<int64_t>(want_device.size()));

  // Every flow, by the events it passes through in time order.
  std::map<uint64_t, std::vector<const DecodedEvent*>> flows;
  for (const DecodedEvent& e : t.events) {
    for (uint64_t id : e.flows) flows[id].push_back(&e);
    for (uint64_t id : e.terminating_flows) flows[id].push_back(&e);
  }
  // Host -> device: one per operation that ran, from its call or its enqueue instant.
  int64_t enqueue = 0;
  std::map<std::pair<std::string, int64_t>, std::set<int64_t>> collectives;  // -> ranks
  for (const auto& [id, events] : flows) {
    const bool one_process = std::all_of(events.begin(), events.end(), [&](const DecodedEvent* e) {
      return ProcessOf(t, *e) == ProcessOf(t, *events[0]);
    });
    if (one_process) {
      if (events.size() == 1) {  // a call whose operation never ran or is not in the db
        EXPECT_FALSE(OnDeviceTrack(t, *events[0]));
        continue;
      }
      ASSERT_EQ(events.size(), 2u);
      EXPECT_FALSE(OnDeviceTrack(t, *events[0]));
      EXPECT_TRUE(OnDeviceTrack(t, *events[1]));
      EXPECT_EQ(events[0]->ints.at("seq"), events[1]->ints.at("seq"));
      EXPECT_EQ(events[0]->strings.at("op"), events[1]->strings.at("op"));
      EXPECT_LE(events[0]->ts, events[1]->ts);
      ++enqueue;
      continue;
    }
    // A collective: through the device slices of ranks with gpu_ops, host calls of rank 5,
    // ended by the last to arrive.
    std::set<int64_t> ranks;
    for (const DecodedEvent* e : events) {
      ranks.insert(e->ints.at("rank"));
      EXPECT_EQ(OnDeviceTrack(t, *e), e->ints.at("rank") != 5) << e->name << " " << e->ts;
      EXPECT_EQ(e->ints.at("seq"), events[0]->ints.at("seq"));
    }
    EXPECT_EQ(ranks.size(), events.size());
    EXPECT_TRUE(std::is_sorted(events.begin(), events.end(),
                               [](auto* a, auto* b) { return a->ts < b->ts; }));
    EXPECT_EQ(Intersect(events.back()->terminating_flows, {id}).size(), 1u);
    collectives[{events[0]->strings.at("comm_id_hex"), events[0]->ints.at("seq")}] = ranks;
  }
  EXPECT_EQ(enqueue, static_cast<int64_t>(want_device.size()));  // from a call or an instant
  auto want_coll = rows(
      "SELECT comm_id_hash, seq, rank, 0 FROM nccl_events WHERE seq IS NOT NULL AND rank = 5"
      " UNION ALL SELECT comm_id_hash, seq, rank, 0 FROM gpu_ops WHERE device_start_ns IS NOT"
      " NULL");
  std::map<std::pair<std::string, int64_t>, std::set<int64_t>> want;
  for (const auto& [comm, seq, rank, unused] : want_coll) {
    want[{rs::HashHex(static_cast<uint64_t>(comm)), seq}].insert(rank);
  }
  for (auto it = want.begin(); it != want.end();)
    it = it->second.size() < 2 ? want.erase(it) : ++it;
  EXPECT_EQ(collectives, want);
  EXPECT_GT(collectives.size(), 20u);
}

}  // namespace
}  // namespace rs::exporter
