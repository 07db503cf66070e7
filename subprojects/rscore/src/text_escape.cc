#include "rscore/text_escape.h"

#include <cstdint>
#include <cstdio>

namespace rs {
namespace {

// The length of the valid UTF-8 sequence at text[i] and its code point, or 0 when the bytes
// there are not one (overlong forms, surrogates and code points past U+10FFFF included).
size_t Utf8At(std::string_view text, size_t i, uint32_t& cp) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char b0 = b(0);
  size_t n;
  uint32_t min;
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  } else if ((b0 & 0xe0) == 0xc0) {
    n = 2, cp = b0 & 0x1f, min = 0x80;
  } else if ((b0 & 0xf0) == 0xe0) {
    n = 3, cp = b0 & 0x0f, min = 0x800;
  } else if ((b0 & 0xf8) == 0xf0) {
    n = 4, cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// Code points that act on the display rather than show: C1 controls, line and paragraph
// separators, bidirectional marks, embeddings, overrides and isolates.
bool Invisible(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0x061c ||
         cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
         (cp >= 0x2066 && cp <= 0x2069);
}

bool Control(unsigned char c) { return c < 0x20 || c == 0x7f; }

}  // namespace

bool NeedsEscape(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8At(text, i, cp);
    if (n == 0 || (n == 1 && Control(static_cast<unsigned char>(cp))) || Invisible(cp)) {
      return true;
    }
    i += n;
  }
  return false;
}

std::string EscapeText(std::string_view text) {
  if (!NeedsEscape(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 16);
  char buf[16];
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t n = Utf8At(text, i, cp);
    if (n == 0) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned char>(text[i]));
      out += buf;
      ++i;
      continue;
    }
    if (n == 1 && Control(static_cast<unsigned char>(cp))) {
      switch (cp) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
          out += buf;
      }
    } else if (Invisible(cp)) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace rs
