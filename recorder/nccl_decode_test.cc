#include "recorder/nccl_decode.h"

#include <gtest/gtest.h>

#include <cstring>

#include "rscore/comm_hash.h"
#include "rscore/nccl_comm_hash.h"

namespace rs::rec {
namespace {

constexpr int kPid = 4242, kTid = 4243;

nccl_event Event(uint16_t fn, uint32_t flags = 0) {
  nccl_event e;
  std::memset(&e, 0, sizeof(e));
  e.abi = CALL_ABI_VERSION;
  e.fn = fn;
  e.cookie = fn | flags;
  e.pid = kPid;
  e.tid = kTid;
  e.entry_ns = 1'000'000;
  e.exit_ns = 1'000'500;
  e.regs.ret_addr = 0x401234;
  return e;
}

// An `int` argument as it sits in a 64-bit register: the upper half is garbage.
uint64_t IntReg(int32_t v) { return 0xdeadbeef00000000ULL | static_cast<uint32_t>(v); }

struct Id {
  unsigned char bytes[128];
  explicit Id(int seed) {
    for (int i = 0; i < 128; ++i) bytes[i] = static_cast<unsigned char>(seed * 31 + i * 7);
  }
};

nccl_event InitRank(uint64_t comm, int nranks, int rank, const Id& id,
                    uint16_t fn = NCCL_FN_COMM_INIT_RANK) {
  nccl_event e = Event(fn, NCCL_READ_UNIQUE_ID | NCCL_OUT_ARG0);
  e.regs.arg[0] = 0x7ffc0000;  // ncclComm_t* newcomm
  e.regs.arg[1] = IntReg(nranks);
  e.regs.arg[2] = IntReg(rank);
  std::memcpy(e.unique_id, id.bytes, 128);
  e.n_out = 1;
  e.out[0] = comm;
  return e;
}

nccl_event AllReduce(uint64_t comm, uint64_t count, int dt, int op, uint64_t stream) {
  nccl_event e = Event(NCCL_FN_ALL_REDUCE);
  e.regs.arg[0] = 0x1000;
  e.regs.arg[1] = 0x2000;
  e.regs.arg[2] = count;
  e.regs.arg[3] = IntReg(dt);
  e.regs.arg[4] = IntReg(op);
  e.regs.arg[5] = comm;      // r9
  e.regs.stack[0] = stream;  // [sp+8]
  return e;
}

nccl_event P2p(uint16_t fn, uint64_t comm, uint64_t count, int dt, int peer) {
  nccl_event e = Event(fn);
  e.regs.arg[0] = 0x1000;
  e.regs.arg[1] = count;
  e.regs.arg[2] = IntReg(dt);
  e.regs.arg[3] = IntReg(peer);
  e.regs.arg[4] = comm;
  e.regs.arg[5] = 0x5151;
  return e;
}

TEST(NcclDecode, CommInitRankReadsRankFromRegisterAndHashesTheIdOnTheStack) {
  NcclDecoder d;
  Id id(1);
  auto row = d.Decode(InitRank(0xc0ffee, 4, 3, id));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->op, "COMM_INIT");
  EXPECT_EQ(row->rank, 3);
  EXPECT_EQ(row->nranks, 4);
  EXPECT_EQ(row->comm_id_hash, rs::CommIdHash(id.bytes));
  EXPECT_EQ(row->comm, 0xc0ffeeu);
  EXPECT_EQ(row->ret, 0);
  EXPECT_EQ(row->duration_ns, 500);
  EXPECT_FALSE(row->seq);
  EXPECT_EQ(row->caller, 0x401234u);
  auto init = d.TakeInit();
  ASSERT_TRUE(init);
  EXPECT_EQ(init->pid, kPid);
  EXPECT_EQ(init->rank, 3);
  EXPECT_EQ(init->nranks, 4);
  EXPECT_FALSE(d.TakeInit());
  EXPECT_EQ(d.unknown_comms(), 0u);
}

TEST(NcclDecode, CollectiveCarriesEveryArgumentAndTheCommunicatorIdentity) {
  NcclDecoder d;
  Id id(2);
  ASSERT_TRUE(d.Decode(InitRank(0xc1, 8, 5, id, NCCL_FN_COMM_INIT_RANK_CONFIG)));
  auto row = d.Decode(AllReduce(0xc1, 1000, /*float32*/ 7, /*avg*/ 4, 0x5151));
  ASSERT_TRUE(row);
  EXPECT_EQ(row->op, "ALL_REDUCE");
  EXPECT_EQ(row->pid, kPid);
  EXPECT_EQ(row->tid, kTid);
  EXPECT_EQ(row->rank, 5);
  EXPECT_EQ(row->nranks, 8);
  EXPECT_EQ(row->comm_id_hash, rs::CommIdHash(id.bytes));
  EXPECT_EQ(row->comm, 0xc1u);
  EXPECT_EQ(row->seq, 1);
  EXPECT_EQ(row->count, 1000);
  EXPECT_EQ(row->datatype, "float32");
  EXPECT_EQ(row->reduce_op, "avg");
  EXPECT_EQ(row->bytes, 4000);
  EXPECT_EQ(row->stream, 0x5151u);
  EXPECT_FALSE(row->peer);
  EXPECT_FALSE(row->root);
  EXPECT_FALSE(row->in_group);
  EXPECT_FALSE(row->in_flight);
}

TEST(NcclDecode, SeqCountsPerCommunicatorAndSkipsFailedCalls) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xa, 2, 1, Id(3))));
  ASSERT_TRUE(d.Decode(InitRank(0xb, 2, 0, Id(4))));
  EXPECT_EQ(d.Decode(AllReduce(0xa, 1, 7, 0, 0))->seq, 1);
  EXPECT_EQ(d.Decode(AllReduce(0xa, 1, 7, 0, 0))->seq, 2);
  EXPECT_EQ(d.Decode(AllReduce(0xb, 1, 7, 0, 0))->seq, 1);
  nccl_event failed = AllReduce(0xa, 1, 7, 0, 0);
  failed.ret = 4;  // ncclInvalidArgument: nothing was enqueued
  auto f = d.Decode(failed);
  EXPECT_FALSE(f->seq);
  EXPECT_EQ(f->ret, 4);
  EXPECT_EQ(d.Decode(AllReduce(0xa, 1, 7, 0, 0))->seq, 3);
  // The same pointer in another process is another communicator.
  nccl_event other = AllReduce(0xa, 1, 7, 0, 0);
  other.pid = kPid + 1;
  auto o = d.Decode(other);
  EXPECT_FALSE(o->rank);
  EXPECT_FALSE(o->comm_id_hash);
  EXPECT_EQ(d.unknown_comms(), 1u);
}

