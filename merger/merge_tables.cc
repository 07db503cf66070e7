#include "merger/merge_tables.h"

#include <algorithm>
#include <iomanip>
#include <string>

#include "rscore/call_mode.h"
#include "rscore/schema.h"
#include "rscore/text_escape.h"

namespace rs::merge {
namespace {

rs::Result<void> WriteAlignment(rs::Db& db, const std::vector<NodeAlignment>& al) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT INTO clock_alignment(node, offset_ns, drift_ppm, anchor_ns,"
                              " error_bound_ns, method, rendezvous_count, note, evidence)"
                              " VALUES (?,?,?,?,?,?,?,?,?)"));
  for (const NodeAlignment& a : al) {
    st.Bind(1, a.node)
        .Bind(2, a.offset_ns)
        .Bind(3, a.drift_ppm)
        .Bind(4, a.anchor_ns)
        .Bind(5, a.error_bound_ns)
        .Bind(6, a.method)
        .Bind(7, a.rendezvous_count)
        .Bind(8, a.note);
    if (a.evidence.empty()) {
      st.BindNull(9);
    } else {
      st.Bind(9, a.evidence);
    }
    RETURN_IF_ERROR(st.Run());
  }
  return rs::Ok();
}

rs::Result<void> SetMeta(rs::Db& db, const std::string& key, const std::string& value) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("INSERT OR REPLACE INTO metadata(key, value) VALUES (?, ?)"));
  return st.Bind(1, key).Bind(2, value).Run();
}

void PrintCounts(std::ostream& log, const Input& in, const std::vector<TableCount>& counts) {
  // A Flight Recorder dump has no node of its own; its reason says what it is.
  log << "rankscope-merge: input " << in.input_id << " " << rs::EscapeText(in.file) << " -> "
      << rs::EscapeText(in.node.empty() && !in.reason.empty() ? in.reason : "node " + in.node)
      << "\n";
  for (const TableCount& c : counts) {
    if (c.rows_in == 0 && c.rows_out == 0) continue;
    log << "  " << std::left << std::setw(16) << c.table << std::right << " in " << std::setw(9)
        << c.rows_in << "  out " << std::setw(9) << c.rows_out << "  skipped " << std::setw(7)
        << c.rows_skipped << (c.note.empty() ? "" : "  (" + c.note + ")") << "\n";
  }
}

}  // namespace

// merge_inputs, merge_counts, clock_alignment and the merged db's own metadata.
rs::Result<void> WriteMergeTables(rs::Db& out, const std::vector<Input>& inputs,
                                  const std::map<int, std::vector<TableCount>>& counts,
                                  const std::vector<NodeAlignment>& alignment,
                                  MergeResult& result) {
  ASSIGN_OR_RETURN(rs::Statement ins,
                   out.Prepare("INSERT INTO merge_inputs(input_id, file, recording_id, node,"
                               " original_node, status, reason) VALUES (?,?,?,?,?,?,?)"));
  for (const Input& in : inputs) {
    ins.Bind(1, in.input_id).Bind(2, in.file).Bind(6, in.status);
    if (!in.recording_id.empty()) ins.Bind(3, in.recording_id);
    if (!in.node.empty()) ins.Bind(4, in.node);
    if (!in.original_node.empty()) ins.Bind(5, in.original_node);
    if (!in.reason.empty()) ins.Bind(7, in.reason);
    RETURN_IF_ERROR(ins.Run());
    sqlite3_clear_bindings(ins.raw());
  }
  ASSIGN_OR_RETURN(rs::Statement cnt,
                   out.Prepare("INSERT INTO merge_counts(input_id, table_name, rows_in, rows_out,"
                               " rows_skipped) VALUES (?,?,?,?,?)"));
  for (const auto& [id, list] : counts) {
    for (const TableCount& c : list) {
      RETURN_IF_ERROR(cnt.Bind(1, id)
                          .Bind(2, c.table)
                          .Bind(3, c.rows_in)
                          .Bind(4, c.rows_out)
                          .Bind(5, c.rows_skipped)
                          .Run());
    }
  }
  RETURN_IF_ERROR(WriteAlignment(out, alignment));
  for (const rs::CommunicatorCallMode& c : result.call_modes) {
    RETURN_IF_ERROR(rs::WriteCallMode(out, c));
  }
  ASSIGN_OR_RETURN(auto s, out.QueryText("SELECT MIN(CAST(value AS INTEGER)) FROM metadata"
                                         " WHERE key LIKE 'node.%.start_ns' AND key NOT LIKE "
                                         "'node.%.local_start_ns'"));
  ASSIGN_OR_RETURN(auto e, out.QueryText("SELECT MAX(CAST(value AS INTEGER)) FROM metadata"
                                         " WHERE key LIKE 'node.%.end_ns' AND key NOT LIKE "
                                         "'node.%.local_end_ns'"));
  RETURN_IF_ERROR(SetMeta(out, "start_ns", s.value_or("0")));
  RETURN_IF_ERROR(SetMeta(out, "end_ns", e.value_or("0")));
  result.start_ns = std::strtoll(s.value_or("0").c_str(), nullptr, 10);
  result.end_ns = std::strtoll(e.value_or("0").c_str(), nullptr, 10);
  RETURN_IF_ERROR(SetMeta(out, "merged_inputs", std::to_string(result.merged)));
  RETURN_IF_ERROR(SetMeta(out, "skipped_inputs", std::to_string(result.skipped)));
  for (const NodeAlignment& a : alignment) {
    if (a.method == "reference") RETURN_IF_ERROR(SetMeta(out, "clock_reference", a.node));
  }
  if (!result.wire_clock_check.empty()) {
    RETURN_IF_ERROR(SetMeta(out, "clock_wire_check", result.wire_clock_check));
  }
  return rs::Ok();
}

