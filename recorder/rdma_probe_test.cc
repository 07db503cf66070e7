// The rdma probe on a fake sysfs laid out as the kernel lays out an mlx5 adapter's ports:
// SYS/class/infiniband/DEV/{node_guid, device/net/IF, ports/N/{link_layer, state, rate, gids/0,
// gid_attrs/ndevs/0, counters/*, hw_counters/*}}. The counter names are the kernel's: the
// InfiniBand port counters of drivers/infiniband/core/sysfs.c (symbol_error ... port_xmit_wait)
// and mlx5's hw_counters of drivers/infiniband/hw/mlx5/counters.c (out_of_sequence,
// local_ack_timeout_err, np_cnp_sent, ...; 'lifespan' in that directory is no counter).
#include "recorder/rdma_probe.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "recorder/test_db.h"
#include "recorder/test_temp_dir.h"

namespace rs::rec {
namespace {

namespace fs = std::filesystem;

const char* const kIbCounters[] = {
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors", "port_xmit_data", "port_xmit_discards", "port_xmit_packets",
    "port_xmit_wait", "symbol_error", "unicast_rcv_packets", "unicast_xmit_packets"};
const char* const kMlx5HwCounters[] = {
    "duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
    "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err",
    "rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to", "rp_cnp_handled",
    "rp_cnp_ignored", "rx_atomic_requests", "rx_read_requests", "rx_write_requests"};

class FakeSysfs {
 public:
  explicit FakeSysfs(const std::string& root) : root_(root) {}
  // An InfiniBand port (IPoIB interface ib0) and a RoCE port (interface ens1f0np0).
  void AddMlx5() {
    Device("mlx5_0", "b8ce:f603:00a1:b2c3");
    Write("class/infiniband/mlx5_0/device/net/ib0/ifindex", "5");
    Port("mlx5_0", 1, "InfiniBand", "fe80:0000:0000:0000:b8ce:f603:00a1:b2c3", "");
    Device("mlx5_1", "0c42:a103:0011:2233");
    Port("mlx5_1", 1, "Ethernet", "fe80:0000:0000:0000:0e42:a1ff:fe11:2233", "ens1f0np0");
  }
  void Device(const std::string& dev, const std::string& guid) {
    Write("class/infiniband/" + dev + "/node_guid", guid);
  }
  void Port(const std::string& dev, int port, const std::string& layer, const std::string& gid,
            const std::string& ndev) {
    const std::string p = PortDir(dev, port);
    Write(p + "/link_layer", layer);
    Write(p + "/state", "4: ACTIVE");
    Write(p + "/rate", layer == "InfiniBand" ? "200 Gb/sec (4X HDR)" : "100 Gb/sec (4X EDR)");
    Write(p + "/gids/0", gid);
    if (!ndev.empty()) Write(p + "/gid_attrs/ndevs/0", ndev);
    for (const char* c : kIbCounters) Counter(dev, port, "counters", c, 0);
    for (const char* c : kMlx5HwCounters) Counter(dev, port, "hw_counters", c, 0);
    Write(p + "/hw_counters/lifespan", "10");
  }
  void Counter(const std::string& dev, int port, const std::string& dir, const std::string& name,
               int64_t value) {
    Write(PortDir(dev, port) + "/" + dir + "/" + name, std::to_string(value));
  }
  void Write(const std::string& rel, const std::string& text) {
    const fs::path path = fs::path(root_) / rel;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text << "\n";
  }

