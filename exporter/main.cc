// rankscope-export: a merged db or node bundle -> Perfetto protobuf trace or Chrome JSON.
#include <cstdio>

#include "exporter/export_options.h"
#include "exporter/exporter.h"
#include "rscore/cli.h"
#include "rscore/clock.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"
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
    std::fprintf(stderr, "rankscope-export: %s\n",
                 rs::EscapeText(WithHelpHint(cl.error().message(), "rankscope-export")).c_str());
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
  // Where the trace goes, checked before any work: never the input, never an existing file
  // without --force (Export checks again when it creates the output).
  auto checked = rs::CheckOutput(cl->options.output, cl->options.force, {cl->options.input});
  if (!checked.ok()) {
    std::fprintf(
        stderr, "rankscope-export: %s\n",
        rs::EscapeText(WithHelpHint(checked.error().message(), "rankscope-export")).c_str());
    return kExitUsage;
  }
  // File names and what the input holds, printed one line each (rscore/text_escape.h).
  const std::string shown = rs::EscapeText(checked->shown());
  Progress progress(cl->quiet);
  progress.Show("rankscope-export: exporting " + rs::EscapeText(cl->options.input) + "...");
  cl->options.warn = [&](const std::string& w) {  // printed even with -q: a warning
    progress.Done();
    std::fprintf(stderr, "rankscope-export: warning: %s\n", rs::EscapeText(w).c_str());
  };
  auto r = Export(cl->options);
  progress.Done();
  if (!r.ok()) {
    std::fprintf(stderr, "rankscope-export: %s\n", rs::EscapeText(r.error().message()).c_str());
    return kExitError;
  }
  if (cl->quiet) return kExitOk;
  if (r->recording_start_ns > 0) {
    std::fprintf(stderr, "rankscope-export: recording starts %s (the zero of +offsets)\n",
                 rs::FormatUtc(r->recording_start_ns).c_str());
  }
  const TimelineStats& s = r->stats;
  if (s.device_slices > 0) {
    std::fprintf(stderr, "rankscope-export: %lld of the slices are NCCL operations on GPU tracks\n",
                 static_cast<long long>(s.device_slices));
  }
  if (s.fr_slices + s.fr_instants > 0) {
    std::fprintf(stderr,
                 "rankscope-export: %lld slices and %lld instants are Flight Recorder entries "
                 "(an instant: no completion was discovered)\n",
                 static_cast<long long>(s.fr_slices), static_cast<long long>(s.fr_instants));
  }
  if (s.sched_cut > 0) {
    std::fprintf(stderr,
                 "rankscope-export: %lld scheduler spans cut to nest on their thread's track "
                 "(the time cut is their cut_ns)\n",
                 static_cast<long long>(s.sched_cut));
  }
  if (s.marks > 0) {
    std::fprintf(stderr,
                 "rankscope-export: %lld marks of the report's verdict and evidence on the "
                 "track 'rankscope verdict'\n",
                 static_cast<long long>(s.marks));
  }
  // Tracks as the UI shows them, where a device's lanes merge into one.
  const std::string as_shown =
      r->shown_tracks == r->tracks
          ? ""
          : " (" + std::to_string(r->shown_tracks) + " as shown: each block device's lanes as one)";
  char what[640];
  std::snprintf(what, sizeof(what),
                "%lld rows -> %lld slices (%lld in flight), %lld instants, %lld counter "
                "samples, %lld flow events on %lld tracks%s, %lld bytes",
                static_cast<long long>(r->summary.rows), static_cast<long long>(s.slices),
                static_cast<long long>(s.in_flight), static_cast<long long>(s.instants),
                static_cast<long long>(s.counter_samples), static_cast<long long>(s.flow_events),
                static_cast<long long>(r->tracks), as_shown.c_str(),
                static_cast<long long>(r->bytes));
  std::fprintf(stderr, "rankscope-export: %s\n",
               WroteLine(shown, what, rs::MonotonicNowNs() - started).c_str());
  return kExitOk;
}
