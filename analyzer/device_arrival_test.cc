// The report on GPU jobs (gpu_job_fixture.h): lateness from device arrival, the three shapes a
// user must tell apart (host-bound, device-bound, network), and what is said where the device
// was not seen (no plugin rows, a recording without the gpu_ops table, blocking calls).
#include <gtest/gtest.h>

#include <algorithm>

#include "analyzer/call_semantics.h"
#include "analyzer/gpu_job_fixture.h"
#include "analyzer/report.h"
#include "analyzer/report_expect.h"
#include "analyzer/report_render.h"
#include "analyzer/report_test_util.h"
#include "rscore/bundle.h"
#include "rscore/schema.h"
#include "tests/support/synth_bundle.h"

namespace rs::analyzer {
namespace {

using testing::GpuJob;
using testing::ScratchDir;

Report JobReport(const GpuJob& job) {
  ScratchDir dir;
  auto path = testing::WriteGpuJob(job, dir.path());
  EXPECT_TRUE(path.ok()) << path.error().message();
  return testing::ReportOf(*path);
}

const ArrivalStats& RankStats(const Report& r, int64_t rank) {
  auto it = std::find_if(r.per_rank.begin(), r.per_rank.end(),
                         [&](const ArrivalStats& s) { return s.rank == rank; });
  EXPECT_NE(it, r.per_rank.end());
  return *it;
}

bool HasNote(const Report& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

bool Confident(const Straggler& s) { return AtLeastMedium(s.confidence); }

TEST(DeviceArrivalTest, HostBoundRankEnqueuesLateAndItsCpuIsTaken) {
  GpuJob job;
  job.host_late_rank = 3;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.timing.arrival_basis, "device_start");
  EXPECT_EQ(r.timing.call_semantics, "enqueue");
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node1");
  EXPECT_EQ(top.rank, std::optional<int64_t>(3));
  EXPECT_EQ(top.arrival_basis, "device_start");
  EXPECT_EQ(top.shape, "host_bound");
  EXPECT_EQ(top.cause, "cpu_contention");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_NE(top.causes.front().remediation.find("burner"), std::string::npos);
  EXPECT_NE(top.summary.find("host-bound"), std::string::npos);
  // Its host enqueue lateness accounts for its device lateness.
  const ArrivalStats& me = RankStats(r, 3);
  EXPECT_GT(me.median_host_lateness_ns, me.median_lateness_ns / 2);
  EXPECT_EQ(me.device_collectives, me.collectives);
}

TEST(DeviceArrivalTest, DeviceBoundRankIsLateOnItsDeviceOnly) {
  GpuJob job;
  job.device_late_rank = 4;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node2");
  EXPECT_EQ(top.rank, std::optional<int64_t>(4));
  EXPECT_EQ(top.shape, "device_bound");
  EXPECT_EQ(top.cause, "compute");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_EQ(top.arrival_basis, "device_start");
  EXPECT_NE(top.causes.front().remediation.find("GPU"), std::string::npos);
  EXPECT_NE(top.summary.find("device-bound"), std::string::npos);
  // Its host issues on time: host entry shows nothing.
  const ArrivalStats& me = RankStats(r, 4);
  EXPECT_GT(me.median_lateness_ns, job.delay_ns / 4);
  EXPECT_LT(me.median_host_lateness_ns, job.delay_ns / 20);
  // The same job seen from the host only: nobody is named with confidence (the slow device is
  // invisible there), and the report says why.
  job.gpu_ops = false;
  Report host = JobReport(job);
  SCOPED_TRACE(RenderText(host));
  EXPECT_EQ(host.timing.arrival_basis, "host_entry");
  for (const Straggler& s : host.stragglers) {
    EXPECT_FALSE(s.rank == std::optional<int64_t>(4) && Confident(s)) << s.summary;
  }
  EXPECT_TRUE(HasNote(host, "GPU-side arrival was not seen"));
  // Blind to the device, the headline says so first instead of clearing the job.
  EXPECT_EQ(host.verdict_kind, "undetermined");
  EXPECT_EQ(host.verdict.rfind("UNDETERMINED (GPU side not seen)", 0), 0u) << host.verdict;
  EXPECT_NE(host.verdict.find("NCCL_PROFILER_PLUGIN"), std::string::npos);
  EXPECT_NE(RenderHtml(host).find("class='verdict neutral'"), std::string::npos);
  // With the plugin, the same healthy shape is cleared in green.
  GpuJob clean;
  Report seen = JobReport(clean);
  EXPECT_EQ(seen.verdict_kind, "no_straggler") << seen.verdict;
  EXPECT_NE(RenderHtml(seen).find("class='verdict ok'"), std::string::npos);
}

TEST(DeviceArrivalTest, NetworkSlowsCollectivesAfterEveryDeviceArrived) {
  GpuJob job;
  job.lossy_node = 2;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node2");
  EXPECT_FALSE(top.rank.has_value());
  EXPECT_EQ(top.shape, "network");
  EXPECT_EQ(top.cause, "network");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_NE(top.basis.find("device"), std::string::npos) << top.basis;
  // The collectives took three times the usual for their size after the last arrival.
  double stretch = -1;
  for (const Evidence& e : top.evidence) {
    for (const auto& [k, v] : e.values) {
      if (k == "median_stretch_with_retransmits") stretch = v;
    }
  }
  EXPECT_GT(stretch, 2.5);
  EXPECT_LT(stretch, 3.5);
  // Nobody arrived late.
  for (const Straggler& s : r.stragglers) {
    if (s.shape == "host_bound" || s.shape == "device_bound") {
      EXPECT_FALSE(Confident(s)) << s.summary;
    }
  }
}

// Converted device times are never early and at most clock_error_ns late: a rank 8 ms late
// behind a 6 ms bound is late by at least 2 ms whatever the others' bounds.
TEST(DeviceArrivalTest, ConversionBoundCountsOnTheLateSideOnly) {
  GpuJob job;
  job.host_late_rank = 3;
  job.clock_error_ns = 6'000'000;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(3));
  EXPECT_TRUE(top.ordering_determined);
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  // Cross-node: both alignment bounds and its own conversion bound, not the others'.
  EXPECT_GE(top.clock_bound_ns, 2 * job.error_bound_ns + job.clock_error_ns * 9 / 10);
  EXPECT_LE(top.clock_bound_ns, 2 * job.error_bound_ns + job.clock_error_ns);
}

// The plugin's rows start with its recorder: earlier collectives have host entries of enqueues
// only, which are no arrival; they are left out, not mixed in.
TEST(DeviceArrivalTest, CollectivesBeforeThePluginRecordedAreLeftOut) {
  GpuJob job;
  job.device_late_rank = 4;
  job.device_from_step = 2;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.timing.excluded_collectives, 2 * job.buckets);
  EXPECT_EQ(r.timing.arrival_basis, "device_start");
  EXPECT_TRUE(HasNote(r, "left out of lateness"));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(4));
  EXPECT_EQ(top.arrival_basis, "device_start");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_EQ(RankStats(r, 4).collectives, r.collectives - 2 * job.buckets);
}

