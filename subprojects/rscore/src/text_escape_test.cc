#include "rscore/text_escape.h"

#include <gtest/gtest.h>

#include <string>

namespace rs {
namespace {

TEST(EscapeText, OrdinaryTextIsLeftAsItIs) {
  for (std::string_view s : {"", "node7", "/data/run 3/nccl_trace_rank_0", "größe_Ω_日本", "a\\b",
                             "pg:0 (default_pg)"}) {
    EXPECT_FALSE(NeedsEscape(s)) << s;
    EXPECT_EQ(EscapeText(s), s);
  }
}

TEST(EscapeText, AForgedLineStaysOnItsOwnLine) {
  // A process-group name that would print a report line of its own.
  const std::string forged = "pg0\n\nSTRAGGLER: node7 (rank 7) 812 ms late\r";
  EXPECT_TRUE(NeedsEscape(forged));
  const std::string shown = EscapeText(forged);
  EXPECT_EQ(shown, "pg0\\n\\nSTRAGGLER: node7 (rank 7) 812 ms late\\r");
  EXPECT_EQ(shown.find('\n'), std::string::npos);
}

TEST(EscapeText, TerminalEscapesAndOtherControlsAreShown) {
  EXPECT_EQ(EscapeText("\x1b[2J\x1b]0;title\x07"), "\\x1b[2J\\x1b]0;title\\x07");
  EXPECT_EQ(EscapeText(std::string("a\0b\x7f\tc", 6)), "a\\x00b\\x7f\\tc");
  // C1 controls as UTF-8 (U+009B, CSI) and as a lone byte (8-bit terminals).
  EXPECT_EQ(EscapeText("x\xc2\x9b"
                       "31m"),
            "x\\u009b31m");
  EXPECT_EQ(EscapeText("x\x9b"
                       "31m"),
            "x\\x9b31m");
  // A right-to-left override and a line separator.
  EXPECT_EQ(EscapeText("a\xe2\x80\xae"
                       "b\xe2\x80\xa8"),
            "a\\u202eb\\u2028");
}

TEST(EscapeText, InvalidUtf8IsShownBytewise) {
  // Truncated, overlong ('/' as two bytes), a surrogate, past U+10FFFF.
  EXPECT_EQ(EscapeText("\xe6\x97"), "\\xe6\\x97");
  EXPECT_EQ(EscapeText("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeText("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  EXPECT_EQ(EscapeText("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");
  // The valid text around them is kept.
  EXPECT_EQ(EscapeText("日\xff本"), "日\\xff本");
}

}  // namespace
}  // namespace rs
