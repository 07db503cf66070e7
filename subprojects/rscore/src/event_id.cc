#include "rscore/event_id.h"

#include <xxhash.h>

#include <random>
#include <string>

namespace rs {

uint32_t RecordingKey(std::string_view recording_id) {
  uint32_t key =
      static_cast<uint32_t>(XXH64(recording_id.data(), recording_id.size(), 0)) & 0x7fffffffu;
  return key == 0 ? 1 : key;
}

std::string NewRecordingId() {
  std::random_device rd;
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 4; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 8; ++j) out.push_back(kHex[(v >> (j * 4)) & 0xf]);
  }
  return out;
}

}  // namespace rs