// One rank per node (no node-mates to compare with) and alignment bounds wider than the
// lateness: the device starts cannot order the ranks, the device waits (each on one device
// clock) can, at medium confidence.
TEST(DeviceArrivalTest, WideClockBoundsLeaveTheOrderToTheDeviceWaits) {
  GpuJob job;
  job.nodes = 4;
  job.ranks_per_node = 1;
  job.device_late_rank = 2;
  job.error_bound_ns = 30'000'000;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(2));
  EXPECT_EQ(top.arrival_basis, "device_waits");
  EXPECT_TRUE(top.ordering_determined);
  EXPECT_EQ(top.confidence, Confidence::kMedium);
  EXPECT_EQ(top.shape, "device_bound");
  EXPECT_EQ(top.cause, "compute");
  EXPECT_TRUE(std::any_of(top.evidence.begin(), top.evidence.end(),
                          [](const Evidence& e) { return e.kind == "waits"; }));
  EXPECT_GT(RankStats(r, 2).median_wait_lateness_ns, job.delay_ns / 4);
  // With tight bounds the device starts decide, at high confidence.
  job.error_bound_ns = 50'000;
  Report tight = JobReport(job);
  ASSERT_FALSE(tight.stragglers.empty());
  EXPECT_EQ(tight.stragglers.front().arrival_basis, "device_start");
  EXPECT_EQ(tight.stragglers.front().confidence, Confidence::kHigh);
}

