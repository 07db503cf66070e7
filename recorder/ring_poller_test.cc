// RingPoller against a real BPF ring buffer (root): the benchmark's getppid() tracepoint
// program submits one record per call of this process. Checks that every record reaches its
// callback exactly once, in order, on the calling thread, in direct and drained mode and
// across the switch between them, that Consume() is a flush, and that back-pressure turns
// into counted drops (records + drops = calls), never silent loss.
#include "recorder/ring_poller.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "bpf/abi/common.h"
#include "bpf/abi/sched.h"
#include "recorder/bench_ringbuf.skel.h"
#include "recorder/preflight.h"
#include "tests/support/kernel_test.h"

namespace rs::rec {
namespace {

struct Collected {
  std::vector<uint64_t> ts;
  std::thread::id thread;
  bool wrong_thread = false;
  int slow_us = 0;  // per 1000 records: makes the writer fall behind on purpose
};

int Collect(void* ctx, void* data, size_t size) {
  auto* c = static_cast<Collected*>(ctx);
  if (std::this_thread::get_id() != c->thread) c->wrong_thread = true;
  rs_sched_event e;
  if (size < sizeof(e)) return 0;
  std::memcpy(&e, data, sizeof(e));
  c->ts.push_back(e.ts_ns);
  if (c->slow_us > 0 && c->ts.size() % 1000 == 0) usleep(static_cast<useconds_t>(c->slow_us));
  return 0;
}

void Calls(int n) {
  for (int i = 0; i < n; ++i) syscall(SYS_getppid);
}

bool NonDecreasing(const std::vector<uint64_t>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i] < v[i - 1]) return false;
  }
  return true;
}

class RingPollerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) return;
    auto tracefs = EnsureTracefs();  // the benchmark program is a classic tracepoint
    ASSERT_TRUE(tracefs.ok()) << tracefs.error().message();
    skel_ = bench_ringbuf_bpf__open();
    ASSERT_NE(skel_, nullptr);
    skel_->rodata->bench_tgid = static_cast<uint32_t>(getpid());
    ASSERT_EQ(bench_ringbuf_bpf__load(skel_), 0);
    ASSERT_EQ(bench_ringbuf_bpf__attach(skel_), 0);
    collected_.thread = std::this_thread::get_id();
  }
  void TearDown() override {
    poller_.reset();  // before the maps it polls
    if (skel_) bench_ringbuf_bpf__destroy(skel_);
  }
  RingPoller& poller() {
    if (!poller_) {
      poller_ = std::make_unique<RingPoller>();
      EXPECT_TRUE(poller_->Add(bpf_map__fd(skel_->maps.bench_rb), &Collect, &collected_).ok());
    }
    return *poller_;
  }
  uint64_t Drops() {
    int ncpu = libbpf_num_possible_cpus();
    std::vector<uint64_t> v(static_cast<size_t>(ncpu));
    uint32_t key = RS_STAT_DROPS;
    if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.stats), &key, v.data()) != 0) return ~0ull;
    uint64_t n = 0;
    for (uint64_t x : v) n += x;
    return n;
  }

  bench_ringbuf_bpf* skel_ = nullptr;
  std::unique_ptr<RingPoller> poller_;
  Collected collected_;
};

TEST_F(RingPollerTest, DirectModeConsumeReadsEverythingOnThisThread) {
  REQUIRE_ROOT_OR_SKIP();
  Calls(1000);
  poller().Consume();
  EXPECT_EQ(collected_.ts.size(), 1000u);
  EXPECT_FALSE(collected_.wrong_thread);
  EXPECT_TRUE(NonDecreasing(collected_.ts));
}

TEST_F(RingPollerTest, DrainedConsumeIsAFlushAndCallbacksStayOnTheCallingThread) {
  REQUIRE_ROOT_OR_SKIP();
  ASSERT_TRUE(poller().StartDrainThread().ok());
  size_t expected = 0;
  for (int round = 1; round <= 20; ++round) {
    Calls(round * 37);
    expected += static_cast<size_t>(round * 37);
    poller().Consume();  // everything submitted before the call, no more waiting needed
    ASSERT_EQ(collected_.ts.size(), expected) << "round " << round;
  }
  EXPECT_FALSE(collected_.wrong_thread);
  EXPECT_TRUE(NonDecreasing(collected_.ts));
  EXPECT_EQ(Drops(), 0u);
}