 private:
  static std::string PortDir(const std::string& dev, int port) {
    return "class/infiniband/" + dev + "/ports/" + std::to_string(port);
  }
  std::string root_;
};

struct ProbeRun {
  testing::TempDir dir;
  testing::TestDb t;
  RecorderContext ctx;
  FakeSysfs sys{dir.path};
  ProbeRun() {
    ctx.db = &t.db;
    ctx.node = "n1";
    ctx.ids = &t.ids;
    ctx.clock = &t.clock;
    ctx.sys_root = dir.path;
  }
};

TEST(ReadCounterFile, AnUnsignedDecimalThatFitsOnly) {
  testing::TempDir dir;
  FakeSysfs sys(dir.path);
  sys.Write("a", "123");
  sys.Write("b", "N/A");
  sys.Write("c", "18446744073709551615");  // 2^64 - 1: no SQLite integer
  sys.Write("d", "-1");
  EXPECT_EQ(ReadCounterFile(dir.path + "/a"), 123);
  EXPECT_EQ(ReadCounterFile(dir.path + "/b"), std::nullopt);
  EXPECT_EQ(ReadCounterFile(dir.path + "/c"), std::nullopt);
  EXPECT_EQ(ReadCounterFile(dir.path + "/d"), std::nullopt);
  EXPECT_EQ(ReadCounterFile(dir.path + "/none"), std::nullopt);
}

// A tree given with --simulate-rdma-sysfs may hold anything: a FIFO nobody writes is not
// waited for, a file of more than a page without a newline gives no number.
TEST(ReadCounterFile, NeitherAFifoNorAnEndlessLineIsRead) {
  testing::TempDir dir;
  FakeSysfs sys(dir.path);
  ASSERT_EQ(mkfifo((dir.path + "/fifo").c_str(), 0600), 0);
  EXPECT_EQ(ReadCounterFile(dir.path + "/fifo"), std::nullopt);  // returns: nothing blocks
  sys.Write("long", std::string(5000, '7'));
  EXPECT_EQ(ReadCounterFile(dir.path + "/long"), std::nullopt);  // 4096 digits: past INT64
  sys.Write("two", "42\n43\n");
  EXPECT_EQ(ReadCounterFile(dir.path + "/two"), 42);
}

TEST(FindRdmaPorts, EveryPortWithItsIdentityAndEveryCounterFile) {
  testing::TempDir dir;
  FakeSysfs sys(dir.path);
  sys.AddMlx5();
  sys.Write("class/infiniband/mlx5_1/ports/not-a-port/link_layer", "Ethernet");
  const std::vector<RdmaPort> ports = FindRdmaPorts(dir.path);
  ASSERT_EQ(ports.size(), 2u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].port, 1);
  EXPECT_EQ(ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(ports[0].netdev, "ib0");  // from device/net
  EXPECT_EQ(ports[0].node_guid, "b8ce:f603:00a1:b2c3");
  EXPECT_EQ(ports[0].state, "4: ACTIVE");
  EXPECT_EQ(ports[0].rate, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(ports[1].link_layer, "Ethernet");
  EXPECT_EQ(ports[1].netdev, "ens1f0np0");  // GID 0's interface
  EXPECT_EQ(ports[1].gid, "fe80:0000:0000:0000:0e42:a1ff:fe11:2233");
  const size_t expected = std::size(kIbCounters) + std::size(kMlx5HwCounters);  // no lifespan
  EXPECT_EQ(ports[0].counters.size(), expected);
  EXPECT_EQ(ports[1].counters.size(), expected);
  EXPECT_TRUE(FindRdmaPorts(dir.path + "/nothing").empty());
}

TEST(RdmaProbe, FirstReadingThenChangesWithTheirDeltaThenALastReading) {
  ProbeRun r;
  r.sys.AddMlx5();
  RdmaProbe probe(/*reading_period_ns=*/0);
  ASSERT_TRUE(probe.Start(r.ctx).ok());
  const int64_t per_port = std::size(kIbCounters) + std::size(kMlx5HwCounters);
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_ports"), 2);
  EXPECT_EQ(r.t.Text("SELECT link_layer || ' ' || netdev || ' ' || rate FROM rdma_ports "
                     "WHERE device = 'mlx5_1' AND port = 1 AND node = 'n1'"),
            "Ethernet ens1f0np0 100 Gb/sec (4X EDR)");
  // The first reading: every counter, no delta.
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters"), 2 * per_port);
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters WHERE delta IS NOT NULL "
                    "OR since_ns IS NOT NULL"),
            0);
  // A flapping IB link and RoCE retries; a counter the driver reset.
  r.sys.Counter("mlx5_0", 1, "counters", "symbol_error", 1520);
  r.sys.Counter("mlx5_0", 1, "counters", "link_error_recovery", 3);
  r.sys.Counter("mlx5_1", 1, "hw_counters", "out_of_sequence", 40);
  probe.Tick(r.ctx);
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters"), 2 * per_port + 3);
  EXPECT_EQ(r.t.Int("SELECT delta FROM rdma_counters WHERE counter = 'symbol_error' "
                    "AND delta IS NOT NULL"),
            1520);
  EXPECT_EQ(r.t.Text("SELECT dir FROM rdma_counters WHERE counter = 'out_of_sequence' "
                     "AND delta = 40"),
            "hw_counters");
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters WHERE delta IS NOT NULL AND "
                    "(since_ns IS NULL OR since_ns > timestamp_ns)"),
            0);
  probe.Tick(r.ctx);  // nothing changed: nothing written
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters"), 2 * per_port + 3);
  r.sys.Counter("mlx5_1", 1, "hw_counters", "out_of_sequence", 2);  // reset
  r.sys.Write("class/infiniband/mlx5_0/ports/1/counters/port_xmit_wait", "N/A");
  ASSERT_TRUE(probe.Finish(r.ctx).ok());
  // The last reading: every counter it could read (one gave no number), each with its delta;
  // after the reset no delta.
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters"), 2 * per_port + 3 + 2 * per_port - 1);
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters WHERE counter = 'out_of_sequence' AND "
                    "value = 2 AND delta IS NULL AND since_ns IS NOT NULL"),
            1);
  EXPECT_EQ(r.t.Int("SELECT SUM(delta) FROM rdma_counters WHERE device = 'mlx5_0'"), 1523);
  EXPECT_EQ(probe.events(), static_cast<uint64_t>(4 * per_port + 2));
  EXPECT_EQ(probe.note(), "1 reading(s) of a counter file gave no number");
  // Event ids from the recording's allocator, all distinct.
  EXPECT_EQ(r.t.Int("SELECT COUNT(DISTINCT id) FROM rdma_counters"), 4 * per_port + 2);
}

