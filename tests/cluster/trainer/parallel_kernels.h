// The device kernels of the multi-group trainer that give and check the data its
// communication moves: every buffer a collective or a send/recv carries is filled with values
// the receiving ranks can predict, and checked on the device after the operation, so that a
// schedule that pairs the wrong operations shows as counted errors, not only as a hang. The
// values are small integers, exact in bfloat16 and float32 and in their sums over a group.
// A failed check increments the uint32 at `errors` (device memory, read back at the step's
// sync).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda_runtime_api.h"
#include "nccl.h"

namespace trainer {

void RegisterParallelKernels();

// The value of block i in a block pattern: 1 + (base + i * mult) % 200.
float BlockValue(int64_t base, int64_t mult, int64_t i);

// Every element of buf (n elements of type: ncclBfloat16 or ncclFloat32) = value.
cudaError_t LaunchFill(cudaStream_t s, void* buf, ncclDataType_t type, size_t n, float value);
cudaError_t LaunchCheck(cudaStream_t s, const void* buf, ncclDataType_t type, size_t n,
                        float expected, uint32_t* errors);
// nblocks blocks of block_n elements, block i = BlockValue(base, mult, i).
cudaError_t LaunchFillBlocks(cudaStream_t s, void* buf, ncclDataType_t type, size_t nblocks,
                             size_t block_n, int64_t base, int64_t mult);
cudaError_t LaunchCheckBlocks(cudaStream_t s, const void* buf, ncclDataType_t type, size_t nblocks,
                              size_t block_n, int64_t base, int64_t mult, uint32_t* errors);

}  // namespace trainer
