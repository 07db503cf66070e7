#include "analyzer/fleet/fleet_query.h"

#include <algorithm>
#include <cstdio>

#include "rscore/cli.h"
#include "rscore/sqlite.h"

namespace rs::fleet {
namespace {

void Bind(sqlite3_stmt* st, int idx, const rs::wire::Value& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    sqlite3_bind_int64(st, idx, *i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    sqlite3_bind_double(st, idx, *d);
  } else if (const auto* t = std::get_if<std::string>(&v)) {
    sqlite3_bind_text(st, idx, t->data(), static_cast<int>(t->size()), SQLITE_TRANSIENT);
  } else if (const auto* b = std::get_if<rs::wire::Blob>(&v)) {
    sqlite3_bind_blob(st, idx, b->bytes.data(), static_cast<int>(b->bytes.size()),
                      SQLITE_TRANSIENT);
  } else {
    sqlite3_bind_null(st, idx);
  }
}

}  // namespace

rs::Result<int64_t> PrintCombined(std::vector<NodeAnswer>& answers,
                                  rs::analyzer::OutputFormat format, std::ostream& out,
                                  std::vector<std::string>& warnings) {
  const std::vector<std::string>* columns = nullptr;
  for (NodeAnswer& a : answers) {
    if (!a.status.ok()) continue;
    if (columns == nullptr) {
      columns = &a.reply.columns;
    } else if (a.reply.columns != *columns) {
      a.status = rs::Error("its columns differ from the other nodes' (" +
                           std::to_string(a.reply.columns.size()) + " for " +
                           std::to_string(columns->size()) + "): a different schema?");
      warnings.push_back(a.address.who(a.name) + ": " + a.status.error().message() +
                         "; its rows are left out");
    }
  }
  if (columns == nullptr) return rs::Error("no node answered");
  ASSIGN_OR_RETURN(rs::Db db, rs::Db::Open(":memory:", rs::Db::Mode::kCreate));
  std::string create = "CREATE TABLE fleet_rows(node_order INTEGER, row_order INTEGER, node TEXT";
  std::string insert = "INSERT INTO fleet_rows VALUES(?1, ?2, ?3";
  std::string select = "SELECT node";
  for (size_t c = 0; c < columns->size(); ++c) {
    create += ", c" + std::to_string(c);
    insert += ", ?" + std::to_string(c + 4);
    select += ", c" + std::to_string(c) + " AS " + rs::QuoteIdentifier((*columns)[c]);
  }
  RETURN_IF_ERROR(db.Exec(create + ")"));
  RETURN_IF_ERROR(db.Exec("BEGIN"));
  ASSIGN_OR_RETURN(rs::Statement ins, db.Prepare(insert + ")"));
  int64_t order = 0;
  for (const NodeAnswer& a : answers) {
    ++order;
    if (!a.status.ok()) continue;
    int64_t row = 0;
    for (const auto& cells : a.reply.rows) {
      ins.Bind(1, order).Bind(2, row++).Bind(3, a.name);
      for (size_t c = 0; c < cells.size(); ++c) Bind(ins.raw(), static_cast<int>(c + 4), cells[c]);
      RETURN_IF_ERROR(ins.Run());
    }
  }
  RETURN_IF_ERROR(db.Exec("COMMIT"));
  rs::analyzer::QueryOptions opts;
  opts.format = format;
  opts.limit = 0;
  opts.timeout_ns = int64_t{3600} * 1'000'000'000;
  ASSIGN_OR_RETURN(rs::analyzer::QueryStats stats,
                   rs::analyzer::RunQuery(
                       db, select + " FROM fleet_rows ORDER BY node_order, row_order", opts, out));
  return stats.rows;
}

rs::Result<FleetQueryResult> RunFleetQuery(const FleetQuery& q, std::ostream& out) {
  FleetQueryResult r;
  r.answers.resize(q.nodes.size());
  auto statuses =
      ForEachNode(q.nodes, q.auth, q.fan, [&](size_t i, NodeClient& client) -> rs::Result<void> {
        NodeAnswer& a = r.answers[i];
        ASSIGN_OR_RETURN(a.clock, client.MeasureClock(kClockExchanges));
        ASSIGN_OR_RETURN(a.reply, client.Query(q.request));
        return rs::Ok();
      });
  for (size_t i = 0; i < q.nodes.size(); ++i) {
    NodeAnswer& a = r.answers[i];
    a.address = q.nodes[i];
    a.status = std::move(statuses[i]);
    a.name = !a.address.name.empty() ? a.address.name
             : !a.reply.node.empty() ? a.reply.node
             : !a.clock.node.empty() ? a.clock.node
                                     : a.address.address();
  }
  std::stable_sort(r.answers.begin(), r.answers.end(),
                   [](const NodeAnswer& a, const NodeAnswer& b) {
                     return rs::cli::NaturalLess(a.name, b.name);
                   });
  for (const NodeAnswer& a : r.answers) {
    const std::string who = a.address.who(a.name);
    if (!a.status.ok()) {
      r.warnings.push_back(who + ": " + a.status.error().message());
    } else if (a.reply.truncated) {
      r.warnings.push_back(who + ": its rows stop at " + std::to_string(a.reply.rows.size()) +
                           (a.reply.truncated_by == "bytes"
                                ? " (the node's result size limit, --max-result-bytes)"
                                : " (--limit, or the node's own row limit --max-rows)"));
    }
  }
  const bool any = std::any_of(r.answers.begin(), r.answers.end(),
                               [](const NodeAnswer& a) { return a.status.ok(); });
  if (any) {
    ASSIGN_OR_RETURN(r.rows, PrintCombined(r.answers, q.format, out, r.warnings));
  }
  for (const NodeAnswer& a : r.answers) r.answered += a.status.ok() ? 1 : 0;
  return r;
}

std::string FormatClocks(const std::vector<NodeAnswer>& answers) {
  std::vector<std::vector<std::string>> rows = {
      {"node", "clock offset", "bound (\u00b1)", "round trip", "address"}};
  auto ms = [](int64_t ns, bool sign) {
    char b[48];
    std::snprintf(b, sizeof b, sign ? "%+.3f ms" : "%.3f ms", static_cast<double>(ns) / 1e6);
    return std::string(b);
  };
  for (const NodeAnswer& a : answers) {
    if (a.clock.exchanges == 0) {
      rows.push_back({a.name, "-", "-", "-", "-"});
      continue;
    }
    rows.push_back({a.name, ms(a.clock.offset_ns, true), ms(a.clock.bound_ns, false),
                    ms(a.clock.rtt_ns, false), a.address.address()});
  }
  std::vector<size_t> w(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) w[c] = std::max(w[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += (c ? "  " : "") + row[c];
      if (c + 1 < row.size()) line += std::string(w[c] - row[c].size(), ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace rs::fleet
