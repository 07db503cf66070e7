// Communicator identity: the same value on every rank of one communicator.
// Shared by the recorder (computes it) and tests (recompute it independently).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace rs {

// Initial fold state: the ASCII bytes "rankscop" read as a big-endian 64-bit number.
inline constexpr uint64_t kCommHashSeed = 0x72616e6b73636f70ULL;
inline constexpr int kUniqueIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES

// A communicator hash as people see it everywhere (report, trace, the query views' comm_id_hex):
// the 16 hex digits of its unsigned value, "0x26017f0f7f0ca554". The tables hold it as a signed
// 64-bit integer.
inline std::string HashHex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// splitmix64 finalizer (Steele, Lea, Flood 2014), the mixing step of the fold.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// comm_id_hash of an ncclUniqueId: its 16 little-endian 64-bit words folded as
// state = SplitMix64(state ^ word), starting from kCommHashSeed.
inline uint64_t CommIdHash(const unsigned char (&id)[kUniqueIdBytes]) {
  uint64_t state = kCommHashSeed;
  for (int i = 0; i < kUniqueIdBytes / 8; ++i) {
    uint64_t word = 0;
    for (int b = 7; b >= 0; --b) word = (word << 8) | id[i * 8 + b];
    state = SplitMix64(state ^ word);
  }
  return state;
}

inline uint64_t CommIdHash(const void* id) {
  unsigned char buf[kUniqueIdBytes];
  std::memcpy(buf, id, sizeof(buf));
  return CommIdHash(buf);
}

// comm_id_hash of a communicator made by ncclCommSplit: every member of the child computes
// the same value from the parent's hash, the color, and how many splits of the parent this
// process made before (split_index, 0-based; identical on all ranks since splits are
// collective). The key is not used: it differs per rank.
constexpr uint64_t SplitCommIdHash(uint64_t parent_hash, int32_t color, uint64_t split_index) {
  uint64_t s = SplitMix64(parent_hash ^ 0x73706c6974ULL);  // "split"
  s = SplitMix64(s ^ static_cast<uint32_t>(color));
  return SplitMix64(s ^ split_index);
}

}  // namespace rs
