// The NCCL interface facts rankscope depends on: NCCL's commHash (golden values from an
// independent implementation of NCCL 2.28's getHash/eatHash/digestHash) and the byte layout
// of the profiler plugin structs (offsets as NCCL 2.28's profiler_v5.h / profiler_v4.h lay
// them out on x86-64; a plugin built against a header that differs is handed garbage).
#include <gtest/gtest.h>

#include <cstddef>

#include "rscore/nccl_comm_hash.h"
#include "rscore/nccl_profiler.h"

namespace rs {
namespace {

// v5 event descriptor.
static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, type) == 0);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, groupApi.graphCaptured) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, groupApi.groupDepth) == 28);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.count) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.root) == 48);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.stream) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, collApi.graphCaptured) == 64);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2pApi.stream) == 48);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelLaunch.stream) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.count) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.root) == 64);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.datatype) == 72);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nWarps) == 81);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.proto) == 96);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.count) == 48);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.peer) == 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.nChannels) == 60);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup) == 64);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.channelId) == 28);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.peer) == 32);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) == 44);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.channelId) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32);
static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8);
static_assert(offsetof(ncclProfiler_v5_t, init) == 8);
static_assert(offsetof(ncclProfiler_v5_t, finalize) == 40);
// v4: one-byte type, no API events, no parentGroup.
static_assert(sizeof(ncclProfilerEventDescr_v4_t) == 104);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.proto) == 96);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, kernelCh.pTimer) == 32);
static_assert(ncclProfilerKernelChStop == 22 && ncclProfilerGroupEndApiStart == 24);
static_assert(ncclProfilerProxyStepSendPeerWait_v4 == 20 && ncclProfilerProxyStepRecvGPUWait == 12);
static_assert(ncclProfileKernelLaunch == 2048 && ncclProfileKernelCh == 64);

TEST(NcclCommHash, GoldenValues) {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i * 7 + 3);
  const uint64_t h = NcclCommHash(id);
  EXPECT_EQ(h, 0x343193647d986d6eULL);
  unsigned char zero[128] = {};
  EXPECT_EQ(NcclCommHash(zero), 0xcc976ec6c24bb53cULL);
  EXPECT_EQ(NcclCommHash("abc", 3), 0x751c1b124ef01f18ULL);
  EXPECT_EQ(NcclSplitCommHash(h, 1, 0), 0x27e15fd1383a6acaULL);
  EXPECT_EQ(NcclSplitCommHash(h, 2, -1), 0x106329368b13f7c5ULL);
}

TEST(NcclCommHash, SplitChildrenDifferByCountAndColor) {
  EXPECT_NE(NcclSplitCommHash(7, 1, 0), NcclSplitCommHash(7, 2, 0));
  EXPECT_NE(NcclSplitCommHash(7, 1, 0), NcclSplitCommHash(7, 1, 1));
  EXPECT_NE(NcclSplitCommHash(7, 1, 0), NcclSplitCommHash(8, 1, 0));
}

}  // namespace
}  // namespace rs
