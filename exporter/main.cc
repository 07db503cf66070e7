// rankscope-export: a merged db or node bundle -> Perfetto protobuf trace or Chrome JSON.
#include <cstdio>

#include "export_options.h"
#include "exporter.h"

#ifndef RANKSCOPE_VERSION
#define RANKSCOPE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace rs::exporter;
  auto cl = ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "rankscope-export: %s\n", cl.error().message().c_str());
    return 2;
  }
  if (cl->help) {
    std::printf("%s", cl->usage.c_str());
    return 0;
  }
  if (cl->version) {
    std::printf("rankscope-export %s\n", RANKSCOPE_VERSION);
    return 0;
  }
  auto r = Export(cl->options);
  if (!r.ok()) {
    std::fprintf(stderr, "rankscope-export: %s\n", r.error().message().c_str());
    return 1;
  }
  const TimelineStats& s = r->stats;
  std::fprintf(stderr,
               "rankscope-export: wrote %s: %lld rows -> %lld slices (%lld in flight), %lld "
               "instants, %lld counter samples, %lld flow events on %lld tracks, %lld bytes\n",
               cl->options.output.c_str(), static_cast<long long>(r->summary.rows),
               static_cast<long long>(s.slices), static_cast<long long>(s.in_flight),
               static_cast<long long>(s.instants), static_cast<long long>(s.counter_samples),
               static_cast<long long>(s.flow_events), static_cast<long long>(r->tracks),
               static_cast<long long>(r->bytes));
  if (s.device_slices > 0) {
    std::fprintf(stderr, "rankscope-export: %lld of the slices are NCCL operations on GPU tracks\n",
                 static_cast<long long>(s.device_slices));
  }
  return 0;
}
