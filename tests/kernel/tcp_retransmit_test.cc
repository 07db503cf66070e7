// TCP retransmits, reconciled with the kernel's own counter: two network namespaces joined
// by a veth pair, random loss on the receiver's input, a bounded transfer, and the recorder
// (--scope netns) inside the sender's namespace. The segments of the retransmissions sent
// must equal the delta of TcpRetransSegs in that namespace exactly, and their split by
// congestion state (ca_state) the kernel's TCPFastRetrans / TCPSlowStartRetrans counters.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "kernel_test.h"
#include "recorder_runner.h"

namespace rs::rec::ktest {
namespace {

// Two namespaces and a veth pair, named with our pid; removed in the destructor.
class NetnsPair {
 public:
  NetnsPair() {
    std::string id = std::to_string(getpid());
    a_ = "rs_tcp_a_" + id;
    b_ = "rs_tcp_b_" + id;
    std::string va = "rsta" + id, vb = "rstb" + id;  // <= 15 characters
    subnet_ = "10.213." + std::to_string(getpid() % 250);
    ok_ = Sh("ip netns add " + a_) == 0 && Sh("ip netns add " + b_) == 0 &&
          Sh("ip link add " + va + " type veth peer name " + vb) == 0 &&
          Sh("ip link set " + va + " netns " + a_) == 0 &&
          Sh("ip link set " + vb + " netns " + b_) == 0 &&
          Sh(InA("ip addr add " + subnet_ + ".1/24 dev " + va)) == 0 &&
          Sh(InB("ip addr add " + subnet_ + ".2/24 dev " + vb)) == 0 &&
          Sh(InA("ip link set " + va + " up")) == 0 && Sh(InB("ip link set " + vb + " up")) == 0 &&
          Sh(InA("ip link set lo up")) == 0 && Sh(InB("ip link set lo up")) == 0;
  }
  ~NetnsPair() {
    Sh("ip netns pids " + a_ + " 2>/dev/null | xargs -r kill -9 2>/dev/null");
    Sh("ip netns pids " + b_ + " 2>/dev/null | xargs -r kill -9 2>/dev/null");
    Sh("ip netns del " + a_ + " 2>/dev/null");
    Sh("ip netns del " + b_ + " 2>/dev/null");
  }
  bool ok() const { return ok_; }
  std::string InA(const std::string& cmd) const { return "ip netns exec " + a_ + " " + cmd; }
  std::string InB(const std::string& cmd) const { return "ip netns exec " + b_ + " " + cmd; }
  const std::string& a() const { return a_; }
  std::string addr_a() const { return subnet_ + ".1"; }
  std::string addr_b() const { return subnet_ + ".2"; }

