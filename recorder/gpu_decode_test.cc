// gpu_ops rows from hand-made plugin records (gpu_ring.h).
#include "recorder/gpu_decode.h"

#include <gtest/gtest.h>

namespace rs::rec {
namespace {

rs_gpu_op Record(uint8_t func) {
  rs_gpu_op op{};
  op.stamp = 9;
  op.nccl_comm_hash = 0x343193647d986d6eULL;
  op.seq = 4;
  op.nccl_seq = 3;
  op.enqueue_ns = 5'000'000;
  op.api_ns = 4'999'000;
  op.device_start_ns = 5'100'000;
  op.device_end_ns = 5'900'000;
  op.device_start_raw = 77'000;
  op.device_end_raw = 877'000;
  op.clock_error_ns = 1500;
  op.count = 1000;
  op.net_bytes_sent = 2048;
  op.net_bytes_recv = 4096;
  op.rank = 2;
  op.nranks = 4;
  op.peer = -1;
  op.tid = 4711;
  op.func = func;
  op.datatype = 7;  // ncclFloat32
  op.algo = RS_GPU_ALGO_RING;
  op.proto = RS_GPU_PROTO_SIMPLE;
  op.state = RS_GPU_COMPLETED;
  op.channels = 2;
  op.channels_started = 2;
  op.channels_stopped = 2;
  return op;
}

TEST(GpuDecode, CompletedCollectiveHasEveryColumn) {
  auto row = DecodeGpuOp(Record(RS_GPU_ALL_REDUCE));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->enqueue_mono_ns, 4'999'000);  // the API call, before the task's event
  EXPECT_EQ(row->tid, 4711);
  EXPECT_EQ(row->op, "ALL_REDUCE");
  EXPECT_EQ(row->rank, 2);
  EXPECT_EQ(row->nranks, 4);
  EXPECT_EQ(row->nccl_comm_hash, 0x343193647d986d6eULL);
  EXPECT_EQ(row->seq, 4);
  EXPECT_EQ(row->nccl_seq, 3);
  EXPECT_EQ(row->count, 1000);
  EXPECT_EQ(row->datatype, "float32");
  EXPECT_EQ(row->bytes, 4000);
  EXPECT_FALSE(row->peer);
  EXPECT_FALSE(row->root);
  EXPECT_EQ(row->algorithm, "RING");
  EXPECT_EQ(row->protocol, "SIMPLE");
  EXPECT_EQ(row->channels, 2);
  EXPECT_EQ(row->device_start_mono_ns, 5'100'000);
  EXPECT_EQ(row->device_end_mono_ns, 5'900'000);
  EXPECT_EQ(row->clock_error_ns, 1500);
  EXPECT_EQ(row->net_bytes_sent, 2048);
  EXPECT_EQ(row->net_bytes_recv, 4096);
  EXPECT_EQ(row->state, "completed");
}

// Profiler API v7: the user tag and the kernel phases; older records leave them NULL.
TEST(GpuDecode, UserTagAndSyncPhasesOnlyWhereReported) {
  auto old_api = DecodeGpuOp(Record(RS_GPU_ALL_REDUCE));
  ASSERT_TRUE(old_api);
  EXPECT_FALSE(old_api->user_tag);
  EXPECT_FALSE(old_api->initial_sync_ns);
  EXPECT_FALSE(old_api->final_sync_ns);
  EXPECT_FALSE(old_api->kernel_symmetric);
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.user_tag = 1200;
  op.flags = RS_GPU_KERNEL_PHASES | RS_GPU_V7_TASK;
  EXPECT_EQ(DecodeGpuOp(op)->kernel_symmetric, 0);
  op.flags |= RS_GPU_SYMMETRIC_KERNEL;
  op.initial_sync_ns = 85'000;
  op.final_sync_ns = 0;  // not reported: NCCL leaves out a phase of zero length
  auto row = DecodeGpuOp(op);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->user_tag, 1200);
  EXPECT_EQ(row->initial_sync_ns, 85'000);
  EXPECT_EQ(row->final_sync_ns, 0);
  EXPECT_EQ(row->kernel_symmetric, 1);
  op.initial_sync_ns = -5;  // a forged record: never a negative wait
  EXPECT_EQ(DecodeGpuOp(op)->initial_sync_ns, 0);
}

// NCCL's proxy sums: NULL without a timed step; a forged negative sum is 0; an unnamed peer
// (-1) NULL; the partial flag carried.
TEST(GpuDecode, ProxySumsOnlyWhereAStepWasTimed) {
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.net_step_max_peer = -1;
  auto none = DecodeGpuOp(op);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->proxy_steps);
  EXPECT_FALSE(none->send_net_ns);
  EXPECT_FALSE(none->net_step_max_peer);
  EXPECT_FALSE(none->proxy_times_partial);
  op.proxy_steps = 6;
  op.send_gpu_wait_ns = 1'000;
  op.send_peer_wait_ns = 2'000;
  op.send_net_ns = 3'000;
  op.recv_net_wait_ns = 4'000;
  op.recv_gpu_wait_ns = -7;
  op.net_step_max_ns = 900;
  op.net_step_max_peer = 5;
  op.flags = RS_GPU_PROXY_TIMES_PARTIAL;
  auto row = DecodeGpuOp(op);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->proxy_steps, 6);
  EXPECT_EQ(row->send_gpu_wait_ns, 1'000);
  EXPECT_EQ(row->send_peer_wait_ns, 2'000);
  EXPECT_EQ(row->send_net_ns, 3'000);
  EXPECT_EQ(row->recv_net_wait_ns, 4'000);
  EXPECT_EQ(row->recv_gpu_wait_ns, 0);
  EXPECT_EQ(row->net_step_max_ns, 900);
  EXPECT_EQ(row->net_step_max_peer, 5);
  EXPECT_TRUE(row->proxy_times_partial);
  op.net_step_max_peer = -1;
  EXPECT_FALSE(DecodeGpuOp(op)->net_step_max_peer);
}

// Without an API event (profiler API v4), or one that does not come first, the task's.
TEST(GpuDecode, EnqueueIsTheTasksEventWithoutAnEarlierApiCall) {
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.api_ns = 0;
  EXPECT_EQ(DecodeGpuOp(op)->enqueue_mono_ns, 5'000'000);
  op.api_ns = 5'000'001;
  EXPECT_EQ(DecodeGpuOp(op)->enqueue_mono_ns, 5'000'000);
}

TEST(GpuDecode, SendAndRecvHaveAPeerAndNoNcclSeq) {
  for (uint8_t func : {RS_GPU_SEND, RS_GPU_RECV}) {
    rs_gpu_op op = Record(func);
    op.peer = 3;
    op.nccl_seq = UINT64_MAX;  // NCCL numbers no p2p operation
    op.seq = 1;                // per peer and direction, as nccl_events
    op.datatype = 0;           // ncclInt8
    op.count = 9;
    auto row = DecodeGpuOp(op);
    ASSERT_TRUE(row);
    EXPECT_EQ(row->op, func == RS_GPU_SEND ? "SEND" : "RECV");
    EXPECT_EQ(row->peer, 3);
    EXPECT_FALSE(row->root);
    EXPECT_FALSE(row->nccl_seq);
    EXPECT_EQ(row->seq, 1);
    EXPECT_EQ(row->datatype, "int8");
    EXPECT_EQ(row->bytes, 9);
  }
  // A p2p record never has NCCL's sequence number, whatever the field holds.
  rs_gpu_op send = Record(RS_GPU_SEND);
  send.nccl_seq = 0;
  EXPECT_FALSE(DecodeGpuOp(send)->nccl_seq);
}

TEST(GpuDecode, AGraphReplayHasNoSeqOfItsOwnButItsCapturedCallAndReplayNumber) {
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.flags = RS_GPU_GRAPH_REPLAY;
  op.seq = 12;  // the communicator's 12th replayed collective
  op.graph_call_seq = 40;
  auto row = DecodeGpuOp(op);
  ASSERT_TRUE(row);
  EXPECT_FALSE(row->seq);  // would join the captured call's nccl_events row
  EXPECT_EQ(row->graph_replay_seq, 12);
  EXPECT_EQ(row->graph_call_seq, 40);
  rs_gpu_op send = Record(RS_GPU_SEND);
  send.flags = RS_GPU_GRAPH_REPLAY;
  send.seq = 0;
  send.graph_call_seq = 3;
  auto s = DecodeGpuOp(send);
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->seq);
  EXPECT_FALSE(s->graph_replay_seq);
  EXPECT_EQ(s->graph_call_seq, 3);
  op.flags = 0;  // not a replay: seq as it is, nothing of graphs
  auto call = DecodeGpuOp(op);
  EXPECT_EQ(call->seq, 12);
  EXPECT_FALSE(call->graph_replay_seq);
  EXPECT_FALSE(call->graph_call_seq);
}

TEST(GpuDecode, BroadcastAndReduceHaveARootAsCopiesCountBytes) {
  rs_gpu_op bcast = Record(RS_GPU_BROADCAST);
  bcast.peer = 1;      // the root
  bcast.datatype = 0;  // NCCL reports copies (Broadcast, AllGather) as int8, count in bytes
  bcast.count = 48;
  auto b = DecodeGpuOp(bcast);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->op, "BROADCAST");
  EXPECT_EQ(b->root, 1);
  EXPECT_FALSE(b->peer);
  EXPECT_EQ(b->bytes, 48);
  rs_gpu_op reduce = Record(RS_GPU_REDUCE);
  reduce.peer = 0;
  auto r = DecodeGpuOp(reduce);
  EXPECT_EQ(r->op, "REDUCE");
  EXPECT_EQ(r->root, 0);
  rs_gpu_op gather = Record(RS_GPU_ALL_GATHER);
  gather.peer = 5;  // not meaningful for an AllGather: not written
  auto g = DecodeGpuOp(gather);
  EXPECT_EQ(g->op, "ALL_GATHER");
  EXPECT_FALSE(g->root);
  EXPECT_FALSE(g->peer);
  EXPECT_EQ(DecodeGpuOp(Record(RS_GPU_REDUCE_SCATTER))->op, "REDUCE_SCATTER");
}

TEST(GpuDecode, DeviceTimesOnlyAsFarAsTheOperationGot) {
  rs_gpu_op enqueued = Record(RS_GPU_ALL_REDUCE);
  enqueued.state = RS_GPU_ENQUEUED;
  enqueued.device_start_ns = enqueued.device_end_ns = 0;
  auto e = DecodeGpuOp(enqueued);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->state, "enqueued");
  EXPECT_FALSE(e->device_start_mono_ns);
  EXPECT_FALSE(e->device_end_mono_ns);
  EXPECT_FALSE(e->clock_error_ns);  // no device time: nothing to bound
  rs_gpu_op started = Record(RS_GPU_ALL_REDUCE);
  started.state = RS_GPU_STARTED;
  started.device_end_ns = 0;
  auto s = DecodeGpuOp(started);
  EXPECT_EQ(s->state, "started");
  EXPECT_EQ(s->device_start_mono_ns, 5'100'000);
  EXPECT_FALSE(s->device_end_mono_ns);
  EXPECT_EQ(s->clock_error_ns, 1500);
  rs_gpu_op unbounded = Record(RS_GPU_ALL_REDUCE);
  unbounded.flags = RS_GPU_CLOCK_UNBOUNDED;
  auto u = DecodeGpuOp(unbounded);
  EXPECT_EQ(u->device_end_mono_ns, 5'900'000);
  EXPECT_FALSE(u->clock_error_ns);
}

