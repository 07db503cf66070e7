// A file's XXH64 (seed 0) as 16 lowercase hex digits: the checksum the fleet's bundle listing
// carries and `rankscope-fleet collect` verifies a download against (the same digits as
// `xxhsum -H64 FILE`).
#pragma once

#include <cstdint>
#include <string>

#include "rscore/result.h"

namespace rs {

Result<std::string> FileXxh64(const std::string& path);
std::string Xxh64Hex(uint64_t hash);

}  // namespace rs