// NCCL 2.31's symmetric kernels time their wait at the opening barrier: four GPUs of one node
// whose device conversion bounds are too wide to order them; the order is a measurement (no
// model of how collectives end), so it may be high.
TEST(DeviceArrivalTest, SymmetricKernelsBarrierWaitsOrderTheRanks) {
  GpuJob job;
  job.nodes = 1;
  job.ranks_per_node = 4;
  job.device_late_rank = 2;
  job.clock_error_ns = 30'000'000;
  job.symmetric_kernels = true;
  job.tag_steps = true;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(2));
  EXPECT_EQ(top.arrival_basis, "device_waits");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  auto w = std::find_if(top.evidence.begin(), top.evidence.end(),
                        [](const Evidence& e) { return e.kind == "waits"; });
  ASSERT_NE(w, top.evidence.end());
  EXPECT_NE(w->summary.find("opening barrier"), std::string::npos) << w->summary;
  EXPECT_NE(top.basis.find("opening barrier"), std::string::npos) << top.basis;
  EXPECT_EQ(r.timing.barrier_collectives, r.timing.device_collectives);
  EXPECT_GT(r.timing.barrier_collectives, 0);
  EXPECT_TRUE(HasNote(r, "symmetric-memory kernels on every rank"));
  EXPECT_TRUE(HasNote(r,
                      "GPU operations carry a user tag (the caller's "
                      "ncclCollConfig_t.userProfilerTag, profiler API v7): 30 distinct, from 1 "
                      "to 30"));
  // The barrier measures the delay itself, not the model's lower bound: the slow device is
  // delay / 2 late at the first bucket's collective and delay late at the second's.
  EXPECT_GT(RankStats(r, 2).median_wait_lateness_ns, job.delay_ns / 2 - 100'000);
  // Across nodes (one rank on each of four) the kernels' barriers may be different ones (one per
  // NVLink domain): the waits are not read on them, and the order is the model's, medium.
  GpuJob across = job;
  across.nodes = 4;
  across.ranks_per_node = 1;
  across.clock_error_ns = 2'000;
  across.error_bound_ns = 30'000'000;
  Report spread = JobReport(across);
  SCOPED_TRACE(RenderText(spread));
  EXPECT_EQ(spread.timing.barrier_collectives, 0);
  ASSERT_FALSE(spread.stragglers.empty());
  EXPECT_EQ(spread.stragglers.front().rank, std::optional<int64_t>(2));
  EXPECT_EQ(spread.stragglers.front().confidence, Confidence::kMedium);
  // No fault: nobody is singled out on the barrier waits.
  job.device_late_rank = -1;
  Report clean = JobReport(job);
  SCOPED_TRACE(RenderText(clean));
  EXPECT_TRUE(std::none_of(clean.stragglers.begin(), clean.stragglers.end(), Confident));
}

// A node whose alignment is 10 ms off (inside its 15 ms bound) looks late on device starts;
// the slow device is the one whose waits are shortest.
TEST(DeviceArrivalTest, AMisalignedNodeDoesNotHideTheSlowDevice) {
  GpuJob job;
  job.nodes = 4;
  job.ranks_per_node = 1;
  job.device_late_rank = 0;
  job.skewed_node = 1;
  job.skew_ns = 10'000'000;
  job.error_bound_ns = 15'000'000;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_GT(RankStats(r, 1).median_lateness_ns, RankStats(r, 0).median_lateness_ns);
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(0));
  EXPECT_EQ(top.arrival_basis, "device_waits");
  EXPECT_EQ(top.cause, "compute");
  for (const Straggler& s : r.stragglers) {
    EXPECT_FALSE(s.node == "node1" && Confident(s)) << s.summary;
  }
}

