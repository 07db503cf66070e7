// Fuzz target for the reader of the NCCL profiler plugin's region (GpuRingView, and the
// decoding of its records into gpu_ops rows): a region's bytes, and words of it changed
// between the reads as a hostile owner would change them (gpu_ring_fuzz_input.h), must give
// records or a refusal, never a read outside the region, a crash, a hang or a leak. The image
// is an exactly sized heap block, so the sanitizers see any read past its end. Built with
// libFuzzer when configured with -Dfuzz=true and clang (.ci/fuzz); otherwise a replay tool
// that runs the same entry point over files given on the command line.
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "recorder/gpu_decode.h"
#include "recorder/gpu_ring_fuzz_input.h"
#include "recorder/gpu_ring_view.h"

namespace {

// What the gpu probe does with a view at each tick, with what it promises checked.
void Exercise(rs::rec::GpuRingView& view) {
  const std::vector<rs_gpu_op> in_flight = view.InFlight();
  const std::vector<rs_gpu_op> read = view.Read();
  if (read.size() > view.ring_records() || in_flight.size() > view.slot_count()) {
    __builtin_trap();
  }
  if (view.read_records() > rs::rec::kGpuRegionMaxCount ||
      view.counters().ops > rs::rec::kGpuRegionMaxCount) {
    __builtin_trap();
  }
  if (view.corrupt() && !read.empty()) __builtin_trap();
  for (const rs_gpu_op& op : read) (void)rs::rec::DecodeGpuOp(op);
  for (const rs_gpu_op& op : in_flight) (void)rs::rec::DecodeGpuOp(op);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const rs::rec::fuzz::GpuRingInput in = rs::rec::fuzz::DecodeGpuRingInput(data, size);
  // Whole words (the reader's atomics are 8-byte aligned), nothing past the image's end.
  const size_t words = in.image.size() / 8;
  if (words == 0) {
    (void)rs::rec::GpuRingView::Attach(nullptr, 0);
    return 0;
  }
  std::unique_ptr<uint64_t[]> image(new uint64_t[words]);
  std::memcpy(image.get(), in.image.data(), words * 8);
  auto view = rs::rec::GpuRingView::Attach(image.get(), words * 8);
  if (!view.ok()) return 0;
  Exercise(*view);
  for (const rs::rec::fuzz::Edit& e : in.edits) {
    const size_t word = (e.offset % (words * 8)) / 8;
    image[word] = e.value;
    view->Heartbeat(1);
    Exercise(*view);
  }
  return 0;
}

#include "subprojects/rscore/fuzz/replay_main.h"
