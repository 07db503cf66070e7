#include "recorder/tcp_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "recorder/test_db.h"

namespace rs::rec {
namespace {

using testing::Bytes;
using testing::TestDb;

rs_tcp_event Ipv4Event() {
  rs_tcp_event e{};
  e.ts_ns = 1'500'000'000'000;
  e.netns = 4026531840ULL;
  e.seq = 0xfffffff0u;  // above INT32_MAX: must stay unsigned
  e.segments = 3;
  e.family = RS_AF_INET;
  e.sport = 40000;
  e.dport = 5201;
  e.state = 1;
  e.ca_state = RS_TCP_CA_RECOVERY;
  e.flags = RS_TCP_ERR_KNOWN;
  inet_pton(AF_INET, "10.99.0.1", e.saddr);
  inet_pton(AF_INET, "10.99.0.2", e.daddr);
  return e;
}

TEST(TcpEventWriter, DecodesIpv4Row) {
  TestDb t;
  auto w = TcpEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->Write(Bytes(Ipv4Event())).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM tcp_events"), 1);
  EXPECT_EQ(t.Int("SELECT timestamp_ns FROM tcp_events"), TestDb::kOffset + 1'500'000'000'000);
  EXPECT_EQ(t.Text("SELECT event FROM tcp_events"), "tcp_retransmit_skb");
  EXPECT_EQ(t.Text("SELECT family FROM tcp_events"), "ipv4");
  EXPECT_EQ(t.Text("SELECT saddr || '>' || daddr FROM tcp_events"), "10.99.0.1>10.99.0.2");
  EXPECT_EQ(t.Int("SELECT sport FROM tcp_events"), 40000);
  EXPECT_EQ(t.Int("SELECT dport FROM tcp_events"), 5201);
  EXPECT_EQ(t.Int("SELECT seq FROM tcp_events"), 0xfffffff0LL);
  EXPECT_EQ(t.Int("SELECT segments FROM tcp_events"), 3);
  EXPECT_EQ(t.Text("SELECT state FROM tcp_events"), "ESTABLISHED");
  EXPECT_EQ(t.Text("SELECT ca_state FROM tcp_events"), "Recovery");
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM tcp_events WHERE err = 0"), 1);
  EXPECT_EQ(t.Int("SELECT netns FROM tcp_events"), 4026531840LL);
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM tcp_events WHERE pid IS NULL"), 1);
  EXPECT_EQ(t.Text("SELECT node FROM tcp_events"), "n1");
  EXPECT_EQ(t.Int("SELECT id FROM tcp_events"),
            rs::MakeEventId(rs::RecordingKey("0123456789abcdef0123456789abcdef"), 1));
}

TEST(TcpEventWriter, DecodesIpv6Row) {
  TestDb t;
  auto w = TcpEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_tcp_event e = Ipv4Event();
  e.family = RS_AF_INET6;
  e.state = 4;
  e.ca_state = RS_TCP_CA_OPEN;
  inet_pton(AF_INET6, "fd00::1", e.saddr);
  inet_pton(AF_INET6, "2001:db8::abcd", e.daddr);
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  EXPECT_EQ(t.Text("SELECT family FROM tcp_events"), "ipv6");
  EXPECT_EQ(t.Text("SELECT saddr FROM tcp_events"), "fd00::1");
  EXPECT_EQ(t.Text("SELECT daddr FROM tcp_events"), "2001:db8::abcd");
  EXPECT_EQ(t.Text("SELECT state FROM tcp_events"), "FIN_WAIT1");
  EXPECT_EQ(t.Text("SELECT ca_state FROM tcp_events"), "Open");
}

TEST(TcpEventWriter, FailedRetransmissionKeepsItsErrorAndOldKernelsLeaveItNull) {
  TestDb t;
  auto w = TcpEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_tcp_event e = Ipv4Event();
  e.err = -16;  // -EBUSY: the original still in the host's queue
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  e.flags = 0;  // a kernel whose tracepoint has no err
  e.err = 0;
  ASSERT_TRUE(w->Write(Bytes(e)).ok());
  EXPECT_EQ(t.Text("SELECT GROUP_CONCAT(IFNULL(err, 'null')) FROM (SELECT err FROM tcp_events "
                   "ORDER BY id)"),
            "-16,null");
}

TEST(TcpEventWriter, RejectsShortRecordsAndUnknownFamilies) {
  TestDb t;
  auto w = TcpEventWriter::Create(t.db, "n1", &t.ids, &t.clock);
  ASSERT_TRUE(w.ok());
  rs_tcp_event e = Ipv4Event();
  auto r = w->Write(Bytes(e).first(sizeof(e) - 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("short record"), std::string::npos);
  e.family = 99;
  EXPECT_FALSE(w->Write(Bytes(e)).ok());
  EXPECT_EQ(t.Int("SELECT COUNT(*) FROM tcp_events"), 0);
}

TEST(TcpStateName, KnownAndUnknown) {
  EXPECT_EQ(TcpStateName(2), "SYN_SENT");
  EXPECT_EQ(TcpStateName(12), "NEW_SYN_RECV");
  EXPECT_EQ(TcpStateName(0), "STATE_0");
  EXPECT_EQ(TcpStateName(200), "STATE_200");
}

TEST(TcpCaStateName, KnownAndUnknown) {
  EXPECT_EQ(TcpCaStateName(RS_TCP_CA_OPEN), "Open");
  EXPECT_EQ(TcpCaStateName(RS_TCP_CA_CWR), "CWR");
  EXPECT_EQ(TcpCaStateName(RS_TCP_CA_LOSS), "Loss");
  EXPECT_EQ(TcpCaStateName(5), "CA_5");
}

}  // namespace
}  // namespace rs::rec
