// The directory and the last component of a path, as the tools name their files: "a/b" ->
// "a" and "b", "b" -> "." and "b", "/b" -> "/" and "b".
#pragma once

#include <string>

namespace rs {

inline std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

inline std::string BaseOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace rs
