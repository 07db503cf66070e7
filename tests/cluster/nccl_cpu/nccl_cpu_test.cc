// The CPU collective library against references computed here: several ranks in forked
// processes over loopback TCP, every datatype x reduction op, the data-movement collectives,
// grouped Send/Recv, CommSplit, the no-peers mode, and a peer that dies mid-collective.
// These run the library in sync mode (blocking calls, as a CPU framework); the asynchronous
// mode has its own tests (nccl_async_test.cc).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "bootstrap.h"
#include "entry_byte.h"
#include "nccl.h"
#include "reduce.h"
#include "test_ranks.h"

namespace {

const bool kSyncMode = [] { return setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "sync", 1) == 0; }();

using ncclcpu::Bf16ToFloat;
using ncclcpu::FloatToBf16;
using ncclcpu::FloatToHalf;
using ncclcpu::HalfToFloat;

// Small positive integers: exact in every datatype, products of 3-4 ranks stay exact.
int Value(int rank, size_t i) { return static_cast<int>((rank * 7 + i * 3) % 4) + 1; }

double Combine(double a, double b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      return a * b;
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:
      return a + b;
  }
}

bool IsInteger(ncclDataType_t t) { return t <= ncclUint64; }

double Reference(int n, size_t i, ncclRedOp_t op, ncclDataType_t type) {
  double acc = Value(0, i);
  for (int r = 1; r < n; ++r) acc = Combine(acc, Value(r, i), op);
  if (op == ncclAvg) acc = IsInteger(type) ? std::floor(acc / n) : acc / n;
  return acc;
}

void Store(void* buf, size_t i, ncclDataType_t t, double v) {
  switch (t) {
    case ncclInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case ncclUint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case ncclInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case ncclUint32:
      static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v);
      break;
    case ncclInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case ncclUint64:
      static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v);
      break;
    case ncclFloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case ncclBfloat16:
      static_cast<uint16_t*>(buf)[i] = FloatToBf16(static_cast<float>(v));
      break;
    case ncclFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case ncclFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    default:
      break;
  }
}

double Load(const void* buf, size_t i, ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
      return static_cast<const int8_t*>(buf)[i];
    case ncclUint8:
      return static_cast<const uint8_t*>(buf)[i];
    case ncclInt32:
      return static_cast<const int32_t*>(buf)[i];
    case ncclUint32:
      return static_cast<const uint32_t*>(buf)[i];
    case ncclInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case ncclUint64:
      return static_cast<double>(static_cast<const uint64_t*>(buf)[i]);
    case ncclFloat16:
      return HalfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case ncclBfloat16:
      return Bf16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case ncclFloat32:
      return static_cast<const float*>(buf)[i];
    case ncclFloat64:
      return static_cast<const double*>(buf)[i];
    default:
      return NAN;
  }
}

double Tolerance(ncclDataType_t t, double expected) {
  if (t == ncclFloat16) return std::fabs(expected) * 1e-3 + 1e-3;
  if (t == ncclBfloat16) return std::fabs(expected) * 8e-3 + 8e-3;
  if (t == ncclFloat32) return std::fabs(expected) * 1e-6;
  return 0;
}

const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,  ncclInt64,
                                 ncclUint64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
const ncclRedOp_t kOps[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};

TEST(NcclCpu, EntryPointsStartWithPushRbp) {
  const void* fns[] = {reinterpret_cast<const void*>(&ncclAllReduce),
                       reinterpret_cast<const void*>(&ncclCommInitRank),
                       reinterpret_cast<const void*>(&ncclCommUserRank),
                       reinterpret_cast<const void*>(&ncclGroupStart),
                       reinterpret_cast<const void*>(&ncclSend)};
  for (const void* f : fns) EXPECT_EQ(FirstByteOnDisk(f), 0x55);  // push %rbp
}

