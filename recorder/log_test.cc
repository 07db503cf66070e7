#include "recorder/log.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace rec {
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

}  // namespace
}  // namespace rec
