#include "recorder/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace rs::rec {
namespace {

// Everything Log and LogInfo wrote to a temporary sink while `write` ran.
template <typename F>
std::string Logged(F write) {
  FILE* f = std::tmpfile();
  EXPECT_NE(f, nullptr);
  if (!f) return "";
  FILE* old = SetLogSink(f);
  write();
  SetLogSink(old);
  std::fflush(f);
  std::rewind(f);
  char buf[4096] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  return std::string(buf, n);
}

TEST(Log, InformationalLinesGoUnderQuietWarningsStay) {
  const std::string loud = Logged([] {
    LogInfo("recording node %s", "n1");
    Log("warning: %s", "tracefs");
  });
  EXPECT_EQ(loud, "rankscope-record: recording node n1\nrankscope-record: warning: tracefs\n");
  const std::string quiet = Logged([] {
    SetQuiet(true);
    LogInfo("recording node %s", "n1");
    Log("warning: %s", "tracefs");
    SetQuiet(false);
  });
  EXPECT_EQ(quiet, "rankscope-record: warning: tracefs\n");
}

// A name from the node (a request's field, a library path, a process name) cannot forge a
// line of its own nor drive the terminal.
TEST(Log, ControlCharactersInWhatIsLoggedAreShownNotActedOn) {
  const std::string logged = Logged([] {
    Log("cut requested by %s", "n1\nrankscope-record: wrote /etc/shadow");
    Log("library %s", "/tmp/\x1b]0;owned\x07libnccl.so");
  });
  EXPECT_EQ(logged,
            "rankscope-record: cut requested by n1\\nrankscope-record: wrote /etc/shadow\n"
            "rankscope-record: library /tmp/\\x1b]0;owned\\x07libnccl.so\n");
}

TEST(Log, LibbpfLinesKeepTheirOwnNewlineOnly) {
  const std::string logged = Logged([] {
    auto as_is = [](const char* format, ...) {
      va_list args;
      va_start(args, format);
      LogAsIs(format, args);
      va_end(args);
    };
    as_is("libbpf: elf: %s\n", "/p/\rlib.so");
  });
  EXPECT_EQ(logged, "libbpf: elf: /p/\\rlib.so\n");
}

}  // namespace
}  // namespace rs::rec
