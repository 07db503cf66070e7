#include "recorder/cuda_probe.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "rscore/schema.h"

namespace rs::rec {
namespace {

cuda_event Event(uint16_t fn, uint32_t flags = 0) {
  cuda_event e;
  std::memset(&e, 0, sizeof(e));
  e.abi = CALL_ABI_VERSION;
  e.fn = fn;
  e.cookie = fn | flags;
  e.pid = 77;
  e.tid = 78;
  e.entry_ns = 5000;
  e.exit_ns = 5300;
  e.sample_weight = 1;
  e.regs.ret_addr = 0x40abcd;
  return e;
}

TEST(CudaDecode, MallocSizeAndReturnedPointer) {
  cuda_event e = Event(CUDA_FN_MALLOC, CUDA_OUT_ARG0);
  e.regs.arg[0] = 0x7ff000;  // void** devPtr
  e.regs.arg[1] = 1 << 20;
  e.out = 0x7f0000200000;
  auto r = DecodeCudaEvent(e);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->api, "cudaMalloc");
  EXPECT_EQ(r->library, "cudart");
  EXPECT_EQ(r->bytes, 1 << 20);
  EXPECT_EQ(r->ptr, 0x7f0000200000u);
  EXPECT_EQ(r->duration_ns, 300);
  EXPECT_EQ(r->ret, 0);
  EXPECT_EQ(r->pid, 77);
  EXPECT_EQ(r->tid, 78);
  EXPECT_EQ(r->caller, 0x40abcdu);
  // A failed allocation has no pointer.
  e.ret = 2;
  EXPECT_FALSE(DecodeCudaEvent(e)->ptr);
}

TEST(CudaDecode, LaunchKernelStreamIsTheSecondStackWord) {
  cuda_event e = Event(CUDA_FN_LAUNCH_KERNEL_PTSZ, CUDA_LAUNCH);
  e.regs.arg[0] = 0x401000;  // kernel
  e.regs.stack[0] = 128;     // sharedMem
  e.regs.stack[1] = 0xabc0;  // stream
  e.sample_weight = 10;
  auto r = DecodeCudaEvent(e);
  EXPECT_EQ(r->api, "cudaLaunchKernel_ptsz");
  EXPECT_EQ(r->kernel, 0x401000u);
  EXPECT_EQ(r->stream, 0xabc0u);
  EXPECT_EQ(r->sample_weight, 10);
  EXPECT_FALSE(r->bytes);
}

TEST(CudaDecode, LaunchKernelExCStreamComesFromTheConfig) {
  cuda_event e = Event(CUDA_FN_LAUNCH_KERNEL_EXC, CUDA_LAUNCH | CUDA_CONFIG_STREAM);
  e.regs.arg[1] = 0x402000;
  e.out = 0xdef0;
  auto r = DecodeCudaEvent(e);
  EXPECT_EQ(r->api, "cudaLaunchKernelExC");
  EXPECT_EQ(r->kernel, 0x402000u);
  EXPECT_EQ(r->stream, 0xdef0u);
}

TEST(CudaDecode, DriverCalls) {
  cuda_event l = Event(CU_FN_LAUNCH_KERNEL, CUDA_DRIVER | CUDA_LAUNCH);
  l.regs.arg[0] = 0x5000;
  l.regs.stack[2] = 0x6000;  // hStream, the 9th argument
  auto r = DecodeCudaEvent(l);
  EXPECT_EQ(r->api, "cuLaunchKernel");
  EXPECT_EQ(r->library, "cuda");
  EXPECT_EQ(r->kernel, 0x5000u);
  EXPECT_EQ(r->stream, 0x6000u);
  cuda_event c = Event(CU_FN_MEMCPY_DTOH_ASYNC, CUDA_DRIVER);
  c.regs.arg[2] = 4096;
  c.regs.arg[3] = 0x7000;
  r = DecodeCudaEvent(c);
  EXPECT_EQ(r->api, "cuMemcpyDtoHAsync_v2");
  EXPECT_EQ(r->bytes, 4096);
  EXPECT_EQ(r->memcpy_kind, 2);
  EXPECT_EQ(r->stream, 0x7000u);
  // Same function id without the driver flag is another function.
  cuda_event wrong = Event(CU_FN_LAUNCH_KERNEL);
  EXPECT_FALSE(DecodeCudaEvent(wrong));
}

TEST(CudaDecode, MemcpyAsyncAndSynchronize) {
  cuda_event m = Event(CUDA_FN_MEMCPY_ASYNC);
  m.regs.arg[0] = 0x9000;
  m.regs.arg[2] = 64;
  m.regs.arg[3] = 0xffffffff00000001ULL;  // enum in a register: upper half ignored
  m.regs.arg[4] = 0x8000;
  auto r = DecodeCudaEvent(m);
  EXPECT_EQ(r->bytes, 64);
  EXPECT_EQ(r->memcpy_kind, 1);
  EXPECT_EQ(r->stream, 0x8000u);
  EXPECT_EQ(r->ptr, 0x9000u);
  cuda_event s = Event(CUDA_FN_STREAM_SYNCHRONIZE);
  s.regs.arg[0] = 0x8000;
  s.exit_ns = 0;  // still in flight at the end of recording
  r = DecodeCudaEvent(s);
  EXPECT_TRUE(r->in_flight);
  EXPECT_FALSE(r->duration_ns);
  EXPECT_FALSE(r->ret);
  EXPECT_EQ(r->stream, 0x8000u);
}

TEST(CudaDecode, WritesRowsWithTheBundleSchema) {
  auto db = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
  ASSERT_TRUE(db.ok());
  ASSERT_TRUE(rs::CreateSchema(*db, rs::DbKind::kBundle).ok());
  auto st = PrepareCudaInsert(*db);
  ASSERT_TRUE(st.ok()) << st.error().message();
  cuda_event e = Event(CUDA_FN_STREAM_SYNCHRONIZE);
  e.regs.arg[0] = 0x8000;
  e.ret = 35;
  auto row = DecodeCudaEvent(e);
  ASSERT_TRUE(WriteCudaRow(*st, *row, "n1", 42, 1700000000000000000, 99).ok());
  auto q = db->Prepare(
      "SELECT id, node, timestamp_ns, duration_ns, pid, tid, api, library, bytes, stream, ret,"
      " state, sample_weight, stack_id FROM cuda_events");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(*q->Step());
  EXPECT_EQ(q->Int(0), 42);
  EXPECT_EQ(q->Text(1), "n1");
  EXPECT_EQ(q->Int(2), 1700000000000000000);
  EXPECT_EQ(q->Int(3), 300);
  EXPECT_EQ(q->Int(4), 77);
  EXPECT_EQ(q->Int(5), 78);
  EXPECT_EQ(q->Text(6), "cudaStreamSynchronize");
  EXPECT_EQ(q->Text(7), "cudart");
  EXPECT_TRUE(q->IsNull(8));
  EXPECT_EQ(q->Int(9), 0x8000);
  EXPECT_EQ(q->Int(10), 35);
  EXPECT_EQ(q->Text(11), "complete");
  EXPECT_EQ(q->Int(12), 1);
  EXPECT_EQ(q->Int(13), 99);
}

TEST(CudaFunctions, TablesMatchTheirLibraries) {
  for (const ProbedFunction& f : CudaFunctions(LibraryKind::kCudart)) {
    EXPECT_TRUE(f.name.starts_with("cuda")) << f.name;
    EXPECT_EQ(f.cookie & CUDA_DRIVER, 0u) << f.name;
  }
  for (const ProbedFunction& f : CudaFunctions(LibraryKind::kCuda)) {
    EXPECT_TRUE(f.name.starts_with("cu") && !f.name.starts_with("cuda")) << f.name;
    EXPECT_NE(f.cookie & CUDA_DRIVER, 0u) << f.name;
  }
  EXPECT_TRUE(CudaFunctions(LibraryKind::kNccl).empty());
}

TEST(CudaFunctions, WithoutLaunchesIsEverythingButTheLaunches) {
  for (LibraryKind kind : {LibraryKind::kCudart, LibraryKind::kCuda}) {
    std::vector<std::string_view> expected, got;
    for (const ProbedFunction& f : CudaFunctions(kind)) {
      if (!(f.cookie & CUDA_LAUNCH)) expected.push_back(f.name);
    }
    for (const ProbedFunction& f : CudaFunctionsWithoutLaunches(kind)) got.push_back(f.name);
    EXPECT_EQ(got, expected);
    EXPECT_LT(got.size(), CudaFunctions(kind).size());  // each table has launches to leave out
  }
  EXPECT_TRUE(CudaFunctionsWithoutLaunches(LibraryKind::kNccl).empty());
}

}  // namespace
}  // namespace rs::rec