TEST(NcclDecode, ArgumentLayoutOfEachCollective) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xc, 4, 2, Id(5))));
  // ncclAllGather(send, recv, sendcount, datatype, comm, stream)
  nccl_event ag = Event(NCCL_FN_ALL_GATHER);
  ag.regs.arg[2] = 10;
  ag.regs.arg[3] = IntReg(4);  // int64
  ag.regs.arg[4] = 0xc;
  ag.regs.arg[5] = 0x61;
  auto r = d.Decode(ag);
  EXPECT_EQ(r->op, "ALL_GATHER");
  EXPECT_EQ(r->bytes, 80);
  EXPECT_EQ(r->stream, 0x61u);
  EXPECT_FALSE(r->reduce_op);
  EXPECT_EQ(r->seq, 1);
  // ncclBcast(buff, count, datatype, root, comm, stream) is a BROADCAST.
  nccl_event bc = Event(NCCL_FN_BCAST);
  bc.regs.arg[1] = 6;
  bc.regs.arg[2] = IntReg(8);  // float64
  bc.regs.arg[3] = IntReg(1);
  bc.regs.arg[4] = 0xc;
  bc.regs.arg[5] = 0x62;
  r = d.Decode(bc);
  EXPECT_EQ(r->op, "BROADCAST");
  EXPECT_EQ(r->root, 1);
  EXPECT_EQ(r->bytes, 48);
  EXPECT_EQ(r->stream, 0x62u);
  EXPECT_EQ(r->seq, 2);
  // ncclBroadcast(send, recv, count, datatype, root, comm, stream)
  nccl_event b = Event(NCCL_FN_BROADCAST);
  b.regs.arg[2] = 5;
  b.regs.arg[3] = IntReg(1);  // uint8
  b.regs.arg[4] = IntReg(3);
  b.regs.arg[5] = 0xc;
  b.regs.stack[0] = 0x63;
  r = d.Decode(b);
  EXPECT_EQ(r->op, "BROADCAST");
  EXPECT_EQ(r->root, 3);
  EXPECT_EQ(r->datatype, "uint8");
  EXPECT_EQ(r->stream, 0x63u);
  EXPECT_EQ(r->seq, 3);
  // ncclReduce(send, recv, count, datatype, op, root, comm [sp+8], stream [sp+16])
  nccl_event red = Event(NCCL_FN_REDUCE);
  red.regs.arg[2] = 7;
  red.regs.arg[3] = IntReg(2);  // int32
  red.regs.arg[4] = IntReg(2);  // max
  red.regs.arg[5] = IntReg(0);
  red.regs.stack[0] = 0xc;
  red.regs.stack[1] = 0x64;
  r = d.Decode(red);
  EXPECT_EQ(r->op, "REDUCE");
  EXPECT_EQ(r->reduce_op, "max");
  EXPECT_EQ(r->root, 0);
  EXPECT_EQ(r->rank, 2);
  EXPECT_EQ(r->stream, 0x64u);
  EXPECT_EQ(r->seq, 4);
  // ncclReduceScatter(send, recv, recvcount, datatype, op, comm, stream)
  nccl_event rs_ev = AllReduce(0xc, 3, /*bfloat16*/ 9, /*min*/ 3, 0x65);
  rs_ev.fn = NCCL_FN_REDUCE_SCATTER;
  rs_ev.cookie = NCCL_FN_REDUCE_SCATTER;
  r = d.Decode(rs_ev);
  EXPECT_EQ(r->op, "REDUCE_SCATTER");
  EXPECT_EQ(r->datatype, "bfloat16");
  EXPECT_EQ(r->reduce_op, "min");
  EXPECT_EQ(r->bytes, 6);
  EXPECT_EQ(r->seq, 5);
}