TEST(NcclCpu, NodesAreTheDistinctHostsOfTheRanks) {  // what a profiler's init gets as nNodes
  using ncclcpu::Endpoint;
  auto ep = [](const char* ip, uint16_t port) {
    Endpoint e;
    EXPECT_TRUE(ncclcpu::ParseEndpoint(std::string(ip) + ":" + std::to_string(port), &e));
    return e;
  };
  EXPECT_EQ(ncclcpu::CountHosts({ep("10.77.0.10", 1), ep("10.77.0.10", 2), ep("10.77.0.11", 1),
                                 ep("10.77.0.12", 3), ep("10.77.0.11", 9)}),
            3);
  EXPECT_EQ(ncclcpu::CountHosts({ep("127.0.0.1", 5), ep("127.0.0.1", 6)}), 1);
}

TEST(NcclCpu, HalfConversionsRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 3.0f / 7}) {
    EXPECT_NEAR(HalfToFloat(FloatToHalf(f)), f, std::fabs(f) * 1e-3);
    EXPECT_NEAR(Bf16ToFloat(FloatToBf16(f)), f, std::fabs(f) * 8e-3);
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
}

TEST(NcclCpu, AllReduceEveryTypeAndOp) {
  const int n = 3;
  const size_t count = 1001;  // not a multiple of n: uneven ring chunks
  auto status = RunRanks(n, [&](int rank, ncclComm_t comm) -> int {
    for (ncclDataType_t t : kTypes) {
      for (ncclRedOp_t op : kOps) {
        for (bool in_place : {false, true}) {
          size_t size = ncclcpu::TypeSize(t);
          std::vector<char> send(count * size), recv(count * size);
          for (size_t i = 0; i < count; ++i) Store(send.data(), i, t, Value(rank, i));
          void* out = in_place ? send.data() : recv.data();
          CHILD_CHECK(ncclAllReduce(send.data(), out, count, t, op, comm, nullptr) == ncclSuccess);
          for (size_t i = 0; i < count; ++i) {
            double want = Reference(n, i, op, t);
            if (std::fabs(Load(out, i, t) - want) > Tolerance(t, want)) {
              std::fprintf(stderr, "type %d op %d i %zu: got %f want %f\n", t, op, i,
                           Load(out, i, t), want);
              return 3;
            }
          }
        }
      }
    }
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclCpu, LargeAllReduceFloat) {
  const int n = 3;
  const size_t count = 3 << 20;  // 12 MiB: many partial socket writes
  auto status = RunRanks(n, [&](int rank, ncclComm_t comm) -> int {
    std::vector<float> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(Value(rank, i));
    CHILD_CHECK(ncclAllReduce(buf.data(), buf.data(), count, ncclFloat32, ncclSum, comm, nullptr) ==
                ncclSuccess);
    for (size_t i = 0; i < count; ++i) CHILD_CHECK(buf[i] == Reference(n, i, ncclSum, ncclFloat32));
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclCpu, AllGatherReduceScatterBroadcastReduce) {
  const int n = 4;
  const size_t count = 333;
  auto status = RunRanks(n, [&](int rank, ncclComm_t comm) -> int {
    // AllGather: block r of the result is rank r's input.
    std::vector<int32_t> mine(count), all(count * n);
    for (size_t i = 0; i < count; ++i) mine[i] = rank * 100000 + static_cast<int32_t>(i);
    CHILD_CHECK(ncclAllGather(mine.data(), all.data(), count, ncclInt32, comm, nullptr) == 0);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) CHILD_CHECK(all[r * count + i] == r * 100000 + int(i));
    }
    // ReduceScatter: rank r gets the sum of block r over all ranks.
    std::vector<double> in(count * n), out(count);
    for (size_t i = 0; i < in.size(); ++i) in[i] = Value(rank, i) * 0.5;
    CHILD_CHECK(
        ncclReduceScatter(in.data(), out.data(), count, ncclFloat64, ncclSum, comm, nullptr) == 0);
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < n; ++r) want += Value(r, rank * count + i) * 0.5;
      CHILD_CHECK(out[i] == want);
    }
    // Broadcast from root 2 (out of place) and Bcast from root 1 (in place).
    std::vector<uint8_t> src(count, static_cast<uint8_t>(rank + 10)), dst(count, 0);
    CHILD_CHECK(ncclBroadcast(src.data(), dst.data(), count, ncclUint8, 2, comm, nullptr) == 0);
    for (uint8_t v : dst) CHILD_CHECK(v == 12);
    CHILD_CHECK(ncclBcast(src.data(), count, ncclUint8, 1, comm, nullptr) == 0);
    for (uint8_t v : src) CHILD_CHECK(v == 11);
    // Reduce (max) to root 3; other ranks' recvbuff is untouched.
    std::vector<int64_t> val(count), res(count, -7);
    for (size_t i = 0; i < count; ++i) val[i] = (rank + 1) * 1000000000LL + int64_t(i);
    CHILD_CHECK(ncclReduce(val.data(), res.data(), count, ncclInt64, ncclMax, 3, comm, nullptr) ==
                0);
    for (size_t i = 0; i < count; ++i) {
      CHILD_CHECK(res[i] == (rank == 3 ? n * 1000000000LL + int64_t(i) : -7));
    }
    int nranks = 0, me = -1;
    CHILD_CHECK(ncclCommCount(comm, &nranks) == 0 && nranks == n);
    CHILD_CHECK(ncclCommUserRank(comm, &me) == 0 && me == rank);
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclCpu, GroupedSendRecvAllToAllDoesNotDeadlock) {
  const int n = 4;
  const size_t count = 1 << 18;  // 1 MiB per peer: more than a socket buffer
  auto status = RunRanks(n, [&](int rank, ncclComm_t comm) -> int {
    std::vector<std::vector<int32_t>> out(n), in(n);
    CHILD_CHECK(ncclGroupStart() == 0);
    for (int p = 0; p < n; ++p) {
      out[p].assign(count, rank * 16 + p);
      in[p].assign(count, -1);
      CHILD_CHECK(ncclSend(out[p].data(), count, ncclInt32, p, comm, nullptr) == 0);
      CHILD_CHECK(ncclRecv(in[p].data(), count, ncclInt32, p, comm, nullptr) == 0);
    }
    CHILD_CHECK(ncclGroupEnd() == 0);
    for (int p = 0; p < n; ++p) {
      for (int32_t v : in[p]) CHILD_CHECK(v == p * 16 + rank);
    }
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclCpu, CommSplitByColorOrderedByKey) {
  const int n = 4;
  auto status = RunRanks(n, [&](int rank, ncclComm_t comm) -> int {
    // Ranks 0 and 2 form color 0, rank 1 alone color 1, rank 3 opts out. Key = -rank
    // reverses the order: in color 0, old rank 2 becomes new rank 0.
    int color = rank == 3 ? NCCL_SPLIT_NOCOLOR : rank % 2;
    ncclComm_t sub = reinterpret_cast<ncclComm_t>(1);
    CHILD_CHECK(ncclCommSplit(comm, color, -rank, &sub, nullptr) == ncclSuccess);
    if (rank == 3) {
      CHILD_CHECK(sub == nullptr);
    } else {
      CHILD_CHECK(sub != nullptr);
      int count = 0, me = -1;
      CHILD_CHECK(ncclCommCount(sub, &count) == 0 && ncclCommUserRank(sub, &me) == 0);
      CHILD_CHECK(count == (color == 0 ? 2 : 1));
      CHILD_CHECK(me == (rank == 2 || rank == 1 ? 0 : 1));
      int64_t v = rank + 1;
      CHILD_CHECK(ncclAllReduce(&v, &v, 1, ncclInt64, ncclSum, sub, nullptr) == 0);
      CHILD_CHECK(v == (color == 0 ? 1 + 3 : 2));
    }
    // The parent still works after the split.
    int64_t w = rank;
    CHILD_CHECK(ncclAllReduce(&w, &w, 1, ncclInt64, ncclSum, comm, nullptr) == 0);
    CHILD_CHECK(w == 0 + 1 + 2 + 3);
    ncclCommDestroy(sub);
    return 0;
  });
  ExpectAllZero(status);
}

TEST(NcclCpu, SingleRankCommunicatorNeedsNoPeers) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess);
  float a[3] = {1, 2, 3}, b[3] = {};
  EXPECT_EQ(ncclAllReduce(a, b, 3, ncclFloat32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(b[2], 3.0f);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

TEST(NcclCpu, CommInitAllBuildsLoopbackCommunicators) {
  const int n = 3;
  std::vector<ncclComm_t> comms(n, nullptr);
  ASSERT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
  std::vector<int64_t> values(n);
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      values[i] = 10 + i;
      ncclAllReduce(&values[i], &values[i], 1, ncclInt64, ncclSum, comms[i], nullptr);
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < n; ++i) {
    int rank = -1;
    EXPECT_EQ(ncclCommUserRank(comms[i], &rank), ncclSuccess);
    EXPECT_EQ(rank, i);
    EXPECT_EQ(values[i], 10 + 11 + 12);
    ncclCommDestroy(comms[i]);
  }
}

TEST(NcclCpu, NoPeersModeAllowsAnyRankInOneProcess) {
  setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
  ncclUniqueId id;
  std::memset(&id, 0x5a, sizeof(id));
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 4, id, 3), ncclSuccess);
  int rank = -1, count = 0;
  EXPECT_EQ(ncclCommUserRank(comm, &rank), ncclSuccess);
  EXPECT_EQ(ncclCommCount(comm, &count), ncclSuccess);
  EXPECT_EQ(rank, 3);
  EXPECT_EQ(count, 4);
  int32_t in[2] = {5, 6}, out[2] = {};
  EXPECT_EQ(ncclAllReduce(in, out, 2, ncclInt32, ncclSum, comm, nullptr), ncclSuccess);
  EXPECT_EQ(out[1], 6);
  ncclComm_t sub = nullptr;
  EXPECT_EQ(ncclCommSplit(comm, 1, 0, &sub, nullptr), ncclSuccess);
  EXPECT_NE(sub, nullptr);
  EXPECT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclSend(in, 2, ncclInt32, 1, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclRecv(out, 2, ncclInt32, 1, comm, nullptr), ncclSuccess);
  EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
  ncclCommDestroy(sub);
  ncclCommDestroy(comm);
  unsetenv("RANKSCOPE_TESTLIB_NO_PEERS");
}

TEST(NcclCpu, BadArgumentsAreRejected) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 5), ncclInvalidArgument);
  EXPECT_EQ(ncclCommInitRank(&comm, 2, id, 0), ncclInvalidArgument);  // not our id
  EXPECT_EQ(ncclAllReduce(nullptr, nullptr, 1, ncclFloat32, ncclSum, nullptr, nullptr),
            ncclInvalidArgument);
  EXPECT_STREQ(ncclGetErrorString(ncclRemoteError),
               "remote process exited or there was a network error");
  int version = 0;
  EXPECT_EQ(ncclGetVersion(&version), ncclSuccess);
  EXPECT_EQ(version, NCCL_VERSION_CODE);
}

TEST(NcclCpu, DeadPeerFailsTheCollectiveInsteadOfHanging) {
  const int n = 3;
  auto status = RunRanks(
      n,
      [&](int rank, ncclComm_t comm) -> int {
        if (rank == 1) _exit(0);  // dies without entering the collective
        std::vector<float> buf(1 << 16, 1.0f);
        ncclResult_t r =
            ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat32, ncclSum, comm, nullptr);
        CHILD_CHECK(r == ncclRemoteError);
        return 0;
      },
      30);
  ExpectAllZero(status);
}

}  // namespace
