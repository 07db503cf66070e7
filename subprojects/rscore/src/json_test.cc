#include "rscore/json.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace rs {
namespace {

TEST(JsonWriterTest, NestedContainersAndEscapes) {
  JsonWriter w;
  w.BeginObject().Key("a").Int(-3).Key("s").String("q\"\\\n\x01").Key("l").BeginArray();
  w.Double(1.5).Double(2).Null().Bool(true).BeginObject().EndObject().EndArray();
  w.Key("nan").Double(std::numeric_limits<double>::quiet_NaN()).EndObject();
  EXPECT_EQ(w.str(),
            "{\"a\":-3,\"s\":\"q\\\"\\\\\\n\\u0001\",\"l\":[1.5,2,null,true,{}],\"nan\":null}");
}

TEST(JsonWriterTest, DoublesAreShortestRoundTrip) {
  for (double d : {8.32, 0.1 + 0.2, 1.0 / 3, 123456.789, 1e-7, 2.5e300, -0.75}) {
    JsonWriter w;
    w.Double(d);
    EXPECT_EQ(std::stod(w.str()), d) << w.str();
    EXPECT_LE(w.str().size(), 22u) << w.str();
  }
  JsonWriter w;
  w.BeginArray().Double(8.32).Double(0.1 + 0.2).Double(1234567.5).Double(3).Int(-4).EndArray();
  EXPECT_EQ(w.str(), "[8.32,0.30000000000000004,1234567.5,3,-4]");
}

// Text cells and recorded names may hold any bytes: multi-byte UTF-8 passes through unchanged,
// a byte that is not UTF-8 becomes U+FFFD, and the output parses as JSON.
TEST(JsonWriterTest, Utf8PassesThroughAndInvalidBytesAreReplaced) {
  EXPECT_EQ(JsonWriter::Quote("n\xC3\xB6"
                              "de \xE6\x97\xA5 \xF0\x9F\x94\xA5"),
            "\"n\xC3\xB6"
            "de \xE6\x97\xA5 \xF0\x9F\x94\xA5\"");
  EXPECT_EQ(JsonWriter::Quote("f\xFFo"), "\"f\xEF\xBF\xBDo\"");
  EXPECT_EQ(JsonWriter::Quote("\xC3"), "\"\xEF\xBF\xBD\"");  // truncated sequence
  EXPECT_EQ(JsonWriter::Quote(std::string("a\0"
                                          "b\x7f",
                                          4)),
            "\"a\\u0000"
            "b\x7f\"");
}

// Perfetto's strings: the same replacement without JSON's quoting; overlong forms, surrogates
// and truncated sequences are not UTF-8.
TEST(ValidUtf8, KeepsWellFormedAndReplacesTheRest) {
  EXPECT_EQ(ValidUtf8("n\xC3\xB6"
                      "de \xF0\x9F\x94\xA5"),
            "n\xC3\xB6"
            "de \xF0\x9F\x94\xA5");
  EXPECT_EQ(ValidUtf8("f\xFFo"), "f\xEF\xBF\xBDo");
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(ValidUtf8("a\xE6\x97"), "a\xEF\xBF\xBD\xEF\xBF\xBD");                // truncated
  EXPECT_EQ(ValidUtf8(std::string("\0x", 2)), std::string("\0x", 2));
}

}  // namespace
}  // namespace rs
