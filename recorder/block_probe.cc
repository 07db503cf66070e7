#include "recorder/block_probe.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "bpf/block.skel.h"

namespace rs::rec {

std::string_view BlockOpFromRwbs(std::string_view rwbs) {
  if (rwbs.empty()) return "other";
  auto is_op = [](char c) { return c == 'R' || c == 'W' || c == 'D' || c == 'F' || c == 'N'; };
  char op = rwbs[0];
  bool preflush = false;
  if (op == 'F' && rwbs.size() > 1 && is_op(rwbs[1])) {
    preflush = true;
    op = rwbs[1];
  }
  switch (op) {
    case 'R':
      return "read";
    case 'W':
      return "write";
    case 'D':
      return "discard";
    case 'F':
      return "flush";
    case 'N':
      return preflush ? "flush" : "other";  // a bare preflush carries no data
    default:
      return "other";
  }
}

std::string FormatDev(uint32_t dev) {
  return std::to_string(dev >> 20) + ":" + std::to_string(dev & 0xfffff);
}

std::string BlockDeviceName(uint32_t dev, const std::string& sys_root) {
  const std::string link = sys_root + "/dev/block/" + FormatDev(dev);
  std::ifstream uevent(link + "/uevent");
  for (std::string line; std::getline(uevent, line);) {
    if (line.rfind("DEVNAME=", 0) == 0 && line.size() > 8) {
      // DEVNAME is relative to /dev ("sda", "mapper/..." has its own directory): keep it whole.
      return line.substr(8);
    }
  }
  std::error_code ec;
  const std::filesystem::path target = std::filesystem::read_symlink(link, ec);
  if (ec) return "";
  return target.filename().string();
}

const char BlockEventWriter::kInsertSql[] =
    "INSERT INTO block_events(id, node, timestamp_ns, duration_ns, dev, op, rwbs, sector, bytes, "
    "pid, comm) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

rs::Result<void> BlockEventWriter::Write(std::span<const uint8_t> data) {
  ASSIGN_OR_RETURN(const rs_block_event e, ReadEvent<rs_block_event>(data, "block"));
  devs_.insert(e.dev);
  std::string rwbs(e.rwbs, strnlen(e.rwbs, sizeof(e.rwbs)));
  std::string comm(e.comm, strnlen(e.comm, sizeof(e.comm)));
  rs::Statement& st = BeginRow(e.ts_ns);
  st.Bind(4, static_cast<int64_t>(e.duration_ns)).Bind(5, FormatDev(e.dev));
  st.Bind(6, BlockOpFromRwbs(rwbs)).Bind(7, rwbs).Bind(8, static_cast<int64_t>(e.sector));
  st.Bind(9, static_cast<int64_t>(e.bytes)).Bind(10, NullIfZero(e.pid)).Bind(11, NullIfEmpty(comm));
  return st.Run();
}

rs::Result<void> BlockEventWriter::WriteDeviceNames(const std::string& sys_root) {
  if (devs_.empty()) return rs::Ok();
  ASSIGN_OR_RETURN(rs::Statement st,
                   db_->Prepare("INSERT OR REPLACE INTO block_devices(node, dev, name)"
                                " VALUES (?, ?, ?)"));
  for (uint32_t dev : devs_) {
    const std::string name = BlockDeviceName(dev, sys_root);
    if (name.empty()) continue;  // gone, or never a block device here: MAJ:MIN stays
    RETURN_IF_ERROR(st.Bind(1, node_).Bind(2, FormatDev(dev)).Bind(3, name).Run());
  }
  return rs::Ok();
}

rs::Result<void> BlockProbe::Finish(RecorderContext& ctx) {
  RETURN_IF_ERROR(FinishKernel(ctx));
  if (!ctx_) return rs::Ok();  // never started
  return writer_.WriteDeviceNames();
}

rs::Result<void> BlockProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  ASSIGN_OR_RETURN(writer_, BlockEventWriter::Create(ctx));
  SkeletonOps<block_bpf> ops{&block_bpf__open, &block_bpf__load, &block_bpf__destroy};
  ASSIGN_OR_RETURN(block_bpf * skel, Load<block_bpf>(ops, ctx, nullptr, {"block_io_start"}));
  return AttachAndPoll(ctx, skel->maps.block_rb);
}

}  // namespace rs::rec
