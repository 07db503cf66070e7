// GpuRingView on region images in memory, each exactly as large as its region (so that a read
// past its end is a heap overflow under the sanitizers): a hostile region's fields changed
// between reads, counts and indices out of range, counters that go back.
#include "recorder/gpu_ring_view.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace rs::rec {
namespace {

class Image {
 public:
  Image(uint32_t slots, uint32_t records) : records_(records) {
    words_.resize(RS_GPU_REGION_BYTES(slots, records) / 8);
    h = reinterpret_cast<rs_gpu_ring_header*>(words_.data());
    h->magic = RS_GPU_RING_MAGIC;
    h->version = RS_GPU_RING_VERSION;
    h->header_bytes = RS_GPU_HEADER_BYTES;
    h->record_bytes = sizeof(rs_gpu_op);
    h->slot_count = slots;
    h->ring_records = records;
    h->pid = 77;
    auto* ops =
        reinterpret_cast<rs_gpu_op*>(reinterpret_cast<char*>(words_.data()) + RS_GPU_HEADER_BYTES);
    slot = ops;
    ring = ops + slots;
  }
  void* base() { return words_.data(); }
  size_t size() const { return words_.size() * 8; }
  // The writer's half: record `seq` at the head.
  void Write(uint64_t seq) {
    const uint64_t i = h->head++;
    rs_gpu_op& r = ring[i % records_];
    r = rs_gpu_op{};
    r.seq = seq;
    r.stamp = i + 1;
  }

  rs_gpu_ring_header* h;
  rs_gpu_op* slot;
  rs_gpu_op* ring;

 private:
  uint32_t records_;
  std::vector<uint64_t> words_;
};

GpuRingView MustAttach(Image& image) {
  auto v = GpuRingView::Attach(image.base(), image.size());
  EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message());
  return v.ok() ? std::move(v).value() : GpuRingView();
}

std::string AttachError(Image& image, size_t size) {
  auto v = GpuRingView::Attach(image.base(), size);
  EXPECT_FALSE(v.ok());
  return v.ok() ? "" : v.error().message();
}

TEST(GpuRingView, RefusesCountsThatDoNotFitWhatWasMappedOrThisRelease) {
  Image image(4, 8);
  EXPECT_NE(AttachError(image, image.size() - 1).find("does not fit its"), std::string::npos);
  EXPECT_NE(AttachError(image, 100).find("shorter than its header"), std::string::npos);
  image.h->ring_records = UINT32_MAX;
  EXPECT_NE(AttachError(image, image.size()).find("records does not fit"), std::string::npos);
  image.h->ring_records = 8;
  image.h->slot_count = RS_GPU_SLOT_COUNT + 1;  // more than any plugin of this release makes
  const std::string e = AttachError(image, image.size());
  EXPECT_NE(e.find("at most " + std::to_string(RS_GPU_SLOT_COUNT) + " slots"), std::string::npos)
      << e;
  image.h->slot_count = 4;
  image.h->head = kGpuRegionMaxCount + 1;
  EXPECT_NE(AttachError(image, image.size()).find("its counter head went from 0 to"),
            std::string::npos);
  image.h->head = 0;
  image.h->ops = UINT64_MAX;
  EXPECT_NE(AttachError(image, image.size()).find("its counter ops"), std::string::npos);
  image.h->ops = 0;
  EXPECT_TRUE(GpuRingView::Attach(image.base(), image.size()).ok());
}

// The segfault: ring_records raised after the reader sized its reads.
TEST(GpuRingView, ARecordCountChangedAfterAttachIsCorruptionNotAnIndex) {
  Image image(4, 8);
  GpuRingView view = MustAttach(image);
  image.Write(1);
  EXPECT_EQ(view.Read().size(), 1u);
  image.h->ring_records = UINT32_MAX;
  image.h->head = 1'000'000;  // records "written" far past the ring the reader mapped
  EXPECT_TRUE(view.Read().empty());
  EXPECT_TRUE(view.corrupt());
  EXPECT_NE(view.corruption().find("its header changed"), std::string::npos) << view.corruption();
  EXPECT_TRUE(view.InFlight().empty());
  image.h->ring_records = 8;  // put back: still dropped, a corrupt region stays corrupt
  EXPECT_TRUE(view.Read().empty());
  EXPECT_EQ(view.ring_records(), 8u);
}

