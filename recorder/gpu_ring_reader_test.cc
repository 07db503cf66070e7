// The GPU ring reader on regions built by hand (gpu_ring_fake.h): a memfd laid out as
// gpu_ring.h says, written as the plugin writes it (the ring protocol's writer half), and
// regions a hostile user would make: unsealed, of another owner, not a memfd, changed under
// the reader.
#include "recorder/gpu_ring_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <string>
#include <vector>

#include "recorder/gpu_heartbeat.h"
#include "recorder/gpu_ring_fake.h"
#include "rscore/clock.h"

namespace rs::rec {
namespace {

using testing::FakeGpuRegion;

std::vector<uint64_t> Seqs(const std::vector<rs_gpu_op>& ops) {
  std::vector<uint64_t> out;
  for (const rs_gpu_op& op : ops) out.push_back(op.seq);
  return out;
}

GpuRingReader MustOpen(const FakeGpuRegion& region) {
  auto r = GpuRingReader::Open(region.path());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
  return std::move(r).value();
}

TEST(GpuRingReader, ReadsRecordsInRingOrderOnce) {
  FakeGpuRegion region(4, 8);
  GpuRingReader reader = MustOpen(region);
  EXPECT_TRUE(reader.Read().empty());
  region.WriteMany(1, 3);
  auto first = reader.Read();
  EXPECT_EQ(Seqs(first), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_EQ(first[0].stamp, 1u);
  EXPECT_EQ(first[2].stamp, 3u);
  EXPECT_EQ(first[1].nccl_comm_hash, 0xabcu);
  EXPECT_EQ(first[1].enqueue_ns, 1002);
  EXPECT_EQ(first[1].state, RS_GPU_COMPLETED);
  EXPECT_TRUE(reader.Read().empty());  // nothing new: nothing twice
  region.WriteMany(4, 6);              // wraps the 8-record ring without overtaking the reader
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(reader.read_records(), 9u);
  EXPECT_EQ(reader.overruns(), 0u);
}

TEST(GpuRingReader, ARecordStillBeingWrittenEndsTheRead) {
  FakeGpuRegion region(4, 8);
  GpuRingReader reader = MustOpen(region);
  region.Write(1);
  const uint64_t half = region.Begin();  // index 1: claimed, not written yet
  region.Write(3);                       // index 2: complete, behind the unfinished one
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{1}));
  EXPECT_EQ(reader.read_records(), 1u);
  EXPECT_TRUE(reader.Read().empty());
  region.End(half, FakeGpuRegion::Op(2));
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(reader.overruns(), 0u);
}

TEST(GpuRingReader, RecordsOverwrittenBeforeTheReadAreCountedAsOverruns) {
  FakeGpuRegion region(4, 8);
  GpuRingReader reader = MustOpen(region);
  region.WriteMany(1, 3);
  EXPECT_EQ(reader.Read().size(), 3u);
  region.WriteMany(4, 11);  // head 14: records 3..5 (seq 4..6) were overwritten
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{7, 8, 9, 10, 11, 12, 13, 14}));
  EXPECT_EQ(reader.overruns(), 3u);
  EXPECT_EQ(reader.read_records(), 14u);
  // A record whose slot already holds a later one (its writer lapped the reader while the
  // head was read) is an overrun too, and the read goes on after it.
  region.WriteMany(15, 2);  // indices 14, 15
  __atomic_store_n(&region.ring[14 % 8].stamp, 14 + 8 + 1, __ATOMIC_RELEASE);
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{16}));
  EXPECT_EQ(reader.overruns(), 4u);
}

TEST(GpuRingReader, TheFirstReadStartsWhereTheReaderOpenedTheRegion) {
  FakeGpuRegion region(4, 8);
  region.WriteMany(1, 12);  // for an earlier reader (an earlier recording): not this one's
  GpuRingReader reader = MustOpen(region);
  EXPECT_TRUE(reader.Read().empty());
  region.WriteMany(13, 3);
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{13, 14, 15}));
  EXPECT_EQ(reader.overruns(), 0u);
  EXPECT_EQ(reader.read_records(), 15u);
}

// A region with a startup window that no reader has read yet: its records were made for
// whichever recorder finds it first, which reads them from the ring's beginning.
TEST(GpuRingReader, ANewRegionsStartupRecordsAreReadFromTheBeginning) {
  FakeGpuRegion region(4, 8);
  region.h->startup_until_ns = 1;
  region.WriteMany(1, 3);
  GpuRingReader reader = MustOpen(region);
  EXPECT_TRUE(reader.from_start());
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{1, 2, 3}));
  // Once a reader beat, the next reader starts at the head (those records were the first's).
  reader.Heartbeat(5);
  region.WriteMany(4, 2);
  GpuRingReader second = MustOpen(region);
  EXPECT_FALSE(second.from_start());
  EXPECT_TRUE(second.Read().empty());
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{4, 5}));
}

