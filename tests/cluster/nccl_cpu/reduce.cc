#include "reduce.h"

#include <algorithm>
#include <cstring>

namespace ncclcpu {
namespace {

template <typename T>
T Apply(T a, T b, ncclRedOp_t op) {
  switch (op) {
    case ncclProd:
      return static_cast<T>(a * b);
    case ncclMax:
      return std::max(a, b);
    case ncclMin:
      return std::min(a, b);
    default:  // ncclSum, ncclAvg
      return static_cast<T>(a + b);
  }
}

template <typename T>
void ReduceTyped(void* acc, const void* in, size_t count, ncclRedOp_t op) {
  T* a = static_cast<T*>(acc);
  const T* b = static_cast<const T*>(in);
  for (size_t i = 0; i < count; ++i) a[i] = Apply(a[i], b[i], op);
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void ReduceHalfLike(void* acc, const void* in, size_t count, ncclRedOp_t op) {
  uint16_t* a = static_cast<uint16_t*>(acc);
  const uint16_t* b = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < count; ++i) a[i] = FromFloat(Apply(ToFloat(a[i]), ToFloat(b[i]), op));
}

template <typename T>
void DivideTyped(void* buf, size_t count, int nranks) {
  T* a = static_cast<T*>(buf);
  for (size_t i = 0; i < count; ++i) a[i] = static_cast<T>(a[i] / static_cast<T>(nranks));
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void DivideHalfLike(void* buf, size_t count, int nranks) {
  uint16_t* a = static_cast<uint16_t*>(buf);
  for (size_t i = 0; i < count; ++i) a[i] = FromFloat(ToFloat(a[i]) / static_cast<float>(nranks));
}

}  // namespace

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits = 0;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f = 0;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  uint32_t exp = (bits >> 23) & 0xff;
  uint32_t mant = bits & 0x7fffff;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00 | (mant != 0 ? 0x200 : 0));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00);  // overflow -> inf
  if (e <= 0) {                                                // subnormal or zero
    if (e < -10) return sign;
    mant |= 0x800000;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1) != 0)) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = static_cast<uint32_t>(e) << 10 | mant >> 13;
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1) != 0)) ++half;  // may carry into exp: ok
  return static_cast<uint16_t>(sign | half);
}

float Bf16ToFloat(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f = 0;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits = 0;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7f800000u) == 0x7f800000u && (bits & 0x7fffff) != 0) {
    return static_cast<uint16_t>((bits >> 16) | 0x40);  // keep NaN a NaN
  }
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

size_t TypeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

bool CanReduce(ncclDataType_t type, ncclRedOp_t op) {
  if (op < ncclSum || op > ncclAvg) return false;
  return TypeSize(type) != 0 && type != ncclFloat8e4m3 && type != ncclFloat8e5m2;
}

void Reduce(void* acc, const void* in, size_t count, ncclDataType_t type, ncclRedOp_t op) {
  switch (type) {
    case ncclInt8:
      return ReduceTyped<int8_t>(acc, in, count, op);
    case ncclUint8:
      return ReduceTyped<uint8_t>(acc, in, count, op);
    case ncclInt32:
      return ReduceTyped<int32_t>(acc, in, count, op);
    case ncclUint32:
      return ReduceTyped<uint32_t>(acc, in, count, op);
    case ncclInt64:
      return ReduceTyped<int64_t>(acc, in, count, op);
    case ncclUint64:
      return ReduceTyped<uint64_t>(acc, in, count, op);
    case ncclFloat16:
      return ReduceHalfLike<HalfToFloat, FloatToHalf>(acc, in, count, op);
    case ncclBfloat16:
      return ReduceHalfLike<Bf16ToFloat, FloatToBf16>(acc, in, count, op);
    case ncclFloat32:
      return ReduceTyped<float>(acc, in, count, op);
    case ncclFloat64:
      return ReduceTyped<double>(acc, in, count, op);
    default:
      return;
  }
}

void FinishAvg(void* buf, size_t count, ncclDataType_t type, int nranks) {
  switch (type) {
    case ncclInt8:
      return DivideTyped<int8_t>(buf, count, nranks);
    case ncclUint8:
      return DivideTyped<uint8_t>(buf, count, nranks);
    case ncclInt32:
      return DivideTyped<int32_t>(buf, count, nranks);
    case ncclUint32:
      return DivideTyped<uint32_t>(buf, count, nranks);
    case ncclInt64:
      return DivideTyped<int64_t>(buf, count, nranks);
    case ncclUint64:
      return DivideTyped<uint64_t>(buf, count, nranks);
    case ncclFloat16:
      return DivideHalfLike<HalfToFloat, FloatToHalf>(buf, count, nranks);
    case ncclBfloat16:
      return DivideHalfLike<Bf16ToFloat, FloatToBf16>(buf, count, nranks);
    case ncclFloat32:
      return DivideTyped<float>(buf, count, nranks);
    case ncclFloat64:
      return DivideTyped<double>(buf, count, nranks);
    default:
      return;
  }
}

}  // namespace ncclcpu
