#include "recorder/cuda_probe.h"

#include <algorithm>
#include <array>
#include <vector>

#include "bpf/cuda.skel.h"
#include "recorder/options.h"
#include "recorder/uprobe_multi.h"

namespace rs::rec {
namespace {

// cudaMemcpyKind values, used for the driver's directional copies too.
constexpr int64_t kHostToDevice = 1, kDeviceToHost = 2, kDeviceToDevice = 3, kDefault = 4;

constexpr ProbedFunction kRuntimeFunctions[] = {
    {"cudaMalloc", CUDA_FN_MALLOC | CUDA_OUT_ARG0},
    {"cudaFree", CUDA_FN_FREE},
    {"cudaMallocManaged", CUDA_FN_MALLOC_MANAGED | CUDA_OUT_ARG0},
    {"cudaMemcpy", CUDA_FN_MEMCPY},
    {"cudaMemcpyAsync", CUDA_FN_MEMCPY_ASYNC},
    {"cudaLaunchKernel", CUDA_FN_LAUNCH_KERNEL | CUDA_LAUNCH},
    {"cudaLaunchKernel_ptsz", CUDA_FN_LAUNCH_KERNEL_PTSZ | CUDA_LAUNCH},
    {"cudaLaunchKernelExC", CUDA_FN_LAUNCH_KERNEL_EXC | CUDA_LAUNCH | CUDA_CONFIG_STREAM},
    {"cudaStreamSynchronize", CUDA_FN_STREAM_SYNCHRONIZE},
    {"cudaStreamSynchronize_ptsz", CUDA_FN_STREAM_SYNCHRONIZE_PTSZ},
    {"cudaDeviceSynchronize", CUDA_FN_DEVICE_SYNCHRONIZE},
    {"cudaEventSynchronize", CUDA_FN_EVENT_SYNCHRONIZE},
    {"cudaStreamWaitEvent", CUDA_FN_STREAM_WAIT_EVENT},
};

constexpr ProbedFunction kDriverFunctions[] = {
    {"cuLaunchKernel", CU_FN_LAUNCH_KERNEL | CUDA_DRIVER | CUDA_LAUNCH},
    {"cuMemAlloc_v2", CU_FN_MEM_ALLOC | CUDA_DRIVER | CUDA_OUT_ARG0},
    {"cuMemcpy", CU_FN_MEMCPY | CUDA_DRIVER},
    {"cuMemcpyAsync", CU_FN_MEMCPY_ASYNC | CUDA_DRIVER},
    {"cuMemcpyHtoD_v2", CU_FN_MEMCPY_HTOD | CUDA_DRIVER},
    {"cuMemcpyDtoH_v2", CU_FN_MEMCPY_DTOH | CUDA_DRIVER},
    {"cuMemcpyDtoD_v2", CU_FN_MEMCPY_DTOD | CUDA_DRIVER},
    {"cuMemcpyHtoDAsync_v2", CU_FN_MEMCPY_HTOD_ASYNC | CUDA_DRIVER},
    {"cuMemcpyDtoHAsync_v2", CU_FN_MEMCPY_DTOH_ASYNC | CUDA_DRIVER},
    {"cuMemcpyDtoDAsync_v2", CU_FN_MEMCPY_DTOD_ASYNC | CUDA_DRIVER},
    {"cuCtxSynchronize", CU_FN_CTX_SYNCHRONIZE | CUDA_DRIVER},
    {"cuStreamSynchronize", CU_FN_STREAM_SYNCHRONIZE | CUDA_DRIVER},
};

std::string_view ApiName(uint16_t fn, uint32_t cookie) {
  for (std::span<const ProbedFunction> table :
       {std::span<const ProbedFunction>(kRuntimeFunctions),
        std::span<const ProbedFunction>(kDriverFunctions)}) {
    for (const ProbedFunction& f : table) {
      if ((f.cookie & 0xffff) == fn && ((f.cookie ^ cookie) & CUDA_DRIVER) == 0) return f.name;
    }
  }
  return {};
}

int64_t S64(uint64_t v) { return static_cast<int64_t>(v); }

}  // namespace

std::span<const ProbedFunction> CudaFunctions(LibraryKind kind) {
  if (kind == LibraryKind::kCuda) return kDriverFunctions;
  if (kind == LibraryKind::kCudart) return kRuntimeFunctions;
  return {};
}

std::span<const ProbedFunction> CudaFunctionsWithoutLaunches(LibraryKind kind) {
  static const auto kTables = [] {
    std::array<std::vector<ProbedFunction>, 2> t;  // runtime, driver
    for (const ProbedFunction& f : kRuntimeFunctions) {
      if (!(f.cookie & CUDA_LAUNCH)) t[0].push_back(f);
    }
    for (const ProbedFunction& f : kDriverFunctions) {
      if (!(f.cookie & CUDA_LAUNCH)) t[1].push_back(f);
    }
    return t;
  }();
  if (kind == LibraryKind::kCuda) return kTables[1];
  if (kind == LibraryKind::kCudart) return kTables[0];
  return {};
}

std::optional<CudaRow> DecodeCudaEvent(const cuda_event& e) {
  if (e.abi != CALL_ABI_VERSION) return std::nullopt;
  std::string_view api = ApiName(e.fn, e.cookie);
  if (api.empty()) return std::nullopt;
  CudaRow row;
  row.pid = static_cast<int>(e.pid);
  row.tid = static_cast<int>(e.tid);
  row.entry_mono_ns = e.entry_ns;
  row.api = std::string(api);
  row.library = (e.cookie & CUDA_DRIVER) ? "cuda" : "cudart";
  row.in_flight = e.exit_ns == 0;
  if (!row.in_flight) {
    row.duration_ns = S64(e.exit_ns - e.entry_ns);
    row.ret = e.ret;
  }
  row.sample_weight = e.sample_weight ? e.sample_weight : 1;
  row.caller = e.regs.ret_addr;
  const __u64* a = e.regs.arg;
  const __u64* stack = e.regs.stack;
  const bool out_valid = !row.in_flight && e.ret == 0;
  switch (e.fn) {
    case CUDA_FN_MALLOC:          // (void** devPtr, size_t size)
    case CUDA_FN_MALLOC_MANAGED:  // (void** devPtr, size_t size, unsigned flags)
    case CU_FN_MEM_ALLOC:         // (CUdeviceptr* dptr, size_t bytesize)
      row.bytes = S64(a[1]);
      if (out_valid) row.ptr = e.out;
      break;
    case CUDA_FN_FREE:  // (void* devPtr)
      row.ptr = a[0];
      break;
    case CUDA_FN_MEMCPY:        // (dst, src, count, kind)
    case CUDA_FN_MEMCPY_ASYNC:  // (dst, src, count, kind, stream)
      row.ptr = a[0];
      row.bytes = S64(a[2]);
      row.memcpy_kind = static_cast<int32_t>(a[3]);
      if (e.fn == CUDA_FN_MEMCPY_ASYNC) row.stream = a[4];
      break;
    // (func, dim3 grid [rsi:rdx], dim3 block [rcx:r8], args, sharedMem, stream): the 12-byte
    // dim3 structs travel in two registers each, so sharedMem and stream are on the stack.
    case CUDA_FN_LAUNCH_KERNEL:
    case CUDA_FN_LAUNCH_KERNEL_PTSZ:
      row.kernel = a[0];
      row.stream = stack[1];
      break;
    case CUDA_FN_LAUNCH_KERNEL_EXC:  // (const cudaLaunchConfig_t* config, func, args)
      row.kernel = a[1];
      row.stream = e.out;  // config->stream, read at entry
      break;
    case CUDA_FN_STREAM_SYNCHRONIZE:
    case CUDA_FN_STREAM_SYNCHRONIZE_PTSZ:
    case CU_FN_STREAM_SYNCHRONIZE:
      row.stream = a[0];
      break;
    case CUDA_FN_EVENT_SYNCHRONIZE:  // (cudaEvent_t event)
      row.ptr = a[0];
      break;
    case CUDA_FN_STREAM_WAIT_EVENT:  // (stream, event, flags)
      row.stream = a[0];
      row.ptr = a[1];
      break;
    // (f, gridX, gridY, gridZ, blockX, blockY, [sp+8] blockZ, [sp+16] sharedMem,
    //  [sp+24] hStream, kernelParams, extra)
    case CU_FN_LAUNCH_KERNEL:
      row.kernel = a[0];
      row.stream = stack[2];
      break;
    case CU_FN_MEMCPY:        // (dst, src, ByteCount)
    case CU_FN_MEMCPY_ASYNC:  // (dst, src, ByteCount, hStream)
    case CU_FN_MEMCPY_HTOD:
    case CU_FN_MEMCPY_DTOH:
    case CU_FN_MEMCPY_DTOD:
    case CU_FN_MEMCPY_HTOD_ASYNC:
    case CU_FN_MEMCPY_DTOH_ASYNC:
    case CU_FN_MEMCPY_DTOD_ASYNC:
      row.ptr = a[0];
      row.bytes = S64(a[2]);
      switch (e.fn) {
        case CU_FN_MEMCPY_HTOD:
        case CU_FN_MEMCPY_HTOD_ASYNC:
          row.memcpy_kind = kHostToDevice;
          break;
        case CU_FN_MEMCPY_DTOH:
        case CU_FN_MEMCPY_DTOH_ASYNC:
          row.memcpy_kind = kDeviceToHost;
          break;
        case CU_FN_MEMCPY_DTOD:
        case CU_FN_MEMCPY_DTOD_ASYNC:
          row.memcpy_kind = kDeviceToDevice;
          break;
        default:
          row.memcpy_kind = kDefault;
          break;
      }
      if (e.fn == CU_FN_MEMCPY_ASYNC || e.fn == CU_FN_MEMCPY_HTOD_ASYNC ||
          e.fn == CU_FN_MEMCPY_DTOH_ASYNC || e.fn == CU_FN_MEMCPY_DTOD_ASYNC) {
        row.stream = a[3];
      }
      break;
    default:  // cudaDeviceSynchronize, cuCtxSynchronize: no arguments
      break;
  }
  return row;
}

rs::Result<rs::Statement> PrepareCudaInsert(rs::Db& db) {
  return PrepareInsert(db, "cuda_events",
                       "id, node, timestamp_ns, duration_ns, pid, tid, api, library, bytes, stream,"
                       " kernel, memcpy_kind, ptr, ret, state, sample_weight, stack_id");
}

rs::Result<void> WriteCudaRow(rs::Statement& st, const CudaRow& row, const std::string& node,
                              int64_t id, int64_t timestamp_ns, std::optional<int64_t> stack_id) {
  st.Bind(1, id).Bind(2, node).Bind(3, timestamp_ns).Bind(4, row.duration_ns);
  st.Bind(5, row.pid).Bind(6, row.tid).Bind(7, row.api).Bind(8, row.library);
  st.Bind(9, row.bytes).Bind(10, row.stream).Bind(11, row.kernel).Bind(12, row.memcpy_kind);
  st.Bind(13, row.ptr).Bind(14, row.ret).Bind(15, row.in_flight ? "in_flight" : "complete");
  st.Bind(16, row.sample_weight).Bind(17, stack_id);
  return st.Run();
}

rs::Result<CallProbe::Skeleton> CudaProbe::Load(RecorderContext& ctx, const LoadOptions& opts) {
  const SkeletonOps<cuda_bpf> ops{&cuda_bpf__open, &cuda_bpf__load, &cuda_bpf__destroy};
  auto own = [](cuda_bpf* s) {
    return OwnParts{s->progs.cuda_entry, s->progs.cuda_return, s->maps.cuda_events,
                    s->maps.cuda_active};
  };
  auto configure = [this](cuda_bpf* s) {
    s->rodata->launch_sample = static_cast<uint32_t>(std::max(launch_sample_, 1));
  };
  // libcudart.so and libcuda.so (which one: the scan classifies the file).
  ASSIGN_OR_RETURN(Skeleton loaded,
                   LoadSkeleton<cuda_bpf>(ops, own, ctx, opts, "libcuda", configure));
  ASSIGN_OR_RETURN(insert_, PrepareCudaInsert(*ctx.db));
  return loaded;
}

std::vector<std::string> CudaProbe::ExplicitLibraries(const RecorderOptions& opts) const {
  return opts.cuda_libs;
}

uint64_t CudaProbe::EntryNs(const void* data) const {
  return static_cast<const cuda_event*>(data)->entry_ns;
}

uint64_t CudaProbe::ExitNs(const void* data) const {
  return static_cast<const cuda_event*>(data)->exit_ns;
}

void CudaProbe::OnEvent(const void* data, size_t size, bool in_flight) {
  std::optional<CudaRow> row = DecodeCudaEvent(CopyEvent<cuda_event>(data, size, in_flight));
  if (!row) {
    ++undecodable_;
    return;
  }
  NoteProcess(row->pid);
  NoteWrite(WriteCudaRow(insert_, *row, ctx_->node, NextId(), WallNs(row->entry_mono_ns),
                         StackFor(row->pid, row->caller)));
}

rs::Result<void> CudaProbe::WriteMetadata(RecorderContext& ctx, uint64_t in_flight) {
  if (!ctx.db) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   ctx.db->Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  // Launches are recorded 1-in-N; each sampled row carries sample_weight N (0: not probed).
  RETURN_IF_ERROR(st.Bind(1, "cuda_launch_sample").Bind(2, std::to_string(launch_sample_)).Run());
  RETURN_IF_ERROR(st.Bind(1, "cuda_in_flight").Bind(2, std::to_string(in_flight)).Run());
  return rs::Ok();
}

std::unique_ptr<Probe> MakeCudaProbe(const RecorderOptions& opts) {
  return std::make_unique<CudaProbe>(opts.cuda_launch_sample);
}

}  // namespace rs::rec