TEST(NcclDecode, SendRecvHaveTheirOwnPerPeerSequenceAndGroupFlag) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xd, 4, 0, Id(6))));
  auto gs = d.Decode(Event(NCCL_FN_GROUP_START));
  EXPECT_EQ(gs->op, "GROUP_START");
  EXPECT_FALSE(gs->in_group);
  auto s1 = d.Decode(P2p(NCCL_FN_SEND, 0xd, 9, 0, 1));
  auto r1 = d.Decode(P2p(NCCL_FN_RECV, 0xd, 9, 0, 1));
  auto s2 = d.Decode(P2p(NCCL_FN_SEND, 0xd, 9, 0, 1));
  auto s3 = d.Decode(P2p(NCCL_FN_SEND, 0xd, 9, 0, 2));
  auto ge = d.Decode(Event(NCCL_FN_GROUP_END));
  EXPECT_EQ(s1->op, "SEND");
  EXPECT_EQ(s1->peer, 1);
  EXPECT_EQ(s1->seq, 1);
  EXPECT_EQ(r1->op, "RECV");
  EXPECT_EQ(r1->seq, 1);
  EXPECT_EQ(s2->seq, 2);
  EXPECT_EQ(s3->seq, 1);
  EXPECT_EQ(s1->bytes, 9);
  EXPECT_EQ(s1->datatype, "int8");
  for (const auto& r : {s1, r1, s2, s3}) EXPECT_TRUE(r->in_group);
  EXPECT_FALSE(ge->in_group);
  EXPECT_EQ(ge->op, "GROUP_END");
  EXPECT_FALSE(d.Decode(AllReduce(0xd, 1, 7, 0, 0))->in_group);
  // p2p does not advance the collective sequence.
  EXPECT_EQ(d.Decode(AllReduce(0xd, 1, 7, 0, 0))->seq, 2);
}

