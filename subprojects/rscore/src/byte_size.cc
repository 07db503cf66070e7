#include "rscore/byte_size.h"

#include <cctype>
#include <string>

namespace rs {

Result<uint64_t> ParseByteSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string_view unit = text.substr(digits);
  if (digits == 0 || digits > 15 || unit.size() > 1) {
    return Error("expected a size such as 512M, 2G or 1048576 (bytes)");
  }
  uint64_t v = std::stoull(std::string(text.substr(0, digits)));
  int shift = 0;
  if (!unit.empty()) {
    const std::string_view units = "KMGT";
    const size_t i =
        units.find(static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0]))));
    if (i == std::string_view::npos)
      return Error("unknown unit '" + std::string(unit) + "' (K, M, G, T)");
    shift = 10 * static_cast<int>(i + 1);
  }
  if (shift && v > (~uint64_t{0} >> shift)) return Error("too large");
  return v << shift;
}

}  // namespace rs
