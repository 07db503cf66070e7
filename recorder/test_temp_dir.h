// A directory of its own in /tmp for one of the recorder's unit tests, removed with it.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace rs::rec::testing {

struct TempDir {
  std::string path = [] {
    char tmpl[] = "/tmp/rs_recorder_unit.XXXXXX";
    const char* d = mkdtemp(tmpl);
    return std::string(d ? d : "");
  }();
  TempDir() = default;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

}  // namespace rs::rec::testing
