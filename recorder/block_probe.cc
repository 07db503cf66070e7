#include "recorder/block_probe.h"

#include <cstring>

#include "block.skel.h"

namespace rec {

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

rs::Result<BlockEventWriter> BlockEventWriter::Create(rs::Db& db, std::string node,
                                                      rs::EventIdAllocator* ids,
                                                      const rs::MonoToWall* clock) {
  BlockEventWriter w;
  ASSIGN_OR_RETURN(w.insert_,
                   db.Prepare("INSERT INTO block_events(id, node, timestamp_ns, duration_ns, dev, "
                              "op, rwbs, sector, bytes, pid, comm) VALUES (?, ?, ?, ?, ?, ?, ?, "
                              "?, ?, ?, ?)"));
  w.node_ = std::move(node);
  w.ids_ = ids;
  w.clock_ = clock;
  return w;
}

rs::Result<void> BlockEventWriter::Write(std::span<const uint8_t> data) {
  rs_block_event e;
  if (data.size() < sizeof(e)) {
    return rs::Error("block: short record (" + std::to_string(data.size()) + " bytes)");
  }
  std::memcpy(&e, data.data(), sizeof(e));
  std::string rwbs(e.rwbs, strnlen(e.rwbs, sizeof(e.rwbs)));
  std::string comm(e.comm, strnlen(e.comm, sizeof(e.comm)));
  auto& st = insert_;
  st.Bind(1, ids_->Next()).Bind(2, node_).Bind(3, clock_->Convert(static_cast<int64_t>(e.ts_ns)));
  st.Bind(4, static_cast<int64_t>(e.duration_ns)).Bind(5, FormatDev(e.dev));
  st.Bind(6, BlockOpFromRwbs(rwbs)).Bind(7, rwbs).Bind(8, static_cast<int64_t>(e.sector));
  st.Bind(9, static_cast<int64_t>(e.bytes));
  if (e.pid)
    st.Bind(10, static_cast<int64_t>(e.pid));
  else
    st.BindNull(10);
  if (comm.empty())
    st.BindNull(11);
  else
    st.Bind(11, comm);
  return st.Run();
}

rs::Result<void> BlockProbe::Start(RecorderContext& ctx) {
  ctx_ = &ctx;
  ASSIGN_OR_RETURN(writer_, BlockEventWriter::Create(*ctx.db, ctx.node, ctx.ids, ctx.clock));
  SkeletonOps<block_bpf> ops{&block_bpf__open, &block_bpf__load, &block_bpf__destroy};
  ASSIGN_OR_RETURN(block_bpf * skel, Load<block_bpf>(ops, ctx, nullptr, {"block_io_start"}));
  RETURN_IF_ERROR(AttachAll(ctx));
  return AddRingBuffer(ctx, skel->maps.block_rb);
}

}  // namespace rec
