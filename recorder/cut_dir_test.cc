// The cut directory read as a stranger's input: requests, CUT-ID directories, rotation and
// left-overs, each against what a local user could plant there (links out of the directory,
// a FIFO, a huge or foreign request, forged fields).
#include "recorder/cut_dir.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "recorder/test_temp_dir.h"

namespace rs::rec {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr uid_t kNobody = 65534;

using TempDirGuard = testing::TempDir;

bool Exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

void Write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CutRequests, AJoinWithinTheWindowAndPendingOnesPerNode) {
  TempDirGuard dir;
  auto a = PostCutRequest(dir.path, "n1", 100 * kSec, "stall", 10 * kSec);
  ASSERT_TRUE(a.ok()) << a.error().message();
  EXPECT_NE(a->cut_id.find("-stall-n1"), std::string::npos);
  auto b = PostCutRequest(dir.path, "n2", 105 * kSec, "request", 10 * kSec);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->cut_id, a->cut_id) << "within 10 s: joined";
  EXPECT_EQ(b->node, "n1");
  auto c = PostCutRequest(dir.path, "n2", 200 * kSec, "request", 10 * kSec);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->cut_id, a->cut_id);
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 0).pending.size(), 2u);
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 150 * kSec).pending.size(), 1u)
      << "older than its start";
  std::ofstream(dir.path + "/" + a->cut_id + "/n3.rsb") << "x";
  EXPECT_EQ(PendingCutRequests(dir.path, "n3", 0).pending.size(), 1u) << "answered";
}

TEST(CutRotation, OldestOfThisNodeGoFirstNeverTheNewest) {
  TempDirGuard dir;
  for (const char* id :
       {"20260101T000000Z-stop", "20260102T000000Z-stop", "20260103T000000Z-stop"}) {
    ASSERT_TRUE(MakeDirs(dir.path + "/" + id).ok());
    std::ofstream(dir.path + "/" + id + "/n1.rsb") << std::string(1000, 'x');
  }
  std::ofstream(dir.path + "/20260101T000000Z-stop/n2.rsb") << "other node";
  const auto removed = RotateCuts(dir.path, "n1", 1500);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_NE(removed[0].find("20260101"), std::string::npos);
  EXPECT_NE(removed[1].find("20260102"), std::string::npos);
  EXPECT_EQ(access((dir.path + "/20260101T000000Z-stop/n2.rsb").c_str(), F_OK), 0)
      << "another node's bundle stays, and its directory";
  EXPECT_NE(access((dir.path + "/20260102T000000Z-stop").c_str(), F_OK), 0) << "emptied: gone";
  EXPECT_EQ(access((dir.path + "/20260103T000000Z-stop/n1.rsb").c_str(), F_OK), 0);
  EXPECT_TRUE(RotateCuts(dir.path, "n1", 0).empty()) << "0 keeps all";
}

TEST(CutLeftovers, ADeadRecordersCopyAndHalfBundleGoNothingElse) {
  TempDirGuard dir;
  // A pid that no longer runs: a child that has exited and been reaped.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  ASSERT_GT(dead, 0);
  int status = 0;
  ASSERT_EQ(waitpid(dead, &status, 0), dead);
  const std::string cut = dir.path + "/20260101T000000Z-stall";
  ASSERT_TRUE(MakeDirs(cut).ok());
  const std::string d = std::to_string(dead), me = std::to_string(getpid());
  for (const std::string& name : std::vector<std::string>{
           ".n1.cut-" + d + ".db", ".n1.cut-" + d + ".db-journal", "n1.rsb.partial",  // stale
           ".n1.rsb.partial-" + d + "-aBcDeF", ".n1.cut-" + me + ".db",
           ".n1.rsb.partial-" + me + "-aBcDeF",       // ours, live
           ".n2.cut-" + d + ".db", "n2.rsb.partial",  // another node's
           "n1.rsb", "request", ".n1.cut-x.db", ".n1.cut-" + d + ".txt", ".n1.cut-" + d + ".dbx"}) {
    std::ofstream(cut + "/" + name) << "x";
  }
  std::ofstream(dir.path + "/notes") << "a file beside the cuts";
  const auto removed = RemoveStaleCutFiles(dir.path, "n1");
  ASSERT_EQ(removed.size(), 4u);
  EXPECT_EQ(removed[0], cut + "/.n1.cut-" + d + ".db");
  EXPECT_EQ(removed[1], cut + "/.n1.cut-" + d + ".db-journal");
  EXPECT_EQ(removed[2], cut + "/.n1.rsb.partial-" + d + "-aBcDeF");
  EXPECT_EQ(removed[3], cut + "/n1.rsb.partial");
  for (const std::string& kept :
       std::vector<std::string>{".n1.cut-" + me + ".db", ".n1.rsb.partial-" + me + "-aBcDeF",
                                ".n2.cut-" + d + ".db", "n2.rsb.partial", "n1.rsb", "request",
                                ".n1.cut-x.db", ".n1.cut-" + d + ".txt", ".n1.cut-" + d + ".dbx"}) {
    EXPECT_EQ(access((cut + "/" + kept).c_str(), F_OK), 0) << kept;
  }
  EXPECT_TRUE(RemoveStaleCutFiles(dir.path, "n1").empty());
  EXPECT_TRUE(RemoveStaleCutFiles(dir.path + "/missing", "n1").empty());
}