// A rise after readings that found no change happened after the latest of them: the row's
// window starts there, not at the counter's last row (minutes earlier on a quiet link).
TEST(RdmaProbe, ARisesWindowStartsAtTheLastReadingThatSawNoChange) {
  ProbeRun r;
  r.sys.AddMlx5();
  RdmaProbe probe(/*reading_period_ns=*/0);
  ASSERT_TRUE(probe.Start(r.ctx).ok());
  const int64_t first =
      r.t.Int("SELECT MAX(timestamp_ns) FROM rdma_counters WHERE counter = 'symbol_error'");
  probe.Tick(r.ctx);  // unchanged: nothing written
  probe.Tick(r.ctx);
  r.sys.Counter("mlx5_0", 1, "counters", "symbol_error", 5);
  probe.Tick(r.ctx);
  const int64_t since = r.t.Int("SELECT since_ns FROM rdma_counters WHERE counter = "
                                "'symbol_error' AND delta = 5");
  const int64_t at = r.t.Int("SELECT timestamp_ns FROM rdma_counters WHERE counter = "
                             "'symbol_error' AND delta = 5");
  EXPECT_GT(since, first);  // the second unchanged reading's time
  EXPECT_LT(since, at);
  ASSERT_TRUE(probe.Finish(r.ctx).ok());
}

TEST(RdmaProbe, NoDeviceRecordsNothingAndSaysSo) {
  ProbeRun r;
  RdmaProbe probe;
  ASSERT_TRUE(probe.Start(r.ctx).ok());
  probe.Tick(r.ctx);
  ASSERT_TRUE(probe.Finish(r.ctx).ok());
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_counters"), 0);
  EXPECT_EQ(r.t.Int("SELECT COUNT(*) FROM rdma_ports"), 0);
  EXPECT_EQ(probe.events(), 0u);
  EXPECT_EQ(probe.note(), "no RDMA device under " + r.dir.path + "/class/infiniband");
  EXPECT_EQ(probe.method(), "sysfs");
}

}  // namespace
}  // namespace rs::rec
