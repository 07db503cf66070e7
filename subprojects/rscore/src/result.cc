#include "rscore/result.h"

#include <cerrno>
#include <cstring>

namespace rs {

ErrorKind ErrnoKind(int err) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
      return ErrorKind::kNoSpace;
    case ENOENT:
    case ENOTDIR:
      return ErrorKind::kNotFound;
    case EACCES:
    case EPERM:
    case EROFS:
      return ErrorKind::kRefused;
    default:
      return ErrorKind::kOther;
  }
}

Error ErrnoError(const std::string& context, int err) {
  return Error(context + ": " + std::strerror(err), ErrnoKind(err));
}

}  // namespace rs
