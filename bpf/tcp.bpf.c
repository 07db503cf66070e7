/* tcp:tcp_retransmit_skb -> struct rs_tcp_event. Two variants of one handler: tp_btf (typed
 * arguments, preferred) and the classic tracepoint (reads the sock / skb pointers from the
 * record). User space loads one of them, trying tp_btf first. */
#include "common.bpf.h"  // first: the vmlinux.h types the ABI header uses

#include "tcp.h"

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 1 << 20);
} tcp_rb SEC(".maps");

/* The classic record: since the `err` field was added (Linux 6.17) the event has its own
 * class, trace_event_raw_tcp_retransmit_skb; before, it shared tcp_event_sk_skb. Both start
 * with skbaddr, skaddr; CO-RE finds the fields in whichever the kernel has. */
struct trace_event_raw_tcp_event_sk_skb___old {
  const void* skbaddr;
  const void* skaddr;
} __attribute__((preserve_access_index));

static __always_inline void handle_retransmit(const struct sock* sk, const struct sk_buff* skb,
                                              int err, __u32 flags) {
  __u64 netns = BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum);
  if (scope_netns && netns != scope_netns) return;

  struct rs_tcp_event* e = RS_RESERVE(tcp_rb, struct rs_tcp_event);
  if (!e) return;
  __builtin_memset(e, 0, sizeof(*e));
  e->ts_ns = bpf_ktime_get_ns();
  e->netns = netns;
  e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
  e->state = BPF_CORE_READ(sk, __sk_common.skc_state);
  const struct inet_connection_sock* icsk = (const struct inet_connection_sock*)sk;
  e->ca_state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);
  e->sport = BPF_CORE_READ(sk, __sk_common.skc_num);
  e->dport = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
  if (e->family == RS_AF_INET6) {
    BPF_CORE_READ_INTO(&e->saddr, sk, __sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8);
    BPF_CORE_READ_INTO(&e->daddr, sk, __sk_common.skc_v6_daddr.in6_u.u6_addr8);
  } else {
    BPF_CORE_READ_INTO((__u32*)e->saddr, sk, __sk_common.skc_rcv_saddr);
    BPF_CORE_READ_INTO((__u32*)e->daddr, sk, __sk_common.skc_daddr);
  }
  /* TCP_SKB_CB(skb) lives in skb->cb. */
  const struct tcp_skb_cb* cb = (const struct tcp_skb_cb*)&skb->cb[0];
  e->seq = BPF_CORE_READ(cb, seq);
  __u32 segs = BPF_CORE_READ(cb, tcp_gso_segs);
  e->segments = segs ? segs : 1; /* tcp_skb_pcount() of a non-GSO skb is 1 */
  e->pid = 0;
  e->err = err;
  e->flags = flags;
  /* Linux >= 4.19 (tcp_check_dsack adds the D-SACKed segments): cumulative per connection, so a
   * later retransmit on it tells which earlier ones the receiver already had. */
  const struct tcp_sock* tp = (const struct tcp_sock*)sk;
  if (bpf_core_field_exists(tp->dsack_dups)) {
    e->dsack_dups = BPF_CORE_READ(tp, dsack_dups);
    e->flags |= RS_TCP_DSACK_KNOWN;
  }
  RS_SUBMIT(tcp_rb, e);
}

/* Since Linux 6.17 the tracepoint also fires for retransmissions that failed (err != 0; the
 * kernel tries them again later) and passes err as a third argument; the record got its err
 * field in the same change. On older kernels the guard is a constant false after relocation,
 * so the verifier never sees the load of ctx[2]. */
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(tcp_retransmit_btf, const struct sock* sk, const struct sk_buff* skb) {
  int err = 0;
  __u32 flags = 0;
  if (bpf_core_field_exists(struct trace_event_raw_tcp_retransmit_skb, err)) {
    err = (int)ctx[2];
    flags = RS_TCP_ERR_KNOWN;
  }
  handle_retransmit(sk, skb, err, flags);
  return 0;
}

SEC("tracepoint/tcp/tcp_retransmit_skb")
int tcp_retransmit_tp(void* ctx) {
  const struct sock* sk;
  const struct sk_buff* skb;
  int err = 0;
  __u32 flags = 0;
  if (bpf_core_type_exists(struct trace_event_raw_tcp_retransmit_skb)) {
    struct trace_event_raw_tcp_retransmit_skb* r = ctx;
    sk = BPF_CORE_READ(r, skaddr);
    skb = BPF_CORE_READ(r, skbaddr);
    if (bpf_core_field_exists(r->err)) {
      err = BPF_CORE_READ(r, err);
      flags = RS_TCP_ERR_KNOWN;
    }
  } else {
    struct trace_event_raw_tcp_event_sk_skb___old* r = ctx;
    sk = BPF_CORE_READ(r, skaddr);
    skb = BPF_CORE_READ(r, skbaddr);
  }
  if (!sk || !skb) return 0;
  handle_retransmit(sk, skb, err, flags);
  return 0;
}
