// Shared by the uprobe call probes (nccl.bpf.c, cuda.bpf.c): selection of processes
// (--pid, --scope netns), per-CPU drop counters, capture of the call's registers, and the
// rules that pair an entry with its return when probed functions call each other.
//
// Entry state lives in an LRU hash keyed by thread (and a per-library slot): one slot per
// thread, written in place at entry and marked done (exit_ns != 0) at return, so a call costs
// two lookups and no map update; slots of exited threads age out of the LRU. At the end of
// recording the slots with exit_ns == 0 are exactly the calls still in flight.
//
// Nesting, decided by the stack pointer at entry (sp, where the return address lies):
//  - a call entered while an outer probed call of the same slot is active has a lower sp:
//    it is internal to the outer call (ncclBcast calls ncclBroadcast) and is not recorded;
//  - a probed function reached by a tail jump has the same sp as the outer one: both
//    uretprobes fire at the one return, so the outer counts tail_calls and skips as many;
//  - a higher sp means the active entry was abandoned (longjmp): it is replaced.
// "Active" is checked, not assumed: while a probed call is under way, the kernel has replaced
// its return address (at its entry sp) with the uretprobe trampoline. If that word is
// anything else, the active entry's return will never be seen (a longjmp out of it to the
// same frame, a return the kernel did not arm) and it is replaced too, so one lost return
// cannot hide the thread's later calls as "nested" ones.
// A uretprobe runs after `ret`, so the matching return has sp == entry sp + 8.
#pragma once

#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "call.h"

char LICENSE[] SEC("license") = "GPL";

// Configured by user space before load.
const volatile __u64 scope_netns = 0;  // --scope netns: record only tasks in this netns inode
const volatile __u8 filter_pids = 0;   // --pid given: record only tgids in `pids`
// Wake the consumer only when this much is pending; otherwise it drains on its own timer.
const volatile __u64 wakeup_bytes = 256 * 1024;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} pids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, CALL_STAT_MAX);
  __type(key, __u32);
  __type(value, __u64);
} stats SEC(".maps");

static __always_inline void count_stat(__u32 idx) {
  __u64* v = bpf_map_lookup_elem(&stats, &idx);
  if (v) *v += 1;
}

static __always_inline bool call_selected(__u32 tgid) {
  if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid)) return false;
  if (scope_netns) {
    struct task_struct* task = (struct task_struct*)bpf_get_current_task();
    __u32 inum = BPF_CORE_READ(task, nsproxy, net_ns, ns.inum);
    if (inum != scope_netns) return false;
  }
  return true;
}

static __always_inline void read_call_regs(struct pt_regs* ctx, struct call_regs* r) {
  __u64 sp = PT_REGS_SP(ctx);
  r->arg[0] = PT_REGS_PARM1(ctx);
  r->arg[1] = PT_REGS_PARM2(ctx);
  r->arg[2] = PT_REGS_PARM3(ctx);
  r->arg[3] = PT_REGS_PARM4(ctx);
  r->arg[4] = PT_REGS_PARM5(ctx);
  r->arg[5] = ctx->r9;  // libbpf 1.1 has no PT_REGS_PARM6
  r->sp = sp;
  __u64 words[4] = {};  // [sp] return address, then [sp+8], [sp+16], [sp+24]
  bpf_probe_read_user(words, sizeof(words), (void*)sp);
  r->ret_addr = words[0];
  r->stack[0] = words[1];
  r->stack[1] = words[2];
  r->stack[2] = words[3];
}

// True while the call entered at `active_sp` is under way (see top).
static __always_inline bool call_under_way(__u64 active_sp) {
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  __u64 trampoline = BPF_CORE_READ(task, mm, uprobes_state.xol_area, vaddr);
  __u64 ret_addr = 0;
  if (bpf_probe_read_user(&ret_addr, sizeof(ret_addr), (void*)active_sp) != 0) return false;
  return trampoline != 0 && ret_addr == trampoline;
}

// Closes a slot whose entry will never see its return, counted once as STALE_ENTRY: should
// the new call not be recorded either (not selected, sampled out), the slot must not stay
// active (it would be counted again at the next call, and written as in flight at the end).
static __always_inline bool stale_entry(__u64* exit_ns) {
  count_stat(CALL_STAT_STALE_ENTRY);
  *exit_ns = bpf_ktime_get_ns();
  return true;
}

// Entry rule (see top), for a slot whose call is active (exit_ns == 0). Returns true when
// the caller should record a new entry.
static __always_inline bool entry_is_outermost(__u64 sp, __u64 active_sp, __u16* tail_calls,
                                               __u64* exit_ns) {
  if (sp <= active_sp && !call_under_way(active_sp)) return stale_entry(exit_ns);
  if (sp < active_sp) {
    count_stat(CALL_STAT_NESTED);
    return false;
  }
  if (sp == active_sp) {
    *tail_calls += 1;
    count_stat(CALL_STAT_NESTED);
    return false;
  }
  return stale_entry(exit_ns);
}

