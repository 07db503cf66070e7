// rankscope-merge: node bundles -> one validated, clock-aligned SQLite database.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include "merger/merge.h"
#include "merger/options.h"
#include "rscore/cli.h"
#include "rscore/clock.h"
#include "rscore/duration.h"
#include "rscore/output.h"
#include "rscore/text_escape.h"
#include "rscore/time_arg.h"

#ifndef RANKSCOPE_VERSION
#define RANKSCOPE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  using namespace rs::cli;
  const int64_t started = rs::MonotonicNowNs();
  rs::merge::ConfigureSqlite();
  auto cl = rs::merge::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::cerr << "rankscope-merge: "
              << rs::EscapeText(WithHelpHint(cl.error().message(), "rankscope-merge")) << "\n";
    return kExitUsage;
  }
  if (cl->help) {
    std::cout << cl->help_text;
    return kExitOk;
  }
  if (cl->version) {
    std::cout << "rankscope-merge " << RANKSCOPE_VERSION << "\n";
    return kExitOk;
  }
  const bool tty = isatty(STDERR_FILENO);
  cl->merge.progress = !cl->quiet && (tty || cl->progress_forced);
  cl->merge.progress_plain = !tty;
  // Where the result goes, checked before any work: never an input, never an existing file
  // without --force (Merge checks again when it creates the output).
  for (const std::optional<std::string>& out :
       {std::optional(cl->merge.out_path), cl->merge.bundle_path}) {
    if (!out) continue;
    auto checked = rs::CheckOutput(*out, cl->merge.force, cl->merge.inputs);
    if (!checked.ok()) {
      std::cerr << "rankscope-merge: "
                << rs::EscapeText(WithHelpHint(checked.error().message(), "rankscope-merge"))
                << "\n";
      return kExitUsage;
    }
  }
  const std::string shown =
      IsStdio(cl->merge.out_path) ? "standard output" : rs::EscapeText(cl->merge.out_path);
  std::ostringstream quiet_sink;
  std::ostream& log = cl->quiet ? static_cast<std::ostream&>(quiet_sink) : std::cerr;
  auto result = rs::merge::Merge(cl->merge, log);
  if (!result.ok()) {
    if (cl->quiet) std::cerr << quiet_sink.str();
    std::cerr << "rankscope-merge: " << rs::EscapeText(result.error().message()) << "\n";
    return kExitError;
  }
  const rs::merge::MergeResult& r = *result;
  std::vector<const rs::merge::NodeAlignment*> nodes;
  for (const rs::merge::NodeAlignment& a : r.alignment) nodes.push_back(&a);
  std::sort(nodes.begin(), nodes.end(),
            [](const auto* a, const auto* b) { return NaturalLess(a->node, b->node); });
  if (!cl->quiet) {
    for (const rs::merge::NodeAlignment* a : nodes) {
      // Readable units; the exact nanoseconds are in the database (man rankscope-merge).
      std::cerr << "  clock " << rs::EscapeText(a->node) << ": " << a->method << " offset "
                << rs::FormatDuration(a->offset_ns) << " +- "
                << rs::FormatDuration(a->error_bound_ns);
      if (a->drift_ppm != 0) std::cerr << ", drift " << a->drift_ppm << " ppm";
      std::cerr << " (" << a->rendezvous_count << " rendezvous"
                << (a->evidence.empty() ? "" : ": " + rs::EscapeText(a->evidence)) << ")\n";
    }
  }
  // Names, files and reasons come from the inputs: one line each, whatever they hold.
  for (const std::string& w : r.warnings) {
    std::cerr << "rankscope-merge: warning: " << rs::EscapeText(w) << "\n";
  }
  for (const rs::merge::InputSummary& in : r.inputs) {
    if (in.status == "skipped") {
      std::cerr << "rankscope-merge: warning: skipped " << rs::EscapeText(in.file) << ": "
                << rs::EscapeText(in.reason) << "\n";
    }
  }
  if (!cl->quiet && r.start_ns > 0) {
    std::cerr << "rankscope-merge: recording from " << rs::FormatUtc(r.start_ns) << " to "
              << rs::FormatUtc(r.end_ns) << " (the zero of +offsets in every tool)\n";
  }
  if (!cl->quiet) {
    std::cerr << "rankscope-merge: "
              << WroteLine(shown,
                           std::to_string(r.merged) + " input(s) merged, " +
                               std::to_string(r.skipped) + " skipped, " +
                               std::to_string(r.duplicates) + " duplicate(s); " +
                               std::to_string(r.event_rows) + " event rows",
                           rs::MonotonicNowNs() - started)
              << "\n";
  }
  return r.exit_code();
}
