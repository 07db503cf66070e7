// Without libFuzzer (RSCORE_LIBFUZZER unset): a main that runs the target once per file given,
// to replay a corpus or a crash input under a debugger. Included last by every fuzz target.
#pragma once

#ifndef RSCORE_LIBFUZZER
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    std::printf("%s: ok\n", argv[i]);
  }
  return 0;
}
#endif
