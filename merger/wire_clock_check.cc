#include "merger/wire_clock_check.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "rscore/path.h"
#include "rscore/wire_clock_file.h"

namespace rs::merge {
namespace {

std::string Ms(int64_t ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f ms", static_cast<double>(ns) / 1e6);
  return b;
}

}  // namespace

rs::Result<std::vector<rs::WireClock>> ReadWireClocksBeside(const std::vector<std::string>& inputs,
                                                            std::vector<std::string>& files) {
  std::vector<rs::WireClock> out;
  std::set<std::string> seen_files, seen_nodes;
  for (const std::string& in : inputs) {
    struct stat st {};
    if (stat(in.c_str(), &st) != 0) continue;
    const std::string dir = S_ISDIR(st.st_mode) ? in : rs::DirOf(in);
    const std::string path = (dir.empty() ? "." : dir) + "/" + rs::kWireClockFileName;
    if (!seen_files.insert(path).second || access(path.c_str(), F_OK) != 0) continue;
    ASSIGN_OR_RETURN(std::vector<rs::WireClock> clocks, rs::ReadWireClockFile(path));
    files.push_back(path);
    for (rs::WireClock& c : clocks) {
      if (seen_nodes.insert(c.node).second) out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<WireClockCheck> CheckWireClocks(const std::vector<NodeAlignment>& alignment,
                                            const std::vector<rs::WireClock>& wire) {
  auto wire_of = [&](const std::string& node) -> const rs::WireClock* {
    for (const rs::WireClock& w : wire) {
      if (w.node == node) return &w;
    }
    return nullptr;
  };
  std::vector<const NodeAlignment*> order;
  for (const NodeAlignment& a : alignment) order.push_back(&a);
  std::stable_partition(order.begin(), order.end(),
                        [](const NodeAlignment* a) { return a->method == "reference"; });
  const NodeAlignment* base = nullptr;
  for (const NodeAlignment* a : order) {
    if (wire_of(a->node) != nullptr) {
      base = a;
      break;
    }
  }
  std::vector<WireClockCheck> out;
  if (base == nullptr) return out;
  const rs::WireClock& wb = *wire_of(base->node);
  for (const NodeAlignment& a : alignment) {
    const rs::WireClock* wa = wire_of(a.node);
    if (wa == nullptr || &a == base) continue;
    WireClockCheck c;
    c.node = a.node;
    c.against = base->node;
    c.alignment_ns = a.offset_ns - base->offset_ns;
    c.wire_ns = wa->offset_ns - wb.offset_ns;
    c.bound_ns = a.error_bound_ns + base->error_bound_ns + wa->bound_ns + wb.bound_ns;
    c.agrees = std::llabs(c.wire_ns - c.alignment_ns) <= c.bound_ns;
    c.note = std::string("wire clock ") + (c.agrees ? "agrees" : "disagrees") + ": offset to " +
             c.against + " " + Ms(c.alignment_ns) + " by rendezvous, " + Ms(c.wire_ns) +
             " over the wire (difference " + Ms(c.wire_ns - c.alignment_ns) + ", bound " +
             Ms(c.bound_ns) + ")";
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace rs::merge
