// Writes the seed corpus of the plugin region reader's fuzz target (gpu_ring_fuzz.cc) into the
// directory given: small regions as the plugin makes them (records, slots in flight, a startup
// window), the same with the words a hostile owner changes between reads (counts, head, pid,
// stamps), and regions the reader refuses (short, another magic, counts past the file).
#include <cstddef>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "recorder/gpu_ring_fuzz_input.h"

namespace {

using rs::rec::fuzz::Edit;

constexpr uint32_t kSlots = 2, kRecords = 4;

struct Region {
  std::vector<uint8_t> bytes = std::vector<uint8_t>(RS_GPU_REGION_BYTES(kSlots, kRecords), 0);
  rs_gpu_ring_header* h() { return reinterpret_cast<rs_gpu_ring_header*>(bytes.data()); }
  rs_gpu_op* ops() { return reinterpret_cast<rs_gpu_op*>(bytes.data() + RS_GPU_HEADER_BYTES); }
};

rs_gpu_op Op(uint64_t seq, uint8_t state) {
  rs_gpu_op op{};
  op.seq = seq;
  op.nccl_comm_hash = 0xabc;
  op.enqueue_ns = static_cast<int64_t>(1000 + seq);
  op.device_start_ns = op.enqueue_ns + 10;
  op.device_end_ns = state == RS_GPU_COMPLETED ? op.enqueue_ns + 20 : 0;
  op.func = static_cast<uint8_t>(seq % 2 ? RS_GPU_ALL_REDUCE : RS_GPU_SEND);
  op.datatype = 7;
  op.algo = RS_GPU_ALGO_RING;
  op.proto = RS_GPU_PROTO_SIMPLE;
  op.state = state;
  op.count = 1024;
  op.peer = seq % 2 ? -1 : 1;
  return op;
}

// A region as the plugin leaves it: `written` records (the ring wraps past kRecords), one
// operation in flight, counters; in its startup window (unless not), so that the reader
// reads the ring from its beginning.
Region Valid(uint64_t written, bool startup_window = true) {
  Region r;
  rs_gpu_ring_header& h = *r.h();
  h.magic = RS_GPU_RING_MAGIC;
  h.version = RS_GPU_RING_VERSION;
  h.header_bytes = RS_GPU_HEADER_BYTES;
  h.record_bytes = sizeof(rs_gpu_op);
  h.slot_count = kSlots;
  h.ring_records = kRecords;
  h.pid = 4242;
  h.api_version = 5;
  h.ops = written + 1;
  h.drops_slots_full = 1;
  h.startup_until_ns = startup_window ? 5'000'000'000 : 0;
  rs_gpu_op* ops = r.ops();
  ops[1] = Op(written + 1, RS_GPU_STARTED);
  ops[1].stamp = 1;
  for (uint64_t i = 0; i < written; ++i) {
    rs_gpu_op& rec = ops[kSlots + i % kRecords];
    rec = Op(i + 1, RS_GPU_COMPLETED);
    rec.stamp = i + 1;
  }
  h.head = written;
  return r;
}

uint32_t At(size_t offset) { return static_cast<uint32_t>(offset); }

bool Write(const std::string& dir, const std::string& name, const std::vector<Edit>& edits,
           const std::vector<uint8_t>& region) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  const std::string bytes = rs::rec::fuzz::EncodeGpuRingInput(edits, region);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  // The words of the header a hostile owner changes; each 8-byte edit covers two 4-byte
  // fields: (record_bytes, slot_count), (ring_records, pid), (api_version, proxy_times_off).
  const uint32_t counts = At(offsetof(rs_gpu_ring_header, record_bytes));
  const uint32_t records_pid = At(offsetof(rs_gpu_ring_header, ring_records));
  const uint32_t head = At(offsetof(rs_gpu_ring_header, head));
  const uint32_t ops = At(offsetof(rs_gpu_ring_header, ops));
  const uint32_t first_stamp = At(RS_GPU_HEADER_BYTES + kSlots * sizeof(rs_gpu_op));
  const uint64_t big = 0xffffffffull << 32;
  bool ok = true;
  ok &= Write(dir, "valid", {}, Valid(3).bytes);
  ok &= Write(dir, "wrapped", {{head, 9}}, Valid(6).bytes);
  ok &= Write(dir, "no_startup_window", {}, Valid(3, false).bytes);
  ok &= Write(dir, "slot_count_raised", {{counts, big | sizeof(rs_gpu_op)}}, Valid(3).bytes);
  ok &= Write(dir, "ring_records_raised", {{records_pid, (uint64_t{4242} << 32) | 0xffffffff}},
              Valid(3).bytes);
  ok &= Write(dir, "head_back_and_huge", {{head, 1}, {head, ~uint64_t{0}}}, Valid(3).bytes);
  ok &= Write(dir, "head_far", {{head, uint64_t{1} << 48}}, Valid(3).bytes);
  ok &= Write(dir, "counter_back", {{ops, 0}}, Valid(3).bytes);
  ok &= Write(dir, "stamp_forged", {{first_stamp, ~uint64_t{0}}, {head, 5}}, Valid(3).bytes);
  Region bad_magic = Valid(3);
  bad_magic.h()->magic = 0;
  ok &= Write(dir, "not_initialized", {}, bad_magic.bytes);
  Region too_many = Valid(3);
  too_many.h()->ring_records = kRecords + 1;
  ok &= Write(dir, "counts_past_the_file", {}, too_many.bytes);
  ok &= Write(dir, "short", {}, std::vector<uint8_t>(100, 0));
  if (!ok) {
    std::fprintf(stderr, "%s: cannot write the seeds\n", dir.c_str());
    return 1;
  }
  return 0;
}
