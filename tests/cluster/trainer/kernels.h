// The trainer's "GPU kernels" on the test bed's CUDA runtime: host functions the device's
// stream worker runs, each busy for its share of the step's device time (a slower device
// simply gets longer times: the host is not slowed). Launched with cudaLaunchKernel, as a
// framework launches its kernels, so the recorder's CUDA probes see the real call pattern.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda_runtime_api.h"

namespace trainer {

// Registers the kernels with the runtime (once per process).
void RegisterKernels();

// Gradient element i of `rank` at `step`: small integers, so the float sum is exact.
float Grad(int rank, int step, size_t i);

// Forward pass work: busy for ns of device time.
cudaError_t LaunchForward(cudaStream_t s, uint64_t ns);
// Backward pass of one gradient bucket: writes the bucket's gradients (Grad(rank, step,
// first + i) for i < count) into grad, then busy for ns.
cudaError_t LaunchBackward(cudaStream_t s, float* grad, size_t first, size_t count, int rank,
                           int step, uint64_t ns);
// Optimizer step: writes the step's loss value (the step number) into *loss, busy for ns.
cudaError_t LaunchOptimizer(cudaStream_t s, float* loss, int step, uint64_t ns);

}  // namespace trainer