TEST(CutPath, IdFromTheRequestElseTimeAndReason) {
  CutInfo info;
  info.reason = "stop";
  info.node = "node3";
  info.cut_ns = 1795627757458423862;  // 2026-11-25T17:29:17Z
  EXPECT_EQ(CutPath("/c", info), "/c/20261125T172917Z-stop/node3.rsb");
  info.cut_id = "X";
  EXPECT_EQ(CutPath("/c", info), "/c/X/node3.rsb");
}

// Each hostile request is refused with its reason, and none blocks or is read whole.
TEST(CutRequests, WhatAStrangerCouldPlantIsRefused) {
  TempDirGuard dir;
  auto cut = [&](const std::string& id) {
    EXPECT_TRUE(MakeDirs(dir.path + "/" + id).ok());
    return dir.path + "/" + id + "/request";
  };
  const std::string good = "node=n1\ncut_ns=5000000000\nreason=stall\n";
  Write(cut("20260101T000000Z-stall-n1"), good);  // taken
  ASSERT_EQ(symlink("/dev/zero", cut("20260101T000001Z-request-zero").c_str()), 0);
  ASSERT_EQ(mkfifo(cut("20260101T000002Z-request-fifo").c_str(), 0600), 0);  // would block
  {
    const int fd = open(cut("20260101T000003Z-request-huge").c_str(), O_CREAT | O_WRONLY, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, int64_t{100} << 30), 0);  // 100 GiB, sparse
    close(fd);
  }
  Write(cut("20260101T000004Z-request-forged"),
        "node=n1 wrote /etc/shadow\ncut_ns=5000000000\nreason=request\n");
  Write(cut("20260101T000005Z-request-reason"), "node=n1\ncut_ns=5000000000\nreason=rm -rf\n");
  Write(cut("20260101T000006Z-request-time"), "node=n1\ncut_ns=soon\nreason=request\n");
  // A CUT-ID that is a link out of the directory, to one holding a request; a request that
  // is a second name of a file elsewhere.
  TempDirGuard outside;
  Write(outside.path + "/request", good);
  ASSERT_EQ(
      link((outside.path + "/request").c_str(), cut("20260101T000007Z-request-linked").c_str()), 0);
  ASSERT_EQ(symlink(outside.path.c_str(), (dir.path + "/20260101T000008Z-request-out").c_str()), 0);

  const PendingRequests found = PendingCutRequests(dir.path, "n2", 0);
  ASSERT_EQ(found.pending.size(), 1u);
  EXPECT_EQ(found.pending[0].cut_id, "20260101T000000Z-stall-n1");
  std::map<std::string, std::string> why;
  for (const RefusedRequest& r : found.refused) why[r.cut_id.substr(17)] = r.why;
  EXPECT_NE(why["request-zero"].find("not a regular file"), std::string::npos);
  EXPECT_NE(why["request-fifo"].find("not a regular file"), std::string::npos);
  EXPECT_NE(why["request-huge"].find("107374182400 bytes"), std::string::npos);
  EXPECT_NE(why["request-forged"].find("not one a recorder writes"), std::string::npos);
  EXPECT_NE(why["request-reason"].find("not one a recorder writes"), std::string::npos);
  EXPECT_NE(why["request-time"].find("not one a recorder writes"), std::string::npos);
  EXPECT_NE(why["request-linked"].find("2 links"), std::string::npos);
  EXPECT_NE(why["request-out"].find("symbolic link"), std::string::npos);
  EXPECT_EQ(found.refused.size(), 8u);
  // Posting joins only the real request.
  auto joined = PostCutRequest(dir.path, "n2", 5 * kSec, "request", 10 * kSec);
  ASSERT_TRUE(joined.ok()) << joined.error().message();
  EXPECT_EQ(joined->cut_id, "20260101T000000Z-stall-n1");
}

TEST(CutRequests, ARequestOfAnotherUserIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (chown); CI runs it as root";
  TempDirGuard dir;
  const std::string id = "20260101T000000Z-request-n9";
  ASSERT_TRUE(MakeDirs(dir.path + "/" + id).ok());
  Write(dir.path + "/" + id + "/request", "node=n9\ncut_ns=5000000000\nreason=request\n");
  ASSERT_EQ(chown((dir.path + "/" + id + "/request").c_str(), kNobody, kNobody), 0);
  const PendingRequests found = PendingCutRequests(dir.path, "n1", 0);
  EXPECT_TRUE(found.pending.empty());
  ASSERT_EQ(found.refused.size(), 1u);
  EXPECT_NE(found.refused[0].why.find("owned by uid 65534"), std::string::npos)
      << found.refused[0].why;
  // The cut directory's owner may post (recorders of a dedicated user on a shared disk).
  ASSERT_EQ(chown(dir.path.c_str(), kNobody, kNobody), 0);
  EXPECT_EQ(PendingCutRequests(dir.path, "n1", 0).pending.size(), 1u);
}