// Device times that ran backwards are never used: the plugin's flag (its stop time was
// dropped) is kept, and a record whose end is before its start has neither time.
TEST(GpuDecode, DeviceTimesThatRanBackwardsAreFlaggedAndNull) {
  rs_gpu_op flagged = Record(RS_GPU_ALL_REDUCE);
  flagged.flags = RS_GPU_DEVICE_TIME_BACKWARDS;
  flagged.device_end_ns = 0;
  auto f = DecodeGpuOp(flagged);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->device_time_backwards);
  EXPECT_EQ(f->device_start_mono_ns, 5'100'000);
  EXPECT_FALSE(f->device_end_mono_ns);
  rs_gpu_op reversed = Record(RS_GPU_ALL_REDUCE);
  reversed.device_end_ns = reversed.device_start_ns - 1;
  auto r = DecodeGpuOp(reversed);
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->device_time_backwards);
  EXPECT_FALSE(r->device_start_mono_ns);
  EXPECT_FALSE(r->device_end_mono_ns);
  EXPECT_FALSE(r->clock_error_ns);
  EXPECT_EQ(r->state, "completed");  // how far it got is still known
  EXPECT_FALSE(DecodeGpuOp(Record(RS_GPU_ALL_REDUCE))->device_time_backwards);
}

