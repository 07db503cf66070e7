// RDMA ports (InfiniBand, RoCE): their counters read from sysfs (no BPF). NCCL's IB transport
// moves data by kernel bypass, so a bad cable, a flapping link or a congested switch port
// there leaves no TCP retransmit; the port's own counters are the evidence:
//   SYS/class/infiniband/DEV/ports/N/counters/     the InfiniBand port counters (symbol_error,
//                                                  link_downed, port_xmit_wait, ...)
//   SYS/class/infiniband/DEV/ports/N/hw_counters/  the driver's (mlx5: RoCE retries such as
//                                                  out_of_sequence, local_ack_timeout_err;
//                                                  congestion: np_cnp_sent, rp_cnp_handled)
// whichever files the device has, every one (names as the kernel gives them). Start writes
// rdma_ports (device, port, link layer, netdev, GID 0, node GUID, rate, state) and takes the
// first reading; a reading about every second writes the counters that changed (value and
// delta since the last reading); Finish takes a last reading of every counter. A node without
// RDMA devices records nothing (its sources row says so).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "recorder/probe.h"

namespace rs::rec {

// One port as sysfs describes it.
struct RdmaPort {
  std::string device;
  int64_t port = 0;
  std::string link_layer, netdev, gid, node_guid, rate, state;
  // Counter files: (dir, name) with dir 'counters' | 'hw_counters'.
  std::vector<std::pair<std::string, std::string>> counters;
};

// The ports under sys_root/class/infiniband, by device and port number.
std::vector<RdmaPort> FindRdmaPorts(const std::string& sys_root);

// A counter file's value: its first line as an unsigned decimal; nullopt where it is not one
// (a driver returns an error or text for a counter it cannot read).
std::optional<int64_t> ReadCounterFile(const std::string& path);

class RdmaProbe : public Probe {
 public:
  static constexpr int64_t kReadingPeriodNs = 1'000'000'000;
  explicit RdmaProbe(int64_t reading_period_ns = kReadingPeriodNs)
      : period_ns_(reading_period_ns) {}

  std::string_view source() const override { return "rdma"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  void Tick(RecorderContext& ctx) override;
  rs::Result<void> Finish(RecorderContext& ctx) override;
  std::string method() const override { return "sysfs"; }
  uint64_t events() const override { return rows_; }
  uint64_t drops() const override { return 0; }
  std::string note() const override { return note_; }

 private:
  // Reads every counter; writes those that changed (every one with `all`).
  rs::Result<void> Read(RecorderContext& ctx, bool all);

  struct Last {
    int64_t value = 0;
    int64_t wall_ns = 0;
  };
  int64_t period_ns_;
  std::string sys_root_;
  rs::Statement insert_;  // rdma_counters, prepared at Start
  std::vector<RdmaPort> ports_;
  std::map<std::string, Last> last_;  // by "device/port/dir/counter"
  int64_t last_read_mono_ns_ = 0;
  uint64_t rows_ = 0;
  uint64_t unreadable_ = 0;  // readings of a file that gave no number
  std::string note_;
};

}  // namespace rs::rec
