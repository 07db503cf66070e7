// A local user's fake NCCL profiler plugin region (recorder/plugin/gpu_ring.h), for
// gpu_hostile_test.cc: a memfd named like the plugin's, made by whoever runs this (the test
// runs it as nobody), that attacks the root recorder reading it. Prints "pid N", then one
// line per step ("ready", "beat" once the recorder's heartbeat shows, what it did), then
// sleeps until killed (at most 120 s). Records it forges carry nccl_comm_hash kForged.
//   unsealed  a region that can shrink, 50 forged records; truncated to 0 once read (or after
//             5 s): SIGBUS in a recorder that mapped it
//   counts    sealed; once read, ring_records and head raised past the mapping, 50 forged
//             records behind them: a read out of the mapping
//   slots     sealed, one forged operation in flight; once read, slot_count raised: a read out
//             of the mapping when the recorder reads the slots at stop
//   give      sealed, 50 forged records, unmapped and its descriptor kept ("fd N"): for
//             `hold`, another user's process
//   hold PID N  (as root) opens /proc/PID/fd/N and maps it: a region of another owner
//   honest    sealed; once read, 5 records of its own (nccl_comm_hash 0x600d)
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "recorder/plugin/gpu_ring.h"

namespace {

constexpr uint64_t kForged = 0xf0f6ed;
constexpr size_t kBytes = RS_GPU_REGION_BYTES(RS_GPU_SLOT_COUNT, RS_GPU_RING_RECORDS);

int64_t Now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void Say(const std::string& line) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

[[noreturn]] void Die(const char* what) {
  std::printf("error %s: %s\n", what, std::strerror(errno));
  std::fflush(stdout);
  _exit(1);
}

struct Region {
  int fd = -1;
  char* base = nullptr;
  rs_gpu_ring_header* h = nullptr;
  rs_gpu_op* slots = nullptr;
  rs_gpu_op* ring = nullptr;
};

Region Make(bool seal) {
  Region r;
  r.fd = memfd_create(RS_GPU_RING_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (r.fd < 0) Die("memfd_create");
  if (ftruncate(r.fd, static_cast<off_t>(kBytes)) != 0) Die("ftruncate");
  if (seal && fcntl(r.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) Die("F_ADD_SEALS");
  void* base = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, r.fd, 0);
  if (base == MAP_FAILED) Die("mmap");
  r.base = static_cast<char*>(base);
  r.h = reinterpret_cast<rs_gpu_ring_header*>(r.base);
  r.slots = reinterpret_cast<rs_gpu_op*>(r.base + RS_GPU_HEADER_BYTES);
  r.ring = r.slots + RS_GPU_SLOT_COUNT;
  rs_gpu_ring_header& h = *r.h;
  h.version = RS_GPU_RING_VERSION;
  h.header_bytes = RS_GPU_HEADER_BYTES;
  h.record_bytes = sizeof(rs_gpu_op);
  h.slot_count = RS_GPU_SLOT_COUNT;
  h.ring_records = RS_GPU_RING_RECORDS;
  h.pid = static_cast<int32_t>(getpid());
  h.api_version = 5;
  h.created_ns = Now();
  // A startup window: a recorder that finds it reads its ring from the beginning.
  h.startup_until_ns = h.created_ns + 60'000'000'000;
  __atomic_store_n(&h.magic, RS_GPU_RING_MAGIC, __ATOMIC_RELEASE);
  return r;
}

rs_gpu_op Op(uint64_t seq, uint64_t comm) {
  rs_gpu_op op{};
  op.seq = seq;
  op.nccl_comm_hash = comm;
  op.nccl_seq = seq - 1;
  op.enqueue_ns = Now();
  op.device_start_ns = op.enqueue_ns + 1000;
  op.device_end_ns = op.enqueue_ns + 2000;
  op.func = RS_GPU_ALL_REDUCE;
  op.datatype = 7;
  op.state = RS_GPU_COMPLETED;
  op.rank = 0;
  op.nranks = 2;
  op.peer = -1;
  return op;
}

// The writer's half of the ring protocol, at index `i`.
void Put(Region& r, uint64_t i, const rs_gpu_op& op) {
  rs_gpu_op& rec = r.ring[i % RS_GPU_RING_RECORDS];
  __atomic_store_n(&rec.stamp, 0, __ATOMIC_RELEASE);
  rec = op;
  rec.stamp = 0;
  __atomic_store_n(&rec.stamp, i + 1, __ATOMIC_RELEASE);
}

void Forge(Region& r, int n) {
  for (int k = 0; k < n; ++k) {
    const uint64_t i = __atomic_fetch_add(&r.h->head, 1, __ATOMIC_ACQ_REL);
    Put(r, i, Op(static_cast<uint64_t>(k) + 1, kForged));
  }
}

// Until the recorder's heartbeat shows (at most `ms`); whether it did.
bool AwaitBeat(const Region& r, int ms) {
  for (int waited = 0; waited < ms; waited += 10) {
    if (__atomic_load_n(&r.h->reader_heartbeat_ns, __ATOMIC_ACQUIRE) != 0) {
      Say("beat");
      return true;
    }
    usleep(10'000);
  }
  return false;
}

[[noreturn]] void Linger() {
  for (int i = 0; i < 120; ++i) sleep(1);
  _exit(0);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  Say("pid " + std::to_string(getpid()));
  if (mode == "unsealed") {
    Region r = Make(/*seal=*/false);
    Forge(r, 50);
    Say("ready");
    AwaitBeat(r, 5000);
    // Never touched again here: this process would take the SIGBUS too.
    if (ftruncate(r.fd, 0) != 0) Die("ftruncate 0");
    Say("truncated");
    Linger();
  }
  if (mode == "counts") {
    Region r = Make(/*seal=*/true);
    Say("ready");
    if (!AwaitBeat(r, 30000)) Die("no heartbeat");
    // The reader's tail jumps to head - ring_records = 2^31 + 1: 300 GB past the mapping.
    __atomic_store_n(&r.h->ring_records, 0xffffffffu, __ATOMIC_RELEASE);
    __atomic_store_n(&r.h->head, (uint64_t{1} << 32) + (uint64_t{1} << 31), __ATOMIC_RELEASE);
    for (uint64_t i = 0; i < 50; ++i) Put(r, i, Op(i + 1, kForged));
    Say("changed");
    Linger();
  }
  if (mode == "slots") {
    Region r = Make(/*seal=*/true);
    rs_gpu_op held = Op(1, kForged);
    held.state = RS_GPU_STARTED;
    held.device_end_ns = 0;
    r.slots[0] = held;
    __atomic_store_n(&r.slots[0].stamp, 1, __ATOMIC_RELEASE);
    Say("ready");
    if (!AwaitBeat(r, 30000)) Die("no heartbeat");
    __atomic_store_n(&r.h->slot_count, 0xffffffffu, __ATOMIC_RELEASE);
    Say("changed");
    Linger();
  }
  if (mode == "give") {
    Region r = Make(/*seal=*/true);
    Forge(r, 50);
    munmap(r.base, kBytes);  // not in this process's maps: only the holder's show it
    Say("fd " + std::to_string(r.fd));
    Say("ready");
    Linger();
  }
  if (mode == "hold" && argc == 4) {
    const std::string path = std::string("/proc/") + argv[2] + "/fd/" + argv[3];
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) Die("open");
    if (mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED) {
      Die("mmap");
    }
    Say("held");
    Linger();
  }
  if (mode == "honest") {
    Region r = Make(/*seal=*/true);
    Say("ready");
    if (!AwaitBeat(r, 30000)) Die("no heartbeat");
    for (uint64_t k = 0; k < 5; ++k) {
      const uint64_t i = __atomic_fetch_add(&r.h->head, 1, __ATOMIC_ACQ_REL);
      Put(r, i, Op(k + 1, 0x600d));
    }
    Say("wrote");
    Linger();
  }
  std::fprintf(stderr, "usage: %s unsealed|counts|slots|give|honest|hold PID FD\n", argv[0]);
  return 2;
}