TEST(GpuDecode, UnknownValuesAreNullNeverGuessed) {
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.datatype = RS_GPU_DATATYPE_UNKNOWN;
  op.algo = RS_GPU_ALGO_UNKNOWN;
  op.proto = 9;
  op.tid = 0;
  op.rank = -1;
  op.nranks = 0;
  op.nccl_comm_hash = 0;
  op.seq = 0;
  op.channels = 0;
  auto row = DecodeGpuOp(op);
  ASSERT_TRUE(row);
  EXPECT_FALSE(row->datatype);
  EXPECT_FALSE(row->bytes);
  EXPECT_EQ(row->count, 1000);
  EXPECT_FALSE(row->algorithm);
  EXPECT_FALSE(row->protocol);
  EXPECT_FALSE(row->tid);
  EXPECT_FALSE(row->rank);
  EXPECT_FALSE(row->nranks);
  EXPECT_FALSE(row->nccl_comm_hash);
  EXPECT_FALSE(row->seq);
  EXPECT_FALSE(row->channels);
}

TEST(GpuDecode, RecordsThisRecorderCannotReadAreRefused) {
  rs_gpu_op unknown = Record(RS_GPU_FUNC_UNKNOWN);
  EXPECT_FALSE(DecodeGpuOp(unknown));
  EXPECT_FALSE(DecodeGpuOp(Record(5)));  // ncclFuncSendRecv: never an operation's own
  rs_gpu_op no_state = Record(RS_GPU_ALL_REDUCE);
  no_state.state = 0;
  EXPECT_FALSE(DecodeGpuOp(no_state));
  rs_gpu_op no_time = Record(RS_GPU_ALL_REDUCE);
  no_time.enqueue_ns = 0;
  EXPECT_FALSE(DecodeGpuOp(no_time));
}

