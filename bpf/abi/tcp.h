/* tcp:tcp_retransmit_skb events: bpf/tcp.bpf.c -> recorder/tcp_probe.cc -> tcp_events. */
#ifndef RANKSCOPE_BPF_ABI_TCP_H_
#define RANKSCOPE_BPF_ABI_TCP_H_

#include "common.h"

#define RS_AF_INET 2
#define RS_AF_INET6 10

struct rs_tcp_event {
  __u64 ts_ns;    /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) */
  __u64 netns;    /* inode of the socket's network namespace */
  __u32 seq;      /* TCP_SKB_CB(skb)->seq of the retransmitted skb */
  __u32 segments; /* tcp_skb_pcount(skb): segments this retransmission counted */
  __u32 pid;      /* 0: not known (retransmits mostly fire from timers / softirq) */
  __u16 family;   /* RS_AF_INET | RS_AF_INET6 */
  __u16 sport;    /* host byte order */
  __u16 dport;    /* host byte order */
  __u8 state;     /* TCP_ESTABLISHED (1) ... TCP_NEW_SYN_RECV (12) */
  __u8 pad;
  __u8 saddr[16]; /* IPv4: first 4 bytes */
  __u8 daddr[16];
};

#endif /* RANKSCOPE_BPF_ABI_TCP_H_ */
