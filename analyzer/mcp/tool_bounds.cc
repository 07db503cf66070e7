#include "analyzer/mcp/tool_bounds.h"

namespace rs::analyzer::mcp {
namespace {

bool CutStrings(Json& j) {
  bool cut = false;
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() > kMaxStringChars) {
      j = CutString(s, kMaxStringChars);
      cut = true;
    }
  } else if (j.is_structured()) {
    for (Json& child : j) cut = CutStrings(child) || cut;
  }
  return cut;
}

// The array with the most serialized bytes under `j` (itself included), or null.
Json* LargestArray(Json& j, size_t* size) {
  Json* best = nullptr;
  *size = 0;
  if (j.is_array() && j.size() > 0) {
    best = &j;
    *size = Dump(j).size();
  }
  if (j.is_structured()) {
    for (Json& child : j) {
      size_t s = 0;
      Json* a = LargestArray(child, &s);
      if (a != nullptr && s > *size) {
        best = a;
        *size = s;
      }
    }
  }
  return best;
}

}  // namespace

void MarkTruncated(Json& result, const std::string& hint) {
  result["truncated"] = true;
  if (!result.contains("hint")) result["hint"] = hint;
}

std::string CutString(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t n = max_chars > 3 ? max_chars - 3 : 0;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // a UTF-8 lead byte
  return s.substr(0, n) + "...";
}

bool FitResult(Json& result, const std::string& hint) {
  bool cut = CutStrings(result);
  while (Dump(result).size() > kMaxResultChars) {
    size_t size = 0;
    Json* a = LargestArray(result, &size);
    if (a == nullptr) break;  // nothing left to shorten (cannot happen with the string bound)
    a->erase(a->begin() + static_cast<std::ptrdiff_t>(a->size() / 2), a->end());
    cut = true;
  }
  if (cut) MarkTruncated(result, hint);
  return cut;
}

}  // namespace rs::analyzer::mcp
