// The exported CUDA runtime API of the test bed (libcudart.so.13). Each entry point is a
// separate, non-inlined function with a frame-pointer prologue (push %rbp), so uprobes on it
// are cheap; the work happens in runtime.cc. Errors are returned and remembered per thread
// for cudaGetLastError, as in the real runtime.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "cuda_runtime_api.h"
#include "runtime.h"

#define CUDA_API extern "C" __attribute__((visibility("default"), noinline))

namespace cudacpu {
namespace {

thread_local cudaError_t tls_last_error = cudaSuccess;

__attribute__((noinline)) cudaError_t Ret(cudaError_t e) {
  if (e != cudaSuccess) tls_last_error = e;
  return e;
}

Runtime& Rt() { return Runtime::Get(); }

// The stream a handle names on the calling thread's current device (legacy / per-thread
// handles), or null.
std::shared_ptr<Stream> StreamOf(cudaStream_t handle) {
  return Rt().ResolveStream(handle, Rt().current_device());
}

cudaError_t Enqueue(cudaStream_t handle, std::function<void()> fn) {
  std::shared_ptr<Stream> s = StreamOf(handle);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  s->device()->Enqueue(s, std::move(fn));
  return cudaSuccess;
}

cudaError_t CreateStream(cudaStream_t* out, unsigned flags) {
  if (out == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return Ret(cudaErrorInvalidValue);
  Device* d = Rt().device(Rt().current_device());
  *out = Rt().AddStream(d->NewStream((flags & cudaStreamNonBlocking) == 0));
  return cudaSuccess;
}

cudaError_t CreateEvent(cudaEvent_t* out, unsigned flags) {
  if (out == nullptr || (flags & ~3u) != 0) return Ret(cudaErrorInvalidValue);
  auto e = std::make_shared<Event>();
  e->flags = flags;
  *out = Rt().AddEvent(std::move(e));
  return cudaSuccess;
}

cudaError_t Copy(void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream,
                 bool sync) {
  if (count > 0 && (dst == nullptr || src == nullptr)) return Ret(cudaErrorInvalidValue);
  if (static_cast<int>(kind) < 0 || kind > cudaMemcpyDefault) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<Stream> s =
      sync ? Rt().device(Rt().current_device())->Legacy() : StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t t = s->device()->Enqueue(s, [dst, src, count] {
    if (count > 0) std::memmove(dst, src, count);
  });
  if (sync) s->WaitFor(t);
  return cudaSuccess;
}

cudaError_t Set(void* dst, int value, size_t count, cudaStream_t stream, bool sync) {
  if (count > 0 && dst == nullptr) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<Stream> s =
      sync ? Rt().device(Rt().current_device())->Legacy() : StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t t = s->device()->Enqueue(s, [dst, value, count] { std::memset(dst, value, count); });
  if (sync) s->WaitFor(t);
  return cudaSuccess;
}

cudaError_t Launch(const void* func, void** args, cudaStream_t stream) {
  const Kernel* k = FindKernel(func);
  if (k == nullptr) return Ret(cudaErrorInvalidDeviceFunction);
  if (k->nargs > 0 && args == nullptr) return Ret(cudaErrorInvalidValue);
  // The arguments are copied now: the caller's variables may be gone when the kernel runs.
  std::vector<uint64_t> values(static_cast<size_t>(k->nargs));
  for (int i = 0; i < k->nargs; ++i) std::memcpy(&values[i], args[i], sizeof(uint64_t));
  auto fn = reinterpret_cast<void (*)(void**)>(const_cast<void*>(func));
  return Enqueue(stream, [fn, values]() mutable {
    std::vector<void*> ptrs(values.size());
    for (size_t i = 0; i < values.size(); ++i) ptrs[i] = &values[i];
    fn(ptrs.data());
  });
}

cudaError_t RecordEvent(cudaEvent_t event, cudaStream_t stream) {
  std::shared_ptr<Event> e = Rt().FindEvent(event);
  if (!e) return Ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    gen = ++e->generation;
  }
  Device* d = s->device();
  std::weak_ptr<Event> weak = e;
  uint64_t ticket = d->Enqueue(s, [weak, gen, d] {
    if (std::shared_ptr<Event> ev = weak.lock()) {
      std::lock_guard<std::mutex> l(ev->mu);
      if (ev->generation == gen) ev->time_ns = d->Globaltimer(MonoNs());
    }
  });
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->generation == gen) {  // not recorded again meanwhile by another thread
    e->stream = s;
    e->ticket = ticket;
  }
  return cudaSuccess;
}

// The stream and ticket an event was last recorded at (stream null: never recorded).
Stream::Dep EventTarget(const std::shared_ptr<Event>& e) {
  std::lock_guard<std::mutex> lock(e->mu);
  return {e->stream, e->ticket};
}

}  // namespace
}  // namespace cudacpu

