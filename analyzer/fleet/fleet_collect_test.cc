#include "analyzer/fleet/fleet_collect.h"

#include <gtest/gtest.h>

namespace rs::fleet {
namespace {

TEST(FleetCollectTest, BundlesGoUnderTheirNodesName) {
  EXPECT_EQ(*CollectPath("out", "bundle.rsb", "node3"), "out/node3.rsb");
  EXPECT_EQ(*CollectPath("out", "2026-11-25T02-14-00Z-stall/node3.rsb", "node3"),
            "out/2026-11-25T02-14-00Z-stall/node3.rsb");
}

TEST(FleetCollectTest, ANodeCannotWriteOutsideTheDirectory) {
  for (const char* name :
       {"../x.rsb", "/etc/x.rsb", "a/../../x.rsb", "a//x.rsb", ".hidden/x.rsb", ""}) {
    EXPECT_FALSE(CollectPath("out", name, "node3").ok()) << name;
  }
  EXPECT_FALSE(CollectPath("out", "x.rsb", "../node3").ok());
  EXPECT_FALSE(CollectPath("out", "x.rsb", "").ok());
}

}  // namespace
}  // namespace rs::fleet