// Found by the reader's fuzzer: a region's count is any value; its bytes overflowed.
TEST(GpuDecode, ACountWhoseBytesDoNotFitHasNoBytes) {
  rs_gpu_op op = Record(RS_GPU_ALL_REDUCE);
  op.datatype = 7;  // float32
  op.count = 0x7a00000000000000;
  auto row = DecodeGpuOp(op);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->count, static_cast<int64_t>(0x7a00000000000000));
  EXPECT_FALSE(row->bytes);
  op.count = UINT64_MAX;  // -1 as a row's count: no bytes either
  EXPECT_FALSE(DecodeGpuOp(op)->bytes);
  op.count = (uint64_t{1} << 61) - 1;  // the largest that fits, times 4
  EXPECT_EQ(DecodeGpuOp(op)->bytes, static_cast<int64_t>(((uint64_t{1} << 61) - 1) * 4));
}

TEST(GpuDecode, Names) {
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_TREE), "TREE");
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_COLLNET_DIRECT), "COLLNET_DIRECT");
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_COLLNET_CHAIN), "COLLNET_CHAIN");
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_NVLS), "NVLS");
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_NVLS_TREE), "NVLS_TREE");
  EXPECT_STREQ(GpuAlgorithmName(RS_GPU_ALGO_PAT), "PAT");
  EXPECT_EQ(GpuAlgorithmName(RS_GPU_ALGO_UNKNOWN), nullptr);
  EXPECT_STREQ(GpuProtocolName(RS_GPU_PROTO_LL), "LL");
  EXPECT_STREQ(GpuProtocolName(RS_GPU_PROTO_LL128), "LL128");
  EXPECT_EQ(GpuProtocolName(RS_GPU_PROTO_UNKNOWN), nullptr);
  EXPECT_STREQ(GpuStateName(RS_GPU_ENQUEUED), "enqueued");
  EXPECT_STREQ(GpuStateName(RS_GPU_STARTED), "started");
  EXPECT_STREQ(GpuStateName(RS_GPU_COMPLETED), "completed");
  EXPECT_EQ(GpuStateName(4), nullptr);
}

}  // namespace
}  // namespace rs::rec
