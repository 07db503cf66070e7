// Writing to a file descriptor with every failure reported by name: WriteAllTo and FdOstream
// (declared in output.h), used by the output files and by whatever writes to standard output.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "rscore/output.h"

namespace rs {

Error WriteError(const std::string& name, int err) {
  if (err == ENOSPC) return Error("no space left on device writing " + name, ErrorKind::kNoSpace);
  if (err == EDQUOT) return Error("disk quota exceeded writing " + name, ErrorKind::kNoSpace);
  return ErrnoError("cannot write " + name, err);
}

Result<void> WriteAllTo(int fd, const void* data, size_t size, const std::string& name) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return WriteError(name, errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return Ok();
}

FdOstream::Buf::Buf(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
  buf_.reserve(1 << 16);
}

bool FdOstream::Buf::Flush() {
  if (error_ != 0) return false;
  const char* p = buf_.data();
  size_t size = buf_.size();
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error_ = errno;
      break;
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  buf_.clear();
  return error_ == 0;
}

FdOstream::Buf::int_type FdOstream::Buf::overflow(int_type c) {
  if (error_ != 0) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    buf_.push_back(traits_type::to_char_type(c));
    if (buf_.size() >= (1 << 16) && !Flush()) return traits_type::eof();
  }
  return traits_type::not_eof(c);
}

std::streamsize FdOstream::Buf::xsputn(const char* s, std::streamsize n) {
  if (error_ != 0) return 0;
  buf_.append(s, static_cast<size_t>(n));
  if (buf_.size() >= (1 << 16) && !Flush()) return 0;
  return n;
}

int FdOstream::Buf::sync() { return Flush() ? 0 : -1; }

FdOstream::FdOstream(int fd, std::string name) : std::ostream(nullptr), buf_(fd, std::move(name)) {
  rdbuf(&buf_);
}

FdOstream::~FdOstream() { buf_.Flush(); }

Result<void> FdOstream::Close() {
  buf_.Flush();
  if (buf_.error() != 0) return WriteError(buf_.name(), buf_.error());
  if (!*this) return Error("cannot write " + buf_.name());
  return Ok();
}

}  // namespace rs