// The segfault at stop: slot_count raised, then the slots read at the end.
TEST(GpuRingView, ASlotCountChangedBetweenReadsReadsNoSlot) {
  Image image(4, 8);
  image.slot[1].stamp = 1;
  image.slot[1].seq = 5;
  GpuRingView view = MustAttach(image);
  EXPECT_EQ(view.InFlight().size(), 1u);
  image.h->slot_count = UINT32_MAX;
  EXPECT_TRUE(view.InFlight().empty());
  EXPECT_TRUE(view.Read().empty());
  EXPECT_TRUE(view.corrupt());
  EXPECT_EQ(view.slot_count(), 4u);
}

TEST(GpuRingView, AHeadThatGoesBackOrLeapsPastAnyCountIsCorruption) {
  {
    Image image(4, 8);
    GpuRingView view = MustAttach(image);
    image.Write(1);
    image.Write(2);
    EXPECT_EQ(view.Read().size(), 2u);
    image.h->head = 1;
    EXPECT_TRUE(view.Read().empty());
    EXPECT_EQ(view.corruption(), "its counter head went from 2 to 1");
  }
  {
    Image image(4, 8);
    GpuRingView view = MustAttach(image);
    image.h->head = UINT64_MAX;  // tail + ring_records would wrap
    EXPECT_TRUE(view.Read().empty());
    EXPECT_TRUE(view.corrupt());
    EXPECT_EQ(view.overruns(), 0u);
  }
}

// A head far ahead within the limit is an overrun of the plugin's own records: counted, and
// no more than the ring is read.
TEST(GpuRingView, AHeadFarAheadReadsAtMostTheRing) {
  Image image(4, 8);
  GpuRingView view = MustAttach(image);
  image.h->head = kGpuRegionMaxCount;
  for (int i = 0; i < 8; ++i) {
    const uint64_t index = kGpuRegionMaxCount - 8 + static_cast<uint64_t>(i);
    image.ring[index % 8].stamp = index + 1;
  }
  EXPECT_EQ(view.Read().size(), 8u);
  EXPECT_EQ(view.overruns(), kGpuRegionMaxCount - 8);
  EXPECT_FALSE(view.corrupt());
}

TEST(GpuRingView, StampsOfAnyValueAreBoundedByTheRing) {
  Image image(4, 8);
  GpuRingView view = MustAttach(image);
  image.h->head = 8;
  for (int i = 0; i < 8; ++i) image.ring[i].stamp = UINT64_MAX - static_cast<uint64_t>(i);
  EXPECT_TRUE(view.Read().empty());  // all "overwritten": none is the record of its index
  EXPECT_EQ(view.overruns(), 8u);
  EXPECT_EQ(view.read_records(), 8u);
}

TEST(GpuRingView, CountersThatGoBackAreCorruptionAndOnlyIntactOnesAreKept) {
  Image image(4, 8);
  image.h->drops_slots_full = 5;
  image.h->api_version = 5;
  GpuRingView view = MustAttach(image);
  EXPECT_EQ(view.counters().drops_slots_full, 5u);
  EXPECT_EQ(view.counters().api_version, 5);
  image.h->drops_slots_full = 7;
  image.h->api_version = 1234;  // no profiler API NCCL has: not reported
  (void)view.Read();
  EXPECT_EQ(view.counters().drops_slots_full, 7u);
  EXPECT_EQ(view.counters().api_version, 0);
  image.h->drops_slots_full = 3;
  image.h->ops_unrecorded = 100;
  (void)view.Read();
  EXPECT_EQ(view.corruption(), "its counter drops_slots_full went from 7 to 3");
  EXPECT_EQ(view.counters().drops_slots_full, 7u);  // as at the last intact read
  EXPECT_EQ(view.counters().ops_unrecorded, 0u);
}

TEST(GpuRingView, APidChangedAfterAttachIsCorruption) {
  Image image(4, 8);
  GpuRingView view = MustAttach(image);
  EXPECT_EQ(view.creator_pid(), 77);
  image.h->pid = 1;
  (void)view.Read();
  EXPECT_TRUE(view.corrupt());
  EXPECT_EQ(view.creator_pid(), 77);
}

TEST(GpuRingView, AnEmptyViewReadsNothing) {
  GpuRingView view;
  EXPECT_TRUE(view.Read().empty());
  EXPECT_TRUE(view.InFlight().empty());
  view.Heartbeat(1);
  EXPECT_FALSE(view.corrupt());
}

TEST(GpuRegionFault, NamesAreTheMetadataKeysSuffixes) {
  std::string names;
  for (GpuRegionFault f : kGpuRegionFaults) names += std::string(GpuRegionFaultName(f)) + " ";
  EXPECT_EQ(names, "owner not_sealed layout changed ");
}

}  // namespace
}  // namespace rs::rec
