#include "parallel_kernels.h"

#include <cstring>
#include <mutex>

namespace trainer {
namespace {

// Every argument is 8 bytes (the test bed's kernel convention).
template <typename T>
T Arg(void** args, int i) {
  return *static_cast<T*>(args[i]);
}

uint16_t ToBf16(float f) {  // exact for the small integers used here
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

float FromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

void Store(void* buf, bool bf16, size_t i, float v) {
  if (bf16) {
    static_cast<uint16_t*>(buf)[i] = ToBf16(v);
  } else {
    static_cast<float*>(buf)[i] = v;
  }
}

float Load(const void* buf, bool bf16, size_t i) {
  return bf16 ? FromBf16(static_cast<const uint16_t*>(buf)[i]) : static_cast<const float*>(buf)[i];
}

float AsFloat(uint64_t v) {
  float f;
  uint32_t bits = static_cast<uint32_t>(v);
  std::memcpy(&f, &bits, 4);
  return f;
}

uint64_t FloatArg(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return bits;
}

// args: buf, bf16, nblocks, block_n, base, mult, errors (0: fill)
void BlocksKernel(void** args) {
  auto* buf = Arg<void*>(args, 0);
  const bool bf16 = Arg<uint64_t>(args, 1) != 0;
  const auto nblocks = Arg<uint64_t>(args, 2);
  const auto block_n = Arg<uint64_t>(args, 3);
  const auto base = Arg<int64_t>(args, 4);
  const auto mult = Arg<int64_t>(args, 5);
  auto* errors = Arg<uint32_t*>(args, 6);
  bool bad = false;
  for (uint64_t b = 0; b < nblocks; ++b) {
    const float v = BlockValue(base, mult, static_cast<int64_t>(b));
    for (uint64_t i = 0; i < block_n; ++i) {
      if (errors == nullptr) {
        Store(buf, bf16, b * block_n + i, v);
      } else if (Load(buf, bf16, b * block_n + i) != v) {
        bad = true;
      }
    }
  }
  if (bad) __atomic_fetch_add(errors, 1u, __ATOMIC_RELAXED);
}

// args: buf, bf16, n, value bits, errors (0: fill)
void ValueKernel(void** args) {
  auto* buf = Arg<void*>(args, 0);
  const bool bf16 = Arg<uint64_t>(args, 1) != 0;
  const auto n = Arg<uint64_t>(args, 2);
  const float v = AsFloat(Arg<uint64_t>(args, 3));
  auto* errors = Arg<uint32_t*>(args, 4);
  bool bad = false;
  for (uint64_t i = 0; i < n; ++i) {
    if (errors == nullptr) {
      Store(buf, bf16, i, v);
    } else if (Load(buf, bf16, i) != v) {
      bad = true;
    }
  }
  if (bad) __atomic_fetch_add(errors, 1u, __ATOMIC_RELAXED);
}

template <typename... A>
cudaError_t Launch(void (*kernel)(void**), cudaStream_t s, A... values) {
  uint64_t v[] = {static_cast<uint64_t>(values)...};
  void* args[sizeof...(A)];
  for (size_t i = 0; i < sizeof...(A); ++i) args[i] = &v[i];
  return cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(1), dim3(256), args, 0, s);
}

uint64_t IsBf16(ncclDataType_t t) { return t == ncclBfloat16 ? 1 : 0; }

}  // namespace

void RegisterParallelKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&ValueKernel), "fill_or_check", 5);
    cudacpuRegisterKernel(reinterpret_cast<const void*>(&BlocksKernel), "blocks_fill_or_check", 7);
  });
}

float BlockValue(int64_t base, int64_t mult, int64_t i) {
  int64_t x = (base + i * mult) % 200;
  if (x < 0) x += 200;
  return static_cast<float>(1 + x);
}

cudaError_t LaunchFill(cudaStream_t s, void* buf, ncclDataType_t type, size_t n, float value) {
  return Launch(ValueKernel, s, reinterpret_cast<uintptr_t>(buf), IsBf16(type), n, FloatArg(value),
                uintptr_t{0});
}

cudaError_t LaunchCheck(cudaStream_t s, const void* buf, ncclDataType_t type, size_t n,
                        float expected, uint32_t* errors) {
  return Launch(ValueKernel, s, reinterpret_cast<uintptr_t>(buf), IsBf16(type), n,
                FloatArg(expected), reinterpret_cast<uintptr_t>(errors));
}

cudaError_t LaunchFillBlocks(cudaStream_t s, void* buf, ncclDataType_t type, size_t nblocks,
                             size_t block_n, int64_t base, int64_t mult) {
  return Launch(BlocksKernel, s, reinterpret_cast<uintptr_t>(buf), IsBf16(type), nblocks, block_n,
                base, mult, uintptr_t{0});
}

cudaError_t LaunchCheckBlocks(cudaStream_t s, const void* buf, ncclDataType_t type, size_t nblocks,
                              size_t block_n, int64_t base, int64_t mult, uint32_t* errors) {
  return Launch(BlocksKernel, s, reinterpret_cast<uintptr_t>(buf), IsBf16(type), nblocks, block_n,
                base, mult, reinterpret_cast<uintptr_t>(errors));
}

}  // namespace trainer