TEST(GpuRingReader, InFlightReturnsTheUsedSlotsOldestFirst) {
  FakeGpuRegion region(4, 8);
  rs_gpu_op started = FakeGpuRegion::Op(3), enqueued = FakeGpuRegion::Op(1),
            free = FakeGpuRegion::Op(99);
  started.enqueue_ns = 300;
  started.state = RS_GPU_STARTED;
  enqueued.enqueue_ns = 100;
  enqueued.state = RS_GPU_ENQUEUED;
  free.enqueue_ns = 50;
  region.Hold(0, started, 7);
  region.Hold(2, enqueued, 1);
  region.Hold(3, free, 0);  // stamp 0: free, whatever it holds
  GpuRingReader reader = MustOpen(region);
  auto in_flight = reader.InFlight();
  ASSERT_EQ(Seqs(in_flight), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(in_flight[0].state, RS_GPU_ENQUEUED);
  EXPECT_EQ(in_flight[1].state, RS_GPU_STARTED);
  EXPECT_EQ(in_flight[1].stamp, 7u);
  EXPECT_TRUE(reader.Read().empty());  // slots are not ring records
}

TEST(GpuRingReader, HeartbeatIsWrittenAndTheHeaderIsLive) {
  FakeGpuRegion region(4, 8);
  GpuRingReader reader = MustOpen(region);
  EXPECT_EQ(region.h->reader_heartbeat_ns, 0);
  reader.Heartbeat(123456789);
  EXPECT_EQ(__atomic_load_n(&region.h->reader_heartbeat_ns, __ATOMIC_ACQUIRE), 123456789);
  region.h->ops = 42;
  region.h->api_version = 4;
  EXPECT_EQ(reader.header().ops, 42u);
  EXPECT_EQ(reader.header().api_version, 4);
  EXPECT_EQ(reader.header().pid, getpid());
}

int64_t BeatOf(const FakeGpuRegion& region) {
  return __atomic_load_n(&region.h->reader_heartbeat_ns, __ATOMIC_ACQUIRE);
}

// The heartbeat thread goes on while the loop is slow (a round of 2.7 s was measured under load;
// the plugin stops recording after 2 s without a beat), and stops when the loop is stuck.
TEST(GpuHeartbeatTest, BeatsWhileTheLoopLivesAndStopsWhenItIsStuck) {
  FakeGpuRegion region(4, 8);
  GpuRingReader reader = MustOpen(region);
  GpuHeartbeat beat;
  beat.Add(&region, &reader, 5);
  EXPECT_EQ(BeatOf(region), 5);  // beaten at once
  beat.Start();
  // Bounded: a round comes every 250 ms; 20 s is far beyond any scheduling delay.
  for (int i = 0; i < 2000 && beat.beats() < 2; ++i) usleep(10'000);
  ASSERT_GE(beat.beats(), 2u);
  EXPECT_GT(BeatOf(region), 5);
  // Stuck: its last tick older than kLoopStallNs. A round already past its check may beat once.
  beat.LoopAlive(rs::MonotonicNowNs() - GpuHeartbeat::kLoopStallNs - 1);
  usleep(2 * GpuHeartbeat::kPeriodNs / 1000);
  const uint64_t stuck = beat.beats();
  const int64_t last = BeatOf(region);
  usleep(3 * GpuHeartbeat::kPeriodNs / 1000);
  EXPECT_EQ(beat.beats(), stuck);
  EXPECT_EQ(BeatOf(region), last);
  // Removed before its reader goes: never beaten again, even once the loop lives.
  beat.Remove(&region);
  beat.LoopAlive(rs::MonotonicNowNs());
  const uint64_t before = beat.beats();
  for (int i = 0; i < 2000 && beat.beats() < before + 2; ++i) usleep(10'000);
  EXPECT_EQ(BeatOf(region), last);
  beat.Stop();
}

TEST(GpuRingReader, MovedReaderKeepsItsPlace) {
  FakeGpuRegion region(4, 8);
  GpuRingReader a = MustOpen(region);
  region.WriteMany(1, 2);
  EXPECT_EQ(a.Read().size(), 2u);
  GpuRingReader b = std::move(a);
  region.Write(3);
  EXPECT_EQ(Seqs(b.Read()), (std::vector<uint64_t>{3}));
  EXPECT_TRUE(a.Read().empty());  // NOLINT(bugprone-use-after-move): the moved-from is empty
}

std::string OpenError(const std::string& path) {
  auto r = GpuRingReader::Open(path);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message();
}

TEST(GpuRingReader, RefusesRegionsOfAnotherLayoutSayingWhy) {
  {
    FakeGpuRegion region(4, 8);
    region.h->magic = 0x1234;
    const std::string e = OpenError(region.path());
    EXPECT_NE(e.find(region.path()), std::string::npos) << e;
    EXPECT_NE(e.find("not a rankscope GPU ring"), std::string::npos) << e;
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->magic = 0;  // the plugin has not written its header yet
    EXPECT_NE(OpenError(region.path()).find("not initialized yet"), std::string::npos);
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->version = RS_GPU_RING_VERSION + 1;
    const std::string e = OpenError(region.path());
    EXPECT_NE(e.find("GPU ring version " + std::to_string(RS_GPU_RING_VERSION + 1) +
                     ", this recorder reads version " + std::to_string(RS_GPU_RING_VERSION)),
              std::string::npos)
        << e;
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->record_bytes = sizeof(rs_gpu_op) + 8;
    EXPECT_NE(OpenError(region.path()).find("another layout"), std::string::npos);
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->header_bytes = 2048;
    EXPECT_NE(OpenError(region.path()).find("another layout"), std::string::npos);
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->ring_records = 9;  // one record more than the file holds
    EXPECT_NE(OpenError(region.path()).find("does not fit"), std::string::npos);
  }
  {
    FakeGpuRegion region(4, 8);
    region.h->slot_count = 0;
    EXPECT_NE(OpenError(region.path()).find("does not fit"), std::string::npos);
  }
  {
    // Created and sealed, not sized yet.
    const int fd = memfd_create(RS_GPU_RING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(ftruncate(fd, 100), 0);
    ASSERT_EQ(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK), 0);
    std::optional<GpuRegionFault> fault;
    auto r = GpuRingReader::Open("/proc/self/fd/" + std::to_string(fd), &fault);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("shorter than its header"), std::string::npos);
    EXPECT_EQ(fault, GpuRegionFault::kLayout);
    close(fd);
  }
  const std::string e = OpenError("/nonexistent/fd/3");
  EXPECT_NE(e.find("/nonexistent/fd/3: cannot open its process's directory"), std::string::npos)
      << e;
  EXPECT_NE(OpenError("/proc/self/fd/x").find("not a /proc/PID/fd/N path"), std::string::npos);
}

std::optional<GpuRegionFault> OpenFault(const std::string& path, std::string* error = nullptr) {
  std::optional<GpuRegionFault> fault;
  auto r = GpuRingReader::Open(path, &fault);
  EXPECT_FALSE(r.ok()) << path << ": opened";
  if (error && !r.ok()) *error = r.error().message();
  return fault;
}

// The SIGBUS: a region its owner truncates while the recorder has it mapped. One that
// could shrink is never mapped; one sealed against shrinking cannot be truncated.
TEST(GpuRingReader, ARegionThatCouldShrinkIsRefusedAndASealedOneCannotShrink) {
  {
    FakeGpuRegion unsealed(4, 8, RS_GPU_RING_NAME, /*seal=*/false);
    unsealed.WriteMany(1, 3);
    std::string error;
    EXPECT_EQ(OpenFault(unsealed.path(), &error), GpuRegionFault::kNotSealed);
    EXPECT_NE(error.find(unsealed.path() + ": GPU ring not sealed against shrinking"),
              std::string::npos)
        << error;
    EXPECT_EQ(unsealed.h->reader_heartbeat_ns, 0);  // never mapped
  }
  FakeGpuRegion sealed(4, 8);
  GpuRingReader reader = MustOpen(sealed);
  sealed.WriteMany(1, 2);
  EXPECT_NE(ftruncate(sealed.fd(), 0), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_EQ(Seqs(reader.Read()), (std::vector<uint64_t>{1, 2}));
}

// Named like the region, but not a memfd: a file elsewhere (on a filesystem that could be
// FUSE, whose open can wait forever) is refused without being opened.
TEST(GpuRingReader, AFileThatIsNotAMemfdIsRefused) {
  char name[] = "/tmp/rs_gpu_notmemfd_XXXXXX";
  const int fd = mkstemp(name);
  ASSERT_GE(fd, 0);
  unlink(name);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(RS_GPU_REGION_BYTES(4, 8))), 0);
  std::string error;
  EXPECT_EQ(OpenFault("/proc/self/fd/" + std::to_string(fd), &error), GpuRegionFault::kNotSealed);
  EXPECT_NE(error.find("not a memory file (memfd)"), std::string::npos) << error;
  close(fd);
  // A memfd of huge pages (its pages can run out: SIGBUS) lives on another mount.
  const int huge = memfd_create(RS_GPU_RING_NAME, MFD_CLOEXEC | MFD_HUGETLB | MFD_ALLOW_SEALING);
  if (huge >= 0) {
    EXPECT_EQ(OpenFault("/proc/self/fd/" + std::to_string(huge)), GpuRegionFault::kNotSealed);
    close(huge);
  }
}

// The forged rows: a region another user made, in a process of this user (here: root,
// holding a memfd made with the filesystem uid of nobody).
TEST(GpuRingReader, ARegionOwnedByAnotherUserThanItsProcessIsRefused) {
  if (geteuid() != 0) {
    if (std::getenv("CI") != nullptr) FAIL() << "needs root, and CI is set: it must not skip";
    GTEST_SKIP() << "needs root (a file of another owner): run the unit tests as root";
  }
  setfsuid(65534);  // this thread only: files it creates are nobody's
  const bool as_nobody = setfsuid(static_cast<uid_t>(-1)) == 65534;
  std::optional<FakeGpuRegion> foreign;
  if (as_nobody) foreign.emplace(4, 8);
  setfsuid(0);
  ASSERT_TRUE(as_nobody);
  struct stat st;
  ASSERT_EQ(fstat(foreign->fd(), &st), 0);
  ASSERT_EQ(st.st_uid, 65534u);
  foreign->WriteMany(1, 50);
  std::string error;
  EXPECT_EQ(OpenFault(foreign->path(), &error), GpuRegionFault::kOwner);
  EXPECT_NE(error.find("GPU ring owned by uid 65534, held by a process of uid 0/0/0/0"),
            std::string::npos)
      << error;
  EXPECT_EQ(foreign->h->reader_heartbeat_ns, 0);
}

// The segfaults: counts changed after the reader sized its reads by them.
TEST(GpuRingReader, CountsChangedUnderTheReaderEndItsReadingWithoutAFault) {
  FakeGpuRegion region(4, 8);
  rs_gpu_op held = FakeGpuRegion::Op(9);
  region.Hold(1, held);
  GpuRingReader reader = MustOpen(region);
  region.WriteMany(1, 2);
  EXPECT_EQ(reader.Read().size(), 2u);
  region.h->slot_count = UINT32_MAX;
  EXPECT_TRUE(reader.InFlight().empty());  // read at stop: nothing, no read past the slots
  region.h->slot_count = 4;
  region.h->ring_records = UINT32_MAX;
  region.h->head = 3'000'000'000;
  EXPECT_TRUE(reader.Read().empty());
  EXPECT_TRUE(reader.view().corrupt());
  EXPECT_TRUE(reader.InFlight().empty());
}

TEST(ParseStatusUids, ReadsTheFourUidsOfTheUidLine) {
  EXPECT_EQ(ParseStatusUids("Name:\tx\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\n"),
            (std::array<uint32_t, 4>{1000, 1001, 1002, 1003}));
  EXPECT_EQ(ParseStatusUids("Name:\tUid: 1 2 3 4\nUid:\t7\t7\n"), std::nullopt);  // 2 values
  EXPECT_EQ(ParseStatusUids("Name:\tx\n"), std::nullopt);
  EXPECT_EQ(ParseStatusUids("Name:\tx\nUid:\t-1\t0\t0\t0\n"), std::nullopt);
}

TEST(FindGpuRing, FindsTheRegionAmongTheProcessFds) {
  FakeGpuRegion other(4, 8, "something-else");
  FakeGpuRegion region(4, 8);
  auto found = FindGpuRing("/proc", getpid());
  ASSERT_TRUE(found.ok()) << found.error().message();
  ASSERT_TRUE(found->has_value());
  const GpuRingLocation& loc = **found;
  EXPECT_EQ(loc.path.rfind("/proc/" + std::to_string(getpid()) + "/fd/", 0), 0u) << loc.path;
  // The path it returns opens the same region.
  auto reader = GpuRingReader::Open(loc.path);
  ASSERT_TRUE(reader.ok()) << reader.error().message();
  struct stat st;
  ASSERT_EQ(fstat(region.fd(), &st), 0);
  EXPECT_EQ(reader->dev(), static_cast<uint64_t>(st.st_dev));
  EXPECT_EQ(reader->ino(), static_cast<uint64_t>(st.st_ino));
  region.Write(5);
  EXPECT_EQ(Seqs(reader->Read()), (std::vector<uint64_t>{5}));
}

TEST(FindGpuRing, NoRegionIsNotAnError) {
  FakeGpuRegion other(4, 8, "something-else");
  auto none = FindGpuRing("/proc", getpid());
  ASSERT_TRUE(none.ok()) << none.error().message();
  EXPECT_FALSE(none->has_value());
  auto gone = FindGpuRing("/nonexistent-proc", 1);  // the process exited
  ASSERT_TRUE(gone.ok()) << gone.error().message();
  EXPECT_FALSE(gone->has_value());
}

}  // namespace
}  // namespace rs::rec
