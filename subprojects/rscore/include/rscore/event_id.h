// Node-namespaced event ids: the high 31 bits name the recording, the low 32 count events.
// Two recordings' ids collide only if their 31-bit keys do; rankscope-merge checks that.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rs {

// Derived from the recording id (a random 128-bit hex string). Never 0.
uint32_t RecordingKey(std::string_view recording_id);

inline constexpr int64_t MakeEventId(uint32_t recording_key, uint32_t counter) {
  return static_cast<int64_t>((static_cast<uint64_t>(recording_key & 0x7fffffffu) << 32) | counter);
}
inline constexpr uint32_t EventIdRecordingKey(int64_t id) {
  return static_cast<uint32_t>(static_cast<uint64_t>(id) >> 32);
}

class EventIdAllocator {
 public:
  explicit EventIdAllocator(uint32_t recording_key) : key_(recording_key) {}
  int64_t Next() { return MakeEventId(key_, ++counter_); }
  uint32_t count() const { return counter_; }
  uint32_t key() const { return key_; }

 private:
  uint32_t key_;
  uint32_t counter_ = 0;
};

// A fresh random recording id: 32 lowercase hex digits.
std::string NewRecordingId();

}  // namespace rs
