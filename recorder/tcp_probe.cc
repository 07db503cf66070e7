#include "recorder/tcp_probe.h"

#include <arpa/inet.h>

#include <cstring>

#include "bpf/tcp.skel.h"

namespace rs::rec {

std::string FormatAddress(uint16_t family, const uint8_t (&addr)[16]) {
  char buf[INET6_ADDRSTRLEN] = {};
  int af = family == RS_AF_INET6 ? AF_INET6 : AF_INET;
  if (inet_ntop(af, addr, buf, sizeof(buf)) == nullptr) return "?";
  return buf;
}

std::string TcpStateName(uint8_t state) {
  // include/net/tcp_states.h
  static constexpr const char* kNames[] = {
      nullptr, "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",    "TIME_WAIT",
      "CLOSE", "CLOSE_WAIT",  "LAST_ACK", "LISTEN",   "CLOSING",   "NEW_SYN_RECV",
  };
  if (state < std::size(kNames) && kNames[state]) return kNames[state];
  return "STATE_" + std::to_string(state);
}

std::string TcpCaStateName(uint8_t ca_state) {
  static constexpr const char* kNames[] = {"Open", "Disorder", "CWR", "Recovery", "Loss"};
  if (ca_state < std::size(kNames)) return kNames[ca_state];
  return "CA_" + std::to_string(ca_state);
}

const char TcpEventWriter::kInsertSql[] =
    "INSERT INTO tcp_events(id, node, timestamp_ns, event, family, saddr, daddr, sport, dport, "
    "seq, segments, state, netns, pid, ca_state, err, dsack_dups) VALUES (?, ?, ?, "
    "'tcp_retransmit_skb', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

rs::Result<void> TcpEventWriter::Write(std::span<const uint8_t> data) {
  ASSIGN_OR_RETURN(const rs_tcp_event e, ReadEvent<rs_tcp_event>(data, "tcp"));
  if (e.family != RS_AF_INET && e.family != RS_AF_INET6) {
    return rs::Error("tcp: unknown address family " + std::to_string(e.family));
  }
  rs::Statement& st = BeginRow(e.ts_ns);
  st.Bind(4, e.family == RS_AF_INET6 ? "ipv6" : "ipv4");
  st.Bind(5, FormatAddress(e.family, e.saddr)).Bind(6, FormatAddress(e.family, e.daddr));
  st.Bind(7, static_cast<int64_t>(e.sport)).Bind(8, static_cast<int64_t>(e.dport));
  st.Bind(9, static_cast<int64_t>(e.seq)).Bind(10, static_cast<int64_t>(e.segments));
  st.Bind(11, TcpStateName(e.state)).Bind(12, static_cast<int64_t>(e.netns));
  st.Bind(13, NullIfZero(e.pid)).Bind(14, TcpCaStateName(e.ca_state));
  if (e.flags & RS_TCP_ERR_KNOWN)
    st.Bind(15, static_cast<int64_t>(e.err));
  else
    st.BindNull(15);
  if (e.flags & RS_TCP_DSACK_KNOWN)
    st.Bind(16, static_cast<int64_t>(e.dsack_dups));
  else
    st.BindNull(16);
  return st.Run();
}

rs::Result<void> TcpProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  ASSIGN_OR_RETURN(writer_, TcpEventWriter::Create(ctx));
  SkeletonOps<tcp_bpf> ops{&tcp_bpf__open, &tcp_bpf__load, &tcp_bpf__destroy};
  ASSIGN_OR_RETURN(tcp_bpf * skel, Load<tcp_bpf>(ops, ctx, nullptr));
  return AttachAndPoll(ctx, skel->maps.tcp_rb);
}

}  // namespace rs::rec
