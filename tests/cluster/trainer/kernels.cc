#include "kernels.h"

#include <mutex>

namespace trainer {
namespace {

// Every argument is 8 bytes (the test bed's kernel convention).
template <typename T>
T Arg(void** args, int i) {
  return *static_cast<T*>(args[i]);
}

void ForwardKernel(void** args) { cudacpuKernelBusy(Arg<uint64_t>(args, 0)); }

void BackwardKernel(void** args) {
  auto* grad = Arg<float*>(args, 0);
  auto first = Arg<uint64_t>(args, 1);
  auto count = Arg<uint64_t>(args, 2);
  auto rank_step = Arg<uint64_t>(args, 3);
  int rank = static_cast<int>(rank_step >> 32);
  int step = static_cast<int>(rank_step & 0xffffffffu);
  for (uint64_t i = 0; i < count; ++i) grad[i] = Grad(rank, step, first + i);
  cudacpuKernelBusy(Arg<uint64_t>(args, 4));
}

void OptimizerKernel(void** args) {
  *Arg<float*>(args, 0) = static_cast<float>(Arg<uint64_t>(args, 1));
  cudacpuKernelBusy(Arg<uint64_t>(args, 2));
}

template <typename... A>
cudaError_t Launch(void (*kernel)(void**), cudaStream_t s, A... values) {
  uint64_t v[] = {static_cast<uint64_t>(values)...};
  void* args[sizeof...(A)];
  for (size_t i = 0; i < sizeof...(A); ++i) args[i] = &v[i];
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(256), args, 0, s);
}

}  // namespace

void RegisterKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&ForwardKernel), "forward", 1);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&BackwardKernel), "backward", 5);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&OptimizerKernel), "optimizer", 3);
  });
}

float Grad(int rank, int step, size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>((static_cast<size_t>(step) + i) % 3));
}

cudaError_t LaunchForward(cudaStream_t s, uint64_t ns) { return Launch(ForwardKernel, s, ns); }

cudaError_t LaunchBackward(cudaStream_t s, float* grad, size_t first, size_t count, int rank,
                           int step, uint64_t ns) {
  uint64_t rank_step = (static_cast<uint64_t>(rank) << 32) | static_cast<uint32_t>(step);
  return Launch(BackwardKernel, s, reinterpret_cast<uintptr_t>(grad), first, count, rank_step, ns);
}

cudaError_t LaunchOptimizer(cudaStream_t s, float* loss, int step, uint64_t ns) {
  return Launch(OptimizerKernel, s, reinterpret_cast<uintptr_t>(loss), static_cast<uint64_t>(step),
                ns);
}

}  // namespace trainer