// Device times without a conversion bound still order the ranks, but nothing resting on them
// is high confidence.
TEST(DeviceArrivalTest, UnboundedDeviceTimesAreAtMostMedium) {
  GpuJob job;
  job.device_late_rank = 4;
  job.clock_error_ns = -1;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_TRUE(HasNote(r, "no device-to-host conversion bound"));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(4));
  EXPECT_EQ(top.arrival_basis, "device_start");
  EXPECT_EQ(top.confidence, Confidence::kMedium);
}

// The recorder leaves device times that ran backwards NULL and says so in its gpu source's
// note (gpu_probe.cc); the report passes that on.
TEST(DeviceArrivalTest, DeviceTimesThatRanBackwardsAreSaidToBeLeftOut) {
  synth::ClusterSpec spec;
  spec.collectives = "async";
  const Report r = testing::EditedReport(
      spec,
      "INSERT INTO sources(node, source, method, events, drops, note) VALUES ('node1', 'gpu', "
      "'plugin', 10, 0, '3 operation(s) whose device times ran backwards: those times are NULL "
      "in gpu_ops (metadata gpu_device_times_backwards)')",
      50'000);
  EXPECT_TRUE(HasNote(r,
                      "node node1: 3 operation(s) whose device times ran backwards: those "
                      "times are NULL in gpu_ops (metadata gpu_device_times_backwards); they "
                      "are left out of device arrival and duration"));
}

TEST(DeviceArrivalTest, NoFaultNoStraggler) {
  for (uint64_t seed : {1, 2, 3}) {
    GpuJob job;
    job.seed = seed;
    Report r = JobReport(job);
    SCOPED_TRACE(RenderText(r));
    for (const Straggler& s : r.stragglers) EXPECT_FALSE(Confident(s)) << s.summary;
    EXPECT_FALSE(r.hang.detected);
    EXPECT_EQ(r.verdict.rfind("NO STRAGGLER", 0), 0u) << r.verdict;
    EXPECT_EQ(r.timing.device_collectives, r.collectives);
  }
}

TEST(DeviceArrivalTest, EnqueuesWithoutDeviceTimesAreNeverHighConfidence) {
  GpuJob job;
  job.host_late_rank = 3;
  job.gpu_ops = false;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.timing.call_semantics, "enqueue");
  EXPECT_EQ(r.timing.arrival_basis, "host_entry");
  EXPECT_TRUE(r.timing.gpu_ops_table);
  EXPECT_TRUE(HasNote(r, "GPU-side arrival was not seen"));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  // Late enqueues are still seen (and their host causes), but at most with medium confidence.
  EXPECT_EQ(top.rank, std::optional<int64_t>(3));
  EXPECT_EQ(top.shape, "device_unseen");
  EXPECT_EQ(top.arrival_basis, "host_entry");
  EXPECT_EQ(top.confidence, Confidence::kMedium);
  EXPECT_NE(top.basis.find("GPU-side arrival was not seen"), std::string::npos);
  for (const Straggler& s : r.stragglers) EXPECT_NE(s.confidence, Confidence::kHigh);
}

TEST(DeviceArrivalTest, OneRankPerNodeEnqueuesAreToldFromCrossNodeExits) {
  GpuJob job;
  job.nodes = 4;
  job.ranks_per_node = 1;
  job.gpu_ops = false;
  Report r = JobReport(job);
  EXPECT_EQ(r.timing.call_semantics, "enqueue") << r.timing.semantics_evidence;
  EXPECT_NE(r.timing.semantics_evidence.find("returned before another rank's call entered"),
            std::string::npos)
      << r.timing.semantics_evidence;
}