rs::Result<void> SetSpan(rs::Db& out, int64_t start_ns, int64_t end_ns, MergeResult& result) {
  RETURN_IF_ERROR(SetMeta(out, "start_ns", std::to_string(start_ns)));
  RETURN_IF_ERROR(SetMeta(out, "end_ns", std::to_string(end_ns)));
  result.start_ns = start_ns;
  result.end_ns = end_ns;
  return rs::Ok();
}

// Per input for a few inputs; beyond that one line per table over all of them (the
// per-input counts are in merge_counts): 64 nodes would be a thousand lines.
void PrintAllCounts(std::ostream& log, const std::vector<Input>& inputs,
                    std::map<int, std::vector<TableCount>>& counts) {
  constexpr size_t kInputsListed = 8;
  if (counts.size() <= kInputsListed) {
    for (const Input& in : inputs) {
      if (counts.count(in.input_id)) PrintCounts(log, in, counts[in.input_id]);
    }
  } else {
    std::vector<TableCount> total;
    for (const auto& [id, list] : counts) {
      for (const TableCount& c : list) {
        auto it = std::find_if(total.begin(), total.end(),
                               [&](const TableCount& t) { return t.table == c.table; });
        if (it == total.end()) {
          total.push_back(TableCount{c.table, c.rows_in, c.rows_out, c.rows_skipped, ""});
        } else {
          it->rows_in += c.rows_in;
          it->rows_out += c.rows_out;
          it->rows_skipped += c.rows_skipped;
        }
      }
    }
    log << "rankscope-merge: " << counts.size()
        << " inputs, rows per table over all of them (per input: table merge_counts)\n";
    for (const TableCount& c : total) {
      if (c.rows_in == 0 && c.rows_out == 0) continue;
      log << "  " << std::left << std::setw(16) << c.table << std::right << " in " << std::setw(9)
          << c.rows_in << "  out " << std::setw(9) << c.rows_out << "  skipped " << std::setw(7)
          << c.rows_skipped << "\n";
    }
  }
}

// A repeated recording: its rows are all there once already; counted as skipped.
void CountDuplicates(std::ostream& log, const std::vector<Input>& inputs,
                     std::map<int, std::vector<TableCount>>& counts) {
  for (const Input& in : inputs) {
    if (in.status != "duplicate") continue;
    std::vector<TableCount>& list = counts[in.input_id];
    for (const auto& [table, rows] : in.table_rows) {
      list.push_back(TableCount{table, rows, 0, rows,
                                "same recording as input " + std::to_string(in.duplicate_of)});
    }
    PrintCounts(log, in, list);
  }
}

// Every input's row counts: its stack counts in input order (see StacksFirstHeld), then the
// tables it copied; the event rows written are added to result.event_rows.
std::map<int, std::vector<TableCount>> InputCounts(std::map<int, InputCopy>& copies,
                                                   std::map<int, int64_t>& first_held,
                                                   MergeResult& result) {
  std::map<int, std::vector<TableCount>> counts;
  for (auto& [id, copy] : copies) {
    int64_t inserted = first_held.count(id) ? first_held[id] : 0;
    int64_t deduped = copy.stack_rows - inserted;
    copy.counts.push_back(
        TableCount{"stacks", copy.stack_rows, inserted, deduped,
                   deduped ? "already present (deduplicated by frames hash)" : ""});
    for (const TableCount& t : copy.counts) {
      if (rs::IsEventTable(t.table)) result.event_rows += t.rows_out;
    }
    counts[id] = std::move(copy.counts);
  }
  return counts;
}

}  // namespace rs::merge