using namespace cudacpu;  // NOLINT: the C API below is the library's boundary

CUDA_API cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return Ret(cudaErrorInvalidValue);
  *count = Runtime::kDevices;
  return cudaSuccess;
}

CUDA_API cudaError_t cudaSetDevice(int device) {
  if (device < 0 || device >= Runtime::kDevices) return Ret(cudaErrorInvalidDevice);
  Rt().set_current_device(device);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return Ret(cudaErrorInvalidValue);
  *device = Rt().current_device();
  return cudaSuccess;
}

CUDA_API cudaError_t cudaDeviceSynchronize(void) {
  Rt().device(Rt().current_device())->Synchronize();
  return cudaSuccess;
}

CUDA_API cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return Ret(cudaErrorInvalidValue);
  *runtimeVersion = CUDART_VERSION;
  return cudaSuccess;
}

CUDA_API cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return Ret(cudaErrorInvalidValue);
  *driverVersion = CUDART_VERSION;
  return cudaSuccess;
}

CUDA_API cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return CreateStream(pStream, 0); }

CUDA_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return CreateStream(pStream, flags);
}

CUDA_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread ||
      !Rt().RemoveStream(stream)) {
    return Ret(cudaErrorInvalidResourceHandle);
  }
  return cudaSuccess;
}

CUDA_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  s->WaitFor(s->Enqueued());
  return cudaSuccess;
}

CUDA_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return cudaStreamSynchronize(stream != nullptr ? stream : cudaStreamPerThread);
}

CUDA_API cudaError_t cudaStreamQuery(cudaStream_t stream) {
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  return s->Pending() ? cudaErrorNotReady : cudaSuccess;  // not an error: not remembered
}

CUDA_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                         unsigned int flags) {
  std::shared_ptr<Event> e = Rt().FindEvent(event);
  if (!e || flags != 0) return Ret(!e ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  Stream::Dep target = EventTarget(e);
  if (!target.stream) return cudaSuccess;  // never recorded: nothing to wait for
  s->device()->Enqueue(s, [] {}, {target});
  return cudaSuccess;
}

CUDA_API cudaError_t cudaEventCreate(cudaEvent_t* event) { return CreateEvent(event, 0); }

CUDA_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  return CreateEvent(event, flags);
}

CUDA_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  return Rt().RemoveEvent(event) ? cudaSuccess : Ret(cudaErrorInvalidResourceHandle);
}

CUDA_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  return RecordEvent(event, stream);
}

CUDA_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  std::shared_ptr<Event> e = Rt().FindEvent(event);
  if (!e) return Ret(cudaErrorInvalidResourceHandle);
  Stream::Dep t = EventTarget(e);
  return !t.stream || t.stream->Reached(t.ticket) ? cudaSuccess : cudaErrorNotReady;
}

CUDA_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  std::shared_ptr<Event> e = Rt().FindEvent(event);
  if (!e) return Ret(cudaErrorInvalidResourceHandle);
  Stream::Dep t = EventTarget(e);
  if (t.stream) t.stream->WaitFor(t.ticket);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  std::shared_ptr<Event> a = Rt().FindEvent(start), b = Rt().FindEvent(end);
  if (ms == nullptr) return Ret(cudaErrorInvalidValue);
  if (!a || !b) return Ret(cudaErrorInvalidResourceHandle);
  if ((a->flags | b->flags) & cudaEventDisableTiming) return Ret(cudaErrorInvalidResourceHandle);
  Stream::Dep ta = EventTarget(a), tb = EventTarget(b);
  if (!ta.stream || !tb.stream) return Ret(cudaErrorInvalidResourceHandle);
  if (!ta.stream->Reached(ta.ticket) || !tb.stream->Reached(tb.ticket)) return cudaErrorNotReady;
  auto time_of = [](const std::shared_ptr<Event>& e) {  // one lock at a time: no lock order
    std::lock_guard<std::mutex> lock(e->mu);
    return e->time_ns;
  };
  uint64_t t0 = time_of(a);
  uint64_t t1 = time_of(b);
  *ms = static_cast<float>((static_cast<double>(t1) - static_cast<double>(t0)) / 1e6);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return Ret(cudaErrorInvalidValue);
  size_t rounded = (size + 255) / 256 * 256;
  void* p = std::aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (p == nullptr) return Ret(cudaErrorMemoryAllocation);
  Rt().AddAllocation(p);
  *devPtr = p;
  return cudaSuccess;
}