TEST(NcclDecode, SplitChildGetsTheSplitHashAndRankOnlyWhenTold) {
  NcclDecoder d;
  Id id(7);
  uint64_t parent_hash = rs::CommIdHash(id.bytes);
  ASSERT_TRUE(d.Decode(InitRank(0xe, 4, 3, id)));
  auto split = [&](uint64_t child, int color) {
    nccl_event e = Event(NCCL_FN_COMM_SPLIT, NCCL_OUT_ARG3);
    e.regs.arg[0] = 0xe;
    e.regs.arg[1] = IntReg(color);
    e.regs.arg[2] = IntReg(9);
    e.regs.arg[3] = 0x7ffd0000;
    e.n_out = 1;
    e.out[0] = child;
    return d.Decode(e);
  };
  auto s = split(0xf1, 5);
  EXPECT_EQ(s->op, "COMM_SPLIT");
  EXPECT_EQ(s->comm, 0xeu);  // the parent the split is collective over
  EXPECT_EQ(s->rank, 3);
  EXPECT_EQ(s->comm_id_hash, parent_hash);
  // What the merge needs to derive the child's rank and size from every member's split.
  EXPECT_EQ(s->split_color, 5);
  EXPECT_EQ(s->split_key, 9);
  EXPECT_EQ(s->split_seq, 1);
  // NCCL_SPLIT_NOCOLOR: no child, but the split counts on every rank
  EXPECT_EQ(split(0, -1)->split_color, -1);
  EXPECT_EQ(split(0xf3, 7)->split_seq, 3);
  auto c1 = d.Decode(AllReduce(0xf1, 1, 7, 0, 0));
  EXPECT_EQ(c1->comm_id_hash, rs::SplitCommIdHash(parent_hash, 5, 0));
  EXPECT_FALSE(c1->rank);
  EXPECT_FALSE(c1->nranks);
  EXPECT_EQ(c1->seq, 1);
  auto c3 = d.Decode(AllReduce(0xf3, 1, 7, 0, 0));
  EXPECT_EQ(c3->comm_id_hash, rs::SplitCommIdHash(parent_hash, 7, 2));
  // ncclCommUserRank / ncclCommCount teach rank and nranks; they are not rows.
  nccl_event ur = Event(NCCL_FN_COMM_USER_RANK, NCCL_OUT_ARG1_INT);
  ur.regs.arg[0] = 0xf1;
  ur.n_out = 1;
  ur.out[0] = 1;
  EXPECT_FALSE(d.Decode(ur));
  nccl_event cnt = Event(NCCL_FN_COMM_COUNT, NCCL_OUT_ARG1_INT);
  cnt.regs.arg[0] = 0xf1;
  cnt.n_out = 1;
  cnt.out[0] = 2;
  EXPECT_FALSE(d.Decode(cnt));
  auto c1b = d.Decode(AllReduce(0xf1, 1, 7, 0, 0));
  EXPECT_EQ(c1b->rank, 1);
  EXPECT_EQ(c1b->nranks, 2);
  EXPECT_EQ(c1b->seq, 2);
  EXPECT_EQ(d.unknown_comms(), 0u);
}

// NCCL's own commHash on every row of a known communicator. Golden values from
// rscore's nccl_profiler_test (NCCL 2.28's algorithm): the id whose byte i is i * 7 + 3.
TEST(NcclDecode, NcclCommHashOfRootsAndSplitChildrenAsNcclComputesIt) {
  constexpr uint64_t kRoot = 0x343193647d986d6eULL;
  constexpr uint64_t kFirstSplitColor0 = 0x27e15fd1383a6acaULL;  // splitCount 1, color 0
  NcclDecoder d;
  const Id id(157);  // 157 * 31 = 3 (mod 256): byte i is i * 7 + 3
  ASSERT_EQ(id.bytes[0], 3);
  ASSERT_EQ(id.bytes[1], 10);
  auto init = d.Decode(InitRank(0xe, 4, 3, id));
  EXPECT_EQ(init->nccl_comm_hash, kRoot);
  EXPECT_EQ(d.Decode(AllReduce(0xe, 1, 7, 0, 0))->nccl_comm_hash, kRoot);
  EXPECT_EQ(d.Decode(P2p(NCCL_FN_SEND, 0xe, 1, 7, 1))->nccl_comm_hash, kRoot);
  auto split = [&](uint64_t parent, uint64_t child, int color) {
    nccl_event e = Event(NCCL_FN_COMM_SPLIT, NCCL_OUT_ARG3);
    e.regs.arg[0] = parent;
    e.regs.arg[1] = IntReg(color);
    e.regs.arg[3] = 0x7ffd0000;
    e.n_out = 1;
    e.out[0] = child;
    return d.Decode(e);
  };
  EXPECT_EQ(split(0xe, 0xf1, 0)->nccl_comm_hash, kRoot);  // the split row is the parent's
  split(0xe, 0, -1);  // NCCL_SPLIT_NOCOLOR: no child, NCCL's splitCount still counts it
  split(0xe, 0xf3, 7);
  EXPECT_EQ(d.Decode(AllReduce(0xf1, 1, 7, 0, 0))->nccl_comm_hash, kFirstSplitColor0);
  EXPECT_EQ(d.Decode(AllReduce(0xf3, 1, 7, 0, 0))->nccl_comm_hash,
            rs::NcclSplitCommHash(kRoot, 3, 7));
  // A child's own split counts from 1 again, from the child's hash.
  split(0xf1, 0xf9, 2);
  EXPECT_EQ(d.Decode(AllReduce(0xf9, 1, 7, 0, 0))->nccl_comm_hash,
            rs::NcclSplitCommHash(kFirstSplitColor0, 1, 2));
  nccl_event destroy = Event(NCCL_FN_COMM_DESTROY);
  destroy.regs.arg[0] = 0xf3;
  EXPECT_EQ(d.Decode(destroy)->nccl_comm_hash, rs::NcclSplitCommHash(kRoot, 3, 7));
  // Unknown where comm_id_hash is: a communicator created before recording, and its children.
  EXPECT_FALSE(d.Decode(AllReduce(0x77, 1, 7, 0, 0))->nccl_comm_hash);
  split(0x77, 0x78, 1);
  EXPECT_FALSE(d.Decode(AllReduce(0x78, 1, 7, 0, 0))->nccl_comm_hash);
}

