#include "merger/table_copy.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include <sqlite3.h>

#include "rscore/schema.h"

namespace rs::merge {
namespace {

// Tables of the merged db that are not copied row by row from inputs.
const std::set<std::string> kNotCopied = {"metadata", "stacks", "merge_inputs", "merge_counts",
                                          "clock_alignment"};

std::string Quote(const std::string& ident) { return rs::QuoteIdentifier(ident); }

rs::Result<std::vector<std::string>> Columns(rs::Db& db, const std::string& schema,
                                             const std::string& table) {
  ASSIGN_OR_RETURN(auto cols, TableColumns(db, schema, table));
  std::vector<std::string> out;
  for (auto& c : cols) out.push_back(std::move(c.first));
  return out;
}

bool IsExtraTimeColumn(const std::string& table, const std::string& column) {
  for (const rs::TimeColumn& c : rs::kExtraTimeColumns) {
    if (c.table == table && c.column == column) return true;
  }
  return false;
}

rs::Result<int64_t> CountRows(rs::Db& db, const std::string& schema, const std::string& table) {
  return db.QueryInt("SELECT COUNT(*) FROM " + schema + "." + Quote(table));
}

}  // namespace

rs::Result<std::vector<std::pair<std::string, std::string>>> TableColumns(
    rs::Db& db, const std::string& schema, const std::string& table) {
  ASSIGN_OR_RETURN(rs::Statement st, db.Prepare("SELECT name, upper(type) FROM"
                                                " pragma_table_info(?1, ?2) ORDER BY cid"));
  st.Bind(1, table).Bind(2, schema);
  std::vector<std::pair<std::string, std::string>> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.emplace_back(st.Text(0), st.Text(1));
  }
  return out;
}

rs::Result<std::vector<std::string>> Tables(rs::Db& db, const std::string& schema) {
  ASSIGN_OR_RETURN(rs::Statement st,
                   db.Prepare("SELECT name FROM " + schema +
                              ".sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%'"
                              " ESCAPE '\\' ORDER BY name"));
  std::vector<std::string> out;
  for (;;) {
    ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    out.push_back(st.Text(0));
  }
  return out;
}

namespace {

// aligned_ns(x): NodeAlignment::Apply of the alignment registered last, NULL for NULL; the
// page copy path calls Apply itself, so both paths share one formula.
void AlignedNs(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return;
  }
  const auto* a = static_cast<const NodeAlignment*>(sqlite3_user_data(ctx));
  sqlite3_result_int64(ctx, a->Apply(sqlite3_value_int64(argv[0])));
}

}  // namespace

rs::Result<void> RegisterAlignment(rs::Db& db, const NodeAlignment& a) {
  int rc = sqlite3_create_function_v2(db.raw(), "aligned_ns", 1,
                                      SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY,
                                      new NodeAlignment(a), AlignedNs, nullptr, nullptr,
                                      [](void* p) { delete static_cast<NodeAlignment*>(p); });
  if (rc != SQLITE_OK) {
    return rs::Error(std::string("registering aligned_ns(): ") + sqlite3_errmsg(db.raw()));
  }
  return rs::Ok();
}

std::string AlignedExpr(const std::string& column) { return "aligned_ns(" + Quote(column) + ")"; }

rs::Result<std::vector<TableCount>> CopyTables(rs::Db& out, const CopySpec& spec) {
  RETURN_IF_ERROR(RegisterAlignment(out, spec.alignment));
  ASSIGN_OR_RETURN(std::vector<std::string> ours, Tables(out, "main"));
  ASSIGN_OR_RETURN(std::vector<std::string> theirs, Tables(out, spec.schema));
  std::set<std::string> known(ours.begin(), ours.end());
  std::vector<TableCount> counts;
  for (const std::string& t : theirs) {
    if (kNotCopied.count(t) || spec.skip.count(t)) continue;
    TableCount c;
    c.table = t;
    ASSIGN_OR_RETURN(c.rows_in, CountRows(out, spec.schema, t));
    if (!known.count(t)) {
      c.rows_skipped = c.rows_in;
      c.note = "table unknown to this rankscope version; not merged";
      counts.push_back(c);
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<std::string> dst_cols, Columns(out, "main", t));
    ASSIGN_OR_RETURN(std::vector<std::string> src_cols, Columns(out, spec.schema, t));
    std::set<std::string> src(src_cols.begin(), src_cols.end());
    const bool event = rs::IsEventTable(t);
    std::string cols, exprs;
    auto add = [&](const std::string& col, const std::string& expr) {
      cols += (cols.empty() ? "" : ", ") + Quote(col);
      exprs += (exprs.empty() ? "" : ", ") + expr;
    };
    for (const std::string& col : dst_cols) {
      if (col == "node") {
        add(col, "?1");
      } else if (col == "id" && event && src.count(col)) {
        add(col, spec.id_shift ? "(id + (" + std::to_string(spec.id_shift) + "))" : "id");
      } else if (col == "timestamp_ns" && (event || t == "sched_summary") && src.count(col)) {
        add(col, AlignedExpr(col));
      } else if (event && IsExtraTimeColumn(t, col) && src.count(col)) {
        add(col, AlignedExpr(col));
      } else if (col == "local_timestamp_ns" && event && src.count("timestamp_ns")) {
        add(col, "timestamp_ns");
      } else if (col == "first_seen_ns" && t == "processes" && src.count(col)) {
        add(col, AlignedExpr(col));
      } else if (col == "stack_id" && src.count(col)) {
        add(col, "(SELECT new FROM temp.stack_map WHERE old = stack_id)");
      } else if (src.count(col)) {
        add(col, Quote(col));
      }
    }
    std::string sql = "INSERT INTO main." + Quote(t) + " (" + cols + ") SELECT " + exprs +
                      " FROM " + spec.schema + "." + Quote(t);
    if (src.count("node")) sql += " WHERE node = ?2";
    ASSIGN_OR_RETURN(rs::Statement st, out.Prepare(sql));
    st.Bind(1, spec.node);
    if (src.count("node")) st.Bind(2, spec.original_node);
    auto r = st.Run();
    if (!r.ok()) return r.error().Wrap("copying table " + t);
    c.rows_out = sqlite3_changes64(out.raw());
    c.rows_skipped = c.rows_in - c.rows_out;
    if (c.rows_skipped > 0) {
      c.note = "rows whose node is not the bundle's node '" + spec.original_node + "'";
    }
    if (src.count("stack_id")) {
      ASSIGN_OR_RETURN(int64_t dangling,
                       out.QueryInt("SELECT COUNT(*) FROM " + spec.schema + "." + Quote(t) +
                                    " WHERE stack_id IS NOT NULL AND stack_id NOT IN"
                                    " (SELECT old FROM temp.stack_map)"));
      if (dangling > 0) {
        c.note += (c.note.empty() ? "" : "; ") + std::to_string(dangling) +
                  " rows referenced stacks missing from the bundle (stack_id set NULL)";
      }
    }
    counts.push_back(c);
  }
  return counts;
}

}  // namespace rs::merge
