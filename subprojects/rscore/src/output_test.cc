#include "rscore/output.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "rscore/sqlite.h"

namespace rs {
namespace {

class OutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rscore_output_test.XXXXXX";
    dir_ = mkdtemp(tmpl);
    Write(In(), "input");
    chmod(In().c_str(), 0600);
  }
  void TearDown() override {
    internal::ForceNamedTemporaries(false);
    std::filesystem::remove_all(dir_);
  }
  std::string File(const std::string& name) const { return dir_ + "/" + name; }
  std::string In() const { return File("in.rsb"); }
  static void Write(const std::string& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }
  static std::string Read(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  // Every name in the directory, hidden ones included.
  std::set<std::string> Names() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.insert(e.path().filename().string());
    }
    return names;
  }
  std::string dir_;
};

TEST_F(OutputTest, RefusesAnInputUnderAnyName) {
  ASSERT_EQ(link(In().c_str(), File("hard.rsb").c_str()), 0);
  ASSERT_EQ(symlink(In().c_str(), File("sym.rsb").c_str()), 0);
  for (const std::string& out :
       {In(), File("hard.rsb"), File("sym.rsb"), dir_ + "/./in.rsb", dir_ + "//in.rsb"}) {
    for (bool force : {false, true}) {
      auto r = CheckOutput(out, force, {In()});
      ASSERT_FALSE(r.ok()) << out;
      EXPECT_NE(r.error().message().find("is the input " + In()), std::string::npos)
          << r.error().message();
      EXPECT_NE(r.error().message().find(out), std::string::npos) << r.error().message();
    }
  }
  // An input given as a directory stands for the files in it.
  auto r = CheckOutput(File("hard.rsb"), true, {dir_});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("is the input"), std::string::npos) << r.error().message();
  EXPECT_EQ(Read(In()), "input");
}

TEST_F(OutputTest, AnExistingFileOnlyWithForce) {
  Write(File("old.txt"), "old");
  auto r = CheckOutput(File("old.txt"), false, {In()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("exists; give --force"), std::string::npos)
      << r.error().message();
  ASSERT_TRUE(CheckOutput(File("old.txt"), true, {In()}).ok());
  // A dangling symbolic link is an existing name too.
  ASSERT_EQ(symlink("nowhere", File("dangling").c_str()), 0);
  EXPECT_FALSE(CheckOutput(File("dangling"), false, {In()}).ok());
  // Never a directory, never a missing directory.
  EXPECT_FALSE(CheckOutput(dir_, true, {In()}).ok());
  EXPECT_FALSE(CheckOutput(File("no/such/dir.txt"), true, {In()}).ok());
  // Not a regular file: written to, not replaced.
  auto dev = CheckOutput("/dev/null", false, {In()});
  ASSERT_TRUE(dev.ok()) << dev.error().message();
  EXPECT_EQ(dev->kind, OutputTarget::Kind::kStream);
  auto out = CheckOutput("-", false, {In()});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->kind, OutputTarget::Kind::kStdout);
  EXPECT_EQ(out->shown(), "standard output");
}

TEST_F(OutputTest, ModeIsTheMostRestrictiveOfTheInputs) {
  const mode_t old = umask(022);
  Write(File("open.rsb"), "x");
  chmod(File("open.rsb").c_str(), 0644);
  auto a = CheckOutput(File("a"), false, {File("open.rsb")});
  auto b = CheckOutput(File("b"), false, {File("open.rsb"), In()});
  auto c = CheckOutput(File("c"), false, {File("open.rsb")}, 0600);
  umask(old);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->mode, 0644u);
  EXPECT_EQ(b->mode, 0600u);
  EXPECT_EQ(c->mode, 0600u);
}