TEST(NcclDecode, UnknownCommunicatorIsNullNeverZero) {
  NcclDecoder d;
  auto r = d.Decode(AllReduce(0x99, 4, 7, 0, 0));
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->rank);
  EXPECT_FALSE(r->nranks);
  EXPECT_FALSE(r->comm_id_hash);
  EXPECT_FALSE(r->nccl_comm_hash);
  EXPECT_EQ(r->comm, 0x99u);
  EXPECT_EQ(r->seq, 1);  // counted from the first call seen
  EXPECT_EQ(d.unknown_comms(), 1u);
  d.Decode(AllReduce(0x99, 4, 7, 0, 0));
  EXPECT_EQ(d.unknown_comms(), 1u);
  // A NULL communicator (ret 4 from the real library) is not a communicator.
  nccl_event null_comm = AllReduce(0, 4, 7, 0, 0);
  null_comm.ret = 4;
  auto n = d.Decode(null_comm);
  EXPECT_EQ(n->comm, 0u);
  EXPECT_FALSE(n->seq);
  EXPECT_EQ(d.unknown_comms(), 1u);
}

TEST(NcclDecode, InFlightCallHasNoDurationNoRetAndStillCounts) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xaa, 2, 1, Id(8))));
  d.Decode(AllReduce(0xaa, 1, 7, 0, 0));
  nccl_event hang = AllReduce(0xaa, 1, 7, 0, 0);
  hang.exit_ns = 0;
  auto r = d.Decode(hang);
  EXPECT_TRUE(r->in_flight);
  EXPECT_FALSE(r->duration_ns);
  EXPECT_FALSE(r->ret);
  EXPECT_EQ(r->seq, 2);
  EXPECT_EQ(r->rank, 1);
}

TEST(NcclDecode, DestroyForgetsTheCommunicatorAndExecForgetsTheProcess) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xbb, 2, 1, Id(9))));
  nccl_event destroy = Event(NCCL_FN_COMM_DESTROY);
  destroy.regs.arg[0] = 0xbb;
  auto r = d.Decode(destroy);
  EXPECT_EQ(r->op, "COMM_DESTROY");
  EXPECT_EQ(r->rank, 1);
  // The pointer reused by a new communicator starts a fresh sequence.
  ASSERT_TRUE(d.Decode(InitRank(0xbb, 2, 0, Id(10))));
  EXPECT_EQ(d.Decode(AllReduce(0xbb, 1, 7, 0, 0))->seq, 1);
  d.ForgetProcess(kPid, 1'000'001);  // an exec after every call so far
  EXPECT_FALSE(d.Decode(AllReduce(0xbb, 1, 7, 0, 0))->rank);
}

