// For the recorder's unit tests: a plugin region built by hand in a memfd named as the plugin
// names it (so it shows in /proc/self/fd and /proc/self/maps as the plugin's does), laid out as
// gpu_ring.h says, with the writer's half of the ring protocol. Sealed against shrinking as the
// plugin's is, unless `seal` is false (a region the recorder must refuse).
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "recorder/plugin/gpu_ring.h"

namespace rs::rec::testing {

class FakeGpuRegion {
 public:
  FakeGpuRegion(uint32_t slots, uint32_t records, const char* name = RS_GPU_RING_NAME,
                bool seal = true)
      : records_(records) {
    fd_ = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    EXPECT_GE(fd_, 0);
    size_ = RS_GPU_REGION_BYTES(slots, records);
    EXPECT_EQ(ftruncate(fd_, static_cast<off_t>(size_)), 0);
    if (seal) {
      EXPECT_EQ(fcntl(fd_, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    }
    base_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    EXPECT_NE(base_, MAP_FAILED);
    h = static_cast<rs_gpu_ring_header*>(base_);
    h->magic = RS_GPU_RING_MAGIC;
    h->version = RS_GPU_RING_VERSION;
    h->header_bytes = RS_GPU_HEADER_BYTES;
    h->record_bytes = sizeof(rs_gpu_op);
    h->slot_count = slots;
    h->ring_records = records;
    h->pid = getpid();
    h->api_version = 5;
    auto* ops = reinterpret_cast<rs_gpu_op*>(static_cast<char*>(base_) + RS_GPU_HEADER_BYTES);
    slot = ops;
    ring = ops + slots;
  }
  ~FakeGpuRegion() {
    munmap(base_, size_);
    close(fd_);
  }
  FakeGpuRegion(const FakeGpuRegion&) = delete;
  FakeGpuRegion& operator=(const FakeGpuRegion&) = delete;

  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }
  int fd() const { return fd_; }

  // writer: i = fetch_add(&head, 1); stamp 0; the fields; stamp i + 1. In two halves, so that
  // a test can leave a record half-written.
  uint64_t Begin() {
    const uint64_t i = __atomic_fetch_add(&h->head, 1, __ATOMIC_ACQ_REL);
    __atomic_store_n(&ring[i % records_].stamp, 0, __ATOMIC_RELEASE);
    return i;
  }
  void End(uint64_t i, const rs_gpu_op& op) {
    rs_gpu_op& r = ring[i % records_];
    r = op;
    r.stamp = 0;
    __atomic_store_n(&r.stamp, i + 1, __ATOMIC_RELEASE);
  }
  void Write(const rs_gpu_op& op) { End(Begin(), op); }
  // A finished AllReduce numbered `seq` (enqueued at 1000 + seq ns).
  static rs_gpu_op Op(uint64_t seq) {
    rs_gpu_op op{};
    op.seq = seq;
    op.nccl_comm_hash = 0xabc;
    op.nccl_seq = seq - 1;
    op.enqueue_ns = static_cast<int64_t>(1000 + seq);
    op.func = RS_GPU_ALL_REDUCE;
    op.datatype = 7;  // float32
    op.state = RS_GPU_COMPLETED;
    op.peer = -1;
    return op;
  }
  void Write(uint64_t seq) { Write(Op(seq)); }
  void WriteMany(uint64_t first_seq, int n) {
    for (int k = 0; k < n; ++k) Write(first_seq + static_cast<uint64_t>(k));
  }
  // An operation in flight in slot `i` (stamp: non-zero while in use).
  void Hold(uint32_t i, const rs_gpu_op& op, uint64_t stamp = 1) {
    slot[i] = op;
    __atomic_store_n(&slot[i].stamp, stamp, __ATOMIC_RELEASE);
  }

  rs_gpu_ring_header* h = nullptr;
  rs_gpu_op* slot = nullptr;
  rs_gpu_op* ring = nullptr;

 private:
  uint32_t records_;
  int fd_ = -1;
  void* base_ = nullptr;
  size_t size_ = 0;
};

}  // namespace rs::rec::testing