CUDA_API cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  (void)flags;  // every allocation here is host memory anyway
  return cudaMalloc(devPtr, size);
}

// Like the real cudaFree, it first waits for all work on the device (an implicit sync).
CUDA_API cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) return cudaSuccess;
  if (!Rt().OwnsAllocation(devPtr)) return Ret(cudaErrorInvalidValue);
  Rt().device(Rt().current_device())->Synchronize();
  Rt().RemoveAllocation(devPtr);
  std::free(devPtr);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                enum cudaMemcpyKind kind) {
  return Copy(dst, src, count, kind, nullptr, true);
}

CUDA_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                     enum cudaMemcpyKind kind, cudaStream_t stream) {
  return Copy(dst, src, count, kind, stream, false);
}

CUDA_API cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return Set(devPtr, value, count, nullptr, true);
}

CUDA_API cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  return Set(devPtr, value, count, stream, false);
}

CUDA_API cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                      size_t sharedMem, cudaStream_t stream) {
  (void)gridDim;
  (void)blockDim;
  (void)sharedMem;
  return Launch(func, args, stream);
}

CUDA_API cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim,
                                           void** args, size_t sharedMem, cudaStream_t stream) {
  (void)gridDim;
  (void)blockDim;
  (void)sharedMem;
  return Launch(func, args, stream != nullptr ? stream : cudaStreamPerThread);
}

CUDA_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func,
                                         void** args) {
  if (config == nullptr) return Ret(cudaErrorInvalidValue);
  return Launch(func, args, config->stream);
}

CUDA_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  if (fn == nullptr) return Ret(cudaErrorInvalidValue);
  return Enqueue(stream, [fn, userData] { fn(userData); });
}

CUDA_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (static_cast<int>(mode) < 0 || mode > cudaStreamCaptureModeRelaxed) {
    return Ret(cudaErrorInvalidValue);
  }
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  if (s->legacy()) return Ret(cudaErrorInvalidValue);  // CUDA refuses the legacy stream too
  return s->BeginCapture() ? cudaSuccess : Ret(cudaErrorIllegalState);
}

CUDA_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (pGraph == nullptr) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<Graph> g = s->EndCapture();
  if (!g) return Ret(cudaErrorIllegalState);
  *pGraph = reinterpret_cast<cudaGraph_t>(new std::shared_ptr<Graph>(std::move(g)));
  return cudaSuccess;
}

CUDA_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                           enum cudaStreamCaptureStatus* pStatus) {
  if (pStatus == nullptr) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  *pStatus = s->Capturing() ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

// A graph and an instance are both a heap-held reference to the captured Graph: the nodes are
// released when the last of them is destroyed.
CUDA_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                          unsigned long long flags) {
  (void)flags;
  if (pGraphExec == nullptr || graph == nullptr) return Ret(cudaErrorInvalidValue);
  auto* g = reinterpret_cast<std::shared_ptr<Graph>*>(graph);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(new std::shared_ptr<Graph>(*g));
  return cudaSuccess;
}

CUDA_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (graphExec == nullptr) return Ret(cudaErrorInvalidValue);
  std::shared_ptr<Stream> s = StreamOf(stream);
  if (!s) return Ret(cudaErrorInvalidResourceHandle);
  const std::shared_ptr<Graph>& g = *reinterpret_cast<std::shared_ptr<Graph>*>(graphExec);
  std::vector<Graph::Node> nodes;
  {
    std::lock_guard<std::mutex> lock(g->mu);
    nodes = g->nodes;
  }
  for (const Graph::Node& n : nodes) n.launch(stream, s);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (graphExec == nullptr) return Ret(cudaErrorInvalidValue);
  delete reinterpret_cast<std::shared_ptr<Graph>*>(graphExec);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (graph == nullptr) return Ret(cudaErrorInvalidValue);
  delete reinterpret_cast<std::shared_ptr<Graph>*>(graph);
  return cudaSuccess;
}

