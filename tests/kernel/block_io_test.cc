// Block I/O: O_DIRECT writes and reads of known size on a file of an ext4 filesystem on a
// loop device the test creates. Rows carry the device, the op, the issuing pid and bytes
// that add up to exactly what the test wrote and read.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "kernel_test.h"
#include "recorder_runner.h"

namespace rs::rec::ktest {
namespace {

constexpr size_t kBlock = 64 * 1024;
constexpr int kWrites = 16;  // 1 MiB
constexpr int kReads = 8;    // 512 KiB

class LoopFs {
 public:
  explicit LoopFs(const TempDir& dir) : image_(dir.File("disk.img")), mnt_(dir.File("mnt")) {
    if (Sh("truncate -s 64M " + image_) != 0) return;
    dev_ = ShOut("losetup -f --show " + image_);
    if (dev_.empty()) return;
    ok_ = Sh("mkfs.ext4 -q -F " + dev_ + " && mkdir -p " + mnt_ + " && mount " + dev_ + " " +
             mnt_) == 0;
    mounted_ = ok_;
  }
  ~LoopFs() {
    if (mounted_) Sh("umount " + mnt_);
    if (!dev_.empty()) Sh("losetup -d " + dev_);
  }
  bool ok() const { return ok_; }
  const std::string& dev() const { return dev_; }
  std::string File(const std::string& name) const { return mnt_ + "/" + name; }

 private:
  std::string image_, mnt_, dev_;
  bool ok_ = false, mounted_ = false;
};

TEST(BlockIo, DirectWritesAndReadsOnLoopDevice) {
  REQUIRE_ROOT_OR_SKIP();
  SKIP_UNLESS_OR_FAIL_IN_CI(Sh("command -v losetup >/dev/null && command -v mkfs.ext4 "
                               ">/dev/null") == 0,
                            "needs losetup and mkfs.ext4 (apt-get install mount e2fsprogs)");
  TempDir dir;
  LoopFs fs(dir);
  ASSERT_TRUE(fs.ok()) << "could not create the loop device filesystem";
  struct stat st {};
  ASSERT_EQ(stat(fs.dev().c_str(), &st), 0);
  std::string dev = std::to_string(major(st.st_rdev)) + ":" + std::to_string(minor(st.st_rdev));

  // Allocate and write the file first, so the measured O_DIRECT writes are pure overwrites
  // (no allocation, no metadata in our context).
  std::string file = fs.File("data");
  ASSERT_EQ(Sh("dd if=/dev/urandom of=" + file + " bs=64k count=" + std::to_string(kWrites) +
               " conv=fsync status=none && sync"),
            0);

  std::string out = dir.File("block.rsb");
  auto rec = RecorderProcess::Start({"--out", out, "--node", "kblock"});
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();

  int fd = open(file.c_str(), O_RDWR | O_DIRECT);
  ASSERT_GE(fd, 0) << std::strerror(errno);
  void* buf = nullptr;
  ASSERT_EQ(posix_memalign(&buf, 4096, kBlock), 0);
  std::memset(buf, 0x5a, kBlock);
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_EQ(pwrite(fd, buf, kBlock, static_cast<off_t>(i * kBlock)),
              static_cast<ssize_t>(kBlock));
  }
  for (int i = 0; i < kReads; ++i) {
    ASSERT_EQ(pread(fd, buf, kBlock, static_cast<off_t>(i * kBlock)), static_cast<ssize_t>(kBlock));
  }
  close(fd);
  free(buf);
  usleep(200'000);
  ASSERT_EQ(rec->Stop(SIGINT), 0) << rec->stderr_text();

  std::string me = std::to_string(getpid());
  std::string mine = " FROM block_events WHERE dev = '" + dev + "' AND pid = " + me;
  EXPECT_EQ(*QueryBundleInt(out, "SELECT IFNULL(SUM(bytes), 0)" + mine + " AND op = 'write'"),
            static_cast<int64_t>(kWrites * kBlock));
  EXPECT_EQ(*QueryBundleInt(out, "SELECT IFNULL(SUM(bytes), 0)" + mine + " AND op = 'read'"),
            static_cast<int64_t>(kReads * kBlock));
  EXPECT_GE(*QueryBundleInt(out, "SELECT COUNT(*)" + mine + " AND op = 'write'"), 1);
  // Issue -> complete latency is positive and bounded; rwbs agrees with op.
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*)" + mine +
                                     " AND (duration_ns <= 0 OR duration_ns > 10000000000)"),
            0);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*)" + mine +
                                     " AND ((op = 'write' AND rwbs NOT LIKE '%W%') OR "
                                     "(op = 'read' AND rwbs NOT LIKE '%R%'))"),
            0);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*)" + mine + " AND comm IS NULL"), 0);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT events FROM sources WHERE source = 'block'"),
            *QueryBundleInt(out, "SELECT COUNT(*) FROM block_events"));
}

}  // namespace
}  // namespace rs::rec::ktest
