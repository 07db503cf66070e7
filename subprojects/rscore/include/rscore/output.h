// The output files of the workstation tools (merge, analyze report, export): checked before
// any work is done (CheckOutput), built in a temporary that no name points at (OutputFile), and
// given their name only once complete (Commit). An input is never written over, an existing
// file is replaced only with --force, and an interrupted run leaves nothing behind.
// See README "Command line" and each tool's man page.
#pragma once

#include <sys/types.h>

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "rscore/result.h"
#include "rscore/scratch_file.h"

namespace rs {

// Where a result goes, once checked.
struct OutputTarget {
  enum class Kind {
    kFile,    // a regular file, created or (with force) replaced
    kStdout,  // '-'
    kStream,  // an existing file that is not a regular file (/dev/null, a FIFO): written to
  };
  Kind kind = Kind::kFile;
  std::string path;    // as given
  bool force = false;  // an existing file may be replaced
  mode_t mode = 0600;  // of the new file (kFile)
  // The path, or "standard output".
  std::string shown() const;
};

// Checks where a tool that reads `inputs` is to write (`path`, '-' for standard output)
// before it does any work. An error is a usage error (rs::cli::kExitUsage) and names the
// paths involved:
//  - the output is not one of the inputs: the same file by device and inode, so a hard link, a
//    symbolic link or another spelling of the path is caught; an input that is a directory
//    stands for the files directly inside it; for '-', standard output is not an input either
//    (`>> input`);
//  - an existing file is replaced only with `force`; a directory never;
//  - the output's directory exists and is writable.
// The mode of a new file: read-write for its owner; for group and others only what every
// input grants them (a 0600 bundle gives a 0600 output); never more than `max_mode` and the
// umask allow.
Result<OutputTarget> CheckOutput(const std::string& path, bool force,
                                 const std::vector<std::string>& inputs, mode_t max_mode = 0666);

// The file a result is written into before it is complete.
//  - For a file: an unnamed file (O_TMPFILE) in the output's directory, linked to the output's
//    name by Commit; where the file system has no unnamed files, one named
//    .NAME.tmp-rankscope-PID-XXXXXX beside it, removed on every error and by SIGINT, SIGTERM,
//    SIGHUP and SIGPIPE. Temporaries of earlier runs whose process is gone (killed) are removed
//    when the next output is created in that directory, each reported on standard error.
//  - For standard output and streams: an unnamed file in $TMPDIR (else /tmp), copied to them
//    by Commit, so that a failed run writes nothing there.
// Dropped without Commit (an error, an exception), nothing remains.
class OutputFile {
 public:
  static Result<OutputFile> Create(const OutputTarget& target);
  OutputFile() = default;
  OutputFile(OutputFile&& o) noexcept;
  OutputFile& operator=(OutputFile&& o) noexcept;
  ~OutputFile();

  // Open for reading and writing, at offset 0 when created.
  int fd() const { return fd_; }
  // A name by which the temporary can be opened again (open(2), SQLite): /proc/self/fd/N for
  // an unnamed file.
  const std::string& path() const { return path_; }
  // The directory of the temporary: where more temporaries of the same run belong.
  const std::string& dir() const { return dir_; }
  const OutputTarget& target() const { return target_; }
  // The output's name for messages: its path, or "standard output".
  std::string shown() const { return target_.shown(); }
  // Writes all of `data` at the current offset; an error names the output.
  Result<void> Write(const void* data, size_t size);
  // The result is complete: the file gets its mode and its name (replacing an existing file
  // only with force), or is copied to standard output or the stream. Call once, after every
  // writer of the temporary has flushed and closed its own descriptors.
  Result<void> Commit();

 private:
  void Discard();
  OutputTarget target_;
  int fd_ = -1;
  std::string path_;
  std::string dir_;
  std::string named_;     // the temporary's name where it has one
  int cleanup_slot_ = -1;  // its slot in the signal cleanup
};

// A text result in one piece: created, written and committed as OutputFile does.
Result<void> WriteOutputText(const OutputTarget& target, std::string_view text);

// The error of a failed write to `name` (a file, or "standard output"): a full disk is said as
// such ("no space left on device writing NAME").
Error WriteError(const std::string& name, int err);

// Every byte of `data` written to `fd`, retried on EINTR and short writes.
Result<void> WriteAllTo(int fd, const void* data, size_t size, const std::string& name);

// A descriptor (standard output) as a buffered std::ostream for output written piecewise
// (query's rows): the first failed write is kept, its errno too, for Close to report (a full
// disk, /dev/full, a closed pipe with SIGPIPE ignored); the stream goes bad then, so that a
// writer can stop early.
class FdOstream : public std::ostream {
 public:
  FdOstream(int fd, std::string name);
  ~FdOstream() override;
  // Flushes; the error of the first failed write, naming the output.
  Result<void> Close();

 private:
  class Buf : public std::streambuf {
   public:
    Buf(int fd, std::string name);
    bool Flush();
    int error() const { return error_; }
    const std::string& name() const { return name_; }

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    int fd_;
    std::string name_;
    std::string buf_;
    int error_ = 0;
  };
  Buf buf_;
};

// Temporaries of the signal cleanup, for a file that must keep a name while it is written:
// the handler of SIGINT, SIGTERM, SIGHUP and SIGPIPE (installed by the first Add, for each of
// them not ignored) removes every registered path, then raises the signal again with its
// default action. A fixed number of slots; -1 when all are taken (the path is then removed by
// its owner only).
int AddSignalCleanup(const std::string& path);
void RemoveSignalCleanup(int slot);

namespace internal {
// Tests only: behave as on a file system without unnamed temporary files.
void ForceNamedTemporaries(bool on);
}  // namespace internal

}  // namespace rs
