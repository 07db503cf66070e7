/* tcp:tcp_retransmit_skb events: bpf/tcp.bpf.c -> recorder/tcp_probe.cc -> tcp_events. */
#ifndef RANKSCOPE_BPF_ABI_TCP_H_
#define RANKSCOPE_BPF_ABI_TCP_H_

#include "common.h"

#define RS_AF_INET 2
#define RS_AF_INET6 10

/* enum tcp_ca_state (include/net/tcp.h). A retransmit in Recovery (fast retransmit: the peer's
 * SACKs or duplicate ACKs reported a hole) or Loss (the retransmission timer expired) repairs a
 * segment the sender took for lost. One in Open, Disorder or CWR is a tail-loss probe, sent
 * because an ACK is late: a slow receiver causes it as well as a lost segment. */
#define RS_TCP_CA_OPEN 0
#define RS_TCP_CA_DISORDER 1
#define RS_TCP_CA_CWR 2
#define RS_TCP_CA_RECOVERY 3
#define RS_TCP_CA_LOSS 4

#define RS_TCP_ERR_KNOWN 1u
#define RS_TCP_DSACK_KNOWN 2u

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
  __u8 ca_state;  /* icsk_ca_state when it retransmitted: RS_TCP_CA_OPEN ... RS_TCP_CA_LOSS */
  __u8 saddr[16]; /* IPv4: first 4 bytes */
  __u8 daddr[16];
  __s32 err;      /* the retransmission's result: 0 = sent, -errno = not sent (retried later) */
  __u32 flags;    /* RS_TCP_ERR_KNOWN: the kernel reports err (Linux >= 6.17); before, the
                     tracepoint fired only for retransmissions sent. RS_TCP_DSACK_KNOWN:
                     dsack_dups was read (struct tcp_sock has it since Linux 4.19) */
  __u32 dsack_dups; /* tcp_sock.dsack_dups when it retransmitted: segments the peer reported,
                       by D-SACK (RFC 2883), as received twice on this connection so far. Each
                       such report says one sent copy was needless: the data had arrived. */
};

#endif /* RANKSCOPE_BPF_ABI_TCP_H_ */
