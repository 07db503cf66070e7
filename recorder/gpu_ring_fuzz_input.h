// The input of the plugin region reader's fuzz target (gpu_ring_fuzz.cc), shared with the
// program that writes its seeds (gpu_ring_seeds.cc): a region's bytes and the words its owner
// changes between the reader's reads.
//   byte 0               number of edits (modulo kMaxEdits + 1)
//   12 bytes per edit    offset (u32, little-endian; modulo the image's size, rounded down to
//                        8) and the 8 bytes written there
//   the rest             the region: its header (sizeof(rs_gpu_ring_header) bytes, placed at
//                        offset 0 of a RS_GPU_HEADER_BYTES header page), then the slots and
//                        ring (placed at RS_GPU_HEADER_BYTES, truncated to whole words); a
//                        rest shorter than the header is the whole image as it is
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "recorder/plugin/gpu_ring.h"

namespace rs::rec::fuzz {

inline constexpr size_t kMaxEdits = 4;

struct Edit {
  uint32_t offset = 0;
  uint64_t value = 0;
};

struct GpuRingInput {
  std::vector<Edit> edits;
  std::vector<uint8_t> image;  // the region's bytes, as the reader would map them
};

inline GpuRingInput DecodeGpuRingInput(const uint8_t* data, size_t size) {
  GpuRingInput in;
  size_t at = 0;
  const size_t edits = size > 0 ? data[at++] % (kMaxEdits + 1) : 0;
  for (size_t i = 0; i < edits && at + 12 <= size; ++i, at += 12) {
    Edit e;
    std::memcpy(&e.offset, data + at, 4);
    std::memcpy(&e.value, data + at + 4, 8);
    in.edits.push_back(e);
  }
  const uint8_t* rest = data + at;
  const size_t rest_size = size - at;
  constexpr size_t kHeader = sizeof(rs_gpu_ring_header);
  if (rest_size < kHeader) {
    in.image.assign(rest, rest + rest_size);
    return in;
  }
  const size_t body = (rest_size - kHeader) / 8 * 8;
  in.image.assign(RS_GPU_HEADER_BYTES + body, 0);
  std::memcpy(in.image.data(), rest, kHeader);
  if (body > 0) std::memcpy(in.image.data() + RS_GPU_HEADER_BYTES, rest + kHeader, body);
  return in;
}

// The inverse, for seeds: `region` is a whole region (header page included).
inline std::string EncodeGpuRingInput(const std::vector<Edit>& edits,
                                      const std::vector<uint8_t>& region) {
  std::string out(1, static_cast<char>(edits.size()));
  for (const Edit& e : edits) {
    char word[12];
    std::memcpy(word, &e.offset, 4);
    std::memcpy(word + 4, &e.value, 8);
    out.append(word, sizeof(word));
  }
  if (region.size() < RS_GPU_HEADER_BYTES) {
    out.append(region.begin(), region.end());
    return out;
  }
  out.append(region.begin(), region.begin() + sizeof(rs_gpu_ring_header));
  out.append(region.begin() + RS_GPU_HEADER_BYTES, region.end());
  return out;
}

}  // namespace rs::rec::fuzz
