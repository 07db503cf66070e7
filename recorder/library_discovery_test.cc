#include "recorder/library_discovery.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace rs::rec {
namespace {

namespace fs = std::filesystem;

// A fake /proc: PID/maps files and PID/root links into per-"container" root directories.
class FakeProc : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rs_discovery_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "proc");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string proc() const { return (dir_ / "proc").string(); }

  // A file at `path` inside root `root` (created on first use).
  fs::path File(const std::string& root, const std::string& path) {
    fs::path p = dir_ / root / path.substr(1);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "not really ELF";
    return p;
  }
  void Process(int pid, const std::string& root, const std::string& maps) {
    fs::path d = dir_ / "proc" / std::to_string(pid);
    fs::create_directories(d);
    fs::create_directories(dir_ / root);
    fs::create_directory_symlink(dir_ / root, d / "root");
    std::ofstream(d / "maps") << maps;
  }
  static std::string Line(const std::string& path) {
    return "7f0000000000-7f0000100000 r-xp 00000000 fd:01 42 " + path + "\n";
  }

  fs::path dir_;
};

TEST_F(FakeProc, FindsVenvAndContainerCopiesOncePerFile) {
  const std::string venv =
      "/tmp/job/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2";
  File("host", venv);
  // A container whose /usr/lib/libnccl.so.2 is another file.
  File("ctr", "/usr/lib/libnccl.so.2");
  // A second process of the same container: same file, reported once.
  Process(100, "host", Line("/usr/lib/x86_64-linux-gnu/libc.so.6") + Line(venv) + Line(venv));
  Process(200, "ctr", Line("/usr/lib/libnccl.so.2"));
  Process(201, "ctr", Line("/usr/lib/libnccl.so.2"));
  fs::create_directory_symlink(dir_ / "proc" / "100", dir_ / "proc" / "self");

  LibraryDiscovery d(proc(), {LibraryKind::kNccl});
  auto found = d.Scan();
  ASSERT_EQ(found.size(), 2u);
  std::sort(found.begin(), found.end(), [](auto& a, auto& b) { return a.pid < b.pid; });
  EXPECT_EQ(found[0].kind, LibraryKind::kNccl);
  EXPECT_EQ(found[0].path, venv);
  EXPECT_EQ(found[0].pid, 100);
  EXPECT_EQ(found[0].open_path, proc() + "/100/root" + venv);
  EXPECT_EQ(found[1].path, "/usr/lib/libnccl.so.2");
  EXPECT_TRUE(found[1].pid == 200 || found[1].pid == 201);  // whichever /proc lists first
  EXPECT_EQ(found[1].open_path,
            proc() + "/" + std::to_string(found[1].pid) + "/root/usr/lib/libnccl.so.2");
  EXPECT_NE(found[0].ino, found[1].ino);
  EXPECT_EQ(d.known_files(), 2u);
  // Nothing new on a rescan; a copy that appears later is found.
  EXPECT_TRUE(d.Scan().empty());
  File("late", "/dev/shm/env/lib/libnccl.so.2.28.9");
  Process(300, "late", Line("/dev/shm/env/lib/libnccl.so.2.28.9"));
  auto late = d.ScanPid(300);
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].path, "/dev/shm/env/lib/libnccl.so.2.28.9");
}

TEST_F(FakeProc, HardLinksAreTheSameFile) {
  fs::path a = File("host", "/opt/a/libnccl.so.2");
  fs::create_directories(dir_ / "host/opt/b");
  fs::create_hard_link(a, dir_ / "host/opt/b/libnccl.so.2");
  Process(10, "host", Line("/opt/a/libnccl.so.2"));
  Process(11, "host", Line("/opt/b/libnccl.so.2"));
  LibraryDiscovery d(proc(), {LibraryKind::kNccl});
  EXPECT_EQ(d.Scan().size(), 1u);
}