TEST(DeviceArrivalTest, CudaLaunchBlockingKeepsAGpuProcessesCallsBlocking) {
  // Nothing in the collectives decides (none matched): a process with CUDA calls is taken to
  // enqueue, unless it ran with CUDA_LAUNCH_BLOCKING=1 (rs::EnqueuingProcesses).
  for (const char* blocking : {"NULL", "1"}) {
    SCOPED_TRACE(blocking);
    auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
    ASSERT_TRUE(db.ok()) << db.error().message();
    ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kMerged).ok());
    ASSERT_TRUE(
        db->Exec("INSERT INTO processes(node, pid, cuda_launch_blocking) VALUES ('n0', 7, " +
                 std::string(blocking) +
                 ");"
                 "INSERT INTO nccl_events(id, node, timestamp_ns, duration_ns, pid, tid, op,"
                 " stream) VALUES (1, 'n0', 100, 5, 7, 7, 'ALL_REDUCE', 4096);"
                 "INSERT INTO cuda_events(id, node, timestamp_ns, duration_ns, pid, tid, api,"
                 " library) VALUES (2, 'n0', 90, 5, 7, 7, 'cudaLaunchKernel', 'cudart');")
            .ok());
    auto s = DetectCallSemantics(*db, CollectiveData{}, {});
    ASSERT_TRUE(s.ok()) << s.error().message();
    if (std::string(blocking) == "1") {
      EXPECT_NE(s->kind, "enqueue") << s->evidence;
      EXPECT_TRUE(s->modes.gpu_processes.empty());
    } else {
      EXPECT_EQ(s->kind, "enqueue") << s->evidence;
      EXPECT_EQ(s->modes.gpu_processes.size(), 1u);
    }
  }
}

// The recorder started after the job created its communicator: no NCCL call carries a
// communicator id, but the plugin's rows carry NCCL's own commHash and seqNumber (per op), the
// same on every rank: the slow device is still found on device starts.
// Writes `job` and forgets every communicator's creation, as a recorder started after it:
// the calls lose their communicator id, the plugin's rows keep NCCL's own names.
Report ReportWithoutCommIds(const GpuJob& job) {
  ScratchDir dir;
  auto path = testing::WriteGpuJob(job, dir.path());
  EXPECT_TRUE(path.ok()) << path.error().message();
  {
    auto db = rs::Db::Open(*path, rs::Db::Mode::kReadWrite);
    EXPECT_TRUE(db.ok());
    auto r = db->Exec(
        "UPDATE gpu_ops SET nccl_comm_hash = comm_id_hash + 1, nccl_seq = (SELECT COUNT(*)"
        " FROM gpu_ops o WHERE o.node = gpu_ops.node AND o.pid = gpu_ops.pid"
        " AND o.comm_id_hash = gpu_ops.comm_id_hash AND o.op = gpu_ops.op AND o.seq < gpu_ops.seq);"
        "UPDATE gpu_ops SET comm_id_hash = NULL, seq = NULL;"
        "UPDATE nccl_events SET comm_id_hash = NULL, seq = NULL WHERE op NOT LIKE 'COMM%';"
        "DELETE FROM call_modes;");
    EXPECT_TRUE(r.ok()) << r.error().message();
  }
  return testing::ReportOf(*path);
}

TEST(DeviceArrivalTest, CommunicatorsCreatedBeforeRecordingAreComparedByNcclsNames) {
  GpuJob job;
  job.device_late_rank = 4;
  Report r = ReportWithoutCommIds(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_GT(r.unidentified_calls, 0);
  EXPECT_TRUE(HasNote(r, "compared by NCCL's own names"));
  EXPECT_EQ(r.timing.arrival_basis, "device_start");
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().rank, std::optional<int64_t>(4));
  EXPECT_TRUE(Confident(r.stragglers.front()));
}

