// Element-wise reductions of the CPU collective library, for every NCCL datatype that has
// arithmetic on the host (float16 and bfloat16 through float; the float8 types have none).
#pragma once

#include <cstddef>
#include <cstdint>

#include "nccl.h"

namespace ncclcpu {

// Size of one element in bytes; 0 for an invalid datatype.
size_t TypeSize(ncclDataType_t type);
// Whether Reduce() supports (type, op).
bool CanReduce(ncclDataType_t type, ncclRedOp_t op);
// acc[i] = op(acc[i], in[i]) for i < count. ncclAvg accumulates a sum here; FinishAvg divides.
void Reduce(void* acc, const void* in, size_t count, ncclDataType_t type, ncclRedOp_t op);
// buf[i] /= nranks (integer division for integer types, as NCCL does).
void FinishAvg(void* buf, size_t count, ncclDataType_t type, int nranks);

// IEEE binary16 and bfloat16 conversions (round to nearest even).
float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float Bf16ToFloat(uint16_t h);
uint16_t FloatToBf16(float f);

}  // namespace ncclcpu
