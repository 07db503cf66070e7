#include "rscore/zstd_file.h"

#include "rscore/output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

namespace rs {
namespace {

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

Result<int> OpenOut(const std::string& path, unsigned mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError(path + ": cannot create", errno);
  fchmod(fd, mode);
  return fd;
}

}  // namespace

Result<void> CompressFile(const std::string& in_path, const std::string& out_path, int level,
                          unsigned mode) {
  Fd out;
  ASSIGN_OR_RETURN(out.fd, OpenOut(out_path, mode));
  RETURN_IF_ERROR(CompressToFd(in_path, out.fd, out_path, level));
  if (fsync(out.fd) != 0) return ErrnoError(out_path + ": fsync failed", errno);
  if (close(std::exchange(out.fd, -1)) != 0) return WriteError(out_path, errno);
  return Ok();
}

Result<void> CompressToFd(const std::string& in_path, int out_fd, const std::string& out_name,
                          int level) {
  Fd in{open(in_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return ErrnoError(in_path + ": cannot open", errno);
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return Error(out_name + ": zstd: cannot create a compression context");
  for (auto [param, value] :
       {std::pair{ZSTD_c_compressionLevel, level}, std::pair{ZSTD_c_checksumFlag, 1}}) {
    size_t rc = ZSTD_CCtx_setParameter(cctx.get(), param, value);
    if (ZSTD_isError(rc)) return Error(out_name + ": zstd: " + ZSTD_getErrorName(rc));
  }
  std::vector<char> ibuf(ZSTD_CStreamInSize()), obuf(ZSTD_CStreamOutSize());
  bool last = false;
  while (!last) {
    ssize_t n = read(in.fd, ibuf.data(), ibuf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(in_path + ": read failed", errno);
    }
    last = n == 0;
    ZSTD_inBuffer ib{ibuf.data(), static_cast<size_t>(n), 0};
    ZSTD_EndDirective mode_dir = last ? ZSTD_e_end : ZSTD_e_continue;
    bool done = false;
    while (!done) {
      ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
      size_t rem = ZSTD_compressStream2(cctx.get(), &ob, &ib, mode_dir);
      if (ZSTD_isError(rem)) return Error(out_name + ": zstd: " + ZSTD_getErrorName(rem));
      RETURN_IF_ERROR(WriteAllTo(out_fd, obuf.data(), ob.pos, out_name));
      done = last ? rem == 0 : ib.pos == ib.size;
    }
  }
  return Ok();
}

Result<void> DecompressFile(const std::string& in_path, const std::string& out_path,
                            unsigned mode) {
  Fd out;
  ASSIGN_OR_RETURN(out.fd, OpenOut(out_path, mode));
  RETURN_IF_ERROR(DecompressToFd(in_path, out.fd, out_path));
  if (close(std::exchange(out.fd, -1)) != 0) return WriteError(out_path, errno);
  return Ok();
}

Result<void> DecompressToFd(const std::string& in_path, int out_fd, const std::string& out_name) {
  Fd in{open(in_path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (in.fd < 0) return ErrnoError(in_path + ": cannot open", errno);
  struct stat st {};
  if (fstat(in.fd, &st) != 0) return ErrnoError(in_path, errno);
  const int64_t by_ratio =
      std::max(kDecompressionFloorBytes, int64_t{st.st_size} * kMaxDecompressionRatio);
  int64_t room = std::numeric_limits<int64_t>::max();
  struct statvfs fs {};
  if (fstatvfs(out_fd, &fs) == 0) {
    room = static_cast<int64_t>(fs.f_bavail) * static_cast<int64_t>(fs.f_frsize) -
           kDecompressionKeepFreeBytes;
  }
  int64_t written = 0;
  // Checked before each write: nothing past a limit reaches the disk.
  auto check = [&](size_t more) -> Result<void> {
    if (written + static_cast<int64_t>(more) > by_ratio) {
      return Error(in_path + ": decompresses to more than " + std::to_string(by_ratio) +
                   " bytes, over " + std::to_string(kMaxDecompressionRatio) +
                   " times its size (rankscope's bundles decompress to less than 20 times theirs): "
                   "refused as a decompression bomb. If you trust the file, decompress it "
                   "yourself (zstd -d) and give the SQLite file instead");
    }
    if (written + static_cast<int64_t>(more) > room) {
      return Error(in_path + ": its decompressed copy (" + out_name + ") would leave less than " +
                       std::to_string(kDecompressionKeepFreeBytes >> 20) +
                       " MiB free on its file system: set TMPDIR to a file system with room",
                   ErrorKind::kNoSpace);
    }
    written += static_cast<int64_t>(more);
    return Ok();
  };
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  std::vector<char> ibuf(ZSTD_DStreamInSize()), obuf(ZSTD_DStreamOutSize());
  size_t last_ret = 0;
  bool any_input = false;
  for (;;) {
    ssize_t n = read(in.fd, ibuf.data(), ibuf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(in_path + ": read failed", errno);
    }
    if (n == 0) break;
    any_input = true;
    ZSTD_inBuffer ib{ibuf.data(), static_cast<size_t>(n), 0};
    while (ib.pos < ib.size) {
      ZSTD_outBuffer ob{obuf.data(), obuf.size(), 0};
      last_ret = ZSTD_decompressStream(dctx.get(), &ob, &ib);
      if (ZSTD_isError(last_ret)) {
        return Error(in_path + ": corrupted zstd data (" + ZSTD_getErrorName(last_ret) + ")",
                     ErrorKind::kCorrupt);
      }
      RETURN_IF_ERROR(check(ob.pos));
      RETURN_IF_ERROR(WriteAllTo(out_fd, obuf.data(), ob.pos, out_name));
    }
  }
  if (!any_input) return Error(in_path + ": empty file", ErrorKind::kCorrupt);
  if (last_ret != 0)
    return Error(in_path + ": truncated zstd data (the file is incomplete)", ErrorKind::kCorrupt);
  return Ok();
}

bool HasZstdMagic(const std::string& path) {
  Fd f{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (f.fd < 0) return false;
  unsigned char m[4];
  if (read(f.fd, m, 4) != 4) return false;
  return m[0] == 0x28 && m[1] == 0xB5 && m[2] == 0x2F && m[3] == 0xFD;
}

}  // namespace rs
