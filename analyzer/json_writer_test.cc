#include "json_writer.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace analyzer {
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

}  // namespace
}  // namespace analyzer
