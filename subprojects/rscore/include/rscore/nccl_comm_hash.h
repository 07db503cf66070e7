// NCCL's own communicator hash (`commHash`): the value NCCL passes to profiler plugins (init's
// commId), prints in its logs ("commId 0x...") and uses in RAS. It differs from rankscope's
// comm_id_hash (comm_hash.h) but is computed from the same inputs, so either can be derived
// from what the recorder sees at ncclCommInitRank / ncclCommSplit. Shared by the test bed's
// NCCL library (which must compute it as NCCL does) and whatever maps one hash to the other.
//
// NCCL 2.28's algorithm: an accumulator {1, 1} eats byte chunks (each eat first XORs the
// chunk's length into acc[0], then per 8-byte little-endian word mixes and adds it), and a
// digest mixes the accumulator into one 64-bit value. A root communicator hashes its
// 128-byte ncclUniqueId in one eat; a split child eats the parent's hash, the split count
// (1 for the parent's first split) and the color, as three separate eats.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace rs {

struct NcclHashState {
  uint64_t acc[2] = {1, 1};

  void Eat(const void* bytes, size_t size) {
    const unsigned char* p = static_cast<const unsigned char*>(bytes);
    acc[0] ^= size;
    while (size != 0) {
      acc[0] += acc[1];
      acc[1] ^= acc[0];
      acc[0] ^= acc[0] >> 31;
      acc[0] *= 0x9de62bbc8cef3ce3ULL;
      acc[1] ^= acc[1] >> 32;
      acc[1] *= 0x485cd6311b599e79ULL;
      size_t n = size < 8 ? size : 8;
      uint64_t word = 0;
      for (size_t b = 0; b < n; ++b) word |= static_cast<uint64_t>(p[b]) << (8 * b);
      p += n;
      size -= n;
      acc[0] += word;
    }
  }

  uint64_t Digest() const {
    uint64_t h = acc[0];
    h ^= h >> 31;
    h *= 0xbac3bd562846de6bULL;
    h += acc[1];
    h ^= h >> 32;
    h *= 0x995a187a14e7b445ULL;
    return h;
  }
};

// commHash of a communicator created from an ncclUniqueId (CommInitRank, CommInitRankConfig,
// CommInitAll): the id's 128 bytes in one eat.
inline uint64_t NcclCommHash(const void* unique_id, size_t size = 128) {
  NcclHashState s;
  s.Eat(unique_id, size);
  return s.Digest();
}

// commHash of a child of ncclCommSplit: split_count counts the parent's splits in this
// process, 1 for the first (the same on every rank, splits being collective).
inline uint64_t NcclSplitCommHash(uint64_t parent_hash, int32_t split_count, int32_t color) {
  NcclHashState s;
  s.Eat(&parent_hash, sizeof(parent_hash));
  s.Eat(&split_count, sizeof(split_count));
  s.Eat(&color, sizeof(color));
  return s.Digest();
}

}  // namespace rs