TEST_F(RingPollerTest, WaitAndDispatchDeliversDrainedBatchesInOrderAcrossModeSwitches) {
  REQUIRE_ROOT_OR_SKIP();
  Calls(500);  // before the drain thread: read by it
  ASSERT_TRUE(poller().StartDrainThread().ok());
  std::thread producer([] { Calls(150000); });  // ~10 MB: fits the 16 MiB ring, so 0 drops
  for (int i = 0; i < 40 && collected_.ts.size() < 150500; ++i) poller().WaitAndDispatch(50);
  producer.join();
  poller().StopDrainThread();
  Calls(700);  // after: direct mode again
  poller().Consume();
  EXPECT_EQ(collected_.ts.size(), 500u + 150000u + 700u);
  EXPECT_EQ(Drops(), 0u);
  EXPECT_TRUE(NonDecreasing(collected_.ts));
  EXPECT_FALSE(collected_.wrong_thread);
  EXPECT_GT(poller().batches(), 0u);
}

TEST_F(RingPollerTest, BackPressureBecomesCountedDropsNeverSilentLoss) {
  REQUIRE_ROOT_OR_SKIP();
  collected_.slow_us = 2000;  // 2 ms per 1000 rows: at most ~0.5M rows/s, far behind
  const size_t limit = 256 << 10;
  ASSERT_TRUE(poller().StartDrainThread(limit).ok());
  const int calls = 600000;  // ~43 MB of records: more than the ring and the queue hold
  std::thread producer([] { Calls(calls); });
  producer.join();
  for (int i = 0; i < 200; ++i) poller().WaitAndDispatch(10);
  poller().StopDrainThread();
  poller().Consume();
  const uint64_t drops = Drops();
  EXPECT_GT(drops, 0u) << "the producer should have outrun a 256 KiB queue";
  EXPECT_EQ(collected_.ts.size() + drops, static_cast<uint64_t>(calls));
  // Held in memory at most: the limit, plus one batch, plus what the 16 MiB ring held at stop.
  EXPECT_LE(poller().peak_queued_bytes(), limit + (2u << 20) + (16u << 20));
  EXPECT_TRUE(NonDecreasing(collected_.ts));
}

// Records of an urgent ring reach the event-loop thread as soon as the drain thread reads
// them; others wait for a full batch, a flush (Consume) or the publish period, here an hour.
TEST_F(RingPollerTest, UrgentRecordsDoNotWaitForThePublishPeriod) {
  REQUIRE_ROOT_OR_SKIP();
  constexpr int64_t kHour = 3'600'000'000'000;
  for (auto delivery : {RingPoller::Delivery::kBatched, RingPoller::Delivery::kUrgent}) {
    const bool urgent = delivery == RingPoller::Delivery::kUrgent;
    SCOPED_TRACE(urgent ? "urgent" : "batched");
    collected_.ts.clear();
    poller_ = std::make_unique<RingPoller>(kHour);
    ASSERT_TRUE(
        poller_->Add(bpf_map__fd(skel_->maps.bench_rb), &Collect, &collected_, delivery).ok());
    ASSERT_TRUE(poller_->StartDrainThread().ok());
    Calls(1);
    // The drain thread reads the ring every 10 ms; give it 100 times that.
    for (int i = 0; i < 10 && collected_.ts.empty(); ++i) poller_->WaitAndDispatch(100);
    EXPECT_EQ(collected_.ts.size(), urgent ? 1u : 0u);
    poller_->Consume();  // a flush delivers what is left either way
    EXPECT_EQ(collected_.ts.size(), 1u);
    poller_.reset();
  }
}

}  // namespace
}  // namespace rs::rec
