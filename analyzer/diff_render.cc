// `rankscope-analyze diff` as text and as JSON (diff.h).
#include <sstream>

#include "analyzer/diff.h"
#include "analyzer/report_format.h"
#include "rscore/json.h"
#include "rscore/text_escape.h"

namespace rs::analyzer {
namespace {

std::string Ns(int64_t ns) { return ns < 0 ? "-" : FormatNs(ns); }

std::string Signed(int64_t ns) { return (ns >= 0 ? "+" : "-") + FormatNs(ns >= 0 ? ns : -ns); }

std::string Kind(const KindDiff& k) {
  std::string s = k.op;
  if (k.count) s += " " + std::to_string(*k.count);
  if (!k.datatype.empty()) s += " x " + k.datatype;
  return s + " over " + k.members;
}

void SideText(std::ostringstream& o, const char* name, const DiffSide& s) {
  o << "  " << name << ": " << rs::EscapeText(s.input) << "\n    " << rs::EscapeText(s.verdict)
    << "\n    " << s.ranks << " rank(s), " << s.collectives << " collectives";
  if (s.span_ns > 0) {
    o << " in " << FormatNs(s.span_ns) << " (" << FormatFixed1(s.Rate()) << " per second)";
  }
  if (!s.arrival_basis.empty()) o << ", arrivals: " << Spoken(s.arrival_basis);
  if (s.clock_bound_ns > 0) o << ", clock bound up to +/-" << FormatNs(s.clock_bound_ns);
  o << "\n";
}

void RankLine(std::ostringstream& o, const RankDiff& r) {
  o << "  rank " << r.rank << " (" << rs::EscapeText(r.node_a);
  if (r.node_b != r.node_a) o << " -> " << rs::EscapeText(r.node_b);
  o << "): lateness " << FormatNs(r.lateness_a) << " -> " << FormatNs(r.lateness_b) << " ("
    << Signed(r.Change());
  if (r.bound_ns > 0 && (r.Change() >= 0 ? r.Change() : -r.Change()) <= r.bound_ns) {
    o << ", inside the clock bounds +/-" << FormatNs(r.bound_ns);
  }
  o << "), last " << r.last_a << "/" << r.collectives_a << " -> " << r.last_b << "/"
    << r.collectives_b << ", duration " << Ns(r.duration_a) << " -> " << Ns(r.duration_b);
  if (r.named_b && !r.named_a) o << "  [named in OTHER]";
  if (r.named_a && !r.named_b) o << "  [named in BASELINE]";
  if (r.named_a && r.named_b) o << "  [named in both]";
  o << "\n";
}

void KindLine(std::ostringstream& o, const KindDiff& k) {
  o << "  " << rs::EscapeText(Kind(k)) << ": " << k.n_a << " -> " << k.n_b;
  if (k.n_a == 0 || k.n_b == 0) {
    o << " (only in " << (k.n_a == 0 ? "OTHER" : "BASELINE") << ")\n";
    return;
  }
  o << ", first arrival to done " << Ns(k.span_a) << " -> " << Ns(k.span_b);
  if (k.span_a >= 0 && k.span_b >= 0) o << " (" << Signed(k.span_b - k.span_a) << ")";
  o << ", after the last arrival " << Ns(k.after_last_a) << " -> " << Ns(k.after_last_b) << "\n";
}

void OptionalNs(rs::JsonWriter& w, const char* key, int64_t ns) {
  w.Key(key);
  if (ns < 0) {
    w.Null();
  } else {
    w.Int(ns);
  }
}

void SideJson(rs::JsonWriter& w, const DiffSide& s) {
  w.BeginObject();
  w.Key("input").String(s.input);
  w.Key("verdict").String(s.verdict);
  w.Key("verdict_kind").String(s.verdict_kind);
  w.Key("arrival_basis").String(s.arrival_basis);
  w.Key("ranks").Int(s.ranks);
  w.Key("collectives").Int(s.collectives);
  w.Key("span_ns").Int(s.span_ns);
  w.Key("collectives_per_second").Double(s.Rate());
  w.Key("clock_bound_ns").Int(s.clock_bound_ns);
  w.Key("hang");
  if (s.hang.empty()) {
    w.Null();
  } else {
    w.String(s.hang);
  }
  w.EndObject();
}

void Strings(rs::JsonWriter& w, const std::vector<std::string>& v) {
  w.BeginArray();
  for (const std::string& s : v) w.String(s);
  w.EndArray();
}

}  // namespace

std::string RenderDiffText(const Diff& d, size_t rows) {
  std::ostringstream o;
  o << "diff: " << rs::EscapeText(d.headline) << "\n\n";
  SideText(o, "BASELINE", d.a);
  SideText(o, "OTHER", d.b);
  if (!d.warnings.empty()) {
    o << "\nwarnings:\n";
    for (const std::string& w : d.warnings) o << "  - " << rs::EscapeText(w) << "\n";
  }
  o << "\nfindings (the reports' verdicts and observations, matched by the ranks they "
       "name):\n";
  if (d.findings.empty()) o << "  none in either\n";
  for (const FindingDiff& f : d.findings) {
    o << "  " << f.kind << " " << f.change << ": " << rs::EscapeText(f.who) << ": ";
    if (f.change == "kept") {
      o << f.cause_a << " (" << f.confidence_a << ") -> " << f.cause_b << " (" << f.confidence_b
        << ")";
    } else if (f.change == "added") {
      o << f.cause_b << " (" << f.confidence_b << ")";
    } else {
      o << f.cause_a << " (" << f.confidence_a << ")";
    }
    o << "\n    " << rs::EscapeText(f.summary) << "\n";
  }
  const size_t rank_rows = rows == 0 ? d.ranks.size() : std::min(rows, d.ranks.size());
  o << "\nranks (the largest rise in median lateness first; " << rank_rows << " of "
    << d.ranks.size() << "):\n";
  for (size_t i = 0; i < rank_rows; ++i) RankLine(o, d.ranks[i]);
  for (const auto& [label, list] :
       {std::pair{"only in BASELINE", &d.ranks_only_a}, {"only in OTHER", &d.ranks_only_b}}) {
    if (list->empty()) continue;
    o << "  " << label << ":";
    for (const std::string& r : *list) o << " " << rs::EscapeText(r) << ";";
    o << "\n";
  }
  const size_t kind_rows = rows == 0 ? d.kinds.size() : std::min(rows, d.kinds.size());
  o << "\ncollectives by kind (the most time added in OTHER first; " << kind_rows << " of "
    << d.kinds.size() << "), medians:\n";
  for (size_t i = 0; i < kind_rows; ++i) KindLine(o, d.kinds[i]);
  o << "\nhang: " << (d.a.hang.empty() ? "none" : rs::EscapeText(d.a.hang)) << " -> "
    << (d.b.hang.empty() ? "none" : rs::EscapeText(d.b.hang)) << "\n";
  return o.str();
}

std::string RenderDiffJson(const Diff& d) {
  rs::JsonWriter w;
  w.BeginObject();
  w.Key("headline").String(d.headline);
  w.Key("baseline");
  SideJson(w, d.a);
  w.Key("other");
  SideJson(w, d.b);
  w.Key("warnings");
  Strings(w, d.warnings);
  w.Key("findings").BeginArray();
  for (const FindingDiff& f : d.findings) {
    w.BeginObject();
    w.Key("kind").String(f.kind);
    w.Key("change").String(f.change);
    w.Key("who").String(f.who);
    w.Key("cause_baseline").String(f.cause_a);
    w.Key("cause_other").String(f.cause_b);
    w.Key("confidence_baseline").String(f.confidence_a);
    w.Key("confidence_other").String(f.confidence_b);
    w.Key("summary").String(f.summary);
    w.EndObject();
  }
  w.EndArray();
  w.Key("ranks").BeginArray();
  for (const RankDiff& r : d.ranks) {
    w.BeginObject();
    w.Key("rank").Int(r.rank);
    w.Key("node_baseline").String(r.node_a);
    w.Key("node_other").String(r.node_b);
    w.Key("collectives_baseline").Int(r.collectives_a);
    w.Key("collectives_other").Int(r.collectives_b);
    w.Key("last_baseline").Int(r.last_a);
    w.Key("last_other").Int(r.last_b);
    w.Key("median_lateness_baseline_ns").Int(r.lateness_a);
    w.Key("median_lateness_other_ns").Int(r.lateness_b);
    w.Key("lateness_change_ns").Int(r.Change());
    w.Key("clock_bounds_ns").Int(r.bound_ns);
    OptionalNs(w, "median_duration_baseline_ns", r.duration_a);
    OptionalNs(w, "median_duration_other_ns", r.duration_b);
    w.Key("named_baseline").Bool(r.named_a);
    w.Key("named_other").Bool(r.named_b);
    w.EndObject();
  }
  w.EndArray();
  w.Key("ranks_only_baseline");
  Strings(w, d.ranks_only_a);
  w.Key("ranks_only_other");
  Strings(w, d.ranks_only_b);
  w.Key("kinds").BeginArray();
  for (const KindDiff& k : d.kinds) {
    w.BeginObject();
    w.Key("op").String(k.op);
    w.Key("count");
    if (k.count) {
      w.Int(*k.count);
    } else {
      w.Null();
    }
    w.Key("datatype").String(k.datatype);
    w.Key("members").String(k.members);
    w.Key("collectives_baseline").Int(k.n_a);
    w.Key("collectives_other").Int(k.n_b);
    OptionalNs(w, "median_span_baseline_ns", k.span_a);
    OptionalNs(w, "median_span_other_ns", k.span_b);
    OptionalNs(w, "median_after_last_baseline_ns", k.after_last_a);
    OptionalNs(w, "median_after_last_other_ns", k.after_last_b);
    w.Key("added_ns").Int(k.Added());
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return w.str() + "\n";
}

}  // namespace rs::analyzer
