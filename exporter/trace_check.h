// Test support: decodes a Perfetto trace written by rankscope-export with the generated
// classes and checks the invariants a reader relies on (sequence flags, tracks declared
// before use, interned ids defined before use, balanced slices per track).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "exporter/perfetto_trace.pb.h"
#include "rscore/result.h"

namespace rs::exporter::testing {

struct DecodedEvent {
  uint64_t track = 0;
  int64_t ts = 0;   // absolute ns (incremental clock resolved)
  int64_t end = 0;  // slices: the matching end; instants: ts
  bool instant = false;
  std::string name;
  std::map<std::string, int64_t> ints;  // int / bool annotations
  std::map<std::string, std::string> strings;
  std::vector<uint64_t> flows, terminating_flows;
};

struct DecodedCounter {
  uint64_t track = 0;
  int64_t ts = 0;
  int64_t value = 0;
};

struct DecodedTrace {
  std::map<uint64_t, perfetto::protos::TrackDescriptor> tracks;
  std::vector<DecodedEvent> events;  // slices and instants, in begin order
  std::vector<DecodedCounter> counters;
  int64_t packets = 0;  // after inflating compressed chunks
  int64_t compressed_chunks = 0;
  std::vector<std::string> errors;  // every invariant violation found
};

Result<DecodedTrace> DecodePerfettoTrace(const std::string& path);

}  // namespace rs::exporter::testing
