// Streaming zstd compression of whole files (bundles are one zstd frame with a checksum).
#pragma once

#include <string>

#include "rscore/result.h"

namespace rs {

// Compresses `in_path` into `out_path` (created with `mode`), frame checksum on.
Result<void> CompressFile(const std::string& in_path, const std::string& out_path, int level,
                          unsigned mode = 0600);
// Decompresses into `out_path`; a truncated or corrupted frame is an error naming `in_path`.
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