TEST_F(FakeProc, KindsPidsAndWhatIsIgnored) {
  File("host", "/opt/lib/libnccl.so.2");
  File("host", "/opt/lib/libnccl-net.so");
  File("host", "/opt/lib/libcudart.so.13");
  File("host", "/opt/lib/libcuda.so.1");
  Process(20, "host",
          Line("/opt/lib/libnccl-net.so") + Line("/opt/lib/libcudart.so.13") +
              Line("/opt/lib/libcuda.so.1") + Line("/opt/lib/gone/libnccl.so.2 (deleted)"));
  Process(21, "host", Line("/opt/lib/libnccl.so.2"));
  LibraryDiscovery cuda(proc(), {LibraryKind::kCudart, LibraryKind::kCuda});
  auto found = cuda.Scan();
  ASSERT_EQ(found.size(), 2u);
  std::set<LibraryKind> kinds{found[0].kind, found[1].kind};
  EXPECT_EQ(kinds, (std::set<LibraryKind>{LibraryKind::kCudart, LibraryKind::kCuda}));
  // --pid 20 only: the libnccl of pid 21 is not looked at; the deleted one is skipped.
  LibraryDiscovery only20(proc(), {LibraryKind::kNccl}, {20});
  EXPECT_TRUE(only20.Scan().empty());
  LibraryDiscovery only21(proc(), {LibraryKind::kNccl}, {21});
  EXPECT_EQ(only21.Scan().size(), 1u);
  // A process that exited between readdir and open is skipped quietly.
  EXPECT_TRUE(only21.ScanPid(999).empty());
}

TEST_F(FakeProc, NcclAndCudaDiscoveriesShareOneReadingOfProc) {
  File("host", "/opt/lib/libnccl.so.2");
  File("host", "/opt/lib/libcudart.so.13");
  Process(30, "host", Line("/opt/lib/libnccl.so.2") + Line("/opt/lib/libcudart.so.13"));
  Process(31, "host", Line("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  Process(32, "host", Line("/opt/lib/libcudart.so.13"));
  ProcLibraryMaps maps(proc(), /*max_age_ms=*/600'000);  // no expiry during the test
  LibraryDiscovery nccl(proc(), {LibraryKind::kNccl}, {}, 0, &maps);
  LibraryDiscovery cuda(proc(), {LibraryKind::kCudart, LibraryKind::kCuda}, {}, 0, &maps);
  auto n = nccl.Scan();
  auto c = cuda.Scan();  // within the age limit: no file is read again
  ASSERT_EQ(n.size(), 1u);
  EXPECT_EQ(n[0].kind, LibraryKind::kNccl);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, LibraryKind::kCudart);
  EXPECT_EQ(maps.reads(), 3u);  // one per process, for both discoveries
  // A process just seen mapping a library is read again (fresh), whatever the cache holds.
  File("host", "/opt/lib/libcuda.so.1");
  std::ofstream(dir_ / "proc/31/maps") << Line("/opt/lib/libcuda.so.1");
  EXPECT_TRUE(cuda.ScanPid(31).empty());  // the cached reading predates the mapping
  auto fresh = cuda.ScanPid(31, /*fresh=*/true);
  ASSERT_EQ(fresh.size(), 1u);
  EXPECT_EQ(fresh[0].kind, LibraryKind::kCuda);
  EXPECT_EQ(maps.reads(), 4u);
  std::ofstream(dir_ / "proc/31/maps") << Line("/usr/lib/x86_64-linux-gnu/libc.so.6");
  // Once a reading is too old, a rescan reads again and sees a library mapped meanwhile.
  ProcLibraryMaps expired(proc(), /*max_age_ms=*/-1);
  LibraryDiscovery cuda2(proc(), {LibraryKind::kCudart, LibraryKind::kCuda}, {}, 0, &expired);
  EXPECT_EQ(cuda2.Scan().size(), 1u);  // libcudart
  File("host", "/opt/lib/libcuda.so.1");
  std::ofstream(dir_ / "proc/31/maps") << Line("/opt/lib/libcuda.so.1");
  auto later = cuda2.Scan();
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].kind, LibraryKind::kCuda);
  EXPECT_EQ(expired.reads(), 6u);
}

