// rankscope-merge: node bundles -> one validated, clock-aligned SQLite database.
#include <unistd.h>

#include <iostream>
#include <sstream>

#include "merge.h"
#include "options.h"

#ifndef RANKSCOPE_VERSION
#define RANKSCOPE_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  merge::ConfigureSqlite();
  auto cl = merge::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::cerr << "rankscope-merge: " << cl.error().message() << "\n";
    return 1;
  }
  if (cl->help) {
    std::cout << cl->help_text;
    return 0;
  }
  if (cl->version) {
    std::cout << "rankscope-merge " << RANKSCOPE_VERSION << "\n";
    return 0;
  }
  cl->merge.progress = cl->merge.progress || isatty(STDERR_FILENO);
  std::ostringstream quiet_sink;
  std::ostream& log = cl->quiet ? static_cast<std::ostream&>(quiet_sink) : std::cerr;
  auto result = merge::Merge(cl->merge, log);
  if (!result.ok()) {
    if (cl->quiet) std::cerr << quiet_sink.str();
    std::cerr << "rankscope-merge: " << result.error().message() << "\n";
    return 1;
  }
  const merge::MergeResult& r = *result;
  std::cerr << "rankscope-merge: wrote " << cl->merge.out_path << ": " << r.merged
            << " input(s) merged, " << r.skipped << " skipped, " << r.duplicates
            << " duplicate(s); " << r.event_rows << " event rows\n";
  for (const merge::NodeAlignment& a : r.alignment) {
    std::cerr << "  clock " << a.node << ": " << a.method << " offset " << a.offset_ns << " ns +- "
              << a.error_bound_ns << " ns";
    if (a.drift_ppm != 0) std::cerr << ", drift " << a.drift_ppm << " ppm";
    std::cerr << " (" << a.rendezvous_count << " rendezvous"
              << (a.evidence.empty() ? "" : ": " + a.evidence) << ")\n";
  }
  for (const merge::InputSummary& in : r.inputs) {
    if (in.status == "skipped") std::cerr << "  SKIPPED " << in.file << ": " << in.reason << "\n";
  }
  return r.exit_code();
}
