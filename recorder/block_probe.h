// Block I/O: block_rq_issue -> block_rq_complete (table block_events).
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "bpf/abi/block.h"
#include "recorder/kernel_probe.h"

namespace rs::rec {

// The operation the kernel's rwbs letters describe: 'read' | 'write' | 'flush' | 'discard' |
// 'other'. A leading 'F' is a preflush in front of the data operation.
std::string_view BlockOpFromRwbs(std::string_view rwbs);
// Kernel dev_t (major << 20 | minor) -> "major:minor".
std::string FormatDev(uint32_t dev);
// The kernel's name of a block device on this node ("sda", "nvme0n1"): DEVNAME of
// SYS/dev/block/MAJ:MIN/uevent, else the name of the directory that link points to; "" when
// the node has no such device (any more).
std::string BlockDeviceName(uint32_t dev, const std::string& sys_root = "/sys");

// event bytes -> block_events row.
class BlockEventWriter : public KernelEventWriter<BlockEventWriter> {
 public:
  static const char kInsertSql[];
  rs::Result<void> Write(std::span<const uint8_t> data);
  // Writes block_devices: the name of every device seen so far that has one on this node.
  rs::Result<void> WriteDeviceNames(const std::string& sys_root = "/sys");

 private:
  std::set<uint32_t> devs_;  // every dev seen
};

class BlockProbe : public KernelProbe {
 public:
  std::string_view source() const override { return "block"; }
  rs::Result<void> Start(RecorderContext& ctx) override;
  // After the last request is drained: the names of the devices seen (block_devices).
  rs::Result<void> Finish(RecorderContext& ctx) override;

 protected:
  rs::Result<void> OnSample(std::span<const uint8_t> data) override { return writer_.Write(data); }

 private:
  BlockEventWriter writer_;
};

}  // namespace rs::rec
