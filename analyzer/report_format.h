// Small formatting helpers shared by the analyses' summaries and the renderers.
#pragma once

#include <cstdint>
#include <string>

namespace analyzer {

// 8930000 -> "8.93 ms"; 1500 -> "1.5 us"; keeps 3 significant digits.
std::string FormatNs(int64_t ns);
// 0.853 -> "85%".
std::string FormatPercent(double fraction);
// Hex spelling of a communicator hash, as users see it in queries: "0x1a2b...".
std::string FormatHash(uint64_t v);

}  // namespace analyzer
