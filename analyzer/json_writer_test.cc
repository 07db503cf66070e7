#include "json_writer.h"

#include <gtest/gtest.h>

#include <limits>

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

}  // namespace
}  // namespace analyzer
