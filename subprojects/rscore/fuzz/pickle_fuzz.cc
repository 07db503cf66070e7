// Fuzz target for the pickle decoder: arbitrary bytes must give JSON values or an error value,
// never a crash, hang, leak or exception; and the values must serialize (nlohmann-json throws
// on a string that is not UTF-8, which the decoder promises never to return).
// Built with libFuzzer when configured with -Dfuzz=true and clang; otherwise built as a
// replay tool that runs the same entry point over files given on the command line.
#include <cstdint>
#include <string>
#include <string_view>

#include "rscore/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Limits far below the defaults keep each input fast; reaching them is what gets tested.
  static const rs::pickle::Limits limits{
      .max_depth = 256, .max_values = 100'000, .max_bytes = std::size_t{1} << 20};
  auto decoded =
      rs::pickle::Decode(std::string_view(reinterpret_cast<const char*>(data), size), limits);
  if (decoded.ok()) (void)decoded->dump();
  return 0;
}

#include "replay_main.h"