TEST(CutRequests, APlantedTemporaryNameIsNotWrittenThrough) {
  TempDirGuard dir, outside;
  const std::string victim = outside.path + "/victim";
  Write(victim, "precious");
  auto a = PostCutRequest(dir.path, "n1", 100 * kSec, "stall", 10 * kSec);
  ASSERT_TRUE(a.ok());
  const std::string sub = dir.path + "/20260101T000000Z-stall-n2";
  ASSERT_TRUE(MakeDirs(sub).ok());
  ASSERT_EQ(symlink(victim.c_str(), (sub + "/.request." + std::to_string(getpid())).c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), (sub + "/request").c_str()), 0);
  // The same id as that directory: a request posted at its time by n2.
  auto b = PostCutRequest(dir.path, "n2", 1767225600 * kSec, "stall", 10 * kSec);
  ASSERT_TRUE(b.ok()) << b.error().message();
  EXPECT_EQ(b->cut_id, "20260101T000000Z-stall-n2");
  std::ifstream in(victim);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "precious");
  struct stat st {};
  ASSERT_EQ(lstat((sub + "/request").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode)) << "the link was replaced by the request";
}

TEST(CutIdDir, ALinkOrAStrangersDirectoryIsNoCutDirectory) {
  TempDirGuard dir, outside;
  ASSERT_EQ(symlink(outside.path.c_str(), (dir.path + "/20260101T000000Z-stop").c_str()), 0);
  auto linked = CutIdDir(dir.path, "20260101T000000Z-stop");
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.error().message().find("a symbolic link"), std::string::npos);
  EXPECT_FALSE(CutIdDir(dir.path, "../escape").ok());
  EXPECT_FALSE(CutIdDir(dir.path, ".hidden").ok());
  auto made = CutIdDir(dir.path, "20260101T000001Z-stop");
  ASSERT_TRUE(made.ok());
  struct stat st {};
  ASSERT_EQ(stat(made->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(CutIdDir(dir.path, "20260101T000001Z-stop").ok()) << "an existing one of ours";
  if (geteuid() == 0) {
    ASSERT_EQ(chown(made->c_str(), kNobody, kNobody), 0);
    EXPECT_FALSE(CutIdDir(dir.path, "20260101T000001Z-stop").ok());
  }
}

// A CUT-ID planted as a link to a directory outside: rotation and the left-over cleanup
// never delete through it.
TEST(CutRotation, NeverLeavesTheCutDirectory) {
  TempDirGuard dir, outside;
  Write(outside.path + "/n1.rsb", std::string(1000, 'x'));
  Write(outside.path + "/n1.rsb.partial", "x");
  Write(outside.path + "/request", "x");
  ASSERT_EQ(symlink(outside.path.c_str(), (dir.path + "/20250101T000000Z-stop").c_str()), 0);
  for (const char* id : {"20260102T000000Z-stop", "20260103T000000Z-stop"}) {
    ASSERT_TRUE(MakeDirs(dir.path + "/" + id).ok());
    Write(dir.path + "/" + id + "/n1.rsb", std::string(1000, 'x'));
  }
  const auto removed = RotateCuts(dir.path, "n1", 100);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_NE(removed[0].find("20260102T000000Z-stop"), std::string::npos);
  EXPECT_TRUE(RemoveStaleCutFiles(dir.path, "n1").empty());
  for (const char* name : {"n1.rsb", "n1.rsb.partial", "request"}) {
    EXPECT_TRUE(Exists(outside.path + "/" + name)) << name;
  }
}

// Cuts for other nodes' requests do not rotate away this node's own incident.
TEST(CutRotation, TheNewestIncidentOfThisNodeStays) {
  TempDirGuard dir;
  std::vector<std::string> ids = {"20260101T000000Z-stall-n1"};
  for (int i = 1; i <= 5; ++i)
    ids.push_back("2026010" + std::to_string(i + 1) + "T000000Z-request-n9");
  for (const std::string& id : ids) {
    ASSERT_TRUE(MakeDirs(dir.path + "/" + id).ok());
    Write(dir.path + "/" + id + "/n1.rsb", std::string(1000, 'x'));
  }
  const auto removed = RotateCuts(dir.path, "n1", 1500);
  EXPECT_EQ(removed.size(), 4u);
  EXPECT_TRUE(Exists(dir.path + "/" + ids.front() + "/n1.rsb")) << "this node's stall";
  EXPECT_TRUE(Exists(dir.path + "/" + ids.back() + "/n1.rsb")) << "the newest";
}

}  // namespace
}  // namespace rs::rec