TEST(DeviceArrivalTest, AHangOfACommunicatorCreatedBeforeRecordingIsSeenOnTheDevices) {
  GpuJob job;
  job.hang_rank = 2;
  Report r = ReportWithoutCommIds(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_TRUE(r.hang.detected) << r.hang.summary;
  EXPECT_EQ(r.hang.culprit_ranks, std::vector<int64_t>{2});
}

TEST(DeviceArrivalTest, RecordingWithoutTheGpuOpsTableStillReports) {
  GpuJob job;
  job.host_late_rank = 3;
  job.gpu_ops_table = false;
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_FALSE(r.timing.gpu_ops_table);
  EXPECT_EQ(r.timing.device_ops, 0);
  EXPECT_TRUE(HasNote(r, "no gpu_ops table"));
  ASSERT_FALSE(r.stragglers.empty());
  EXPECT_EQ(r.stragglers.front().rank, std::optional<int64_t>(3));
  EXPECT_NE(r.stragglers.front().confidence, Confidence::kHigh);
  for (const NodeClock& c : r.clock) EXPECT_EQ(c.evidence, "");
  for (ReportFormat f :
       {ReportFormat::kText, ReportFormat::kJson, ReportFormat::kMarkdown, ReportFormat::kHtml}) {
    EXPECT_FALSE(Render(r, f).empty());
  }
}

TEST(DeviceArrivalTest, BlockingCallsKeepHostEntryLateness) {
  ScratchDir dir;
  synth::ClusterSpec spec;
  spec.seed = testing::TestSeed();
  spec.fault = "slow";
  spec.fault_node = 2;
  spec.cuda_calls = true;  // CUDA calls and NCCL streams, but the calls block
  std::cout << "seed " << spec.seed << "\n";
  auto path = testing::WriteMergedCluster(spec, dir.path(), 50'000);
  ASSERT_TRUE(path.ok()) << path.error().message();
  Report r = testing::ReportOf(*path);
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.timing.call_semantics, "blocking") << r.timing.semantics_evidence;
  EXPECT_EQ(r.timing.arrival_basis, "host_entry");
  EXPECT_FALSE(HasNote(r, "GPU-side arrival was not seen"));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.node, "node2");
  EXPECT_EQ(top.shape, "host_entry");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
}

// Blocking calls with the plugin loaded (the test bed's sync mode): the calls' entries are the
// arrivals, as without the plugin; the device times do not change the verdict.
TEST(DeviceArrivalTest, BlockingCallsWithDeviceTimesKeepHostEntries) {
  GpuJob job;
  job.blocking = true;
  job.device_late_rank = 4;
  job.clock_error_ns = 20'000'000;  // as loose as the test bed's
  Report r = JobReport(job);
  SCOPED_TRACE(RenderText(r));
  EXPECT_EQ(r.timing.call_semantics, "blocking") << r.timing.semantics_evidence;
  EXPECT_EQ(r.timing.arrival_basis, "host_entry");
  EXPECT_GT(r.timing.device_ops, 0);
  EXPECT_TRUE(HasNote(r, "block until their collective is done"));
  EXPECT_FALSE(HasNote(r, "GPU-side arrival was not seen"));
  ASSERT_FALSE(r.stragglers.empty());
  const Straggler& top = r.stragglers.front();
  EXPECT_EQ(top.rank, std::optional<int64_t>(4));
  EXPECT_EQ(top.shape, "host_entry");
  EXPECT_EQ(top.arrival_basis, "host_entry");
  EXPECT_EQ(top.confidence, Confidence::kHigh);
  EXPECT_EQ(top.cause, "compute");
}

TEST(DeviceArrivalTest, JsonCarriesShapeBasisAndTiming) {
  GpuJob job;
  job.device_late_rank = 4;
  std::string json = RenderJson(JobReport(job));
  for (const char* key :
       {"\"shape\":\"device_bound\"", "\"arrival_basis\":\"device_start\"",
        "\"timing\":", "\"call_semantics\":\"enqueue\"",
        "\"median_host_lateness_ns\":", "\"evidence\":\"device 40, comm_init 1\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
}

}  // namespace
}  // namespace rs::analyzer
