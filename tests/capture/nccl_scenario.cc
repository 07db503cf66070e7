// Drives the test bed's libnccl.so.2 with known arguments for the capture tests, printing
// what the test cannot know in advance (communicator pointers, ranks the library reports).
//
//   nccl_scenario local   single process, RANKSCOPE_TESTLIB_NO_PEERS=1, starting at a line on
//                         stdin: rank 3 of 4, a second
//                         communicator, every collective, a group of send/recv, two splits;
//                         prints 'done' and exits at the next line on stdin
//   nccl_scenario hang    two processes over loopback (NCCL_COMM_ID must be set): one
//                         AllReduce together (rank 0 waits until rank 1's has returned), then
//                         rank 1 stops and rank 0 blocks in the next
//
// Both run the library in sync mode (blocking collectives, streams ignored).
// Output lines: 'key value' (values of pointers in hex).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "nccl.h"

namespace {

void Check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) {
    std::fprintf(stderr, "nccl_scenario: %s failed: %d\n", what, r);
    std::exit(1);
  }
}

// The unique id the test recomputes: byte i = (seed * 31 + i * 7) mod 256.
ncclUniqueId KnownId(int seed) {
  ncclUniqueId id;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    id.internal[i] = static_cast<char>(seed * 31 + i * 7);
  }
  return id;
}

cudaStream_t Stream(uintptr_t v) { return reinterpret_cast<cudaStream_t>(v); }

int Local() {
  setenv("RANKSCOPE_TESTLIB_NO_PEERS", "1", 1);
  char go[16];
  if (!std::fgets(go, sizeof(go), stdin)) return 1;  // the recorder is attached
  std::vector<float> a(4096, 1.0f), b(4096);
  ncclComm_t c1 = nullptr, c2 = nullptr, c3 = nullptr, c4 = nullptr;
  Check(ncclCommInitRank(&c1, 4, KnownId(1), 3), "CommInitRank c1");
  Check(ncclCommInitRank(&c2, 2, KnownId(2), 1), "CommInitRank c2");
  std::printf("c1 %lx\nc2 %lx\n", reinterpret_cast<unsigned long>(c1),
              reinterpret_cast<unsigned long>(c2));
  Check(ncclAllReduce(a.data(), b.data(), 1000, ncclFloat32, ncclAvg, c1, Stream(0x5151)), "AR1");
  Check(ncclAllReduce(a.data(), b.data(), 1000, ncclFloat32, ncclAvg, c1, Stream(0x5151)), "AR2");
  Check(ncclAllGather(a.data(), b.data(), 10, ncclInt64, c2, Stream(0x6161)), "AG");
  Check(ncclAllReduce(a.data(), b.data(), 12, ncclInt32, ncclMax, c1, Stream(0x5151)), "AR3");
  Check(ncclBroadcast(a.data(), b.data(), 5, ncclUint8, 2, c1, Stream(0x5252)), "Broadcast");
  Check(ncclBcast(a.data(), 6, ncclFloat64, 1, c1, Stream(0x5353)), "Bcast");
  Check(ncclReduce(a.data(), b.data(), 7, ncclInt32, ncclMin, 0, c1, Stream(0x5454)), "Reduce");
  Check(ncclReduceScatter(a.data(), b.data(), 8, ncclUint32, ncclProd, c1, Stream(0x5555)), "RS");
  Check(ncclGroupStart(), "GroupStart");
  Check(ncclSend(a.data(), 9, ncclInt8, 1, c1, Stream(0x5656)), "Send1");
  Check(ncclRecv(b.data(), 9, ncclInt8, 1, c1, Stream(0x5656)), "Recv1");
  Check(ncclSend(a.data(), 9, ncclInt8, 1, c1, Stream(0x5656)), "Send2");
  Check(ncclGroupEnd(), "GroupEnd");
  Check(ncclCommSplit(c1, 5, 0, &c3, nullptr), "Split c3");
  int r3 = -1, n3 = -1;
  Check(ncclCommUserRank(c3, &r3), "UserRank");
  Check(ncclCommCount(c3, &n3), "Count");
  Check(ncclAllReduce(a.data(), b.data(), 3, ncclFloat32, ncclSum, c3, Stream(0x5757)), "AR c3");
  Check(ncclCommSplit(c1, 7, 0, &c4, nullptr), "Split c4");
  Check(ncclAllReduce(a.data(), b.data(), 3, ncclFloat32, ncclSum, c4, Stream(0x5858)), "AR c4");
  std::printf("c3 %lx\nc3_rank %d\nc3_nranks %d\nc4 %lx\n", reinterpret_cast<unsigned long>(c3), r3,
              n3, reinterpret_cast<unsigned long>(c4));
  // Invalid: a NULL communicator (ret ncclInvalidArgument, no sequence number).
  ncclResult_t bad = ncclAllReduce(a.data(), b.data(), 1, ncclFloat32, ncclSum, nullptr, nullptr);
  std::printf("null_comm_ret %d\n", bad);
  Check(ncclCommDestroy(c2), "Destroy c2");
  std::printf("done\n");
  std::fflush(stdout);
  char line[16];
  (void)!std::fgets(line, sizeof(line), stdin);  // stay alive until the test has drained
  return 0;
}

int Hang() {
  ncclUniqueId id;
  Check(ncclGetUniqueId(&id), "GetUniqueId");
  std::fflush(stdout);
  // Rank 1 says when its first AllReduce has returned: rank 0 enters the second only then, so
  // that a recording of the hang holds the first complete on both ranks (on a loaded machine
  // rank 1's return could otherwise come after the stall was cut).
  int returned[2];
  if (pipe(returned) != 0) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  const int rank = child == 0 ? 1 : 0;
  std::vector<float> a(256, 1.0f), b(256);
  ncclComm_t comm = nullptr;
  Check(ncclCommInitRank(&comm, 2, id, rank), "CommInitRank");
  Check(ncclAllReduce(a.data(), b.data(), 256, ncclFloat32, ncclSum, comm, nullptr), "AR1");
  std::printf("rank%d_pid %d\nrank%d_comm %lx\n", rank, getpid(), rank,
              reinterpret_cast<unsigned long>(comm));
  std::fflush(stdout);
  if (rank == 1) {
    (void)!write(returned[1], "r", 1);
    pause();  // never enters the second collective: rank 0 hangs in it
    return 0;
  }
  char r;
  if (read(returned[0], &r, 1) != 1) return 1;
  std::printf("hanging\n");
  std::fflush(stdout);
  ncclAllReduce(a.data(), b.data(), 256, ncclFloat32, ncclSum, comm, nullptr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Blocking collectives: the capture tests check a call that blocks in flight (hang) and
  // pass made-up stream handles (local), which the asynchronous mode would refuse.
  setenv("RANKSCOPE_TESTLIB_COLLECTIVES", "sync", 1);
  if (argc == 2 && std::strcmp(argv[1], "local") == 0) return Local();
  if (argc == 2 && std::strcmp(argv[1], "hang") == 0) return Hang();
  std::fprintf(stderr, "usage: nccl_scenario local|hang\n");
  return 2;
}