// The same reading notes processes that map rankscope's NCCL profiler plugin region.
TEST_F(FakeProc, NotesProcessesThatMapThePluginRegion) {
  File("host", "/opt/lib/libnccl.so.2");
  const std::string region =
      "7f1000000000-7f1000250000 rw-s 00000000 00:01 3181 /memfd:rankscope-gpu (deleted)\n";
  Process(50, "host", Line("/opt/lib/libnccl.so.2") + region);
  Process(51, "host",
          "7f1000000000-7f1000250000 rw-s 00000000 00:01 3182 /memfd:rankscope-gpux (deleted)\n"
          "7f2000000000-7f2000001000 rw-s 00000000 00:01 3183 /memfd:other (deleted)\n" +
              Line("/dev/shm/rankscope-gpu"));
  Process(52, "host", region);  // a forked child: the same region, no library of its own
  Process(53, "host", Line("/usr/lib/x86_64-linux-gnu/libc.so.6"));
  ProcLibraryMaps maps(proc(), /*max_age_ms=*/600'000);
  EXPECT_EQ(maps.listed_at_ms(), -1);
  EXPECT_TRUE(maps.GpuRingPids().empty());  // nothing read yet
  LibraryDiscovery nccl(proc(), {LibraryKind::kNccl}, {}, 0, &maps);
  ASSERT_EQ(nccl.Scan().size(), 1u);  // the region is not a library
  EXPECT_GE(maps.listed_at_ms(), 0);
  EXPECT_EQ(maps.GpuRingPids(), (std::vector<int>{50, 52}));
  EXPECT_TRUE(maps.Get(50, 0).gpu_ring);
  EXPECT_FALSE(maps.Get(51, 0).gpu_ring);
  EXPECT_EQ(maps.reads(), 4u);  // one reading for both questions
  // An exec'd image without the plugin: noted at the next reading of that process.
  std::ofstream(dir_ / "proc/50/maps") << Line("/usr/lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_FALSE(maps.Get(50, 0, /*fresh=*/true).gpu_ring);
  EXPECT_EQ(maps.GpuRingPids(), (std::vector<int>{52}));
}

TEST_F(FakeProc, ScopeNetnsScansOnlyProcessesOfThatNamespace) {
  File("host", "/opt/lib/libnccl.so.2");
  File("other", "/opt/lib/libnccl.so.2");
  Process(40, "host", Line("/opt/lib/libnccl.so.2"));
  Process(41, "other", Line("/opt/lib/libnccl.so.2"));
  fs::create_directories(dir_ / "proc/40/ns");
  fs::create_directories(dir_ / "proc/41/ns");
  fs::create_symlink("net:[4026532100]", dir_ / "proc/40/ns/net");
  fs::create_symlink("net:[4026532999]", dir_ / "proc/41/ns/net");
  LibraryDiscovery d(proc(), {LibraryKind::kNccl}, {}, 4026532999u);
  auto found = d.Scan();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, 41);
  LibraryDiscovery host(proc(), {LibraryKind::kNccl});
  EXPECT_EQ(host.Scan().size(), 2u);
}

TEST_F(FakeProc, ExplicitCopies) {
  fs::path lib = File("host", "/opt/explicit/libnccl.so.2");
  LibraryDiscovery d(proc(), {LibraryKind::kNccl});
  auto first = d.AddExplicit(lib.string(), LibraryKind::kNccl);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(*first);
  EXPECT_EQ((*first)->open_path, lib.string());
  EXPECT_EQ((*first)->pid, 0);
  auto again = d.AddExplicit(lib.string(), LibraryKind::kNccl);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  // The same file mapped by a process is not reported again either.
  Process(30, "host", Line("/opt/explicit/libnccl.so.2"));
  EXPECT_TRUE(d.Scan().empty());
  auto missing = d.AddExplicit("/nonexistent/libnccl.so.2", LibraryKind::kNccl);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("/nonexistent/libnccl.so.2"), std::string::npos);
  EXPECT_NE(missing.error().message().find("--nccl-lib"), std::string::npos);
}

TEST(ClassifyLibrary, ByFileName) {
  EXPECT_EQ(ClassifyLibrary("/usr/local/cuda/lib/libnccl.so.2"), LibraryKind::kNccl);
  EXPECT_EQ(ClassifyLibrary("libnccl.so"), LibraryKind::kNccl);
  EXPECT_EQ(ClassifyLibrary("/x/libnccl.so.2.28.9"), LibraryKind::kNccl);
  EXPECT_EQ(ClassifyLibrary("/x/libcudart.so.13"), LibraryKind::kCudart);
  EXPECT_EQ(ClassifyLibrary("/x/libcuda.so.1 (deleted)"), LibraryKind::kCuda);
  EXPECT_FALSE(ClassifyLibrary("/x/libnccl-net.so"));
  EXPECT_FALSE(ClassifyLibrary("/x/libcudart_static.a"));
  EXPECT_FALSE(ClassifyLibrary("/x/libcudadebugger.so.1"));
  EXPECT_FALSE(ClassifyLibrary("/x/libnccl.so2"));
  EXPECT_EQ(LibraryKindName(LibraryKind::kCudart), "cudart");
}

}  // namespace
}  // namespace rs::rec