// At the entry of a call that is recorded: the fields every call event (struct cuda_event,
// struct nccl_event) has, for the function the attach cookie names. The caller fills in its
// own fields, then entry_ns. A macro: the two event types share these field names, not a type.
#define CALL_EVENT_START(e_, cookie_, tgid_, tid_) \
  do {                                             \
    (e_)->abi = CALL_ABI_VERSION;                  \
    (e_)->fn = (cookie_) & 0xffff;                 \
    (e_)->cookie = (__u32)(cookie_);               \
    (e_)->pid = (tgid_);                           \
    (e_)->tid = (tid_);                            \
    (e_)->exit_ns = 0;                             \
    (e_)->ret = 0;                                 \
    (e_)->tail_calls = 0;                          \
  } while (0)

// Return rule (see top). Returns true when this return completes the active entry.
static __always_inline bool return_matches(__u64 sp, __u64 active_sp, __u16* tail_calls) {
  if (sp <= active_sp) return false;  // return of a nested call
  if (sp != active_sp + 8) {          // a call whose entry was never seen
    count_stat(CALL_STAT_LOST_ENTRY);
    return false;
  }
  if (*tail_calls > 0) {
    *tail_calls -= 1;
    return false;
  }
  return true;
}

// Library loads. ld.so maps a library's code with an mmap(PROT_EXEC) of its file; when the
// file's name starts with lib_prefix ("libnccl.so", "libcuda"), the process is reported in
// lib_maps with a wakeup, so user space scans its mappings and attaches now rather than at
// its next rescan (a program that dlopen()s NCCL and calls it at once). A notification lost
// to a full ring costs nothing but that delay: the rescan still finds the copy.
const volatile char lib_prefix[16] = {};

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 64 * 1024);
} lib_maps SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_mmap")
int lib_mmap(struct trace_event_raw_sys_enter* ctx) {
  if (!(ctx->args[2] & 0x4 /* PROT_EXEC */)) return 0;
  int fd = (int)ctx->args[4];
  if (fd < 0) return 0;
  __u32 tgid = bpf_get_current_pid_tgid() >> 32;
  if (!call_selected(tgid)) return 0;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  struct fdtable* fdt = BPF_CORE_READ(task, files, fdt);
  if (!fdt || (unsigned int)fd >= BPF_CORE_READ(fdt, max_fds)) return 0;
  struct file** fds = BPF_CORE_READ(fdt, fd);
  struct file* file = NULL;
  bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
  if (!file) return 0;
  char name[sizeof(lib_prefix)] = {};
  bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(file, f_path.dentry, d_name.name));
#pragma unroll
  for (int i = 0; i < (int)sizeof(lib_prefix); i++) {
    if (lib_prefix[i] == 0) break;
    if (name[i] != lib_prefix[i]) return 0;
  }
  if (lib_prefix[0] == 0) return 0;
  struct call_lib_map* e = bpf_ringbuf_reserve(&lib_maps, sizeof(*e), 0);
  if (!e) return 0;
  e->pid = tgid;
  e->fd = (__u32)fd;
  bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
  return 0;
}

// Processes whose first event was already pushed to the consumer.
struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} announced SEC(".maps");

// The consumer is woken for the first event written of a process (user space then reads its /proc
// entries, maps for symbolization and rank variables, while it still runs) and when the
// pending data crosses wakeup_bytes with an event. Otherwise it drains on its own timer. A
// wakeup is an interrupt (a VM exit under virtualization): waking on every event while much
// is pending would cost microseconds per call.
//
// Whether the process was announced is asked once per slot: a slot taken by a new thread id
// gets CALL_FLAG_WAKE, and the first event written from it asks `announced` (so whichever
// thread or layer writes the process's first event wakes the consumer, even while another
// thread's first call is still under way). A hash lookup at every write would add about 30 ns
// to the return program (tests/bench/capture.md).
static __always_inline __u64 wakeup_flags(void* rb, __u32 tgid, __u16* flags, __u64 size) {
  if (*flags & CALL_FLAG_WAKE) {
    *flags &= ~CALL_FLAG_WAKE;
    if (!bpf_map_lookup_elem(&announced, &tgid)) {
      __u8 one = 1;
      bpf_map_update_elem(&announced, &tgid, &one, BPF_ANY);
      return BPF_RB_FORCE_WAKEUP;
    }
  }
  __u64 pending = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA);
  return pending < wakeup_bytes && pending + size >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
                                                                  : BPF_RB_NO_WAKEUP;
}
