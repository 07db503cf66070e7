#include "merger/fr_recording.h"

#include <cctype>
#include <set>

namespace rs::merge::fr {
namespace {

std::string Timing(const Dump& dump) {
  if (dump.backend == "gloo") return "none";
  if (dump.backend != "nccl") return "unknown";
  bool on = false, off = false;
  for (const Entry& e : dump.entries) {
    if (e.duration_ms || e.time_discovered_started_ns) on = true;
    if (e.state == "completed" && !e.time_discovered_started_ns) off = true;
  }
  if (on && off) return "partial";
  if (on) return "on";
  if (off) return "off";
  return "unknown";
}

void Ring(Dump& dump) {
  if (dump.entries.empty()) return;
  bool consecutive = true;
  for (size_t i = 0; i < dump.entries.size(); ++i) {
    const int64_t id = dump.entries[i].record_id;
    if (id < 0) return;  // a version or writer without record ids: nothing to say
    if (i > 0 && id != dump.entries[i - 1].record_id + 1) consecutive = false;
  }
  dump.first_record_id = dump.entries.front().record_id;
  dump.last_record_id = dump.entries.back().record_id;
  if (!consecutive) {
    dump.ring = "filtered";
  } else {
    dump.ring = *dump.first_record_id == 0 ? "complete" : "wrapped";
  }
}

}  // namespace

std::string BackendOf(std::string_view profiling_name) {
  const size_t colon = profiling_name.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 16) return "";
  std::string prefix(profiling_name.substr(0, colon));
  for (char& c : prefix) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return "";
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return prefix;
}

void DescribeRecording(Dump& dump) {
  std::set<std::string> backends;
  for (const Entry& e : dump.entries) {
    std::string b = BackendOf(e.profiling_name);
    if (!b.empty()) backends.insert(std::move(b));
  }
  if (backends.size() == 1) {
    dump.backend = *backends.begin();
  } else if (backends.size() > 1) {
    // PyTorch keeps one recorder per backend, so a dump of several was put together by
    // something else: its timing is 'unknown' (Timing), and the merge says so.
    dump.backend = "mixed";
    std::string list;
    for (const std::string& b : backends) list += (list.empty() ? "" : ", ") + b;
    dump.notes.push_back("entries of several backends (" + list +
                         ") in one dump, where PyTorch keeps one recorder per backend: its "
                         "states are read without knowing which backend wrote each");
  }
  dump.timing = Timing(dump);
  Ring(dump);
}

}  // namespace rs::merge::fr
