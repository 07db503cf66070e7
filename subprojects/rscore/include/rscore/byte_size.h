// Sizes on the command line: "512M", "2G", "100000" (bytes); K, M, G, T are powers of 1024.
// rankscope-record's --ring-size and --cut-keep, the servers' --max-*-bytes.
#pragma once

#include <cstdint>
#include <string_view>

#include "rscore/result.h"

namespace rs {

Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace rs
