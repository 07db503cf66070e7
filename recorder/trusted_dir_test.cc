// The directory checks on a tree made in /tmp: the owner check runs against a recorder uid
// that is not the files' owner (as root: the directory is given to nobody).
#include "recorder/trusted_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace rs::rec {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

class TrustedDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rs_trusted.XXXXXX";
    top_ = mkdtemp(tmpl);
    chmod(top_.c_str(), 0755);
  }
  void TearDown() override { fs::remove_all(top_); }
  std::string Make(const std::string& name, mode_t mode) {
    const std::string p = top_ + "/" + name;
    EXPECT_EQ(mkdir(p.c_str(), 0700), 0) << p;
    EXPECT_EQ(chmod(p.c_str(), mode), 0) << p;
    return p;
  }
  std::string Error(const std::string& dir, DirUse use) {
    auto r = TrustedDir(dir, use, "--cut-dir", geteuid());
    return r.ok() ? "" : r.error().message();
  }
  std::string top_;
};

TEST_F(TrustedDirTest, PrivateDirectoryOfOurOwnPasses) {
  const std::string d = Make("ring", 0700);
  auto r = TrustedDir(d, DirUse::kPrivate, "--ring-dir", geteuid());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, fs::canonical(d).string());
}

TEST_F(TrustedDirTest, WritableByOthersIsRefusedForPrivateUse) {
  for (mode_t mode : {0777, 01777, 0770, 0730}) {
    const std::string d = Make("w" + std::to_string(mode), mode);
    const std::string err = Error(d, DirUse::kPrivate);
    EXPECT_NE(err.find("is writable by"), std::string::npos) << std::oct << mode << ": " << err;
    EXPECT_NE(err.find("chmod go-w " + fs::canonical(d).string()), std::string::npos) << err;
  }
}

TEST_F(TrustedDirTest, StickySharedDirectoryIsFineForOutputOnly) {
  const std::string shared = Make("tmp", 01777);
  EXPECT_EQ(Error(shared, DirUse::kOutput), "");
  EXPECT_NE(Error(shared, DirUse::kPrivate), "");
  // Without the sticky bit others could rename the recorder's files: refused for both.
  const std::string open = Make("open", 0777);
  EXPECT_NE(Error(open, DirUse::kOutput).find("without the sticky bit"), std::string::npos);
}

TEST_F(TrustedDirTest, ADirectoryAboveThatOthersCanWriteIsRefused) {
  const std::string above = Make("above", 0777);
  const std::string d = above + "/cuts";
  ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  const std::string err = Error(d, DirUse::kPrivate);
  EXPECT_NE(err.find("(above " + d + ")"), std::string::npos) << err;
  // Sticky above is fine (/tmp itself is sticky and above every test directory).
  chmod(above.c_str(), 01777);
  EXPECT_EQ(Error(d, DirUse::kPrivate), "");
}

TEST_F(TrustedDirTest, OwnedBySomeoneElseIsRefused) {
  const std::string d = Make("theirs", 0700);
  uid_t self = geteuid();
  if (self == 0) {
    ASSERT_EQ(chown(d.c_str(), kNobody, kNobody), 0);
  } else {
    self = self == kNobody ? kNobody - 1 : kNobody;  // the files are not this "recorder's"
  }
  auto r = TrustedDir(d, DirUse::kOutput, "--out", self);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is owned by uid"), std::string::npos) << r.error().message();
}

TEST_F(TrustedDirTest, ALinkIsResolvedAndItsTargetChecked) {
  const std::string safe = Make("safe", 0700);
  const std::string open = Make("open", 0777);
  ASSERT_EQ(symlink(safe.c_str(), (top_ + "/to-safe").c_str()), 0);
  ASSERT_EQ(symlink(open.c_str(), (top_ + "/to-open").c_str()), 0);
  auto r = TrustedDir(top_ + "/to-safe", DirUse::kPrivate, "--ring-dir", geteuid());
  ASSERT_TRUE(r.ok()) << r.error().message();
  EXPECT_EQ(*r, fs::canonical(safe).string()) << "the link is not used after the check";
  EXPECT_NE(Error(top_ + "/to-open", DirUse::kPrivate), "");
}

TEST_F(TrustedDirTest, MissingAndNotADirectory) {
  EXPECT_NE(Error(top_ + "/nope", DirUse::kOutput).find("No such file"), std::string::npos);
  const std::string file = top_ + "/file";
  {
    FILE* f = fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fclose(f);
  }
  EXPECT_NE(Error(file, DirUse::kOutput).find("not a directory"), std::string::npos);
}

}  // namespace
}  // namespace rs::rec
