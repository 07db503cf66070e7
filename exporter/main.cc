// rankscope-export: a merged db or node bundle -> Perfetto protobuf trace or Chrome JSON.
#include <unistd.h>

#include <cstdio>

#include "export_options.h"
#include "exporter.h"
#include "rscore/cli.h"
#include "rscore/clock.h"
#include "rscore/time_arg.h"

#ifndef RANKSCOPE_VERSION
#define RANKSCOPE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace rs::exporter;
  using namespace rs::cli;
  const int64_t started = rs::MonotonicNowNs();
  auto cl = ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "rankscope-export: %s\n", cl.error().message().c_str());
    return kExitUsage;
  }
  if (cl->help) {
    std::printf("%s", cl->usage.c_str());
    return kExitOk;
  }
  if (cl->version) {
    std::printf("rankscope-export %s\n", RANKSCOPE_VERSION);
    return kExitOk;
  }
  // -o -: written to a file of its own, then sent to standard output.
  const bool to_stdout = IsStdio(cl->options.output);
  const std::string shown = to_stdout ? "standard output" : cl->options.output;
  if (to_stdout) {
    auto staged = StdoutStagingPath("rankscope-export");
    if (!staged.ok()) {
      std::fprintf(stderr, "rankscope-export: %s\n", staged.error().message().c_str());
      return kExitError;
    }
    cl->options.output = *staged;
  }
  Progress progress(/*quiet=*/false);
  progress.Show("rankscope-export: exporting " + cl->options.input + "...");
  auto r = Export(cl->options);
  progress.Done();
  if (!r.ok()) {
    std::fprintf(stderr, "rankscope-export: %s\n", r.error().message().c_str());
    if (to_stdout) unlink(cl->options.output.c_str());
    return kExitError;
  }
  if (to_stdout) {
    if (auto sent = CopyToStdout(cl->options.output); !sent.ok()) {
      std::fprintf(stderr, "rankscope-export: %s\n", sent.error().message().c_str());
      return kExitError;
    }
  }
  if (r->recording_start_ns > 0) {
    std::fprintf(stderr, "rankscope-export: recording starts %s (the zero of +offsets)\n",
                 rs::FormatUtc(r->recording_start_ns).c_str());
  }
  const TimelineStats& s = r->stats;
  if (s.device_slices > 0) {
    std::fprintf(stderr, "rankscope-export: %lld of the slices are NCCL operations on GPU tracks\n",
                 static_cast<long long>(s.device_slices));
  }
  std::fprintf(stderr,
               "rankscope-export: wrote %s: %lld rows -> %lld slices (%lld in flight), %lld "
               "instants, %lld counter samples, %lld flow events on %lld tracks, %lld bytes in "
               "%s\n",
               shown.c_str(), static_cast<long long>(r->summary.rows),
               static_cast<long long>(s.slices), static_cast<long long>(s.in_flight),
               static_cast<long long>(s.instants), static_cast<long long>(s.counter_samples),
               static_cast<long long>(s.flow_events), static_cast<long long>(r->tracks),
               static_cast<long long>(r->bytes), FormatElapsed(rs::MonotonicNowNs() - started).c_str());
  return kExitOk;
}
