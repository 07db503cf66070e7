/* Block requests: block_rq_issue -> block_rq_complete latency, size, device, issuer.
 * tp_btf keys pending requests by the struct request pointer; the classic tracepoint has no
 * pointer and keys them by (dev, sector). The rwbs letters follow the kernel's
 * blk_fill_rwbs() so both variants produce the same text. */
#include "common.bpf.h"  // first: the vmlinux.h types the ABI header uses

#include "block.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 2 << 20);
} block_rb SEC(".maps");

struct pending_key {
  __u64 a; /* tp_btf: request pointer; tracepoint: dev */
  __u64 b; /* tp_btf: 0;               tracepoint: sector */
};

struct pending {
  __u64 ts_ns;
  __u64 sector;
  __u32 dev;
  __u32 bytes;
  __u32 pid;
  char rwbs[RS_RWBS_LEN];
  char comm[RS_COMM_LEN];
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, struct pending_key);
  __type(value, struct pending);
} pending_rq SEC(".maps");

#define RS_MINORBITS 20

/* Letters are collected in a register (at most 7: F, D, E, F, A, S, M), then stored. */
#define RS_PUT(c)                 \
  do {                            \
    acc |= (__u64)(c) << (8 * n); \
    n++;                          \
  } while (0)

static __always_inline void fill_rwbs(char* rwbs, __u32 opf) {
  __u32 op = opf & 0xff; /* REQ_OP_MASK: the low REQ_OP_BITS (8) bits */
  __u64 acc = 0;
  __u32 n = 0;
  if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH))) RS_PUT('F');
  if (op == bpf_core_enum_value(enum req_op, REQ_OP_WRITE) ||
      op == bpf_core_enum_value(enum req_op, REQ_OP_WRITE_ZEROES)) {
    RS_PUT('W');
  } else if (op == bpf_core_enum_value(enum req_op, REQ_OP_DISCARD)) {
    RS_PUT('D');
  } else if (op == bpf_core_enum_value(enum req_op, REQ_OP_SECURE_ERASE)) {
    RS_PUT('D');
    RS_PUT('E');
  } else if (op == bpf_core_enum_value(enum req_op, REQ_OP_FLUSH)) {
    RS_PUT('F');
  } else if (op == bpf_core_enum_value(enum req_op, REQ_OP_READ)) {
    RS_PUT('R');
  } else {
    RS_PUT('N');
  }
  if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA))) RS_PUT('F');
  if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_RAHEAD))) RS_PUT('A');
  if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_SYNC))) RS_PUT('S');
  if (opf & (1u << bpf_core_enum_value(enum req_flag_bits, __REQ_META))) RS_PUT('M');
  __builtin_memcpy(rwbs, &acc, sizeof(acc)); /* n <= 7: the NUL is in acc */
  rwbs[sizeof(acc)] = '\0';
}

struct owner {
  __u32 pid;
  bool in_scope;
  char comm[RS_COMM_LEN];
};

/* Who submitted a request: block_io_start (Linux 6.5+) fires in the submitter's context,
 * while the issue may happen later from a kworker. Optional: without it the issuing context
 * names the process. */
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct pending_key);
  __type(value, struct owner);
} rq_owner SEC(".maps");

static __always_inline void note_owner(struct pending_key* key) {
  struct owner o = {};
  o.pid = bpf_get_current_pid_tgid() >> 32;
  o.in_scope = rs_current_in_scope();
  bpf_get_current_comm(o.comm, sizeof(o.comm));
  bpf_map_update_elem(&rq_owner, key, &o, BPF_ANY);
}

static __always_inline void start_pending(struct pending_key* key, struct pending* p) {
  struct owner* o = bpf_map_lookup_elem(&rq_owner, key);
  if (o) {
    bool in_scope = o->in_scope;
    p->pid = o->pid;
    __builtin_memcpy(p->comm, o->comm, sizeof(p->comm));
    bpf_map_delete_elem(&rq_owner, key);
    if (!in_scope) return;
  } else {
    if (!rs_current_in_scope()) return;
    p->pid = bpf_get_current_pid_tgid() >> 32;
    bpf_get_current_comm(p->comm, sizeof(p->comm));
  }
  p->ts_ns = bpf_ktime_get_ns();
  if (bpf_map_update_elem(&pending_rq, key, p, BPF_ANY) != 0) rs_count(RS_STAT_LOST);
}

static __always_inline void complete_pending(struct pending_key* key, int error) {
  struct pending* p = bpf_map_lookup_elem(&pending_rq, key);
  if (!p) return; /* issued before recording started, or out of scope */
  struct rs_block_event* e = RS_RESERVE(block_rb, struct rs_block_event);
  if (e) {
    __u64 now = bpf_ktime_get_ns();
    e->ts_ns = p->ts_ns;
    e->duration_ns = now > p->ts_ns ? now - p->ts_ns : 0;
    e->sector = p->sector;
    e->dev = p->dev;
    e->bytes = p->bytes;
    e->pid = p->pid;
    e->error = error;
    __builtin_memcpy(e->rwbs, p->rwbs, sizeof(e->rwbs));
    __builtin_memcpy(e->comm, p->comm, sizeof(e->comm));
    RS_SUBMIT(block_rb, e);
  }
  bpf_map_delete_elem(&pending_rq, key);
}

static __always_inline __u32 rq_dev(struct request* rq) {
  struct gendisk* disk = BPF_CORE_READ(rq, q, disk);
  if (!disk) return 0;
  __u32 major = BPF_CORE_READ(disk, major);
  __u32 minor = BPF_CORE_READ(disk, first_minor);
  return (major << RS_MINORBITS) | minor;
}

SEC("tp_btf/block_io_start")
int BPF_PROG(block_io_start_btf, struct request* rq) {
  struct pending_key key = {.a = (__u64)rq};
  note_owner(&key);
  return 0;
}

SEC("tracepoint/block/block_io_start")
int block_io_start_tp(struct trace_event_raw_block_rq* ctx) {
  struct pending_key key = {.a = ctx->dev, .b = ctx->sector};
  note_owner(&key);
  return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(block_rq_issue_btf, struct request* rq) {
  struct pending_key key = {.a = (__u64)rq};
  struct pending p = {};
  p.dev = rq_dev(rq);
  p.sector = BPF_CORE_READ(rq, __sector);
  p.bytes = BPF_CORE_READ(rq, __data_len);
  fill_rwbs(p.rwbs, BPF_CORE_READ(rq, cmd_flags));
  start_pending(&key, &p);
  return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(block_rq_complete_btf, struct request* rq, blk_status_t error) {
  struct pending_key key = {.a = (__u64)rq};
  complete_pending(&key, error);
  return 0;
}

SEC("tracepoint/block/block_rq_issue")
int block_rq_issue_tp(struct trace_event_raw_block_rq* ctx) {
  struct pending_key key = {.a = ctx->dev, .b = ctx->sector};
  struct pending p = {};
  p.dev = ctx->dev;
  p.sector = ctx->sector;
  p.bytes = ctx->bytes;
  bpf_probe_read_kernel(p.rwbs, sizeof(p.rwbs), ctx->rwbs);
  p.rwbs[RS_RWBS_LEN - 1] = '\0';
  start_pending(&key, &p);
  return 0;
}

SEC("tracepoint/block/block_rq_complete")
int block_rq_complete_tp(struct trace_event_raw_block_rq_completion* ctx) {
  struct pending_key key = {.a = ctx->dev, .b = ctx->sector};
  complete_pending(&key, ctx->error);
  return 0;
}
