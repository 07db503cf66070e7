/* The kernel <-> user ABI shared by every rankscope BPF program (bpf/NAME.bpf.c) and the
 * recorder (recorder/NAME_probe.cc).
 *
 * Versioning: RS_BPF_ABI_VERSION is compiled into each BPF object as the read-only global
 * `abi_version`; the recorder refuses an object whose value differs from its own. Bump it
 * whenever any struct in bpf/abi/ changes layout or a field changes meaning, or when the
 * stats indices below change. Adding a new event family (a new header) does not bump it.
 */
#ifndef RANKSCOPE_BPF_ABI_COMMON_H_
#define RANKSCOPE_BPF_ABI_COMMON_H_

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define RS_BPF_ABI_VERSION 2

#define RS_COMM_LEN 16

/* Indices of the per-CPU `stats` array map every BPF object carries. */
enum rs_stat {
  RS_STAT_EVENTS = 0, /* records submitted to the ring buffer */
  RS_STAT_DROPS = 1,  /* bpf_ringbuf_reserve failures (ring buffer full) */
  RS_STAT_LOST = 2,   /* state lost in kernel (e.g. a full pending-request map) */
  RS_STAT_COUNT = 3,
};

#endif /* RANKSCOPE_BPF_ABI_COMMON_H_ */