 private:
  std::string a_, b_, subnet_;
  bool ok_ = false;
};

// A counter of /proc/net/snmp ("Tcp:" lines) or /proc/net/netstat ("TcpExt:" lines) as seen
// inside namespace A; -1 when it is not there.
int64_t NetCounter(const NetnsPair& ns, const std::string& file, const std::string& prefix,
                   const std::string& counter) {
  std::string out = ShOut(ns.InA("cat " + file));
  std::istringstream in(out);
  std::string header, values;
  while (std::getline(in, header)) {
    if (header.rfind(prefix + " ", 0) != 0 || !std::getline(in, values)) continue;
    std::istringstream h(header), v(values);
    std::string name, value;
    while (h >> name && v >> value) {
      if (name == counter) return std::stoll(value);
    }
  }
  return -1;
}

int64_t RetransSegs(const NetnsPair& ns) {
  return NetCounter(ns, "/proc/net/snmp", "Tcp:", "RetransSegs");
}

// A number the bundle's SQL gives; -1 (and a failed expectation) where the query fails.
int64_t BundleCount(const std::string& bundle, const std::string& sql) {
  auto v = QueryBundleInt(bundle, sql);
  EXPECT_TRUE(v.ok()) << sql << ": " << v.error().message();
  return v.ok() ? *v : -1;
}

// The D-SACK count (tcp_sock.dsack_dups) of the one connection in the bundle: read on every row
// (Linux >= 4.19), never falling in time order, and growing within the recording by no more
// than the namespace's TCPDSACKRecvSegs delta (tcp_check_dsack adds the same number to both).
// Returns how much it grew.
int64_t ExpectDsackCountsReconcile(const std::string& bundle, int64_t dsack_recv_segs) {
  auto count = [&](const std::string& sql) { return BundleCount(bundle, sql); };
  EXPECT_EQ(count("SELECT COUNT(*) FROM tcp_events WHERE dsack_dups IS NULL"), 0);
  EXPECT_EQ(count("SELECT COUNT(*) FROM (SELECT dsack_dups - LAG(dsack_dups) OVER "
                  "(ORDER BY timestamp_ns, id) AS d FROM tcp_events) WHERE d < 0"),
            0);
  int64_t grew = count("SELECT IFNULL(MAX(dsack_dups) - MIN(dsack_dups), 0) FROM tcp_events");
  EXPECT_GE(grew, 0);
  EXPECT_LE(grew, dsack_recv_segs) << "D-SACK count growth vs TCPDSACKRecvSegs delta";
  return grew;
}

// One recorded transfer and its reconciliation. `retry_allowed`: a segment count that does
// not reconcile (with no skipped runs to explain it) is printed with the rows and reported
// through `unreconciled` instead of failing, so the caller can tell a rare gap from a
// systematic one.
void RecordTransfer(bool retry_allowed, bool* unreconciled) {
  NetnsPair ns;
  ASSERT_TRUE(ns.ok()) << "could not build the test namespaces";
  ASSERT_EQ(Sh(ns.InB("iptables -A INPUT -p tcp --dport 5555 -m statistic --mode random "
                      "--probability 0.05 -j DROP")),
            0);
  TempDir dir;
  std::string out = dir.File("tcp.rsb");
  int64_t before = RetransSegs(ns);
  ASSERT_GE(before, 0);
  const char* kExt[] = {"TCPFastRetrans", "TCPSlowStartRetrans", "TCPLossProbes", "TCPTimeouts",
                        "TCPDSACKRecvSegs"};
  std::map<std::string, int64_t> ext_before;
  for (const char* c : kExt) ext_before[c] = NetCounter(ns, "/proc/net/netstat", "TcpExt:", c);

  auto rec = RecorderProcess::Start({"--out", out, "--node", "ktcp", "--scope", "netns"}, ns.a());
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();

  // Bounded transfer: 8 MiB, at most 40 s.
  ASSERT_EQ(Sh(ns.InB("timeout 45 socat -u TCP-LISTEN:5555,reuseaddr OPEN:/dev/null "
                      ">/dev/null 2>&1 &")),
            0);
  usleep(300'000);
  int rc = Sh("head -c 8388608 /dev/zero | " +
              ns.InA("timeout 40 socat -u STDIN TCP:" + ns.addr_b() + ":5555,retry=20"));
  EXPECT_EQ(rc, 0) << "transfer failed";
  // Wait until no connection to the port is left (retransmitted FINs included).
  for (int i = 0; i < 100; ++i) {
    if (ShOut(ns.InA("ss -Htan '( dport = :5555 )'")).empty()) break;
    usleep(100'000);
  }
  int64_t after = RetransSegs(ns);
  std::map<std::string, int64_t> ext;
  for (const char* c : kExt)
    ext[c] = NetCounter(ns, "/proc/net/netstat", "TcpExt:", c) - ext_before[c];
  ASSERT_EQ(rec->Stop(SIGINT), 0) << rec->stderr_text();

  auto count = [&](const std::string& sql) { return BundleCount(out, sql); };
  // Retransmissions sent: err 0, or NULL where the kernel reports only those (before 6.17).
  const std::string sent = "FROM tcp_events WHERE (err = 0 OR err IS NULL)";
  int64_t delta = after - before;
  EXPECT_GT(delta, 0) << "5% loss over 8 MiB must cause retransmits";
  int64_t sum = count("SELECT IFNULL(SUM(segments), 0) " + sent);
  // Runs of the tcp program the kernel skipped: a retransmission in a softirq while the
  // program ran in process context on the same CPU (any socket of the host: other tests'
  // traffic too). Each is a drop; only then may the bundle hold fewer segments.
  int64_t skipped =
      count("SELECT CAST(value AS INTEGER) FROM metadata WHERE key = 'tcp_drops_kernel_skipped'");
  EXPECT_GE(skipped, 0) << "tcp_drops_kernel_skipped must be in the metadata";
  if (skipped == 0) {
    if (sum != delta && std::getenv("RANKSCOPE_ANALYZE") != nullptr) {
      // What the bundle holds, to tell a missed event from a misread one.
      const std::string query = std::string(std::getenv("RANKSCOPE_ANALYZE")) + " query " + out;
      std::printf(
          "%s%s\n",
          ShOut(query + " \"SELECT timestamp_ns, seq, segments, state, ca_state, err FROM "
                        "tcp_events ORDER BY timestamp_ns\" 2>&1")
              .c_str(),
          ShOut(query + " \"SELECT key, value FROM metadata WHERE key LIKE 'tcp%'\" 2>&1").c_str());
    }
    if (sum != delta && retry_allowed) {
      std::printf("TcpRetransSegs delta %lld, segments recorded %lld: not reconciled\n",
                  static_cast<long long>(delta), static_cast<long long>(sum));
      *unreconciled = true;
      return;
    }
    EXPECT_EQ(sum, delta) << "segments of the retransmissions sent vs TcpRetransSegs delta";
  } else {
    EXPECT_LE(sum, delta) << "segments of the retransmissions sent vs TcpRetransSegs delta";
  }
  int64_t not_loss = count("SELECT IFNULL(SUM(segments), 0) " + sent + " AND ca_state != 'Loss'");
  int64_t loss = count("SELECT IFNULL(SUM(segments), 0) " + sent + " AND ca_state = 'Loss'");
  std::printf(
      "TcpRetransSegs delta %lld; bundle: %lld rows, %lld failed (not sent), %lld skipped by "
      "the kernel, sent segments %lld (Recovery %lld, Loss %lld, other %lld); TCPFastRetrans "
      "%lld, TCPSlowStartRetrans %lld, TCPTimeouts %lld, TCPLossProbes %lld\n",
      static_cast<long long>(delta),
      static_cast<long long>(count("SELECT COUNT(*) FROM tcp_events")),
      static_cast<long long>(count("SELECT COUNT(*) FROM tcp_events WHERE err != 0")),
      static_cast<long long>(skipped), static_cast<long long>(sum),
      static_cast<long long>(
          count("SELECT IFNULL(SUM(segments), 0) " + sent + " AND ca_state = 'Recovery'")),
      static_cast<long long>(loss),
      static_cast<long long>(count("SELECT IFNULL(SUM(segments), 0) " + sent +
                                   " AND ca_state NOT IN ('Recovery', 'Loss')")),
      static_cast<long long>(ext["TCPFastRetrans"]),
      static_cast<long long>(ext["TCPSlowStartRetrans"]),
      static_cast<long long>(ext["TCPTimeouts"]), static_cast<long long>(ext["TCPLossProbes"]));
  // The congestion state reconciles with the kernel's split of the same retransmissions: what
  // the retransmit queue sends outside Loss is TCPFastRetrans, plus at most one segment per
  // tail-loss probe (TCPLossProbes); in Loss, TCPSlowStartRetrans plus at most one head
  // segment per timeout.
  EXPECT_EQ(count("SELECT COUNT(*) FROM tcp_events WHERE ca_state IS NULL OR ca_state NOT IN "
                  "('Open', 'Disorder', 'CWR', 'Recovery', 'Loss')"),
            0);
  EXPECT_GT(count("SELECT COUNT(*) " + sent + " AND ca_state = 'Recovery'"), 0)
      << "random loss in a bulk transfer is repaired by fast retransmits";
  if (skipped == 0) {
    EXPECT_GE(not_loss, ext["TCPFastRetrans"]);
  }
  EXPECT_LE(not_loss, ext["TCPFastRetrans"] + ext["TCPLossProbes"]);
  EXPECT_LE(count("SELECT IFNULL(SUM(segments), 0) " + sent + " AND ca_state = 'Recovery'"),
            ext["TCPFastRetrans"]);
  if (skipped == 0) {
    EXPECT_GE(loss, ext["TCPSlowStartRetrans"]);
  }
  EXPECT_LE(loss, ext["TCPSlowStartRetrans"] + ext["TCPTimeouts"]);
  ExpectDsackCountsReconcile(out, ext["TCPDSACKRecvSegs"]);
  // Every row is this connection, seen from the sender, in the recorder's namespace.
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*) FROM tcp_events WHERE saddr <> '" + ns.addr_a() +
                                     "' OR daddr <> '" + ns.addr_b() +
                                     "' OR dport <> 5555 OR family <> 'ipv4' OR "
                                     "event <> 'tcp_retransmit_skb'"),
            0);
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(DISTINCT netns) FROM tcp_events"), 1);
  EXPECT_EQ(*QueryBundleInt(out,
                            "SELECT COUNT(*) FROM tcp_events t JOIN metadata m ON "
                            "m.key = 'netns' AND CAST(m.value AS INTEGER) = t.netns"),
            *QueryBundleInt(out, "SELECT COUNT(*) FROM tcp_events"));
  EXPECT_EQ(*QueryBundleInt(out, "SELECT drops FROM sources WHERE source = 'tcp'"), skipped)
      << "the kernel's skipped runs are the only drops (ring full, undecodable: none)";
  EXPECT_EQ(*QueryBundleInt(out, "SELECT events FROM sources WHERE source = 'tcp'"),
            *QueryBundleInt(out, "SELECT COUNT(*) FROM tcp_events"));
  // The namespace's own interface is in the interfaces table.
  EXPECT_EQ(*QueryBundleInt(out, "SELECT COUNT(*) FROM interfaces WHERE address = '" + ns.addr_a() +
                                     "' AND prefix_len = 24"),
            1);
}

// The kernel counts a retransmission in TcpRetransSegs and fires the tracepoint in the same
// function, so the two must agree. Under heavy CPU load one run in about twenty to sixty
// has shown one retransmission's segments in the counter and in no event, with every BPF
// submission received, no reserve failure and no run skipped by the kernel; the cause is
// not known. Such a run is printed in full and the transfer is repeated once: two in a row
// fail the test, as does any other check of either run.
TEST(TcpRetransmit, SegmentsReconcileWithTcpRetransSegs) {
  REQUIRE_ROOT_OR_SKIP();
  SKIP_UNLESS_OR_FAIL_IN_CI(
      Sh("command -v socat >/dev/null && command -v iptables >/dev/null") == 0,
      "needs socat and iptables (apt-get install socat iptables)");
  bool unreconciled = false;
  RecordTransfer(/*retry_allowed=*/true, &unreconciled);
  if (unreconciled && !HasFatalFailure()) RecordTransfer(/*retry_allowed=*/false, &unreconciled);
}

// Copies of data the receiver already had: the sender's ACKs are dropped for longer than its
// retransmission timeout (200 ms at least), twice. The first blackout's timeout retransmits
// reach a receiver that has the data; it reports them by D-SACK, which passes once the ACKs
// do. The second blackout's retransmits carry the grown count: what tells the report that the
// first copies were needless (no packet was lost), not repairs.
TEST(TcpRetransmit, DsackCountGrowsWhenTheReceiverHadTheData) {
  REQUIRE_ROOT_OR_SKIP();
  SKIP_UNLESS_OR_FAIL_IN_CI(
      Sh("command -v socat >/dev/null && command -v iptables >/dev/null") == 0,
      "needs socat and iptables (apt-get install socat iptables)");
  NetnsPair ns;
  ASSERT_TRUE(ns.ok()) << "could not build the test namespaces";
  TempDir dir;
  std::string out = dir.File("dsack.rsb");
  int64_t before = NetCounter(ns, "/proc/net/netstat", "TcpExt:", "TCPDSACKRecvSegs");
  ASSERT_GE(before, 0) << "the kernel has no TCPDSACKRecvSegs counter (Linux < 5.10)";
  auto rec = RecorderProcess::Start({"--out", out, "--node", "ktcp", "--scope", "netns"}, ns.a());
  ASSERT_TRUE(rec.ok());
  ASSERT_TRUE(rec->WaitReady()) << rec->stderr_text();
  ASSERT_EQ(Sh(ns.InB("timeout 30 socat -u TCP-LISTEN:5556,reuseaddr OPEN:/dev/null "
                      ">/dev/null 2>&1 &")),
            0);
  usleep(300'000);
  // Bounded: 16 KiB every 50 ms for about 5 s, at most 25 s.
  ASSERT_EQ(Sh("(for i in $(seq 100); do head -c 16384 /dev/zero; sleep 0.05; done) | " +
               ns.InA("timeout 25 socat -u STDIN TCP:" + ns.addr_b() + ":5556,retry=20") +
               " >/dev/null 2>&1 &"),
            0);
  usleep(500'000);
  const std::string rule = "INPUT -s " + ns.addr_b() + " -p tcp --sport 5556 -j DROP";
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(Sh(ns.InA("iptables -I " + rule)), 0);
    usleep(900'000);
    ASSERT_EQ(Sh(ns.InA("iptables -D " + rule)), 0);
    usleep(1'800'000);  // the backed-off timer fires once more, its D-SACK passes
  }
  for (int i = 0; i < 250; ++i) {
    if (ShOut(ns.InA("ss -Htn state established '( dport = :5556 )'")).empty()) break;
    usleep(100'000);
  }
  int64_t dsack = NetCounter(ns, "/proc/net/netstat", "TcpExt:", "TCPDSACKRecvSegs") - before;
  ASSERT_EQ(rec->Stop(SIGINT), 0) << rec->stderr_text();
  auto rows = QueryBundleInt(out, "SELECT COUNT(*) FROM tcp_events WHERE ca_state = 'Loss'");
  ASSERT_TRUE(rows.ok());
  EXPECT_GE(*rows, 2) << "each blackout outlasts the retransmission timeout";
  EXPECT_GT(dsack, 0) << "the receiver reports the needless copies (net.ipv4.tcp_dsack = 1)";
  const int64_t grew = ExpectDsackCountsReconcile(out, dsack);
  std::printf(
      "timeout retransmits %lld; D-SACKed segments: TCPDSACKRecvSegs delta %lld, growth "
      "of the recorded count %lld\n",
      static_cast<long long>(*rows), static_cast<long long>(dsack), static_cast<long long>(grew));
  EXPECT_GT(grew, 0)
      << "the second blackout's retransmits carry the count the first one's D-SACKs raised";
}

}  // namespace
}  // namespace rs::rec::ktest
