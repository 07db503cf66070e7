// Fuzz target for the bundle reader: arbitrary bytes as a .rsb / .rsdb file must give either a
// validated database or an error value, never a crash, hang or leak.
// Built with libFuzzer when configured with -Dfuzz=true and clang; otherwise built as a
// replay tool that runs the same entry point over files given on the command line.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "rscore/bundle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string tmpl = std::string(dir && *dir ? dir : "/tmp") + "/rscore_fuzz.XXXXXX";
    int fd = mkstemp(tmpl.data());
    if (fd >= 0) close(fd);
    return tmpl;
  }();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto opened = rs::OpenRankscopeFile(path);
  if (opened.ok()) {
    // Touch what the tools read first.
    (void)opened->db().QueryInt("SELECT COUNT(*) FROM nccl_events");
    (void)opened->db().QueryInt("SELECT COUNT(*) FROM clock_refs");
  }
  return 0;
}

#include "replay_main.h"
