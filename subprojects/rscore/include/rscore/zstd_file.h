// Streaming zstd compression of whole files (bundles are one zstd frame with a checksum).
#pragma once

#include <cstdint>
#include <string>

#include "rscore/result.h"

namespace rs {

// Compresses `in_path` into `out_path` (created with `mode`), frame checksum on.
Result<void> CompressFile(const std::string& in_path, const std::string& out_path, int level,
                          unsigned mode = 0600);
// What decompressing a file may write, checked before each write (a 436 KB zstd bomb wrote
// 12.3 GB to $TMPDIR before its content was refused): at most kMaxDecompressionRatio times the
// file's size, or kDecompressionFloorBytes when that is more (a small recording's mostly empty
// pages compress far better than its events, which take about 6 times less room), and never
// more than the output's file system has free beyond kDecompressionKeepFreeBytes. Past either
// the decompression stops with an error that names the file and the limit.
inline constexpr int64_t kMaxDecompressionRatio = 200;
inline constexpr int64_t kDecompressionFloorBytes = int64_t{64} << 20;
inline constexpr int64_t kDecompressionKeepFreeBytes = int64_t{64} << 20;

// Decompresses into `out_path`; a truncated or corrupted frame is an error naming `in_path`,
// and so is an output past the limits above.
Result<void> DecompressFile(const std::string& in_path, const std::string& out_path,
                            unsigned mode = 0600);
// The same into an open descriptor (written from its current offset); `out_name` names it in
// errors.
Result<void> CompressToFd(const std::string& in_path, int out_fd, const std::string& out_name,
                          int level);
Result<void> DecompressToFd(const std::string& in_path, int out_fd, const std::string& out_name);
// True when the file starts with the zstd frame magic.
bool HasZstdMagic(const std::string& path);

}  // namespace rs
