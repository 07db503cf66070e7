// Fuzz target for the fleet protocol's decoders (rscore/fleet_wire.h): what a node reads from
// a workstation (a query request) and what a workstation reads from a node (query replies,
// bundle lists, clock readings, error bodies) must give a value or an error, never a crash,
// hang or leak. Built with libFuzzer when configured with -Dfuzz=true and clang; otherwise a
// replay tool that runs the same entry point over files given on the command line.
#include <cstdint>
#include <string>

#include "rscore/fleet_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  if (auto r = rs::wire::DecodeQueryRequest(body); r.ok()) {
    // What the node does with a valid one: encode it back.
    (void)rs::wire::EncodeQueryRequest(*r);
  }
  if (auto r = rs::wire::DecodeQueryReply(body); r.ok()) {
    size_t cells = 0;
    for (const auto& row : r->rows) cells += row.size();
    (void)cells;
  }
  if (auto r = rs::wire::DecodeBundleList(body); r.ok()) {
    for (const auto& b : r->bundles) (void)rs::wire::Overlaps(b, 1, 2);
  }
  (void)rs::wire::DecodeTime(body);
  (void)rs::wire::DecodeError(body);
  return 0;
}

#include "replay_main.h"