TEST_F(OutputTest, NothingHasANameUntilCommit) {
  auto target = CheckOutput(File("out.txt"), false, {In()});
  ASSERT_TRUE(target.ok());
  const std::set<std::string> before = Names();
  {
    auto out = OutputFile::Create(*target);
    ASSERT_TRUE(out.ok()) << out.error().message();
    ASSERT_TRUE(out->Write("abc", 3).ok());
    EXPECT_EQ(Names(), before);  // unnamed while written
  }
  EXPECT_EQ(Names(), before);  // dropped: nothing left
  auto out = OutputFile::Create(*target);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Write("abc", 3).ok());
  ASSERT_TRUE(out->Commit().ok());
  EXPECT_EQ(Read(File("out.txt")), "abc");
  struct stat st {};
  ASSERT_EQ(stat(File("out.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // the input's
  EXPECT_EQ(Names().size(), before.size() + 1);
}

TEST_F(OutputTest, AFileThatAppearedMeanwhileIsKeptWithoutForce) {
  for (bool named : {false, true}) {
    internal::ForceNamedTemporaries(named);
    const std::string path = File(named ? "n.txt" : "u.txt");
    auto target = CheckOutput(path, false, {In()});
    ASSERT_TRUE(target.ok());
    auto out = OutputFile::Create(*target);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE(out->Write("new", 3).ok());
    Write(path, "someone else's");
    auto r = out->Commit();
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("appeared meanwhile"), std::string::npos);
    EXPECT_EQ(Read(path), "someone else's");
    // With force it is replaced.
    target->force = true;
    auto again = OutputFile::Create(*target);
    ASSERT_TRUE(again.ok());
    ASSERT_TRUE(again->Write("new", 3).ok());
    ASSERT_TRUE(again->Commit().ok());
    EXPECT_EQ(Read(path), "new");
  }
  EXPECT_EQ(Names(), (std::set<std::string>{"in.rsb", "n.txt", "u.txt"}));
}

TEST_F(OutputTest, NamedTemporariesGoOnErrorAndOnSignals) {
  internal::ForceNamedTemporaries(true);
  auto target = CheckOutput(File("out.txt"), false, {In()});
  ASSERT_TRUE(target.ok());
  {
    auto out = OutputFile::Create(*target);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(Names().size(), 2u);  // the input and the named temporary
    EXPECT_NE(out->path().find(".out.txt.tmp-rankscope-" + std::to_string(getpid()) + "-"),
              std::string::npos)
        << out->path();
  }
  EXPECT_EQ(Names(), std::set<std::string>{"in.rsb"});
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGPIPE}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      auto out = OutputFile::Create(*target);
      if (!out.ok() || !out->Write("partial", 7).ok()) _exit(10);
      raise(sig);
      _exit(11);  // not reached: the handler raises the signal again
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig << ": status " << status;
    EXPECT_EQ(WTERMSIG(status), sig);
    EXPECT_EQ(Names(), std::set<std::string>{"in.rsb"}) << "signal " << sig;
  }
}

TEST_F(OutputTest, TemporariesOfKilledRunsAreRemoved) {
  // A pid that is gone: a child that has exited and was reaped.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  waitpid(gone, nullptr, 0);
  const std::string stale = File(".out.txt.tmp-rankscope-" + std::to_string(gone) + "-abcdef");
  const std::string young = File(".x.tmp-rankscope-" + std::to_string(gone) + "-ghijkl");
  const std::string alive =
      File(".y.tmp-rankscope-" + std::to_string(getppid()) + "-mnopqr");  // a live process
  for (const std::string& p : {stale, young, alive}) Write(p, "left");
  const timeval old[2] = {{time(nullptr) - 3600, 0}, {time(nullptr) - 3600, 0}};
  utimes(stale.c_str(), old);
  utimes(alive.c_str(), old);
  auto target = CheckOutput(File("out.txt"), false, {In()});
  ASSERT_TRUE(target.ok());
  auto out = OutputFile::Create(*target);
  ASSERT_TRUE(out.ok());
  EXPECT_NE(access(stale.c_str(), F_OK), 0);   // removed
  EXPECT_EQ(access(young.c_str(), F_OK), 0);   // perhaps a live run of another pid namespace
  EXPECT_EQ(access(alive.c_str(), F_OK), 0);   // its process lives
}

TEST_F(OutputTest, SqliteOpensAnUnnamedScratchFile) {
  const std::set<std::string> before = Names();
  auto a = CreateScratchFile(dir_, "a");
  auto b = CreateScratchFile(dir_, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(Names(), before);
  {
    auto db = Db::Open(b->path, Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok()) << db.error().message();
    ASSERT_TRUE(db->Exec("PRAGMA journal_mode=OFF; CREATE TABLE u(y); INSERT INTO u VALUES (7)")
                    .ok());
  }
  {
    auto db = Db::Open(a->path, Db::Mode::kReadWrite);
    ASSERT_TRUE(db.ok()) << db.error().message();
    ASSERT_TRUE(db->Exec("PRAGMA journal_mode=OFF; CREATE TABLE t(x)").ok());
    auto r = db->Exec("ATTACH DATABASE '" + b->path + "' AS b; INSERT INTO t SELECT y FROM b.u;"
                      " DETACH DATABASE b");
    ASSERT_TRUE(r.ok()) << r.error().message();
  }
  auto db = Db::Open(a->path, Db::Mode::kReadOnly);
  ASSERT_TRUE(db.ok());
  auto sum = db->QueryInt("SELECT SUM(x) FROM t");
  ASSERT_TRUE(sum.ok());
  EXPECT_EQ(*sum, 7);
  EXPECT_EQ(Names(), before);
  ReleaseScratchFile(*a);
  ReleaseScratchFile(*b);
}

TEST_F(OutputTest, AFullDeviceIsSaidAsSuch) {
  const int fd = open("/dev/full", O_WRONLY);
  ASSERT_GE(fd, 0);
  auto r = WriteAllTo(fd, "x", 1, "OUT");
  close(fd);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message(), "no space left on device writing OUT");
  // Through a link: were the device replaced instead of written to, only the link would be.
  ASSERT_EQ(symlink("/dev/full", File("full").c_str()), 0);
  auto target = CheckOutput(File("full"), false, {In()});
  ASSERT_TRUE(target.ok());
  ASSERT_EQ(target->kind, OutputTarget::Kind::kStream);
  auto out = OutputFile::Create(*target);
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->Write("x", 1).ok());  // the copy, in $TMPDIR
  auto c = out->Commit();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message(), "no space left on device writing " + File("full"));
}

}  // namespace
}  // namespace rs