// The rings are read in no order among them: the new image's first calls may be decoded before
// the loop hands the exec on. What they made stays; what the old image made goes.
TEST(NcclDecode, ExecHandedOnLateKeepsTheNewImagesCommunicators) {
  NcclDecoder d;
  ASSERT_TRUE(d.Decode(InitRank(0xaa, 2, 1, Id(9))));  // the old image, at 1 ms
  nccl_event init = InitRank(0xbb, 2, 0, Id(10));        // the new image, after the exec
  init.entry_ns = 3'000'000;
  init.exit_ns = 3'000'500;
  ASSERT_TRUE(d.Decode(init));
  nccl_event first = AllReduce(0xbb, 1, 7, 0, 0);
  first.entry_ns = 4'000'000;
  first.exit_ns = 4'000'500;
  EXPECT_EQ(d.Decode(first)->seq, 1);
  d.ForgetProcess(kPid, 2'000'000);
  nccl_event hang = first;
  hang.entry_ns = 5'000'000;
  hang.exit_ns = 0;
  auto r = d.Decode(hang);
  EXPECT_EQ(r->rank, 0);
  EXPECT_EQ(r->seq, 2);
  EXPECT_EQ(d.unknown_comms(), 0u);
  nccl_event old = AllReduce(0xaa, 1, 7, 0, 0);
  old.entry_ns = 6'000'000;
  EXPECT_FALSE(d.Decode(old)->rank);  // the old image's communicator is gone
  EXPECT_EQ(d.unknown_comms(), 1u);
}

TEST(NcclDecode, InitAllGivesEachCommunicatorItsIndexAsRank) {
  NcclDecoder d;
  nccl_event e = Event(NCCL_FN_COMM_INIT_ALL, NCCL_OUT_ARG0_ARRAY);
  e.regs.arg[1] = IntReg(3);
  e.n_out = 3;
  e.out[0] = 0x10;
  e.out[1] = 0x20;
  e.out[2] = 0x30;
  auto r = d.Decode(e);
  EXPECT_EQ(r->op, "COMM_INIT_ALL");
  EXPECT_EQ(r->nranks, 3);
  ASSERT_TRUE(r->comm_id_hash);
  auto c2 = d.Decode(AllReduce(0x30, 1, 7, 0, 0));
  EXPECT_EQ(c2->rank, 2);
  EXPECT_EQ(c2->nranks, 3);
  EXPECT_EQ(c2->comm_id_hash, r->comm_id_hash);
  // NCCL hashes an id that stays inside the library: not derivable here.
  EXPECT_FALSE(r->nccl_comm_hash);
  EXPECT_FALSE(c2->nccl_comm_hash);
}

TEST(NcclDecode, OtherAbiVersionIsDroppedAndCounted) {
  NcclDecoder d;
  nccl_event e = AllReduce(0x1, 1, 7, 0, 0);
  e.abi = CALL_ABI_VERSION + 1;
  EXPECT_FALSE(d.Decode(e));
  EXPECT_EQ(d.abi_mismatches(), 1u);
}

TEST(NcclDecode, DatatypeAndOpNames) {
  EXPECT_EQ(NcclDatatypeName(0), "int8");
  EXPECT_EQ(NcclDatatypeName(6), "float16");
  EXPECT_EQ(NcclDatatypeName(10), "float8e4m3");
  EXPECT_EQ(NcclDatatypeName(11), "float8e5m2");
  EXPECT_FALSE(NcclDatatypeName(12));
  EXPECT_EQ(NcclDatatypeSize(9), 2);
  EXPECT_EQ(NcclRedOpName(1), "prod");
  EXPECT_EQ(NcclRedOpName(7), "custom");
  // By ncclFunc_t, as NCCL's profiler numbers operations: the names of the calls' rows.
  EXPECT_STREQ(NcclFuncOpName(0), "BROADCAST");
  EXPECT_STREQ(NcclFuncOpName(1), "REDUCE");
  EXPECT_STREQ(NcclFuncOpName(2), "ALL_GATHER");
  EXPECT_STREQ(NcclFuncOpName(3), "REDUCE_SCATTER");
  EXPECT_STREQ(NcclFuncOpName(4), "ALL_REDUCE");
  EXPECT_EQ(NcclFuncOpName(5), nullptr);  // ncclFuncSendRecv: never an operation's own
  EXPECT_STREQ(NcclFuncOpName(6), "SEND");
  EXPECT_STREQ(NcclFuncOpName(7), "RECV");
  EXPECT_EQ(NcclFuncOpName(8), nullptr);
  EXPECT_EQ(NcclFuncOpName(-1), nullptr);
}

}  // namespace
}  // namespace rs::rec
