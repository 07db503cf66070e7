#include "fr_value.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "rscore/pickle.h"

namespace trainer::fr {
namespace {

Value Sample() {
  Value d = Value::Dict();
  d.Set("version", Value::Str("2.10"));
  d.Set("entries",
        Value::List(
            {Value::Dict()
                 .Set("record_id", Value::Int(3))
                 .Set("process_group", Value::Tuple({Value::Str("5"), Value::Str("TP \"x\"\n")}))
                 .Set("time_created_ns", Value::Int(1764000000123456789))
                 .Set("negative", Value::Int(-7))
                 .Set("time_discovered_started_ns", Value::None())
                 .Set("duration_ms", Value::Double(0.375))
                 .Set("retired", Value::Bool(true))
                 .Set("is_p2p", Value::Bool(false))
                 .Set("input_sizes",
                      Value::List({Value::List({Value::Int(4), Value::Int(1024)})}))}));
  d.Set("comm_lib_version", Value::Str("2.28.9"));
  return d;
}

// Both encodings decode to the same values: the pickle through rankscope's own decoder (what
// the merge reads), the JSON through nlohmann-json.
TEST(FrValue, PickleAndJsonHoldTheSameValues) {
  auto from_pickle = rs::pickle::Decode(Pickle(Sample()));
  ASSERT_TRUE(from_pickle.ok()) << from_pickle.error().message();
  nlohmann::json from_json = nlohmann::json::parse(Json(Sample()));
  EXPECT_EQ(*from_pickle, from_json);
  const nlohmann::json& e = from_json["entries"][0];
  EXPECT_EQ(e["time_created_ns"].get<int64_t>(), 1764000000123456789);
  EXPECT_EQ(e["negative"].get<int64_t>(), -7);
  EXPECT_EQ(e["process_group"][1].get<std::string>(), "TP \"x\"\n");
  EXPECT_TRUE(e["time_discovered_started_ns"].is_null());
  EXPECT_DOUBLE_EQ(e["duration_ms"].get<double>(), 0.375);
}

// The pickle keeps insertion order (c10::Dict); JSON's keys come sorted, as nlohmann::json
// writes an object.
TEST(FrValue, KeyOrderOfEachEncoding) {
  const std::string json = Json(Sample());
  EXPECT_LT(json.find("\"comm_lib_version\""), json.find("\"entries\""));
  EXPECT_LT(json.find("\"entries\""), json.find("\"version\""));
  const std::string pickle = Pickle(Sample());
  EXPECT_LT(pickle.find("version"), pickle.find("entries"));
  EXPECT_LT(pickle.find("entries"), pickle.find("comm_lib_version"));
  EXPECT_EQ(pickle.substr(0, 2), "\x80\x02");
  EXPECT_EQ(pickle.back(), '.');
}

}  // namespace
}  // namespace trainer::fr
