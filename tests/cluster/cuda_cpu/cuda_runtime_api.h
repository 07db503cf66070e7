// The CUDA runtime API as exported by the test bed's CPU "GPU" (libcudart.so.13): the real
// function names, C signatures, enum values and stream/event handle types of CUDA 13's
// cuda_runtime_api.h / driver_types.h, for the subset a training step uses. The recorder's
// CUDA probes decode this library's calls the way they decode the real one's.
//
// What a "device" is here: a set of worker threads, one per stream, that run the stream's work
// in order (kernels, copies, host functions, event records, waits on other streams) while
// the calling host thread goes on; the devices have their own clock (globaltimer), one setting
// per process (RANKSCOPE_CUDA_CPU_CLOCK, tests/cluster/README.md). Device memory is host memory. A
// kernel is a host function `void kernel(void** args)` registered with cudacpuRegisterKernel (the
// runtime must know its argument count to copy the arguments at launch, as the real runtime learns
// it from the fat binary).
#ifndef CUDA_CPU_RUNTIME_API_H_
#define CUDA_CPU_RUNTIME_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUDART_VERSION 13000

typedef enum cudaError {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3,
  cudaErrorInsufficientDriver = 35,
  cudaErrorInvalidDeviceFunction = 98,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorIllegalState = 401,
  cudaErrorNotReady = 600,
  cudaErrorLaunchFailure = 719
} cudaError_t;

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;
typedef void (*cudaHostFn_t)(void* userData);
typedef struct CUgraph_st* cudaGraph_t;
typedef struct CUgraphExec_st* cudaGraphExec_t;

enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
  cudaStreamCaptureStatusNone = 0,
  cudaStreamCaptureStatusActive = 1,
  cudaStreamCaptureStatusInvalidated = 2
};

struct dim3 {
  unsigned int x, y, z;
#ifdef __cplusplus
  dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
#endif
};
typedef struct dim3 dim3;

// cudaLaunchKernelExC's configuration (attrs: cudaLaunchAttribute*, not read here).
typedef struct cudaLaunchConfig_st {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes;
  cudaStream_t stream;
  void* attrs;
  unsigned int numAttrs;
} cudaLaunchConfig_t;

#define cudaMemAttachGlobal 0x01
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02

cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int* device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaRuntimeGetVersion(int* runtimeVersion);
cudaError_t cudaDriverGetVersion(int* driverVersion);

cudaError_t cudaStreamCreate(cudaStream_t* pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaMalloc(void** devPtr, size_t size);
cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags);
cudaError_t cudaFree(void* devPtr);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void* devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream);

cudaError_t cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                             size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* config, const void* func, void** args);
// The per-thread default stream variants (--default-stream per-thread): a NULL stream is the
// calling thread's own stream (cudaStreamPerThread).
cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 gridDim, dim3 blockDim, void** args,
                                  size_t sharedMem, cudaStream_t stream);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData);

// CUDA graphs: work enqueued on a capturing stream is recorded, not run; each launch of the
// graph's instance runs it again, in capture order, on the launch stream.
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph);
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pStatus);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags);
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);

// ---- The test bed's own entry points (not CUDA API; the recorder does not probe them) ----

// Declares a kernel: `func` is a `void (*)(void** args)` taking `nargs` arguments of at most
// 8 bytes each; the runtime copies them at launch. 0 on success.
int cudacpuRegisterKernel(const void* func, const char* name, int nargs);
// Inside a kernel: the device is busy for `ns` more nanoseconds of device time, counted from
// where the kernel's previous busy time ended (not from now: a late wakeup is not added).
void cudacpuKernelBusy(uint64_t ns);
// The globaltimer (ns) of the device the calling thread runs on (a stream worker), else of
// the calling host thread's current device: the host's CLOCK_MONOTONIC at an offset (and an
// optional drift) set by RANKSCOPE_CUDA_CPU_CLOCK, the same for every device of a process.
uint64_t cudacpuGlobaltimer(void);
// The device whose stream the calling thread works for, -1 on a host thread.
int cudacpuCurrentWorkerDevice(void);
// The calling host thread's current device (what cudaGetDevice returns), without a CUDA call.
int cudacpuHostDevice(void);
// Work of a library on a stream (NCCL's kernel launches): fn(arg) runs on the stream's worker
// in stream order. Returns the work's ticket for cudacpuWaitTicket (0 on failure). Never
// waits for the work, even with CUDA_LAUNCH_BLOCKING (nor does cudacpuStreamWaitStream).
uint64_t cudacpuEnqueue(cudaStream_t stream, int device, void (*fn)(void*), void* arg);
// 1 when the handle names a stream of that device (null and cudaStreamLegacy: its legacy
// stream; cudaStreamPerThread: the calling thread's).
int cudacpuStreamValid(cudaStream_t stream, int device);
// Blocks the host until the work with that ticket on that stream (as passed to
// cudacpuEnqueue, with the same device) is done.
void cudacpuWaitTicket(cudaStream_t stream, int device, uint64_t ticket);
// Makes `waiter` wait (in stream order) for all work enqueued on `waited` so far.
cudaError_t cudacpuStreamWaitStream(cudaStream_t waiter, cudaStream_t waited, int device);
// 1 when CUDA_LAUNCH_BLOCKING=1: every enqueue returns only after its work completed.
int cudacpuLaunchBlocking(void);
// 1 while the stream is being captured into a CUDA graph (cudaStreamIsCapturing, without a
// CUDA call).
int cudacpuStreamCapturing(cudaStream_t stream, int device);
// A library's work in a graph being captured from `stream` (NCCL's persistent plan): at every
// launch of the graph, launch(arg, launch_stream) runs on the launching thread, in the graph's
// order, and enqueues what it wants; release(arg) runs once the graph is gone. 0 when the
// stream is not capturing.
int cudacpuCaptureNode(cudaStream_t stream, int device, void (*launch)(void*, cudaStream_t),
                       void* arg, void (*release)(void*));

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // CUDA_CPU_RUNTIME_API_H_