CUDA_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = tls_last_error;
  tls_last_error = cudaSuccess;
  return e;
}

CUDA_API cudaError_t cudaPeekAtLastError(void) { return tls_last_error; }

CUDA_API const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError:
      return "cudaErrorInitializationError";
    case cudaErrorInsufficientDriver:
      return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDeviceFunction:
      return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

CUDA_API const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInitializationError:
      return "initialization error";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorIllegalState:
      return "the operation is not permitted in the current state";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
  }
  return "unrecognized error code";
}

// ---- the test bed's own entry points ----

CUDA_API int cudacpuRegisterKernel(const void* func, const char* name, int nargs) {
  if (func == nullptr || nargs < 0 || nargs > 16) return -1;
  RegisterKernel(func, Kernel{name != nullptr ? name : "", nargs});
  return 0;
}

CUDA_API void cudacpuKernelBusy(uint64_t ns) { KernelBusy(ns); }

CUDA_API uint64_t cudacpuGlobaltimer(void) {
  int d = WorkerDevice();
  return Rt().device(d >= 0 ? d : Rt().current_device())->Globaltimer(MonoNs());
}

CUDA_API int cudacpuCurrentWorkerDevice(void) { return WorkerDevice(); }

CUDA_API int cudacpuHostDevice(void) { return Rt().current_device(); }

CUDA_API uint64_t cudacpuEnqueue(cudaStream_t stream, int device, void (*fn)(void*), void* arg) {
  if (fn == nullptr || device < 0 || device >= Runtime::kDevices) return 0;
  std::shared_ptr<Stream> s = Rt().ResolveStream(stream, device);
  if (!s) return 0;
  return s->device()->Enqueue(
      s, [fn, arg] { fn(arg); }, {}, false);
}

CUDA_API int cudacpuStreamValid(cudaStream_t stream, int device) {
  if (device < 0 || device >= Runtime::kDevices) return 0;
  std::shared_ptr<Stream> s = Rt().ResolveStream(stream, device);
  return s && s->device()->id() == device ? 1 : 0;
}

CUDA_API void cudacpuWaitTicket(cudaStream_t stream, int device, uint64_t ticket) {
  if (device < 0 || device >= Runtime::kDevices) return;
  if (std::shared_ptr<Stream> s = Rt().ResolveStream(stream, device)) s->WaitFor(ticket);
}

CUDA_API cudaError_t cudacpuStreamWaitStream(cudaStream_t waiter, cudaStream_t waited, int device) {
  if (device < 0 || device >= Runtime::kDevices) return cudaErrorInvalidDevice;
  std::shared_ptr<Stream> w = Rt().ResolveStream(waiter, device);
  std::shared_ptr<Stream> d = Rt().ResolveStream(waited, device);
  if (!w || !d) return cudaErrorInvalidResourceHandle;
  if (w != d)
    w->device()->Enqueue(
        w, [] {}, {{d, d->Enqueued()}}, false);
  return cudaSuccess;
}

CUDA_API int cudacpuLaunchBlocking(void) { return Rt().launch_blocking() ? 1 : 0; }

CUDA_API int cudacpuStreamCapturing(cudaStream_t stream, int device) {
  if (device < 0 || device >= Runtime::kDevices) return 0;
  std::shared_ptr<Stream> s = Rt().ResolveStream(stream, device);
  return s && s->Capturing() ? 1 : 0;
}

CUDA_API int cudacpuCaptureNode(cudaStream_t stream, int device,
                                void (*launch)(void*, cudaStream_t), void* arg,
                                void (*release)(void*)) {
  if (launch == nullptr || device < 0 || device >= Runtime::kDevices) return 0;
  std::shared_ptr<Stream> s = Rt().ResolveStream(stream, device);
  std::shared_ptr<Graph> g = s ? s->Capturing() : nullptr;
  if (!g) return 0;
  std::lock_guard<std::mutex> lock(g->mu);
  g->nodes.push_back(
      {[launch, arg](cudaStream_t handle, const std::shared_ptr<Stream>&) { launch(arg, handle); },
       [release, arg] {
         if (release != nullptr) release(arg);
       }});
  return 1;
}
