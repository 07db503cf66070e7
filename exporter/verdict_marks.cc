#include "exporter/verdict_marks.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "rscore/duration.h"

namespace rs::exporter {
namespace {

using Json = nlohmann::json;

constexpr size_t kMaxNameChars = 200;

std::string Cut(const std::string& s) {
  if (s.size() <= kMaxNameChars) return s;
  size_t n = kMaxNameChars;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // not inside UTF-8
  return s.substr(0, n) + "...";
}

// "node2 rank 5" or "node2 pid 4242".
std::string Who(const Json& f, const Json& a) {
  std::string who = f.value("node", "");
  if (a.contains("rank") && a["rank"].is_number_integer()) {
    return who + " rank " + std::to_string(a["rank"].get<int64_t>());
  }
  return who + " pid " + std::to_string(a.value("pid", int64_t{0}));
}

void AddLateArrivals(const Json& f, size_t index, std::vector<VerdictMark>& out) {
  if (!f.contains("late_arrivals") || !f["late_arrivals"].is_array()) return;
  for (const Json& a : f["late_arrivals"]) {
    VerdictMark m;
    m.ts = a.value("arrival_ns", int64_t{0});
    m.node = f.value("node", "");
    const int64_t behind = a.value("behind_first_ns", int64_t{0});
    // A CUDA graph replay's collective has no seq (the report gives its replay number).
    const bool replay = a.contains("graph_replay") && a["graph_replay"].is_number_integer();
    const int64_t number = replay ? a["graph_replay"].get<int64_t>() : a.value("seq", int64_t{0});
    m.name = Who(f, a) + " last: " + a.value("op", "") + (replay ? " graph replay " : " seq ") +
             std::to_string(number) + " (" + rs::FormatDuration(behind) + " after the first)";
    m.text_args = {{"comm_id_hex", a.value("comm_id_hex", "")},
                   {"cause", f.value("cause", "")},
                   {"confidence", f.value("confidence", "")}};
    m.int_args = {{replay ? "graph_replay" : "seq", number},
                  {"behind_first_ns", behind},
                  {"finding", static_cast<int64_t>(index)}};
    out.push_back(std::move(m));
  }
}

void AddHang(const Json& h, int64_t end_ns, std::vector<VerdictMark>& out) {
  if (!h.value("detected", false)) return;
  const int64_t stuck = h.value("stuck_for_ns", int64_t{0});
  VerdictMark m;
  m.ts = end_ns - std::max<int64_t>(stuck, 0);
  m.end = end_ns;
  std::string culprits;
  if (h.contains("culprit_labels") && h["culprit_labels"].is_array()) {
    for (const Json& c : h["culprit_labels"]) {
      if (c.is_string()) culprits += (culprits.empty() ? "" : ", ") + c.get<std::string>();
    }
  }
  m.name = Cut("stuck: " + h.value("op", std::string("?")) + " seq " +
               std::to_string(h.value("seq", int64_t{0})) +
               (culprits.empty() ? "" : " — culprits " + culprits));
  m.text_args = {{"comm_id_hex", h.value("comm_id_hex", "")},
                 {"summary", h.value("summary", "")},
                 {"kind", h.value("kind", "")}};
  m.int_args = {{"stuck_for_ns", stuck}};
  out.push_back(std::move(m));
}

Result<VerdictMarks> Read(const std::string& path, int64_t first_ns, int64_t last_ns) {
  std::ifstream in(path);
  if (!in) return Error("--report " + path + ": cannot read it");
  Json r = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (r.is_discarded() || !r.is_object() || !r.contains("verdict") || !r.contains("start_ns")) {
    return Error("--report " + path +
                 ": not a report's JSON (write one with: rankscope-analyze report INPUT "
                 "--format json -o " +
                 path + ")");
  }
  const int64_t start = r.value("start_ns", int64_t{0});
  const int64_t end = r.value("end_ns", int64_t{0});
  if (end < first_ns || start > last_ns) {
    return Error("--report " + path + ": the report of another recording (" +
                 r.value("input", std::string("?")) + ", " + std::to_string(start) + " to " +
                 std::to_string(end) + " ns; this input's events run from " +
                 std::to_string(first_ns) + " to " + std::to_string(last_ns) +
                 " ns): report on the input you export");
  }
  VerdictMarks v;
  v.verdict = r.value("verdict", "");
  VerdictMark whole;
  whole.ts = start;
  whole.end = end;
  whole.name = Cut(v.verdict);
  whole.text_args = {{"verdict", v.verdict}, {"verdict_kind", r.value("verdict_kind", "")}};
  v.marks.push_back(std::move(whole));
  if (r.contains("stragglers") && r["stragglers"].is_array()) {
    for (size_t i = 0; i < r["stragglers"].size(); ++i) {
      AddLateArrivals(r["stragglers"][i], i, v.marks);
    }
  }
  if (r.contains("hang") && r["hang"].is_object()) AddHang(r["hang"], end, v.marks);
  std::stable_sort(v.marks.begin(), v.marks.end(),
                   [](const VerdictMark& a, const VerdictMark& b) { return a.ts < b.ts; });
  return v;
}

}  // namespace

Result<VerdictMarks> ReadVerdictMarks(const std::string& path, int64_t first_ns, int64_t last_ns) {
  try {
    return Read(path, first_ns, last_ns);
  } catch (const nlohmann::json::exception& e) {  // a value of the wrong type
    return Error("--report " + path + ": not a report's JSON as rankscope-analyze writes it (" +
                 e.what() + ")");
  }
}

}  // namespace rs::exporter
