#include "rscore/nccl_ops.h"

#include <gtest/gtest.h>

#include "rscore/op_state.h"

namespace rs {
namespace {

TEST(NcclOps, NamesRoundTrip) {
  for (int i = 1; i <= static_cast<int>(NcclOp::kCoalesced); ++i) {
    const auto op = static_cast<NcclOp>(i);
    EXPECT_EQ(OpFromName(OpName(op)), op) << OpName(op);
  }
  EXPECT_EQ(OpFromName("BCAST"), NcclOp::kUnknown);  // no decoder writes it
  EXPECT_EQ(OpName(NcclOp::kAllToAll), "ALL_TO_ALL");
  EXPECT_EQ(OpSpoken(NcclOp::kAllToAll), "all-to-all");
}

TEST(NcclOps, ProfilingNamesOfNcclAndGloo) {
  struct Case {
    const char* name;
    NcclOp op;
  };
  for (const Case& c :
       std::initializer_list<Case>{{"nccl:all_reduce", NcclOp::kAllReduce},
                                   {"nccl:all_reduce_barrier", NcclOp::kAllReduce},
                                   {"gloo:all_reduce", NcclOp::kAllReduce},
                                   {"gloo:allreduce", NcclOp::kAllReduce},
                                   {"nccl:_allgather_base", NcclOp::kAllGather},
                                   {"nccl:all_gather_into_tensor_coalesced", NcclOp::kAllGather},
                                   {"nccl:reduce_scatter_tensor_coalesced", NcclOp::kReduceScatter},
                                   {"nccl:_reduce_scatter_base", NcclOp::kReduceScatter},
                                   {"nccl:all_to_all", NcclOp::kAllToAll},
                                   {"nccl:alltoall_base", NcclOp::kAllToAll},
                                   {"nccl:_broadcast_oop", NcclOp::kBroadcast},
                                   {"nccl:_reduce_oop", NcclOp::kReduce},
                                   {"gloo:gather", NcclOp::kGather},
                                   {"gloo:scatter", NcclOp::kScatter},
                                   {"gloo:barrier", NcclOp::kBarrier},
                                   {"nccl:send 0->1", NcclOp::kSend},
                                   {"nccl:recv 1<-0", NcclOp::kRecv},
                                   {"nccl:coalesced", NcclOp::kCoalesced},
                                   {"c10d:ALLREDUCE", NcclOp::kAllReduce},
                                   {"nccl:something_new", NcclOp::kUnknown},
                                   {"", NcclOp::kUnknown}}) {
    EXPECT_EQ(OpFromProfilingName(c.name), c.op) << c.name;
  }
}

TEST(NcclOps, Traits) {
  EXPECT_TRUE(Traits(NcclOp::kAllReduce).rendezvous);
  EXPECT_FALSE(Traits(NcclOp::kBroadcast).rendezvous);
  EXPECT_TRUE(Traits(NcclOp::kBroadcast).has_root);
  EXPECT_TRUE(Traits(NcclOp::kReduce).has_root);
  EXPECT_FALSE(Traits(NcclOp::kAllReduce).has_root);
  EXPECT_TRUE(Traits(NcclOp::kSend).p2p);
  EXPECT_FALSE(Traits(NcclOp::kSend).collective);
  EXPECT_FALSE(Traits(NcclOp::kAllToAll).same_count);  // uneven splits are legal
  EXPECT_TRUE(Traits(NcclOp::kAllGather).same_count);
  EXPECT_EQ(Traits(static_cast<NcclOp>(200)).name, "UNKNOWN");
}

TEST(OpState, NamesAndFlightRecorderSpelling) {
  EXPECT_EQ(OpStateFromName("scheduled"), OpState::kEnqueued);
  for (OpState s :
       {OpState::kNotEnqueued, OpState::kEnqueued, OpState::kStarted, OpState::kCompleted}) {
    EXPECT_EQ(OpStateFromName(OpStateName(s)), s);
  }
  EXPECT_FALSE(OpStateFromName("complete").has_value());  // not a state name
  EXPECT_LT(OpState::kEnqueued, OpState::kCompleted);     // ordered as a rank moves
}

}  // namespace
}  // namespace rs
