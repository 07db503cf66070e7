// In-memory bundle database for the recorder's unit tests.
#pragma once

#include <gtest/gtest.h>

#include <span>

#include "rscore/clock.h"
#include "rscore/event_id.h"
#include "rscore/schema.h"
#include "rscore/sqlite.h"

namespace rs::rec::testing {

struct TestDb {
  TestDb() : ids(rs::RecordingKey("0123456789abcdef0123456789abcdef")) {
    auto d = rs::Db::Open(":memory:", rs::Db::Mode::kCreate);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.error().message());
    db = std::move(*d);
    auto s = rs::CreateSchema(db, rs::DbKind::kBundle);
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message());
    // mono 1000 s <-> wall 1.7e18 ns, rate 1: wall = mono + offset.
    rs::ClockRef a, b;
    a.mono_ns = 1'000'000'000'000;
    a.realtime_ns = kOffset + a.mono_ns;
    b.mono_ns = 2'000'000'000'000;
    b.realtime_ns = kOffset + b.mono_ns;
    clock.Add(a);
    clock.Add(b);
  }
  int64_t Int(const std::string& sql) {
    auto v = db.QueryInt(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() ? *v : -1;
  }
  std::string Text(const std::string& sql) {
    auto v = db.QueryText(sql);
    EXPECT_TRUE(v.ok()) << sql << ": " << (v.ok() ? "" : v.error().message());
    return v.ok() && *v ? **v : "<null>";
  }
  static constexpr int64_t kOffset = 1'700'000'000'000'000'000;
  rs::Db db;
  rs::EventIdAllocator ids;
  rs::MonoToWall clock;
};

template <typename T>
std::span<const uint8_t> Bytes(const T& v) {
  return {reinterpret_cast<const uint8_t*>(&v), sizeof(v)};
}

}  // namespace rs::rec::testing
