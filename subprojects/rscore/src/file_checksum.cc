#include "rscore/file_checksum.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

namespace rs {

std::string Xxh64Hex(uint64_t hash) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(hash));
  return b;
}

Result<std::string> FileXxh64(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, errno);
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(),
                                                                          XXH64_freeState);
  XXH64_reset(state.get(), 0);
  std::vector<char> buf(1 << 20);
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Error e = ErrnoError(path + ": read failed", errno);
      close(fd);
      return e;
    }
    if (n == 0) break;
    XXH64_update(state.get(), buf.data(), static_cast<size_t>(n));
  }
  close(fd);
  return Xxh64Hex(XXH64_digest(state.get()));
}

}  // namespace rs
